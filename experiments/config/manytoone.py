"""The many-to-one experiment's config (paper §4.3.1, its BCube table):
every host of a BCube reads from its neighbours, one scheme at a time."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from base import records
from base.errors import ConfigError
from base.links import LinkParams
from experiments.config.algorithms import KernelSchemes, SchemePoint, by_cc, cc_schemes
from base.options import again, links, option
from experiments.config.common import LongFlowSettings, mptcp_subflows

# The paper's table: single-path TCP, EWTCP and MPTCP (LIA), the default;
# OLIA and uncoupled Reno subflows on request.
MANYTOONE_DEFAULT = ("tcp", "ewtcp", "lia")
MANYTOONE_SCHEMES = (*MANYTOONE_DEFAULT, "olia", "uncoupled")
# BCube sizes two cores can carry: (n, k) gives n^(k+1) hosts reading from
# (n-1)(k+1) neighbours each: BCube(4,1) 16 hosts x 6 flows, BCube(4,2) 64 x 9.
MAX_FLOWS = 200


@dataclass(frozen=True)
class ManyToOnePoint(SchemePoint):
    def run_dir(self, results: Path, n: int, k: int) -> Path:
        return records.manytoone_run(results, n, k, self.scheme)


@dataclass(frozen=True)
class ManyToOneConfig(LongFlowSettings, KernelSchemes):
    """BCube many-to-one (paper §4.3.1): every host reads from its
    neighbours, TCP against EWTCP and LIA."""
    HIDDEN_OPTIONS = ("cc",)            # each scheme names its own
    DEFAULT_SCHEMES = MANYTOONE_DEFAULT
    schemes: tuple[str, ...] = cc_schemes(
        MANYTOONE_SCHEMES, default=MANYTOONE_DEFAULT,
        default_text=f"{','.join(MANYTOONE_DEFAULT)}, the paper's, where this kernel can run them")
    n: int = option(4, flag="--n", metavar="N", low=2, high=8, help="BCube(n, k): switch ports")
    # levels - 1 (the paper's BCube(4,3) has 256 hosts); --k was its name.
    k: int = option(1, flag="--levels", old=("--k",), metavar="K", low=1, high=3,
                    help="BCube(n, k): levels above the first")
    # Subflows of a multipath scheme; None: one per level, as many as a
    # host has interfaces (one short path and k long ones to a neighbour).
    subflows_given: int | None = mptcp_subflows(None, "subflows of a multipath scheme",
                                                default_text="one per level, k+1")
    time_s: float = again(LongFlowSettings, "time_s", 40.0)
    # 5 Mb/s, as `topologies`'s BCube: the long paths relay through two hosts.
    link: LinkParams = links("bw_mbps", "queue_pkts", factory=lambda: LinkParams(bw_mbps=5.0))

    @property
    def plan_network(self) -> str:
        """What --plan says of its network: BCube(n, k), not a FatTree's k."""
        return f"BCube({self.n},{self.k})"

    @property
    def levels(self) -> int:
        return self.k + 1

    @property
    def subflows(self) -> int:
        return self.levels if self.subflows_given is None else self.subflows_given

    @property
    def n_flows(self) -> int:
        return self.n ** self.levels * (self.n - 1) * self.levels

    def validate(self) -> None:
        self.check_settings()
        if self.n_flows > MAX_FLOWS:
            raise ConfigError(f"BCube({self.n},{self.k}): {self.n ** self.levels} hosts reading from "
                              f"{(self.n - 1) * self.levels} neighbours each is {self.n_flows} "
                              f"flows; at most {MAX_FLOWS} on two cores")
        if self.fabric != "l3":
            raise ConfigError(f"--fabric {self.fabric}: BCube's hosts relay by routes only the l3 "
                              "fabric gives them")

    def points(self) -> list[ManyToOnePoint]:
        """One run per scheme, those of one congestion control adjacent."""
        return [ManyToOnePoint(s) for s in by_cc(self.schemes)]
