"""The toy's runs, through the harness's runner; its "network" is nothing."""
from __future__ import annotations

import contextlib

from experiments.runner import Experiment, Runner


class ToyExperiment(Experiment):
    name = "toy"

    def points(self) -> list[int]:
        return self.cfg.points()

    def network_key(self, n: int) -> str:
        return "none"

    def network(self, key):
        return contextlib.nullcontext()

    def describe(self, n: int) -> str:
        return f"toy {n}"

    def run_dir(self, n: int):
        return self.cfg.results / "toy" / str(n)

    def run_point(self, net, n: int, folder) -> dict:
        return {"config": {"n": n}, "square": n * n, "flags": []}


def run(cfg) -> None:
    experiment = ToyExperiment(cfg)
    Runner(experiment, say=experiment.say).run()
