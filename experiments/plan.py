"""What an experiment will cost before it runs: its points, their traffic
time, and the wall time this machine took for such runs before.

Each catalogue row names how much traffic one of its points runs (`traffic`,
below). The wall time of a run is its traffic plus what surrounds it (network
build, baseline, joins, teardown); the runner records both for every run
(`History.add`), and an estimate takes the median overhead this machine has
recorded for the experiment at that size. Standard library only: `--plan`
needs neither root nor the harness's packages.
"""
from __future__ import annotations

import json
import statistics
from dataclasses import dataclass
from pathlib import Path

from base.files import atomic_write_text
from base.platform import harness_cache

# Where this machine has recorded none of the experiment at that size, what
# `sudo ./run_mptcp.sh 4` took on a 2-core machine (8 runs of 40 s after
# 15 s: 7m41s in the runner for 7m20s of traffic): 2.6 s a run besides its
# traffic (the network's build and baseline shared out). Around the runs,
# with the calibration cached: 4 s (509 s for the command, 505 s in the
# runner, at the defaults). The first guarded run on a machine calibrates
# first: 50 s for the l3 fabric (experiments/capacity/measurement.py).
DEFAULT_OVERHEAD_S = 3.0
COMMAND_OVERHEAD_S = 5.0
CALIBRATION_S = 50.0
KEPT = 20                       # runs per (experiment, size) the median is taken over


# -- traffic of one point, per kind of experiment (named by catalogue rows) ----

def long_flow_traffic(cfg, point) -> float:
    """Warm-up plus counted time: the point's own if it carries them, else the config's."""
    time_s = getattr(point, "time_s", None)
    if getattr(point, "warmup_s", None) is None or time_s is None:
        time_s = cfg.time_s
    return (warmup_of(cfg, point) or 0.0) + float(time_s)


def warmup_of(cfg, point) -> float | None:
    """The warm-up of a point's traffic: its own, else the config's (its
    `warmup`, else `warmup_s`); None where it has none."""
    for value in (getattr(point, "warmup_s", None), getattr(cfg, "warmup", None),
                  getattr(cfg, "warmup_s", None)):
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return float(value)
    return None


def sampled_traffic(cfg, point) -> float:
    """A warm-up, then one-second samples."""
    return warmup_of(cfg, point) + float(cfg.samples)


def unknown_traffic(cfg, point) -> None:
    """Transfers last as long as they take: only a run tells."""
    return None


def no_traffic(cfg, point) -> float:
    return 0.0


def size_of(cfg) -> str:
    """What the overhead of a run scales with: the network's arity, where it
    has one, and the servers it is spread over (their builds cost more)."""
    k = getattr(cfg, "k", None)
    servers = getattr(cfg, "servers", ())
    return (f"k{k}" if isinstance(k, int) else "") + (f"-servers{len(servers)}" if servers else "")


def guarded(cfg) -> bool:
    """Whether the capacity guard judges the runs of `cfg` (it declares
    --force and shows it)."""
    return hasattr(cfg, "force") and "force" not in getattr(cfg, "HIDDEN_OPTIONS", ())


def calibrates_first(cfg) -> bool:
    """Whether a run of `cfg` measures this machine's forwarding cost before
    anything: its runs are guarded and no calibration of its fabric is cached."""
    if not guarded(cfg):
        return False
    from experiments.capacity.cache import load
    return load(cfg.fabric) is None


# -- what this machine recorded ------------------------------------------------

class History:
    """Runs this machine finished: per (experiment, size), (traffic s, wall s)."""

    def __init__(self, path: Path | None = None):
        self.path = path or harness_cache() / "run-history.json"

    def read(self) -> dict[str, list[list[float]]]:
        try:
            data = json.loads(self.path.read_text())
            return data if isinstance(data, dict) else {}
        except (OSError, ValueError):
            return {}

    def add(self, experiment: str, size: str, traffic_s: float | None, wall_s: float) -> None:
        """One finished run; never fails the run it records."""
        data = self.read()
        key = f"{experiment}/{size}"
        data[key] = (data.get(key, []) + [[traffic_s, round(wall_s, 1)]])[-KEPT:]
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            atomic_write_text(self.path, json.dumps(data, indent=1) + "\n")
        except OSError:
            pass

    def runs(self, experiment: str, size: str) -> list[list[float]]:
        return [r for r in self.read().get(f"{experiment}/{size}", [])
                if isinstance(r, list) and len(r) == 2]


@dataclass(frozen=True)
class Estimate:
    points: int
    traffic_s: float | None     # None: some point's traffic is known only by running it
    wall_s: float | None
    basis: str                  # where the wall time comes from

    def line(self) -> str:
        traffic = "unknown before running" if self.traffic_s is None else clock(self.traffic_s)
        wall = "unknown" if self.wall_s is None else f"about {clock(self.wall_s)}"
        runs = f"{self.points} run" + ("" if self.points == 1 else "s")
        return f"{runs}, traffic {traffic}, wall {wall} ({self.basis})"


def estimate(experiment: str, cfg, traffic_fn, points: list | None = None,
             history: History | None = None, machine: bool = True,
             calibration_s: float = 0.0) -> Estimate:
    """The wall time of `points` (default: all the config's); `machine=False`
    for an experiment that computes and builds no network; `calibration_s`
    where the run calibrates this machine first (calibrates_first)."""
    points = cfg.points() if points is None else points
    per_point = [traffic_fn(cfg, p) for p in points]
    known = None not in per_point
    traffic = sum(per_point) if known else None
    size = size_of(cfg)
    seen = (history or History()).runs(experiment, size)
    around = COMMAND_OVERHEAD_S + calibration_s
    around_text = f"{COMMAND_OVERHEAD_S:g} s around them" + (
        f" and {calibration_s:g} s to calibrate this machine first" if calibration_s else "")
    if known:
        # The mean, not the median: a sweep's first run carries its network's
        # build and baseline, which the sweep's other runs share.
        overheads = [wall - t for t, wall in seen if t is not None]
        if overheads:
            over = statistics.fmean(overheads)
            return Estimate(len(points), traffic, traffic + over * len(points) + around,
                            f"{over:.1f} s a run besides traffic, the mean of {len(overheads)} "
                            f"{experiment} runs this machine recorded at {size or 'this size'}, "
                            f"and {around_text}")
        if not machine:
            return Estimate(len(points), traffic, None, "computed, no network; none recorded here yet")
        return Estimate(len(points), traffic, traffic + DEFAULT_OVERHEAD_S * len(points) + around,
                        f"none recorded here yet: {DEFAULT_OVERHEAD_S:g} s a run besides traffic, as "
                        f"FatTree(4) took on a 2-core machine, and {around_text}")
    walls = [wall for _, wall in seen]
    if walls:
        per = statistics.median(walls)
        return Estimate(len(points), None, per * len(points),
                        f"{per:.0f} s a run, the median of {len(walls)} runs recorded here")
    return Estimate(len(points), None, None, "none recorded here yet; a first run will tell")


def clock(seconds: float) -> str:
    m, s = divmod(int(seconds + 0.5), 60)
    h, m = divmod(m, 60)
    return f"{h}h{m:02d}m" if h else (f"{m}m{s:02d}s" if m else f"{s}s")
