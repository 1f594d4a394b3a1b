"""A traffic matrix from a file, `--matrix FILE`: CSV rows `src,dst` (a
long-lived flow) or `src,dst,start_s,bytes` (a finite flow: it starts
start_s seconds in and carries `bytes`), an optional header row naming
those columns, blank lines and `#` comments ignored. Checked against the
topology's hosts; every error is one line naming the row, all of them in
one ConfigError (up to MAX_SHOWN, then how many more). Standard library
only: the input check runs before anything is installed."""
from __future__ import annotations

import csv
import math
import os
from dataclasses import dataclass
from pathlib import Path

from base.errors import ConfigError, clipped

MAX_SHOWN = 10
MAX_BYTES = 2 ** 40
MAX_ROWS = 100_000


@dataclass(frozen=True)
class MatrixRow:
    src: str
    dst: str
    start_s: float | None = None     # None: a long-lived flow
    bytes: int | None = None


def read_matrix(path: str, hosts: list[str] | None) -> list[MatrixRow]:
    """The file's flows, or a ConfigError with one line per error; hosts
    None: names not checked (the topology not read yet)."""
    shown = clipped(path)
    file = Path(path)
    if not path or not os.path.isfile(path):
        raise ConfigError(f"--matrix {shown}: no such file")
    try:
        text = file.read_text()
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"--matrix {shown}: cannot be read: {type(exc).__name__}") from None
    known = None if hosts is None else set(hosts)
    rows, errors = [], []
    for number, fields in enumerate(csv.reader(text.splitlines()), start=1):
        fields = [f.strip() for f in fields]
        if not fields or not any(fields) or fields[0].startswith("#"):
            continue
        if number == 1 and fields[:2] == ["src", "dst"]:
            continue
        if len(rows) >= MAX_ROWS:
            errors.append(f"more than {MAX_ROWS} flows")
            break
        row, problem = _row(fields, known)
        if problem:
            errors.append(f"row {number}: {problem}")
        else:
            rows.append(row)
    if not rows and not errors:
        errors.append("no flows")
    if rows and len({r.start_s is None for r in rows}) > 1:
        errors.append("mixes long-lived (src,dst) and finite (src,dst,start_s,bytes) rows")
    if errors:
        more = len(errors) - MAX_SHOWN
        raise ConfigError("\n".join(f"--matrix {shown}: {e}" for e in errors[:MAX_SHOWN])
                          + (f"\n--matrix {shown}: ... and {more} more" if more > 0 else ""))
    return rows


def _row(fields: list[str], known: set[str] | None) -> tuple[MatrixRow | None, str]:
    if len(fields) not in (2, 4):
        return None, f"{len(fields)} fields; expected src,dst or src,dst,start_s,bytes"
    src, dst = fields[:2]
    for end in (src, dst):
        if known is not None and end not in known:
            return None, f"{clipped(end, 30)!r} is not a host of the topology"
    if src == dst:
        return None, f"{src} sends to itself"
    if len(fields) == 2:
        return MatrixRow(src, dst), ""
    try:
        start, size = float(fields[2]), int(fields[3])
    except ValueError:
        return None, "start_s and bytes are numbers (seconds, whole bytes)"
    if not (math.isfinite(start) and 0 <= start <= 86400):
        return None, f"start_s {clipped(fields[2], 20)}: within 0..86400 s"
    if not 1 <= size <= MAX_BYTES:
        return None, f"bytes {clipped(fields[3], 20)}: within 1..{MAX_BYTES}"
    return MatrixRow(src, dst, start, size), ""
