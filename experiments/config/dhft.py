"""The dual-homed FatTree's config (paper §4.3.2, Fig. 14-16, 18)."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from base import records
from base.errors import ConfigError
from base.options import names, option
from experiments.config.common import (MAX_SUBFLOWS, LongFlowSettings, SeedsSettings, check_lists_given,
                                       mptcp_subflows)

DHFT_SCHEMES = ("tcp_dhft", "mptcp_dhft", "tcp_perfect")
DHFT_SWEEPS = ("locality", "load")
DHFT_TOPOLOGY_OF_SCHEME = {"tcp_dhft": "dhft", "mptcp_dhft": "dhft", "tcp_perfect": "perfect"}
DHFT_MAX_FLOWS = 512
DHFT_LOADS = (0.25, 0.5, 1, 2, 4)      # the load sweep's connections per host, as many as fit


@dataclass(frozen=True)
class DhftPoint:
    """One run of `dhft`: a scheme on a traffic matrix."""
    sweep: str            # "locality" (x: fraction of rack-local flows) or "load" (x: connections per host)
    scheme: str           # tcp_dhft, mptcp_dhft or tcp_perfect
    x: float

    @property
    def topology(self) -> str:
        return DHFT_TOPOLOGY_OF_SCHEME[self.scheme]

    @property
    def workload(self) -> str:
        return "locality" if self.sweep == "locality" else "random"

    @property
    def label(self) -> str:
        return f"{round(100 * self.x)}pct" if self.sweep == "locality" else f"{self.x:g}conn"

    def run_dir(self, results: Path, k: int) -> Path:
        return records.dhft_run(results, k, self.sweep, self.scheme, self.label)


def check_dhft(k: int, subflows: int) -> None:
    """DHFT's arity, and MPTCP's subflows over a host's two interfaces."""
    if k not in (4, 8):
        raise ConfigError(f"--k {k}: DHFT needs k divisible by 4, 4 or 8")
    if not 2 <= subflows <= MAX_SUBFLOWS:
        raise ConfigError(f"--subflows {subflows}: MPTCP on DHFT needs 2..{MAX_SUBFLOWS} "
                          "subflows (at least one per interface)")


@dataclass(frozen=True)
class DhftConfig(SeedsSettings, LongFlowSettings):
    """Paper Fig. 14-16, 18: dual-homed FatTree, throughput against locality and load."""
    k: int = option(4, flag="--k", metavar="K", help="switch arity, 4 or 8")
    hosts_per_rack: int | None = option(None, flag="--hosts-per-rack", metavar="N", low=2, high=16,
                                        help="hosts on each pair of edge switches",
                                        default_text="the paper's 2k/3, rounded")
    sweeps: tuple[str, ...] = names(DHFT_SWEEPS, flag="--sweeps", what="sweep")
    localities: tuple[float, ...] = option((0.0, 0.25, 0.5, 0.75, 1.0), flag="--localities",
                                           low=0.0, high=1.0,
                                           help="fractions of rack-local flows of the locality sweep")
    # Connections per host; below 1 only that share of the hosts sends (the
    # paper's light loads, where the core is not yet the bottleneck). None:
    # DHFT_LOADS, those that fit this k.
    loads: tuple[float, ...] | None = option(
        None, flag="--loads", help="connections per host of the load sweep",
        default_text=f"{','.join(f'{c:g}' for c in DHFT_LOADS)}, those within {DHFT_MAX_FLOWS} flows")
    subflows: int = mptcp_subflows(8, "MPTCP subflows per connection, split over both interfaces")

    def __post_init__(self):
        if self.loads is None:
            object.__setattr__(self, "loads", tuple(c for c in DHFT_LOADS if self.load_fits(c)))

    def load_fits(self, load: float) -> bool:
        return 1 <= round(load * self.n_hosts) <= DHFT_MAX_FLOWS

    @property
    def rack_size(self) -> int:
        if self.hosts_per_rack is None:
            return max(1, round(2 * self.k / 3))
        return self.hosts_per_rack

    @property
    def n_hosts(self) -> int:
        return self.k * (self.k // 2) * self.rack_size

    def racks(self) -> dict[str, str]:
        """host -> rack of DHFT(k) as dctopo names them, computed here without
        Mininet so that bad input is refused before anything is imported."""
        return {f"h{p}_{r}_{i}": f"{p}_{r}" for p in range(self.k) for r in range(self.k // 2)
                for i in range(self.rack_size)}

    def validate(self) -> None:
        from dctopo.workloads import make_rack_matrix   # stdlib only
        check_dhft(self.k, self.subflows)
        self.check_settings()
        self.check_seeds()
        check_lists_given(self.sweeps, ("locality", "--localities", self.localities),
                          ("load", "--loads", self.loads))
        racks = self.racks()
        for x in self.localities:
            try:
                make_rack_matrix("locality", list(racks), racks, x, self.seed)
            except ValueError as exc:
                raise ConfigError(f"--localities: {exc} (racks of {self.rack_size})") from None
        for c in self.loads:
            if not self.load_fits(c):
                raise ConfigError(f"--loads {c:g}: connections per host must be within "
                                  f"{1 / self.n_hosts:.2g}..{DHFT_MAX_FLOWS // self.n_hosts} on "
                                  f"DHFT({self.k}) ({self.n_hosts} hosts, at most "
                                  f"{DHFT_MAX_FLOWS} flows)")

    def seed_points(self) -> list[DhftPoint]:
        """Every run; those on the same topology are adjacent (one network
        is built per topology)."""
        xs = {"locality": self.localities, "load": self.loads}
        return [DhftPoint(sweep, scheme, float(x))
                for topology in ("dhft", "perfect")
                for sweep in self.sweeps for x in xs[sweep]
                for scheme in DHFT_SCHEMES if DHFT_TOPOLOGY_OF_SCHEME[scheme] == topology]
