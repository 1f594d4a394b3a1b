"""`oversub`, the 4:1 oversubscribed FatTree (paper §4.3.3): MPTCP with four
subflows against single-path TCP on the same traffic matrix, as a gain
(MPTCP's aggregate over TCP's), against load (connections per host, with
permutation and random matrices; paper Fig. 7) and against locality (one
flow per host, a share of them to a random host of the sender's rack;
paper Fig. 8).

The network is FatTree(k, oversubscription=ratio): ratio * k/2 hosts under
each edge switch and its k/2 uplinks at the link rate (dctopo.FatTree). It is
built once; TCP and MPTCP run the same matrix one after the other.

Each point's record also carries what the fluid model (dctopo/dctopo/fluid_model.py)
gives its matrix: TCP over ECMP and ideally pooled multipath, max-min fair,
on this network and, at the paper's ratio, on the paper's 512-host network
(FatTree(8) 4:1) under a matrix drawn the same way (unless this network is
the paper's). A k=4 network has too few uplinks for the paper's curve; the
model shows how far the shape moves.

Results: results/oversub<k>/<sweep>/<matrix>/<scheme>/<value>/run.json, with
cpu.csv and the driver's logs, one folder per run.
"""
from __future__ import annotations


from pathlib import Path

from dctopo import FatTree
from experiments.config import OversubPoint
from experiments.longflows import PAYLOAD_PER_FRAME
from experiments.racknet import RackExperiment, RackNetwork
from dctopo.fluid_model import EcmpModel
from dctopo.workloads import make_rack_matrix

PAPER_K, PAPER_RATIO = 8, 4     # the paper's 512-host 4:1 FatTree (§4.3.3)
MODEL_DRAWS = 10                # ECMP path draws the model's TCP rate is a mean over


class OversubExperiment(RackExperiment):
    name = "oversub"
    MPTCP_SCHEMES = ("mptcp",)

    def __init__(self, cfg, say=print):
        super().__init__(cfg, say)
        self._models: dict[tuple, dict] = {}
        self._ecmp: dict[tuple[int, int], EcmpModel] = {}

    def _ecmp_model(self, k: int, ratio: int) -> EcmpModel:
        if (k, ratio) not in self._ecmp:
            self._ecmp[(k, ratio)] = EcmpModel(FatTree(k=k, oversubscription=ratio), self.cfg.link.bw_mbps)
        return self._ecmp[(k, ratio)]

    def fluid(self, p: OversubPoint, pairs: list[tuple[str, str]]) -> dict:
        """The fluid model's rates for the point's matrix (`pairs`, as run)
        here and on the paper's network; once per matrix: TCP and MPTCP
        share it."""
        key = (p.sweep, p.matrix, p.x)
        if key not in self._models:
            cfg, link = self.cfg, self.cfg.link.bw_mbps * PAYLOAD_PER_FRAME
            here = self._ecmp_model(cfg.k, cfg.ratio).evaluate(pairs, MODEL_DRAWS, cfg.seed)
            record = {"model": "max-min fair fluid rates (dctopo/dctopo/fluid_model.py): TCP on one random ECMP path "
                               "per flow, mean over the draws; pooled: every flow over all its shortest paths",
                      "this_network": here.to_record(link), "paper_network": None}
            said = f"    fluid model: pooled / TCP {here.gain:.2f} on this network"
            # Not when this network is the paper's, nor at another ratio.
            if cfg.ratio == PAPER_RATIO and cfg.k != PAPER_K:
                paper = self._ecmp_model(PAPER_K, PAPER_RATIO)
                matrix = make_rack_matrix(p.workload, paper.topo.hosts(), paper.topo.racks(), p.x, cfg.seed)
                there = paper.evaluate(matrix.pairs(), MODEL_DRAWS, cfg.seed)
                record["paper_network"] = {
                    "k": PAPER_K, "ratio": PAPER_RATIO, "hosts": len(paper.access), "flows": len(matrix.flows),
                    "local_fraction": round(matrix.local_fraction(paper.topo.racks()), 4), **there.to_record(link)}
                said += f", {there.gain:.2f} on the paper's {len(paper.access)} hosts"
            self.say(said)
            self._models[key] = record
        return self._models[key]

    def run_point(self, net: RackNetwork, p: OversubPoint, folder: Path) -> dict:
        record = super().run_point(net, p, folder)
        record["fluid_model"] = self.fluid(p, [tuple(pair) for pair in record["matrix"]["flows"]])
        return record

    def topology(self, key: str) -> FatTree:
        return FatTree(k=self.cfg.k, oversubscription=self.cfg.ratio)

    def built_notes(self, net: RackNetwork) -> list[str]:
        return [f"oversubscribed {self.cfg.ratio}:1", f"{self.cfg.hosts_per_rack} hosts per rack",
                f"{net.topo.switch_ports()} switch ports"]

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
            "x": p.x, "subflows": subflows, **cfg.settings_record(),
        }
