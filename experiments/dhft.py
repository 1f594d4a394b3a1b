"""`dhft`, the dual-homed FatTree: aggregate throughput against rack locality and
against load (paper Section 5, Fig. 15-16).

Three schemes run the same traffic matrix:

* TCP on DHFT: each flow uses one of its sender's two interfaces, drawn at
  random per flow, towards the receiver's interface on the same plane
  (dctopo.DHFT: the planes never meet).
* MPTCP on DHFT: the initial subflow as TCP's, then the path manager opens
  the others alternately on the other plane and the same one, so
  `subflows` are split evenly over both interfaces; within a plane they
  differ by source port, and ECMP hashes them over the plane's paths.
* TCP on the perfect switch (dctopo.PerfectSwitch): the same hosts on one
  non-blocking switch, the paper's control.

Two sweeps: `locality`, permutation matrices with a fraction of rack-local
flows; `load`, random destinations with C connections per host. The network
of each topology is built once and kept for all its runs.

Results: results/dhft<k>/<sweep>/<scheme>/<value>/run.json, plus cpu.csv and
the iperf3 logs, one folder per point.
"""
from __future__ import annotations


from dctopo import DHFT, PerfectSwitch
from experiments.config import DhftPoint
from experiments.racknet import RackExperiment, RackNetwork

SCHEME_LABELS = {"tcp_dhft": "TCP on DHFT", "mptcp_dhft": "MPTCP on DHFT",
                 "tcp_perfect": "TCP on the perfect switch"}
TOPOLOGIES = {"dhft": DHFT, "perfect": PerfectSwitch}


class DhftExperiment(RackExperiment):
    name = "dhft"
    MPTCP_SCHEMES = ("mptcp_dhft",)

    def network_key(self, p: DhftPoint) -> str:
        return p.topology

    def topology(self, topology: str):
        return TOPOLOGIES[topology](k=self.cfg.k, hosts_per_rack=self.cfg.hosts_per_rack)

    def built_notes(self, net: RackNetwork) -> list[str]:
        return [f"{net.topo.switch_ports()} switch ports"]

    def describe(self, p: DhftPoint) -> str:
        what = f"{p.x:.0%} rack-local" if p.sweep == "locality" else f"{p.x:g} connections per host"
        return (f"dhft{self.cfg.k} {p.sweep} {SCHEME_LABELS[p.scheme]}, {what}, "
                f"{self.cfg.time_s:g} s after {self.cfg.warmup:g} s warm-up")

    def config_record(self, net: RackNetwork, p: DhftPoint, subflows: int) -> dict:
        cfg = self.cfg
        return {
            "k": cfg.k, "hosts_per_rack": net.topo.hosts_per_rack, "sweep": p.sweep,
            "scheme": p.scheme, "topology": p.topology, "workload": p.workload, "x": p.x,
            "subflows": subflows, **cfg.settings_record(),
        }
