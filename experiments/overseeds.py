"""An experiment run once per seed of its config's `--seeds`
(experiments/config/common.SeedsSettings): each seed's points are the
experiment's own under that seed's config (its traffic matrix and ECMP
hash), on a network of its own, and its runs go to a folder of their own
beside the single-seed layout: `<top>-seed<S>/...` for `<top>/...`.
Every record's config names all the seeds, so the figures can tell a
complete set (figures/rack_seeds.py)."""
from __future__ import annotations

from pathlib import Path

from experiments.config.common import SeedPoint, SeedsSettings
from experiments.runner import Experiment


def seed_folder(results: Path, run_dir: Path, seed: int) -> Path:
    """results/dhft4/x/y -> results/dhft4-seed<S>/x/y."""
    top, *rest = run_dir.relative_to(results).parts
    return results.joinpath(f"{top}-seed{seed}", *rest)


class OverSeeds(Experiment):
    def __init__(self, make, cfg: SeedsSettings, say=print):
        """`make(cfg, say)`: the experiment of one seed's config."""
        super().__init__(cfg, say)
        self.of_seed = {s: make(cfg.for_seed(s), say=say) for s in cfg.seeds}
        self.current = self.of_seed[cfg.seeds[0]]
        self.name = self.current.name

    def points(self) -> list[SeedPoint]:
        return self.cfg.points()

    def network_key(self, sp: SeedPoint):
        return sp.seed, self.of_seed[sp.seed].network_key(sp.point)

    def network(self, key):
        # The runner builds a group's network, then prepares it and runs its points.
        seed, own = key
        self.current = self.of_seed[seed]
        return self.current.network(own)

    def prepare(self, net) -> None:
        self.current.prepare(net)

    def admit(self) -> None:
        for exp in self.of_seed.values():
            exp.admit()

    def after(self) -> None:
        for exp in self.of_seed.values():
            exp.after()

    def introduce(self) -> str:
        return self.current.introduce()

    def describe(self, sp: SeedPoint) -> str:
        return f"seed {sp.seed}: {self.of_seed[sp.seed].describe(sp.point)}"

    def run_dir(self, sp: SeedPoint) -> Path:
        return seed_folder(self.cfg.results, self.of_seed[sp.seed].run_dir(sp.point), sp.seed)

    def run_point(self, net, sp: SeedPoint, folder: Path) -> dict:
        record = self.of_seed[sp.seed].run_point(net, sp.point, folder)
        record["config"]["seeds"] = list(self.cfg.seeds)
        return record

    def summarise(self, record: dict) -> str:
        return self.current.summarise(record)


def experiment_for(make, cfg, say=print) -> Experiment:
    """What runs `cfg`: `make`'s experiment, once per seed where the config
    takes --seeds and was given them (the FatTree sweep runs its own)."""
    if isinstance(cfg, SeedsSettings) and cfg.seeds:
        return OverSeeds(make, cfg, say)
    return make(cfg, say=say)
