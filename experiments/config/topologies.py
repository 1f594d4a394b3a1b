"""`topologies`'s config: FatTree, VL2 and BCube side by side (paper §4.3.1, Fig. 4-5)."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from base import records
from base.errors import ConfigError
from base.links import LinkParams
from base.options import links, names, option
from experiments.config.common import LongFlowSettings, SeedsSettings, check_subflow_counts

# The networks, by name; what each is built as is experiments/topologies.py's.
TOPOLOGY_NAMES = ("fattree", "vl2", "bcube")


@dataclass(frozen=True)
class TopologyPoint:
    """One run of `topologies`: a permutation on one network with one subflow count."""
    topology: str
    subflows: int          # 1: TCP on one path (on BCube, one interface drawn at random)

    @property
    def workload(self) -> str:
        return "permutation"

    x = property(lambda self: 1.0)     # one connection per host: a permutation

    def run_dir(self, results: Path) -> Path:
        return records.topologies_run(results, self.topology, self.subflows)


@dataclass(frozen=True)
class TopologiesConfig(SeedsSettings, LongFlowSettings):
    """Paper Fig. 4-5: FatTree, VL2 and BCube under a permutation, TCP against MPTCP."""
    topologies: tuple[str, ...] = names(TOPOLOGY_NAMES, flag="--topologies", what="topology")
    subflows: tuple[int, ...] = option((1, 2, 3, 4, 6, 8), flag="--subflows", metavar="LIST",
                                       help="comma list of subflow counts, 1 = TCP")
    # 5 Mb/s: BCube's hosts relay through each other and its subflows detour;
    # BCube(3,2) ran at 40-69 % of two cores at 5 Mb/s (docs/experiments/topologies.md).
    link: LinkParams = links("bw_mbps", "queue_pkts", factory=lambda: LinkParams(bw_mbps=5.0))

    def validate(self) -> None:
        check_subflow_counts(self.subflows)
        if self.fabric != "l3" and "bcube" in self.topologies:
            raise ConfigError(f"--fabric {self.fabric}: BCube's hosts relay by routes only the l3 "
                              "fabric gives them")
        self.check_settings()
        self.check_seeds()

    def seed_points(self) -> list[TopologyPoint]:
        return [TopologyPoint(t, n) for t in self.topologies for n in self.subflows]
