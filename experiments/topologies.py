"""`topologies`, the paper's datacenters side by side (§4.3.1, Fig. 4-5): a
permutation matrix on FatTree, VL2 and BCube, TCP against MPTCP with 2..8
subflows, as each flow's goodput in % of one host link.

The networks, sized for two cores (the paper's are 128 to 1024 hosts):

  fattree  FatTree(4): 16 hosts, 1 link each.
  vl2      VL2(d_a=4, d_i=4) with 8 hosts per ToR and links above the ToRs
           at 4 times the rate (the paper's VL2 has 20 at 10 times): 32
           hosts; full bisection, 8 equal-cost paths between ToR pairs.
  bcube    BCube(3, 2): 27 hosts with 3 interfaces, hosts relaying; a flow's
           path is set by the level of its source address (dctopo.BCube).
           Three levels, as BCube(4,2) has, at less than half its hosts:
           with BCube's detours BCube(4,2)'s 64 hosts kept both cores
           above 90 % at 2.5 Mb/s from three subflows up.

TCP sends each flow from one of its host's interfaces (the one BCube level,
drawn at random per flow, seeded; FatTree and VL2 have one) and ECMP hashes
it; MPTCP's subflows alternate over the levels, so on BCube they use the
host's several interfaces and BCube's parallel paths, and within a level (or
on FatTree and VL2) differ by source port only (experiments/racknet.py).

With --topo FILE.py:NAME a user's topology (dctopo/custom.py) runs beside
them as NAME.

Results: results/topologies/<topology>/permutation/flows<N>/run.json, one
network per topology, built once for all its subflow counts.
"""
from __future__ import annotations

from pathlib import Path

from dctopo import VL2, BCube, DCTopo, FatTree
from experiments.config import TopologyPoint
from experiments.racknet import RackExperiment, RackNetwork
from base.links import LinkParams

VL2_HOSTS_PER_TOR = 8
VL2_UPPER_FACTOR = 4.0
BCUBE_N, BCUBE_K = 3, 2


def build(topology: str, link: LinkParams) -> DCTopo:
    """The network `topologies` runs under each name (the module's docstring)."""
    if topology == "fattree":
        return FatTree(k=4)
    if topology == "vl2":
        return VL2(d_a=4, d_i=4, hosts_per_tor=VL2_HOSTS_PER_TOR, link=link,
                   upper_factor=VL2_UPPER_FACTOR)
    if topology == "bcube":
        return BCube(n=BCUBE_N, k=BCUBE_K)
    raise ValueError(f"unknown topology {topology!r}")


def describe_topology(topo: DCTopo) -> str:
    if isinstance(topo, FatTree):
        return f"FatTree({topo.k})"
    if isinstance(topo, VL2):
        return (f"VL2(d_a={topo.d_a}, d_i={topo.d_i}), {topo.hosts_per_tor} hosts per ToR, "
                f"links above the ToRs at {VL2_UPPER_FACTOR:g}x")
    if isinstance(topo, BCube):
        return f"BCube({topo.n},{topo.k}), {topo.levels} interfaces per host"
    return getattr(topo, "name", type(topo).__name__)


class TopologiesExperiment(RackExperiment):
    name = "topologies"

    def network_key(self, p: TopologyPoint) -> str:
        return p.topology

    def topology(self, topology: str):
        if topology == self.cfg.custom:     # --topo FILE.py:NAME (dctopo/custom.py)
            from dctopo.custom import load
            return load(self.cfg.topo, self.cfg.link)
        return build(topology, self.cfg.link)

    def prepare(self, net: RackNetwork) -> None:
        self.say(f"built {describe_topology(net.topo)} on fabric {net.fabric.name}: "
                 f"{len(net.fabric.hosts())} hosts, {len(net.topo.switches())} switches, "
                 f"{net.topo.switch_ports()} switch ports")

    def describe(self, p: TopologyPoint) -> str:
        scheme = "TCP" if p.subflows == 1 else f"MPTCP-{p.subflows}"
        return (f"topologies {p.topology} permutation {scheme}, {self.cfg.time_s:g} s after "
                f"{self.cfg.warmup:g} s warm-up")

    def run_dir(self, p: TopologyPoint) -> Path:
        return p.run_dir(self.cfg.results)

    def subflows_of(self, p: TopologyPoint) -> int:
        return p.subflows

    def config_record(self, net: RackNetwork, p: TopologyPoint, subflows: int) -> dict:
        cfg = self.cfg
        return {
            "topology": p.topology, "network": describe_topology(net.topo),
            "workload": p.workload, "subflows": subflows,
            "interfaces_per_host": len(net.topo.host_addresses(net.fabric.hosts()[0])),
            **cfg.settings_record(),
        }
