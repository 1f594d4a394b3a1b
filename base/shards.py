"""A sweep split over machines: `--shard I/N` runs only the I-th of N
shares of an experiment's points, and every record of a shard says which
share it is and with which settings it ran, so that folders brought together
can be checked (base/merge.py).

The rule depends on nothing but the point list: point j (0-based, in the
experiment's own order) belongs to shard j mod N + 1. Round robin rather
than blocks, so that each shard gets a fair mix of cheap runs (TCP) and
costly ones (MPTCP-8); a shard's points keep their order, so adjacent points
that share a network still share it. Standard library only.
"""
from __future__ import annotations

import dataclasses
import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence, TypeVar

from base.errors import ConfigError

MAX_SHARDS = 1000
# Config fields that may differ between machines without changing what ran:
# where the results go, the notes on why a default was taken, and switches
# that only decide whether to start (the guard's --force, --recalibrate).
NOT_SETTINGS = ("results", "force", "recalibrate")

T = TypeVar("T")


@dataclass(frozen=True)
class Shard:
    index: int      # 1-based
    count: int

    @classmethod
    def parse(cls, text: str) -> "Shard":
        """'2/3' -> Shard(2, 3); ConfigError (one line) for anything else."""
        first, slash, second = text.partition("/")
        try:
            index, count = int(first), int(second)
        except ValueError:
            raise ConfigError(f"--shard {text!r}: expected I/N, e.g. 1/3 (the first of three)") from None
        if not slash or not 1 <= count <= MAX_SHARDS or not 1 <= index <= count:
            raise ConfigError(f"--shard {text}: I/N needs 1 <= I <= N <= {MAX_SHARDS}")
        return cls(index, count)

    def __str__(self) -> str:
        return f"{self.index}/{self.count}"

    def mine(self, points: Sequence[T]) -> list[T]:
        """This shard's share of `points`, in their order."""
        return [p for j, p in enumerate(points) if j % self.count == self.index - 1]

    def record(self, total_points: int, cfg) -> dict:
        """run.json's `shard`: which share, of how many points, run with what."""
        settings = settings_of(cfg)
        return {"index": self.index, "count": self.count, "points": total_points,
                "settings": settings, "settings_id": settings_id(settings)}


def settings_of(cfg) -> dict:
    """An experiment config's settings as JSON values: every field except
    NOT_SETTINGS and the `*_note` texts."""
    if not dataclasses.is_dataclass(cfg):
        return {}
    fields = {f.name: getattr(cfg, f.name) for f in dataclasses.fields(cfg)
              if f.name not in NOT_SETTINGS and not f.name.endswith("_note")}
    return json.loads(json.dumps(fields, default=_json_value, sort_keys=True))


def settings_id(settings: dict) -> str:
    return hashlib.sha256(json.dumps(settings, sort_keys=True).encode()).hexdigest()[:12]


def differences(a: dict, b: dict, most: int = 3) -> str:
    """'bw_mbps 1 vs 0.5, seed 0 vs 1' between two settings."""
    keys = sorted(k for k in set(a) | set(b) if a.get(k) != b.get(k))
    shown = [f"{k} {json.dumps(a.get(k))} vs {json.dumps(b.get(k))}" for k in keys[:most]]
    return ", ".join(shown + ([f"+{len(keys) - most} more"] if len(keys) > most else []))


def _json_value(value):
    if dataclasses.is_dataclass(value):
        return dataclasses.asdict(value)
    if isinstance(value, (Path, set, frozenset)):
        return str(value) if isinstance(value, Path) else sorted(value)
    return str(value)
