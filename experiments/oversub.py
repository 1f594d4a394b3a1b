"""E8, the 4:1 oversubscribed FatTree (paper §4.3.3): MPTCP with four
subflows against single-path TCP on the same traffic matrix, as a gain
(MPTCP's aggregate over TCP's), against load (connections per host, with
permutation and random matrices; paper Fig. 7) and against locality (one
flow per host, a share of them to a random host of the sender's rack;
paper Fig. 8).

The network is FatTree(k, oversubscription=ratio): ratio * k/2 hosts under
each edge switch and its k/2 uplinks at the link rate (dctopo.FatTree). It is
built once; TCP and MPTCP run the same matrix one after the other.

Results: results/oversub<k>/<sweep>/<matrix>/<scheme>/<value>/run.json, with
cpu.csv and the driver's logs, one folder per run.
"""
from __future__ import annotations


from dctopo import FatTree
from experiments.config import OversubPoint
from experiments.racknet import RackExperiment, RackNetwork


class OversubExperiment(RackExperiment):
    name = "oversub"
    MPTCP_SCHEMES = ("mptcp",)

    def network_key(self, p: OversubPoint) -> str:
        return "oversub"

    def network(self, key: str) -> RackNetwork:
        return RackNetwork(FatTree(k=self.cfg.k, oversubscription=self.cfg.ratio), self.cfg)

    def prepare(self, net: RackNetwork) -> None:
        self.say(f"built FatTree({self.cfg.k}) oversubscribed {self.cfg.ratio}:1 on fabric "
                 f"{net.fabric.name}: {len(net.fabric.hosts())} hosts, "
                 f"{self.cfg.hosts_per_rack} per rack, {net.topo.switch_ports()} switch ports")

    def describe(self, p: OversubPoint) -> str:
        what = (f"{p.x:.0%} rack-local" if p.sweep == "locality"
                else f"{p.matrix}, {p.x:g} connections per host")
        scheme = f"MPTCP-{self.cfg.subflows}" if p.scheme == "mptcp" else "TCP"
        return (f"oversub{self.cfg.k} {p.sweep} {scheme}, {what}, "
                f"{self.cfg.time_s:g} s after {self.cfg.warmup:g} s warm-up")

    def config_record(self, net: RackNetwork, p: OversubPoint, subflows: int) -> dict:
        cfg = self.cfg
        return {
            "k": cfg.k, "ratio": cfg.ratio, "hosts_per_rack": cfg.hosts_per_rack,
            "sweep": p.sweep, "matrix": p.matrix, "scheme": p.scheme, "workload": p.workload,
            "x": p.x, "subflows": subflows, "bw_mbps": cfg.link.bw_mbps,
            "queue_pkts": cfg.link.queue_pkts, "time_s": cfg.time_s, "warmup_s": cfg.warmup,
            "seed": cfg.seed, "fabric": cfg.fabric, "cc": cfg.cc,
        }
