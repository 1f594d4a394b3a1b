"""Results folders brought together: the shards of a sweep run on several
machines (`--shard I/N`), or any folders of runs, merged into one that
./plot.py draws. The rule, for every experiment of the catalogue:

* a run is its folder's path below the results folder (ft4/one_to_one/flows8);
  the same path in two sources is one point run twice: refused;
* runs of one experiment that carry a `shard` (base/shards.py) must have
  the same shard count and settings: a shard run otherwise is refused;
* each run folder is copied whole; a file beside the runs (a traffic matrix)
  is copied when the target lacks it and must be equal where it has it.

Standard library only.
"""
from __future__ import annotations

import filecmp
import json
import shutil
from dataclasses import dataclass
from pathlib import Path

from base import catalogue, records
from base.errors import ConfigError
from base.shards import differences

NOT_COPIED = ("plots", "report.md")     # what ./plot.py writes: drawn again after the merge


@dataclass(frozen=True)
class FoundRun:
    source: Path
    relative: Path          # the run folder below its results folder
    experiment: str
    shard: dict | None


def runs_in(results: Path) -> list[FoundRun]:
    """Every committed run of every experiment below `results`."""
    found = []
    for name, row in catalogue.rows().items():
        for path in records.committed(results, row.records):
            rel = path.parent.relative_to(results)
            if rel.parts and rel.parts[0] in NOT_COPIED:
                continue
            found.append(FoundRun(results, rel, name, _shard_of(path)))
    return found


def _shard_of(path: Path) -> dict | None:
    try:
        shard = json.loads(path.read_text()).get("shard")
    except (OSError, UnicodeDecodeError, ValueError, AttributeError):
        return None      # an unreadable record is ./plot.py's to report
    return shard if isinstance(shard, dict) else None


def check(runs: list[FoundRun]) -> list[str]:
    """ConfigError (one line) for a point found twice or a shard run with
    other settings; else notes on shards that are missing."""
    seen: dict[Path, FoundRun] = {}
    for r in runs:
        other = seen.get(r.relative)
        if other and other.source != r.source and not _same_record(other, r):
            raise ConfigError(f"{r.relative} is in both {other.source} and {r.source}: "
                              "one point run twice; keep one of them and merge again")
        seen[r.relative] = r
    notes = []
    for name in sorted({r.experiment for r in runs}):
        sharded = [r for r in runs if r.experiment == name and r.shard]
        if not sharded:
            continue
        first = sharded[0]
        for r in sharded[1:]:
            a, b = first.shard, r.shard
            if a.get("count") != b.get("count") or a.get("settings_id") != b.get("settings_id"):
                why = (f"{a.get('count')} shards against {b.get('count')}" if a.get("count") != b.get("count")
                       else differences(a.get("settings", {}), b.get("settings", {})))
                raise ConfigError(f"{name}: {r.source}/{r.relative} (shard {b.get('index')}/{b.get('count')}) "
                                  f"was run with other settings than {first.source}/{first.relative} "
                                  f"(shard {a.get('index')}/{a.get('count')}): {why}")
        count = first.shard.get("count", 0)
        present = sorted({r.shard.get("index") for r in sharded})
        missing = [i for i in range(1, count + 1) if i not in present]
        if missing:
            notes.append(f"{name}: shard{'s' if len(missing) > 1 else ''} "
                         f"{', '.join(map(str, missing))} of {count} not here; drawn from "
                         f"{len(present)} of {count}")
    return notes


def _same_record(a: FoundRun, b: FoundRun) -> bool:
    """The same run copied twice (a merge done again), not a point run twice."""
    return filecmp.cmp(a.source / a.relative / records.RECORD, b.source / b.relative / records.RECORD,
                       shallow=False)


def merge(sources: list[Path], into: Path) -> list[str]:
    """Copy every run of `sources` into `into` (its own runs count too),
    after checking them all; returns check()'s notes."""
    for s in sources:
        if not s.is_dir():
            raise ConfigError(f"{s}: no such results folder")
        if s.resolve() == into.resolve():
            raise ConfigError(f"{s} is the folder merged into; name it once, after --into")
    found = {s: runs_in(s) for s in sources}
    runs = (runs_in(into) if into.is_dir() else []) + [r for s in sources for r in found[s]]
    notes = check(runs)
    side = {s: list(_side_files(s, {r.relative for r in found[s]})) for s in sources}
    for s in sources:
        _check_side_files(s, into, side[s])
    present = {r.relative for r in runs if r.source == into}
    copied = set()
    for r in runs:
        if r.relative not in present | copied:
            shutil.copytree(r.source / r.relative, into / r.relative)
            copied.add(r.relative)
    for s in sources:
        _copy_side_files(s, into, [rel for rel in side[s] if not any(rel.is_relative_to(c) for c in copied)])
    return notes


def _side_files(source: Path, runs: set[Path]):
    """Files of `source` outside its run folders and outside what plot.py writes."""
    for path in sorted(source.rglob("*")):
        rel = path.relative_to(source)
        if (path.is_file() and rel.parts[0] not in NOT_COPIED
                and not any(part.startswith(".") for part in rel.parts)
                and not any(rel.is_relative_to(run) for run in runs)):
            yield rel


def _check_side_files(source: Path, into: Path, side: list[Path]) -> None:
    for rel in side:
        target = into / rel
        if rel.name.endswith(".json") and target.exists() and not filecmp.cmp(source / rel, target, shallow=False):
            raise ConfigError(f"{rel} differs between {source} and {into}: the runs beside it "
                              "were not run with the same traffic")


def _copy_side_files(source: Path, into: Path, side: list[Path]) -> None:
    for rel in side:
        target = into / rel
        if not target.exists():
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source / rel, target)
