"""The link-failure experiment's config (paper Fig. 19, §6.2): a DHFT core
link degraded mid-run under a zero-locality permutation."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from base import records
from base.errors import ConfigError
from base.options import again, names, option
from experiments.config.common import LongFlowSettings
from experiments.config.dhft import DhftConfig, check_dhft

LINKFAILURE_SCHEMES = ("tcp_dhft", "mptcp_dhft")
# The counted time is cut in thirds: before, degraded, restored. Each third
# needs a few seconds for the flows to settle and a few to measure.
LINKFAILURE_MIN_TIME_S = 15.0


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
    """Everything `run_mptcp.sh linkfailure` was asked to do: on DHFT(k), core
    link a0_0-c0 (both directions) runs at `factor` of its rate during the
    middle third of the counted time, once per scheme."""
    k: int = option(4, flag="--k", metavar="K", help="DHFT arity, 4 or 8")
    hosts_per_rack: int | None = again(DhftConfig, "hosts_per_rack", None)
    schemes: tuple[str, ...] = names(LINKFAILURE_SCHEMES, flag="--schemes", choices=LINKFAILURE_SCHEMES,
                                     what="scheme", default_text="all")
    subflows: int = again(DhftConfig, "subflows", 8)
    factor: float = option(0.1, flag="--factor", metavar="SHARE",     # the paper's 1 Gb/s -> 100 Mb/s
                           help="the degraded link's share of its rate")
    time_s: float = again(LongFlowSettings, "time_s", 60.0)

    @property
    def dhft(self) -> DhftConfig:
        """The same network as E7 would build (its rack size and checks)."""
        return DhftConfig(k=self.k, hosts_per_rack=self.hosts_per_rack, link=self.link,
                          seed=self.seed, fabric=self.fabric, cc=self.cc)

    @property
    def rack_size(self) -> int:
        return self.dhft.rack_size

    @property
    def window(self) -> tuple[float, float]:
        """Seconds since the traffic started during which the link is slow."""
        return self.warmup + self.time_s / 3, self.warmup + 2 * self.time_s / 3

    def validate(self) -> None:
        check_dhft(self.k, self.subflows)
        if not 0.01 <= self.factor < 1:
            raise ConfigError(f"--factor {self.factor:g}: the degraded link's share of its rate "
                              "must be within 0.01..1")
        self.check_settings()
        if self.time_s < LINKFAILURE_MIN_TIME_S:
            raise ConfigError(f"--time {self.time_s:g}: the link failure needs at least "
                              f"{LINKFAILURE_MIN_TIME_S:g} s (a third before, during and after)")

    def points(self) -> list[LinkFailurePoint]:
        return [LinkFailurePoint(s) for s in self.schemes]
