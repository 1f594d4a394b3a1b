"""`topologies`'s config: FatTree, VL2 and BCube side by side (paper §4.3.1, Fig. 4-5)."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from base import records
from base.errors import ConfigError, clipped
from base.links import LinkParams
from base.options import links, names, option
from dctopo.custom_spec import split_spec
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
    topo: str | None = option(
        None, flag="--topo", metavar="FILE.py:NAME", default_text="none",
        help="your own topology beside them, named NAME: a Mininet Topo in FILE.py, as for "
             "mn --custom (docs/custom.md)")

    @property
    def custom(self) -> str | None:
        """The --topo's NAME, its results folder."""
        return split_spec(self.topo)[1] if self.topo is not None else None

    def validate(self) -> None:
        if self.topo is not None:
            if self.custom in TOPOLOGY_NAMES:
                raise ConfigError(f"--topo {clipped(self.topo)}: {self.custom} is a name of --topologies")
            if self.fabric not in ("l3", "model"):
                raise ConfigError(f"--topo with --fabric {self.fabric}: a custom topology runs on "
                                  "--fabric l3 or model")
            try:
                from dctopo.custom import load
            except ImportError:     # the check before the set-up: the run's own reads the file
                load = None
            if load is not None:
                load(self.topo, self.link)
        check_subflow_counts(self.subflows)
        if self.fabric != "l3" and "bcube" in self.topologies:
            raise ConfigError(f"--fabric {self.fabric}: BCube's hosts relay by routes only the l3 "
                              "fabric gives them")
        self.check_settings()
        self.check_seeds()

    def seed_points(self) -> list[TopologyPoint]:
        names = self.topologies + ((self.custom,) if self.topo is not None else ())
        return [TopologyPoint(t, n) for t in names for n in self.subflows]
