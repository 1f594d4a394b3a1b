"""The records of the experiments other than the FatTree sweep, read as
their figures see them: points per sweep and scheme, runs per scheme and
figure. A record that cannot be read is noted and skipped."""
from __future__ import annotations

import json
from pathlib import Path

from base import records
from figures.notes import note


def read_records(results: Path, pattern: tuple[str, ...], read):
    """(path, read(record)) for every committed record matching `pattern`;
    a record that cannot be read, or that `read` cannot make sense of, is
    noted and skipped."""
    for path in records.committed(results, pattern):
        try:
            run = read(json.loads(path.read_text()))
        except (OSError, ValueError, KeyError, TypeError, IndexError, ZeroDivisionError) as exc:
            note(f"skipped {path}: {exc}")
            continue
        yield path, run


def sweep_points(paths: list[Path], parse, sweeps, schemes) -> dict[str, dict[str, list]]:
    """{sweep: {scheme: points sorted by x}} from the records at `paths`;
    `parse(path)` gives (sweep, scheme, point). Unreadable records are noted
    and skipped, and points of unknown sweeps or schemes are left out;
    sweeps come in the order of `sweeps`."""
    out: dict[str, dict[str, list]] = {}
    for path in paths:
        try:
            sweep, scheme, point = parse(path)
        except (OSError, ValueError, KeyError, TypeError) as exc:
            note(f"skipped {path}: {exc}")
            continue
        if sweep in sweeps and scheme in schemes:
            out.setdefault(sweep, {}).setdefault(scheme, []).append(point)
    for by_scheme in out.values():
        for pts in by_scheme.values():
            pts.sort(key=lambda p: p.x)
    return {s: out[s] for s in sweeps if s in out}


def records_by_topology(results: Path, pattern: tuple[str, ...], topology_dir, parse, sweeps,
                        series) -> dict[str, dict[str, dict[str, list]]]:
    """{topology folder: {sweep: {series: points sorted by x}}} of the
    records matching `pattern` under folders named as `topology_dir` (a
    compiled regex) matches; `parse` as sweep_points takes it."""
    by_top: dict[str, list[Path]] = {}
    for path in records.committed(results, pattern):
        top = path.relative_to(results).parts[0]
        if topology_dir.fullmatch(top):
            by_top.setdefault(top, []).append(path)
    return {top: points for top, paths in by_top.items()
            if (points := sweep_points(paths, parse, sweeps, series))}


def runs_by_scheme(results: Path, pattern: tuple[str, ...], read, figure_of, order) -> dict[str, dict[str, object]]:
    """{figure name: {scheme: run}} from the records matching `pattern`:
    `read(record)` makes a run with a `scheme` (read_records),
    `figure_of(path)` names the figure a record belongs to; schemes outside
    `order` are left out, the rest kept in its order."""
    out: dict[str, dict[str, object]] = {}
    for path, run in read_records(results, pattern, read):
        if run.scheme in order:
            out.setdefault(figure_of(path), {})[run.scheme] = run
    return {name: {s: runs[s] for s in order if s in runs} for name, runs in sorted(out.items())}
