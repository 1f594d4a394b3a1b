"""The provisioned-paths experiment's config (E10, seeds/004 in README's
sources): two servers, four controller-provisioned paths over two long
links, MPTCP with coupled and uncoupled subflows against TCP on each path."""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from base import records
from base.errors import ConfigError
from base.links import LinkParams
from base.platform import netem_available
from experiments.config.common import check_choices, check_run_settings, machine_cc

# Each scheme: the paths its connection uses (0-based, 0 and 1 are the
# link-disjoint ones) and whether its sender runs the configured --cc or
# the kernel's uncoupled reno. "tcp" is one single-path run per path.
PROVISIONED_SCHEMES = ("tcp", "mptcp", "uncoupled", "mptcp_disjoint")
ALL_PATHS = (0, 1, 2, 3)
DISJOINT = (0, 1)
PATHS_OF_SCHEME = {"mptcp": ALL_PATHS, "uncoupled": ALL_PATHS, "mptcp_disjoint": DISJOINT}
# The testbed's long links: Amsterdam-Geneva, taken as 20 ms one way.
LONG_DELAY_MS = 20.0


@dataclass(frozen=True)
class ProvisionedPoint:
    """One run: a scheme, and for "tcp" the one path it takes; an MPTCP
    connection opens its subflows on its paths in the order of `order`."""
    scheme: str
    path: int | None = None
    order: tuple[int, ...] = ALL_PATHS

    @property
    def paths(self) -> tuple[int, ...]:
        """Its paths, the first one the initial subflow's."""
        if self.scheme == "tcp":
            return (self.path,)
        return tuple(i for i in self.order if i in PATHS_OF_SCHEME[self.scheme])

    @property
    def label(self) -> str:
        """Its folder: tcp_p1 .. tcp_p4, or the scheme."""
        return f"tcp_p{self.path + 1}" if self.scheme == "tcp" else self.scheme

    def run_dir(self, results: Path, fabric: str) -> Path:
        return records.provisioned_run(results, fabric, order_label(self.order), self.label)


def order_label(order: tuple[int, ...]) -> str:
    """"" for the paths' own order, else "order3412" (1-based): runs with
    another subflow order go to a folder (and figure) of their own."""
    return "" if tuple(order) == ALL_PATHS else "order" + "".join(str(i + 1) for i in order)


@dataclass(frozen=True)
class ProvisionedConfig:
    """Everything `run_mptcp.sh provisioned` was asked to do."""
    schemes: tuple[str, ...] = PROVISIONED_SCHEMES
    long: LinkParams = field(default_factory=lambda: LinkParams(delay_ms=LONG_DELAY_MS))
    local_bw_mbps: float | None = None      # None: the long links' rate
    time_s: float = 90.0
    settle_s: float = 30.0                  # the path shares count after this
    order: tuple[int, ...] = ALL_PATHS      # the order MPTCP opens subflows on the paths
    seed: int = 0
    fabric: str = "l3"
    cc: str = field(default_factory=machine_cc)     # the MPTCP schemes' sender; uncoupled: reno
    results: Path = Path("results")

    @property
    def local(self) -> LinkParams:
        """The links between a site's two switches: no delay, the long
        links' queue, their rate unless --local-bw says otherwise."""
        return LinkParams(bw_mbps=self.long.bw_mbps if self.local_bw_mbps is None else self.local_bw_mbps,
                          queue_pkts=self.long.queue_pkts)

    def validate(self) -> None:
        check_choices("--schemes", "scheme", self.schemes, PROVISIONED_SCHEMES)
        check_run_settings(self.time_s, 0.0, self.fabric, self.cc, self.seed)
        self.long.validate()
        if self.local_bw_mbps is not None and not 0.01 <= self.local_bw_mbps <= 10000:
            raise ConfigError(f"--local-bw {self.local_bw_mbps:g}: link rate must be within "
                              "0.01..10000 Mb/s")
        if self.fabric != "l3" and self.long.delay_ms and not netem_available():
            # Without sch_netem delay comes from the nfqueue delay line, which
            # sees only what a namespace's IP stack receives: never what Open
            # vSwitch forwards between switch ports.
            raise ConfigError(f"--fabric {self.fabric} with --delay {self.long.delay_ms:g}: this "
                              "kernel has no sch_netem, and the openflow fabric's switches can "
                              "delay nothing without it; use --fabric l3 or --delay 0")
        if sorted(self.order) != list(ALL_PATHS):
            raise ConfigError(f"--order {','.join(str(i + 1) for i in self.order)}: give each of "
                              "the paths 1,2,3,4 once")
        if not 0 <= self.settle_s < self.time_s - 1:
            raise ConfigError(f"--settle {self.settle_s:g}: must be within 0 and the run's "
                              f"length less a second ({self.time_s:g} s)")

    def points(self) -> list[ProvisionedPoint]:
        out: list[ProvisionedPoint] = []
        for s in self.schemes:
            out += ([ProvisionedPoint("tcp", p, self.order) for p in ALL_PATHS] if s == "tcp"
                    else [ProvisionedPoint(s, order=self.order)])
        return out
