"""`oversub`'s config: the 4:1 oversubscribed FatTree (paper §4.3.3, Fig. 7-8)."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from base import records
from base.errors import ConfigError
from base.options import again, names, option
from experiments.config.common import LongFlowSettings, SeedsSettings, check_lists_given, mptcp_subflows
from experiments.config.dhft import DhftConfig

OVERSUB_SWEEPS = ("load", "locality")
OVERSUB_MATRICES = ("permutation", "random")     # the load sweep's; locality's is random
OVERSUB_SCHEMES = ("tcp", "mptcp")
OVERSUB_MAX_FLOWS = 512
OVERSUB_LOADS = (0.0625, 0.125, 0.25, 0.5, 1, 2)   # the load sweep's, as many as fit
OVERSUB_KS = (4, 6, 8)    # arities run here; k=6 is the smallest whose model has Fig. 7's peak


def arity_words(ks: tuple[int, ...]) -> str:
    """(4, 6, 8) -> "4, 6 or 8", for help texts and errors."""
    return ", ".join(map(str, ks[:-1])) + f" or {ks[-1]}"


def oversubscribed_hosts(k: int, ratio: int) -> int:
    """Hosts of FatTree(k, oversubscription=ratio): ratio * k/2 per edge switch."""
    return k * (k // 2) * (k // 2 * ratio)


@dataclass(frozen=True)
class OversubscribedSettings(LongFlowSettings):
    """Long flows on FatTree(k, oversubscription=ratio): `oversub` and the short flows."""
    k: int = option(4, flag="--k", metavar="K", help="switch arity, 4, 6 or 8")
    ratio: int = option(4, flag="--ratio", metavar="N",
                        help="oversubscription: hosts per rack over its k/2 uplinks, as a multiple")

    @property
    def hosts_per_rack(self) -> int:
        return self.k // 2 * self.ratio

    @property
    def n_hosts(self) -> int:
        return oversubscribed_hosts(self.k, self.ratio)

    def check_network(self) -> None:
        if self.k not in OVERSUB_KS:
            raise ConfigError(f"--k {self.k}: the oversubscribed FatTree runs at k={arity_words(OVERSUB_KS)}")
        if not 1 <= self.ratio <= 8 or self.n_hosts > 512:
            raise ConfigError(f"--ratio {self.ratio}: within 1..8 and at most 512 hosts "
                              f"(k={self.k} gives {self.n_hosts})")


@dataclass(frozen=True)
class OversubPoint:
    """One run of `oversub`: TCP or MPTCP on one traffic matrix."""
    sweep: str            # "load" (x: connections per host) or "locality" (x: rack-local share)
    matrix: str           # permutation or random
    scheme: str           # tcp or mptcp
    x: float

    @property
    def workload(self) -> str:
        """The matrix's name in workloads.make_rack_matrix."""
        return "random_locality" if self.sweep == "locality" else self.matrix

    @property
    def label(self) -> str:
        return f"{round(100 * self.x)}pct" if self.sweep == "locality" else f"{self.x:g}conn"

    def run_dir(self, results: Path, k: int) -> Path:
        return records.oversub_run(results, k, self.sweep, self.matrix, self.scheme, self.label)


@dataclass(frozen=True)
class OversubConfig(SeedsSettings, OversubscribedSettings):
    """Paper Fig. 7-8: 4:1 oversubscribed FatTree, MPTCP's gain over TCP
    against load and locality."""
    sweeps: tuple[str, ...] = names(OVERSUB_SWEEPS, flag="--sweeps", what="sweep")
    matrices: tuple[str, ...] = names(OVERSUB_MATRICES, flag="--matrices", what="matrix",
                                      of="the load sweep's: ")
    # Connections per host. At k=4 and 4:1 there are 64 hosts: 1/64 is one
    # flow; the paper's peak is at 0.25, where the uplinks just fill.
    # None: OVERSUB_LOADS, those that fit this k.
    loads: tuple[float, ...] | None = option(
        None, flag="--loads", help="connections per host of the load sweep",
        default_text=f"{','.join(f'{c:g}' for c in OVERSUB_LOADS)}, those within {OVERSUB_MAX_FLOWS} flows")
    localities: tuple[float, ...] = again(DhftConfig, "localities", (0.0, 0.25, 0.5, 0.75, 1.0))
    subflows: int = mptcp_subflows(4, "MPTCP subflows per connection")    # Fig. 7-8's

    def __post_init__(self):
        if self.loads is None:
            object.__setattr__(self, "loads", tuple(c for c in OVERSUB_LOADS if self.load_fits(c)))

    def load_fits(self, load: float) -> bool:
        return 1 <= round(load * self.n_hosts) <= OVERSUB_MAX_FLOWS

    def validate(self) -> None:
        self.check_network()
        self.check_settings()
        self.check_seeds()
        check_lists_given(self.sweeps, ("locality", "--localities", self.localities),
                          ("load", "--loads", self.loads))
        for c in self.loads:
            if not self.load_fits(c):
                raise ConfigError(f"--loads {c:g}: connections per host must be within "
                                  f"{1 / self.n_hosts:.2g}..{OVERSUB_MAX_FLOWS // self.n_hosts} "
                                  f"({self.n_hosts} hosts, at most {OVERSUB_MAX_FLOWS} flows)")

    def seed_points(self) -> list[OversubPoint]:
        """Every run, on one network; TCP and MPTCP of a matrix side by side."""
        load = [OversubPoint("load", m, s, float(x)) for m in self.matrices
                for x in self.loads for s in OVERSUB_SCHEMES]
        local = [OversubPoint("locality", "random", s, float(x)) for x in self.localities
                 for s in OVERSUB_SCHEMES]
        return (load if "load" in self.sweeps else []) + (local if "locality" in self.sweeps else [])
