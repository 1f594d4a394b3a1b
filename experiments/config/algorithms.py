"""The algorithms and hotspot experiments' config (paper Fig. 9-11):
congestion controls on the permutation, without and with a hot spot."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from base import records
from base.errors import ConfigError
from base.links import LinkParams
from base.options import again, check_declared, links, names, option
from experiments.config.common import (COUPLED_CONGESTION_CONTROLS, LongFlowSettings, WarmupFromRate,
                                       check_cc, check_slowed_link, coupled_cc_supported, default_cc,
                                       middle_third, mptcp_subflows, warmup_text, SWEEP_WARMUP_S_AT_10MBPS)
from experiments.config.fattree import SweepConfig

# The paper's algorithms (Section 3, Fig. 9-11) as (congestion control,
# subflows): "tcp" is single-path TCP; the others are MPTCP with the chosen
# subflow count, "uncoupled" running plain Reno on every subflow.
CC_SCHEMES = {"tcp": ("reno", 1), "uncoupled": ("reno", None), "ewtcp": ("ewtcp", None),
              "lia": ("lia", None), "olia": ("olia", None)}
CC_EXPERIMENTS = ("algorithms", "hotspot")


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
        raise ConfigError(f"--cc {','.join(coupled)}: " + why)
    kept = tuple(s for s in choices if s not in coupled)
    return kept, f"default --cc {','.join(kept)}: " + why


def cc_schemes(choices, **declared):
    """`--cc A,B,...` of an experiment comparing congestion controls (names
    of CC_SCHEMES); --schemes was its name."""
    of = declared.pop("of", "")
    return names(choices, flag="--cc", old=("--schemes",), what="congestion control",
                 of=f"{of}congestion controls compared, ", **declared)


class KernelSchemes:
    """A config whose --cc (of CC_SCHEMES, its `schemes`) default to those of
    its DEFAULT_SCHEMES this kernel can run (kernel_schemes)."""
    DEFAULT_SCHEMES = ()

    @classmethod
    def resolve(cls, given: dict) -> list[str]:
        given["schemes"], note = kernel_schemes(given.get("schemes"), cls.DEFAULT_SCHEMES)
        return [note]


@dataclass(frozen=True)
class SchemePoint:
    """One run of a scheme of CC_SCHEMES."""
    scheme: str

    @property
    def cc(self) -> str:
        return CC_SCHEMES[self.scheme][0]


def by_cc(schemes) -> list[str]:
    """The schemes, those of one congestion control adjacent (a network is
    built per congestion control: tcp and uncoupled are both reno)."""
    ccs = [CC_SCHEMES[s][0] for s in schemes]
    return sorted(schemes, key=lambda s: ccs.index(CC_SCHEMES[s][0]))


@dataclass(frozen=True)
class CcCompareConfig(WarmupFromRate, KernelSchemes):
    """Everything `run_mptcp.sh algorithms` or `run_mptcp.sh hotspot` was
    asked to do: one FatTree one_to_one run per scheme, the same
    traffic matrix for all. For `hotspot`, one core link runs at
    `hot_factor` of its rate during the middle third of the counted time.
    Its runs are the FatTree sweep's, so they take the sweep's warm-up."""
    warmup_at_10mbps = SWEEP_WARMUP_S_AT_10MBPS     # a class constant, not a field
    DEFAULT_SCHEMES = tuple(CC_SCHEMES)                 # those this kernel can run
    experiment: str = "algorithms"
    k: int = option(4, flag="--k", metavar="K", help="FatTree arity, 4, 6 or 8")
    schemes: tuple[str, ...] = cc_schemes(CC_SCHEMES, default_text="all that this kernel can run")
    subflows: int = mptcp_subflows(8, "subflows of the MPTCP schemes")
    link: LinkParams = links("bw_mbps", "queue_pkts", factory=LinkParams)
    time_s: float = again(LongFlowSettings, "time_s", 40.0)
    warmup_s: float | None = again(LongFlowSettings, "warmup_s", None,
                                   default_text=warmup_text(SWEEP_WARMUP_S_AT_10MBPS))
    seed: int = again(LongFlowSettings, "seed", 0)
    fabric: str = again(LongFlowSettings, "fabric", "l3")
    hot_factor: float = option(0.1, flag="--factor", old=("--hot-factor",), metavar="SHARE",
                               help="the hot link's share of its rate while slowed")
    results: Path = Path("results")

    @property
    def cc(self) -> str:
        """The congestion control the preflight checks: a coupled one if any
        scheme uses one (they are built and registered together)."""
        coupled = [CC_SCHEMES[s][0] for s in self.schemes if CC_SCHEMES[s][0] in COUPLED_CONGESTION_CONTROLS]
        return coupled[0] if coupled else "reno"

    @property
    def hot_window(self) -> tuple[float, float]:
        """Seconds since traffic started during which the hot link is slow."""
        return middle_third(self.warmup, self.time_s)

    def validate(self) -> None:
        if self.experiment not in CC_EXPERIMENTS:
            raise ConfigError(f"unknown experiment {self.experiment!r}")
        if self.k not in (4, 6, 8):
            raise ConfigError(f"--k {self.k}: the comparison runs on FatTree(4), (6) or (8)")
        check_declared(self)
        for s in self.schemes:
            if CC_SCHEMES[s][0] in COUPLED_CONGESTION_CONTROLS:
                check_cc(CC_SCHEMES[s][0], flag="--cc")
        if self.experiment == "hotspot":
            check_slowed_link("--factor", self.hot_factor, self.time_s, "hot")

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


@dataclass(frozen=True)
class AlgorithmsConfig(CcCompareConfig):
    """Paper Fig. 9-10: congestion controls compared on FatTree one_to_one."""
    HIDDEN_OPTIONS = ("hot_factor",)


@dataclass(frozen=True)
class HotspotConfig(CcCompareConfig):
    """Paper Fig. 11: a core link at a tenth of its rate mid-run, per
    congestion control; the link is slow during the counted time's middle
    third."""
    experiment: str = "hotspot"
    time_s: float = again(LongFlowSettings, "time_s", 60.0)
