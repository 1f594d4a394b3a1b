"""The link-failure experiment's config (paper Fig. 19, §6.2): a DHFT core
link degraded mid-run under a zero-locality permutation."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from base import records
from base.options import again, names, option
from experiments.config.common import LongFlowSettings, check_slowed_link, middle_third
from experiments.config.dhft import DhftConfig, check_dhft

LINKFAILURE_SCHEMES = ("tcp_dhft", "mptcp_dhft")


@dataclass(frozen=True)
class LinkFailurePoint:
    """One run: a scheme on the zero-locality permutation."""
    scheme: str           # tcp_dhft or mptcp_dhft
    workload: str = "locality"
    x: float = 0.0        # no flow stays in its rack: the core carries everything

    def run_dir(self, results: Path, k: int, fabric: str) -> Path:
        return records.linkfailure_run(results, k, fabric, self.scheme)


@dataclass(frozen=True)
class LinkFailureConfig(LongFlowSettings):
    """Paper Fig. 19: on DHFT(k), TCP against MPTCP, core link a0_0-c0 (both
    directions) at --factor of its rate during the middle third of the
    counted time."""
    k: int = option(4, flag="--k", metavar="K", help="DHFT arity, 4 or 8")
    hosts_per_rack: int | None = again(DhftConfig, "hosts_per_rack", None)
    schemes: tuple[str, ...] = names(LINKFAILURE_SCHEMES, flag="--schemes", what="scheme")
    subflows: int = again(DhftConfig, "subflows", 8)
    factor: float = option(0.1, flag="--factor", metavar="SHARE",     # the paper's 1 Gb/s -> 100 Mb/s
                           help="the degraded link's share of its rate")
    time_s: float = again(LongFlowSettings, "time_s", 60.0)

    @property
    def dhft(self) -> DhftConfig:
        """The same network as `dhft` would build (its rack size and checks)."""
        return DhftConfig(k=self.k, hosts_per_rack=self.hosts_per_rack, link=self.link,
                          seed=self.seed, fabric=self.fabric, cc=self.cc)

    @property
    def rack_size(self) -> int:
        return self.dhft.rack_size

    @property
    def window(self) -> tuple[float, float]:
        """Seconds since the traffic started during which the link is slow."""
        return middle_third(self.warmup, self.time_s)

    def validate(self) -> None:
        check_dhft(self.k, self.subflows)
        check_slowed_link("--factor", self.factor, self.time_s, "degraded")
        self.check_settings()

    def points(self) -> list[LinkFailurePoint]:
        return [LinkFailurePoint(s) for s in self.schemes]
