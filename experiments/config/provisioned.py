"""The provisioned-paths experiment's config (TNC 2013 in README's
sources): two servers, four controller-provisioned paths over two long
links, MPTCP with coupled and uncoupled subflows against TCP on each path."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from base import records
from base.errors import ConfigError
from base.links import LinkParams
from base.platform import netem_available
from base.provisioning import (TESTBED_DESTINATIONS, TESTBED_LINKS, TESTBED_PATH_COUNT, TESTBED_SOURCES,
                               SwitchPath, choose_paths, link_disjoint, path_problem)
from base.options import again, links, names, option
from experiments.config.common import LongFlowSettings, Settings

# Each scheme: the paths its connection uses (0-based: all four, or the
# link-disjoint ones among them) and whether its sender runs the configured
# --cc or the kernel's uncoupled reno. "tcp" is one single-path run per path.
PROVISIONED_SCHEMES = ("tcp", "mptcp", "uncoupled", "mptcp_disjoint")
ALL_PATHS = tuple(range(TESTBED_PATH_COUNT))
# The paths the controller computes (base.provisioning.choose_paths): the
# testbed's own, the two link-disjoint ones first.
COMPUTED_PATHS = choose_paths(TESTBED_LINKS, TESTBED_SOURCES, TESTBED_DESTINATIONS, TESTBED_PATH_COUNT)
DISJOINT = link_disjoint(COMPUTED_PATHS)
# The testbed's long links: Amsterdam-Geneva, taken as 20 ms one way.
LONG_DELAY_MS = 20.0


@dataclass(frozen=True)
class ProvisionedPoint:
    """One run: a scheme, and for "tcp" the one path it takes; an MPTCP
    connection opens its subflows on its paths in the order of `order`."""
    scheme: str
    path: int | None = None
    order: tuple[int, ...] = ALL_PATHS
    disjoint: tuple[int, ...] = DISJOINT        # the link-disjoint paths of the path set
    variant: str = ""                           # its folder's suffix (variant_label)

    @property
    def paths(self) -> tuple[int, ...]:
        """Its paths, the first one the initial subflow's."""
        if self.scheme == "tcp":
            return (self.path,)
        mine = self.disjoint if self.scheme == "mptcp_disjoint" else ALL_PATHS
        return tuple(i for i in self.order if i in mine)

    @property
    def label(self) -> str:
        """Its folder: tcp_p1 .. tcp_p4, or the scheme."""
        return f"tcp_p{self.path + 1}" if self.scheme == "tcp" else self.scheme

    def plan_text(self) -> str:
        """Its scheme and paths, numbered from 1 as --order and --paths number them."""
        return f"{self.scheme} on path{'s' * (len(self.paths) > 1)} {','.join(str(i + 1) for i in self.paths)}"

    def run_dir(self, results: Path, fabric: str) -> Path:
        return records.provisioned_run(results, fabric, self.variant, self.label)


def variant_label(order: tuple[int, ...], paths: tuple[SwitchPath, ...]) -> str:
    """"" for the computed paths in their own order; else "order3412"
    (1-based) and/or "paths-a1b1-a2b2-..." (the switches of each path): runs
    with another subflow order or path set go to a folder (and figure) of
    their own."""
    parts = []
    if tuple(order) != ALL_PATHS:
        parts.append("order" + "".join(str(i + 1) for i in order))
    if tuple(paths) != COMPUTED_PATHS:
        parts.append("paths-" + "-".join("".join(p) for p in paths))
    return "-".join(parts)


def switch_paths(text: str) -> tuple[SwitchPath, ...] | None:
    """--paths: "computed" -> None; "a1-b1,a2-b2" -> (("a1", "b1"), ("a2", "b2")).
    The config checks them against the testbed's links."""
    if text.strip() == "computed":
        return None
    return tuple(tuple(hop.strip() for hop in path.split("-")) for path in text.split(",") if path.strip())


def path_order(text: str) -> tuple[int, ...]:
    """--order "3,4,1,2" (the paths as numbered, from 1) -> (2, 3, 0, 1)."""
    try:
        return tuple(int(i) - 1 for i in text.split(",") if i.strip())
    except ValueError:
        raise ConfigError(f"--order {text!r}: expected a comma list of path numbers") from None


@dataclass(frozen=True)
class ProvisionedConfig(Settings):
    """TNC 2013 (van der Pol et al.): MPTCP over four provisioned paths, two
    of them link-disjoint, over two long links. The MPTCP schemes' sender
    runs --cc; the uncoupled one, reno."""
    schemes: tuple[str, ...] = names(PROVISIONED_SCHEMES, flag="--schemes", what="scheme")
    long: LinkParams = links("bw_mbps", "delay_ms", "queue_pkts",
                             factory=lambda: LinkParams(delay_ms=LONG_DELAY_MS))
    local_bw_mbps: float | None = option(None, flag="--local-bw", metavar="MBPS", low=0.01, high=10000.0,
                                         unit="Mb/s", default_text="that of the long links",
                                         help="rate of the link between a site's two switches in Mb/s")
    # As everywhere, a run is its warm-up, then --time counted (run_s in all).
    time_s: float = again(LongFlowSettings, "time_s", 60.0)
    settle_s: float = option(30.0, flag="--warmup", old=("--settle",), metavar="S", low=0.0, high=600.0,
                             unit="s", help="seconds before the paths' shares are counted")
    order: tuple[int, ...] = option(ALL_PATHS, flag="--order", metavar="1,2,3,4", parse=path_order,
                                    default_text="1,2,3,4",
                                    help="the order MPTCP opens its subflows on the paths, the first one "
                                         "the initial subflow's (another order goes to a folder of its own)")
    paths: tuple[SwitchPath, ...] | None = option(
        None, flag="--paths", metavar="P1,P2,P3,P4", parse=switch_paths, default_text="computed",
        help="the four paths by switch from h1's side, as a1-b1,a2-b2,a1-a2-b2,a2-a1-b1; 'computed': "
             "the controller's choice, link-disjoint paths first (another set goes to a folder of its own)")
    fabric: str = again(LongFlowSettings, "fabric", "l3")

    @property
    def warmup(self) -> float:
        return self.settle_s

    @property
    def run_s(self) -> float:
        """The whole run: the warm-up, then the counted time."""
        return self.settle_s + self.time_s

    @property
    def local(self) -> LinkParams:
        """The links between a site's two switches: no delay, the long
        links' queue, their rate unless --local-bw says otherwise."""
        return LinkParams(bw_mbps=self.long.bw_mbps if self.local_bw_mbps is None else self.local_bw_mbps,
                          queue_pkts=self.long.queue_pkts)

    @property
    def switch_paths(self) -> tuple[SwitchPath, ...]:
        """The four paths, by switch from h1's side: as given, or computed."""
        return COMPUTED_PATHS if self.paths is None else tuple(tuple(p) for p in self.paths)

    @property
    def disjoint(self) -> tuple[int, ...]:
        """The link-disjoint paths among them (base.provisioning.link_disjoint)."""
        return link_disjoint(self.switch_paths)

    def validate(self) -> None:
        self.check_settings()
        if self.paths is not None:
            self._check_paths()
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

    def _check_paths(self) -> None:
        given = self.switch_paths
        if len(given) != TESTBED_PATH_COUNT:
            raise ConfigError(f"--paths: {len(given)} given; give {TESTBED_PATH_COUNT}, one per "
                              "interface of each server")
        for i, path in enumerate(given):
            problem = path_problem(path, TESTBED_LINKS, TESTBED_SOURCES, TESTBED_DESTINATIONS)
            if problem:
                raise ConfigError(f"--paths: path {i + 1} {'-'.join(path)}: {problem}")
        if len(set(given)) < len(given):
            raise ConfigError("--paths: a path is given twice")

    def points(self) -> list[ProvisionedPoint]:
        common = {"order": self.order, "disjoint": self.disjoint,
                  "variant": variant_label(self.order, self.switch_paths)}
        out: list[ProvisionedPoint] = []
        for s in self.schemes:
            out += ([ProvisionedPoint("tcp", p, **common) for p in ALL_PATHS] if s == "tcp"
                    else [ProvisionedPoint(s, **common)])
        return out
