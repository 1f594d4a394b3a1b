"""One runner for every experiment, and the contract an experiment fulfils.

An experiment (a subclass of `Experiment`) declares what is its own:

* `name`: what run.json's "experiment" field and the final line call it;
* `points()`: its runs in order; adjacent runs with the same
  `network_key(point)` share one network, built once for them;
* `network(key)`: that network, a emulator.network.Network not yet started;
* `prepare(net)`: what a network needs once, before its first run (a
  baseline measurement); nothing by default;
* `describe(point)`: the progress line's words for a run;
* `run_dir(point)`: where the run's folder goes;
* `run_point(net, point, folder)`: one run, writing its files into `folder`
  (the staging folder) and returning its record: at least `flags`;
* `summarise(record)`: one line after the run; `introduce()` and
  `finished(runs, wall_s)`: the lines before the first and after the last;
* `admit()`: the checks before anything is built (the capacity guard's
  verdict), raising ConfigError to refuse; `after()`: what to learn from
  the finished runs. Nothing by default.

The runner owns the rest: a shard's share of the points (`--shard I/N`,
base/shards.py); grouping by network; progress with what is left
and the ETA, from the first line (experiments/plan.py: this machine's
recorded runs, then the runs done); the staging folder and its atomic commit (experiments/staging.py:
an interrupted run leaves the earlier one in place); the fields every
record has (`schema`, `experiment`, `kernel`, `started_at`, `finished_at`,
`valid`, which is "no flags"); and turning a traffic failure into a
SweepError (exit status 1). Ctrl-C goes through: the `with` blocks remove
the network and discard the half-written run.
"""
from __future__ import annotations

import itertools
import platform
import time
from pathlib import Path
from typing import Hashable

from base import catalogue, records
from base.shards import Shard
from emulator.network import Network
from experiments import plan
from experiments.inside import Inside
from experiments.staging import RunStage
from emulator.traffic.common import TrafficError



class SweepError(RuntimeError):
    """The experiment cannot go on (the network or the tools failed): exit 1."""


class Experiment:
    name = ""

    def __init__(self, cfg, say=print):
        self.cfg = cfg
        self.say = say

    def points(self) -> list:
        raise NotImplementedError

    def network_key(self, point) -> Hashable:
        raise NotImplementedError

    def network(self, key) -> Network:
        raise NotImplementedError

    def prepare(self, net: Network) -> None:
        pass

    def admit(self) -> None:
        pass

    def after(self) -> None:
        pass

    def describe(self, point) -> str:
        raise NotImplementedError

    def run_dir(self, point) -> Path:
        raise NotImplementedError

    def run_point(self, net: Network, point, folder: Path) -> dict:
        raise NotImplementedError

    def summarise(self, record: dict) -> str:
        return ""

    def introduce(self) -> str:
        """A line before the first run ("" for none)."""
        return ""

    def finished(self, runs: int, wall_s: float) -> str:
        """The line after the last run."""
        return f"{self.name}: {runs} runs in {minutes(wall_s)}"


class Runner:
    def __init__(self, experiment: Experiment, say=print, shard: Shard | None = None,
                 inside: Inside | None = None):
        """`shard`: run only that share of the points (base/shards.py);
        `inside`: --hold, --cli, --pcap (experiments/inside.py)."""
        self.experiment = experiment
        self.inside = inside or Inside(say=say)
        self.say = say
        self.shard = shard
        self.wall_s = 0.0
        self.total_points = 0

    def run(self) -> list[Path]:
        exp = self.experiment
        if not self.inside.hold:       # the guard judges runs, and a hold runs none
            exp.admit()
        points = exp.points()
        self.total_points = len(points)
        if self.shard:
            points = self.shard.mine(points)
            self.say(f"shard {self.shard}: {len(points)} of the {self.total_points} points")
        traffic = self._traffic_of()
        planned = plan.estimate(exp.name, exp.cfg, traffic, points).wall_s if traffic else None
        history = plan.History()
        written: list[Path] = []
        started = last = time.monotonic()
        if intro := exp.introduce():
            self.say(intro)
        try:
            groups = [(key, list(group)) for key, group in itertools.groupby(points, key=exp.network_key)]
            for n, (key, group) in enumerate(groups):
                network = exp.network(key)
                self.inside.check(network)      # before it is built
                with network as net, self.inside.network(net, first=n == 0, last=n == len(groups) - 1):
                    exp.prepare(net)
                    for point in group:
                        i = len(written)
                        self.say(f"[{i + 1}/{len(points)}] {exp.describe(point)} "
                                 f"({len(points) - i - 1} left{eta(i, len(points), started, planned)})")
                        written.append(self.run_one(net, point))
                        now = time.monotonic()
                        if traffic:
                            history.add(exp.name, plan.size_of(exp.cfg), traffic(exp.cfg, point), now - last)
                        last = now
        except TrafficError as exc:
            raise SweepError(str(exc)) from exc
        self.wall_s = time.monotonic() - started
        self.say(exp.finished(len(points), self.wall_s))
        exp.after()
        return written

    def _traffic_of(self):
        """The catalogue's traffic rule for this experiment (None: not in it)."""
        row = catalogue.rows().get(self.experiment.name)
        return row.load("traffic") if row else None

    def run_one(self, net: Network, point) -> Path:
        exp = self.experiment
        out = exp.run_dir(point)
        with RunStage(out) as stage:
            started_at = time.time()
            with self.inside.run(net, stage.path) as looked:
                own = exp.run_point(net, point, stage.path)
            record = {"schema": records.SCHEMA, "experiment": exp.name, "kernel": platform.release(),
                      "started_at": iso(started_at), "finished_at": iso(time.time()), **own,
                      **looked.record, "flags": own["flags"] + looked.flags}
            if self.shard:
                record["shard"] = self.shard.record(self.total_points, exp.cfg)
            record["valid"] = not record["flags"]
            stage.commit(record)
        summary = exp.summarise(record)
        self.say(f"    {summary}" + ("" if record["valid"] else f"  INVALID: {', '.join(record['flags'])}"))
        return out


def iso(t: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S%z", time.localtime(t))


def eta(done: int, total: int, started: float, planned_s: float | None = None) -> str:
    """", ETA 3m20s": before the first run from the plan, then from the runs
    done since `started` (time.monotonic()); "" where neither is known."""
    if done:
        return f", ETA {minutes((total - done) * (time.monotonic() - started) / done)}"
    return f", ETA {minutes(planned_s)} (planned)" if planned_s else ""


def minutes(seconds: float) -> str:
    m, s = divmod(int(seconds + 0.5), 60)
    return f"{m}m{s:02d}s" if m else f"{s}s"
