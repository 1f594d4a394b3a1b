"""E5 and E6's config: congestion controls on the permutation, without and
with a hot spot."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from base import records
from base.errors import ConfigError
from base.links import LinkParams
from base.options import again, check_declared, links, names, one_of_list, option
from experiments.config.common import (COUPLED_CONGESTION_CONTROLS, MAX_SUBFLOWS, LongFlowSettings,
                                       WarmupFromRate, check_cc, coupled_cc_supported, default_cc,
                                       warmup_text)
from experiments.config.fattree import SweepConfig

# -- E5 and E6: congestion controls on the permutation, without and with a hot spot

# The paper's algorithms (Section 3, Fig. 9-11) as (congestion control,
# subflows): "tcp" is single-path TCP; the others are MPTCP with the chosen
# subflow count, "uncoupled" running plain Reno on every subflow.
CC_SCHEMES = {"tcp": ("reno", 1), "uncoupled": ("reno", None), "ewtcp": ("ewtcp", None),
              "lia": ("lia", None), "olia": ("olia", None)}
CC_EXPERIMENTS = ("algorithms", "hotspot")


@dataclass(frozen=True)
class CcCompareConfig(WarmupFromRate):
    """Everything `run_mptcp.sh algorithms` (E5) or `run_mptcp.sh hotspot`
    (E6) was asked to do: one FatTree one_to_one run per scheme, the same
    traffic matrix for all. For `hotspot`, one core link runs at
    `hot_factor` of its rate during the middle third of the counted time.
    Its runs are the FatTree sweep's, so they take the sweep's warm-up."""
    warmup_at_10mbps = SweepConfig.warmup_at_10mbps     # a class constant, not a field
    experiment: str = "algorithms"
    k: int = option(4, flag="--k", metavar="K", help="FatTree arity, 4, 6 or 8")
    schemes: tuple[str, ...] = names(tuple(CC_SCHEMES), flag="--schemes", choices=CC_SCHEMES, what="scheme",
                                     default_text="all that this kernel can run")
    subflows: int = option(8, flag="--subflows", metavar="N", low=2, high=MAX_SUBFLOWS,
                           help="subflows of the MPTCP schemes",
                           parse=one_of_list("--subflows", "the MPTCP schemes' subflow count"))
    link: LinkParams = links("bw_mbps", "queue_pkts", factory=LinkParams)
    time_s: float = again(LongFlowSettings, "time_s", 40.0)
    warmup_s: float | None = again(LongFlowSettings, "warmup_s", None,
                                   default_text=warmup_text(SweepConfig.warmup_at_10mbps))
    seed: int = again(LongFlowSettings, "seed", 0)
    fabric: str = again(LongFlowSettings, "fabric", "l3")
    hot_factor: float = option(0.1, flag="--hot-factor", metavar="SHARE",
                               help="the hot link's share of its rate while slowed")
    results: Path = Path("results")

    @classmethod
    def resolve(cls, given: dict) -> list[str]:
        """By default every scheme this kernel can run."""
        given["schemes"], note = kernel_schemes(given.get("schemes"), tuple(CC_SCHEMES))
        return [note]

    @property
    def cc(self) -> str:
        """The congestion control the preflight checks: a coupled one if any
        scheme uses one (they are built and registered together)."""
        coupled = [CC_SCHEMES[s][0] for s in self.schemes if CC_SCHEMES[s][0] in COUPLED_CONGESTION_CONTROLS]
        return coupled[0] if coupled else "reno"

    @property
    def hot_window(self) -> tuple[float, float]:
        """Seconds since traffic started during which the hot link is slow."""
        return self.warmup + self.time_s / 3, self.warmup + 2 * self.time_s / 3

    def validate(self) -> None:
        if self.experiment not in CC_EXPERIMENTS:
            raise ConfigError(f"unknown experiment {self.experiment!r}")
        if self.k not in (4, 6, 8):
            raise ConfigError(f"--k {self.k}: the comparison runs on FatTree(4), (6) or (8)")
        check_declared(self)
        if not 0.01 <= self.hot_factor < 1:
            raise ConfigError(f"--hot-factor {self.hot_factor}: the hot link's share of its rate "
                              "must be within 0.01..1")
        for s in self.schemes:
            if CC_SCHEMES[s][0] in COUPLED_CONGESTION_CONTROLS:
                check_cc(CC_SCHEMES[s][0], flag="--schemes")
        if self.experiment == "hotspot" and self.time_s < 15:
            raise ConfigError(f"--time {self.time_s:g}: the hot spot needs at least 15 s "
                              "(5 s before, during and after)")

    def points(self) -> list[str]:
        """One run per scheme, each on its own network."""
        return list(self.schemes)

    def sweep_config(self, scheme: str) -> "SweepConfig":
        """The one-run FatTree sweep of a scheme."""
        cc, subflows = CC_SCHEMES[scheme]
        return SweepConfig(k=self.k, workloads=("one_to_one",), subflows=(subflows or self.subflows,),
                           link=self.link, time_s=self.time_s, warmup_s=self.warmup, seed=self.seed,
                           fabric=self.fabric, cc=cc, results=self.scheme_dir(scheme))

    def scheme_dir(self, scheme: str) -> Path:
        return records.cc_compare_scheme(self.results, self.experiment, self.k, scheme)


def kernel_schemes(given: tuple[str, ...] | None,
                   choices: tuple[str, ...]) -> tuple[tuple[str, ...], str]:
    """(schemes, note): the schemes asked for, refused in one line if this
    kernel cannot run a coupled one of them; or by default every one of
    `choices` it can run, the note saying which were left out and why."""
    coupled = [s for s in (choices if given is None else given)
               if CC_SCHEMES.get(s, ("",))[0] in COUPLED_CONGESTION_CONTROLS]
    if not coupled or coupled_cc_supported():
        return (choices if given is None else given), ""
    why = default_cc()[1].split(": ", 1)[1]
    if given is not None:
        raise ConfigError(f"--schemes {','.join(coupled)}: " + why)
    kept = tuple(s for s in choices if s not in coupled)
    return kept, f"default schemes {','.join(kept)}: " + why


@dataclass(frozen=True)
class AlgorithmsConfig(CcCompareConfig):
    """`run_mptcp.sh algorithms` (paper Fig. 9-10): no link is slowed."""
    HIDDEN_OPTIONS = ("hot_factor",)


@dataclass(frozen=True)
class HotspotConfig(CcCompareConfig):
    """`run_mptcp.sh hotspot` (paper Fig. 11): a core link slowed mid-run."""
    experiment: str = "hotspot"
    time_s: float = again(LongFlowSettings, "time_s", 60.0)
