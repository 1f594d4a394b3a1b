"""`algorithms` and `hotspot`: the paper's congestion controls (all but PACKETSCATTER, which
needs per-packet switching) and OLIA, which came after it, side by side on
FatTree one_to_one.

`algorithms` (`run_mptcp.sh algorithms`, Raiciu et al. 2011 Fig. 9-10): single-path
TCP, UNCOUPLED (Reno on every subflow), EWTCP, LIA and OLIA on the same
permutation; the figures rank the flows' throughput and the links' loss rates.

`hotspot` (`run_mptcp.sh hotspot`, Fig. 11 and 19): the same runs, but during the
middle third of the counted time one core link (both directions) runs at a
tenth of its rate. Coupled algorithms that move traffic off congestion (LIA,
OLIA) should keep the flows that can cross that link close to their rate;
UNCOUPLED and EWTCP should not.

Each scheme is one run of the FatTree sweep (experiments/fattree.py) on its own
network, in `results/<experiment><k>/<scheme>/ft<k>/one_to_one/flows<N>/`;
the traffic matrix comes from the same seed, so every scheme carries the same
flows.
"""
from __future__ import annotations

from pathlib import Path

from experiments.config import CC_SCHEMES, CcCompareConfig, RunConfig
from experiments.runner import Experiment
from experiments.fattree import Sweep, run_summary
from experiments.hotlink import HotLink


def scheme_text(scheme: str, subflows: int) -> str:
    cc, n = CC_SCHEMES[scheme]
    return "single-path TCP (Reno)" if n == 1 else f"MPTCP-{subflows}, {cc} on every subflow"


class CcCompareExperiment(Experiment):
    """Every scheme is one run of a one-run FatTree sweep on its own network
    (the congestion control is set when the hosts are made ready)."""

    def __init__(self, cfg: CcCompareConfig, say=print):
        super().__init__(cfg, say)
        self.name = cfg.experiment
        self.sweeps: dict[str, Sweep] = {}

    def introduce(self) -> str:
        cfg = self.cfg
        what = ("hot spot: core link a0_0-c0 at "
                f"{cfg.hot_factor:g} of its rate from {cfg.hot_window[0]:g} to {cfg.hot_window[1]:g} s"
                if cfg.experiment == "hotspot" else "algorithm comparison")
        return (f"{cfg.experiment} (E{5 if cfg.experiment == 'algorithms' else 6}): FatTree({cfg.k}) "
                f"one_to_one, {what}; {len(cfg.schemes)} schemes, {cfg.warmup:g} + {cfg.time_s:g} s each")

    def points(self) -> list[str]:
        return self.cfg.points()

    def network_key(self, scheme: str) -> str:
        return scheme

    def network(self, scheme: str) -> Sweep:
        cfg = self.cfg
        sweep = Sweep(cfg.sweep_config(scheme), say=lambda m: self.say(f"    {m}"))
        if cfg.experiment == "hotspot":
            sweep.during_runs = HotLink(sweep.fabric, cfg.link.bw_mbps, cfg.hot_factor, cfg.hot_window)
        self.sweeps[scheme] = sweep
        return sweep

    def prepare(self, sweep: Sweep) -> None:
        sweep.baseline_mbps = sweep.measure_baseline()

    def describe(self, scheme: str) -> str:
        return f"{scheme}: {scheme_text(scheme, self.cfg.subflows)}"

    def _run(self, scheme: str) -> RunConfig:
        [rc] = self.cfg.sweep_config(scheme).runs()
        return rc

    def run_dir(self, scheme: str) -> Path:
        return self._run(scheme).run_dir(self.cfg.scheme_dir(scheme))

    def run_point(self, sweep: Sweep, scheme: str, folder: Path) -> dict:
        return sweep.measure(self._run(scheme), folder)

    def summarise(self, record: dict) -> str:
        return run_summary(record)
