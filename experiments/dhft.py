"""E7, the dual-homed FatTree: aggregate throughput against rack locality and
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

import random
import statistics
from pathlib import Path

from dctopo import DHFT, PerfectSwitch
from experiments.config import DhftConfig, DhftPoint
from emulator.network import Network
from experiments.runner import Experiment
from experiments.longflows import PAYLOAD_PER_FRAME, mptcp_counters, run_flags, subflows_by_flow
from emulator.traffic.common import FlowEndpoints
from kernel import transport
from monitor import CpuMonitor
from workloads import TrafficMatrix, make_rack_matrix

SCHEME_LABELS = {"tcp_dhft": "TCP on DHFT", "mptcp_dhft": "MPTCP on DHFT",
                 "tcp_perfect": "TCP on the perfect switch"}
TOPOLOGIES = {"dhft": DHFT, "perfect": PerfectSwitch}


class DhftNetwork(Network):
    """DHFT(k) or PerfectSwitch(k) on a fabric, every host ready for MPTCP."""

    def __init__(self, topology: str, cfg: DhftConfig):
        super().__init__(TOPOLOGIES[topology](k=cfg.k, hosts_per_rack=cfg.hosts_per_rack),
                         cfg.link, cfg.cc, seed=cfg.seed, fabric=cfg.fabric)

    def endpoints(self, matrix: TrafficMatrix, seed: int) -> list[FlowEndpoints]:
        """Ports as the driver gives them, and for each flow a plane drawn
        at random (seeded): its sender's and receiver's address on it."""
        rng = random.Random(f"planes:{matrix.workload}:{matrix.param}:{seed}")
        flows = self.driver.endpoints(list(matrix.flows))
        for f in flows:
            src, dst = self.topo.host_addresses(f.src), self.topo.host_addresses(f.dst)
            plane = rng.randrange(min(len(src), len(dst)))
            f.src_ip, f.dst_ip = src[plane], dst[plane]
        return flows

    def subflow_paths(self, f: FlowEndpoints, subflows: int) -> list[tuple[str, str]]:
        """(local, remote) addresses of the subflows after the first: planes
        alternate starting with the one the first subflow does not use."""
        src, dst = self.topo.host_addresses(f.src), self.topo.host_addresses(f.dst)
        first = src.index(f.src_ip)
        planes = min(len(src), len(dst))
        return [(src[(first + i) % planes], dst[(first + i) % planes]) for i in range(1, subflows)]

    def arm(self, flows: list[FlowEndpoints], subflows: int) -> None:
        self.pm.reset()
        self.pm.forget_expansions()
        if subflows > 1:
            for f in flows:
                self.pm.expand(f.src, (f.src_ip, f.client_port), (f.dst_ip, f.server_port),
                               subflows, paths=self.subflow_paths(f, subflows))

    def sent_by_interface(self) -> dict[int, int]:
        """Bytes the hosts have sent, summed by interface (port) number."""
        out: dict[int, int] = {}
        for host in self.fabric.hosts():
            for name, (_, sent) in transport.read_dev_bytes(self.fabric.pid(host)).items():
                port = int(name.rsplit("eth", 1)[1])
                out[port] = out.get(port, 0) + sent
        return out


class DhftExperiment(Experiment):
    name = "dhft"

    def points(self) -> list[DhftPoint]:
        return self.cfg.points()

    def network_key(self, p: DhftPoint) -> str:
        return p.topology

    def network(self, topology: str) -> DhftNetwork:
        return DhftNetwork(topology, self.cfg)

    def prepare(self, net: DhftNetwork) -> None:
        self.say(f"built {type(net.topo).__name__}({self.cfg.k}) on fabric "
                 f"{net.fabric.name}: {len(net.fabric.hosts())} hosts, "
                 f"{len(net.topo.switches())} switches, {net.topo.switch_ports()} switch ports")

    def describe(self, p: DhftPoint) -> str:
        what = f"{p.x:.0%} rack-local" if p.sweep == "locality" else f"{p.x:g} connections per host"
        return (f"dhft{self.cfg.k} {p.sweep} {SCHEME_LABELS[p.scheme]}, {what}, "
                f"{self.cfg.time_s:g} s after {self.cfg.warmup:g} s warm-up")

    def run_dir(self, p: DhftPoint) -> Path:
        return p.run_dir(self.cfg.results, self.cfg.k)

    def run_point(self, net: DhftNetwork, p: DhftPoint, folder: Path) -> dict:
        cfg = self.cfg
        racks = net.topo.racks()
        matrix = make_rack_matrix(p.workload, net.fabric.hosts(), racks, p.x, cfg.seed)
        flows = net.endpoints(matrix, cfg.seed)
        subflows = cfg.subflows if p.scheme == "mptcp_dhft" else 1
        net.arm(flows, subflows)
        cpu = CpuMonitor(interval_s=1.0)
        counters, sent = mptcp_counters(net.fabric), net.sent_by_interface()
        try:
            outcomes = net.driver.run(flows, subflows > 1, cfg.time_s, folder / "iperf",
                                      on_started=cpu.start, warmup_s=cfg.warmup,
                                      bind_servers=subflows == 1)
        finally:
            cpu.stop()
        counters = transport.counter_delta(counters, mptcp_counters(net.fabric))
        sent = {port: n - sent.get(port, 0) for port, n in net.sent_by_interface().items()}
        cpu.write_csv(folder / "cpu.csv")
        return self._record(net, p, matrix, outcomes, subflows, cpu, counters, sent)

    def summarise(self, record: dict) -> str:
        return (f"aggregate {record['aggregate_mbps']:.1f} Mb/s "
                f"({record['pct_of_host_links']:.0f} % of the hosts' links), "
                f"{record['local_fraction']:.0%} rack-local, cpu {record['cpu_mean_pct']} %")

    def _record(self, net: DhftNetwork, p: DhftPoint, matrix: TrafficMatrix, outcomes,
                subflows: int, cpu: CpuMonitor, counters: dict[str, int],
                sent: dict[int, int]) -> dict:
        cfg = self.cfg
        racks = net.topo.racks()
        established = subflows_by_flow(net.pm)
        flows = []
        for o in outcomes:
            f = o.endpoints
            flows.append({
                "src": f.src, "dst": f.dst, "src_ip": f.src_ip, "dst_ip": f.dst_ip,
                "client_port": f.client_port, "server_port": f.server_port,
                "rack_local": racks[f.src] == racks[f.dst],
                "goodput_mbps": o.goodput_mbps, "seconds": o.seconds,
                "whole_run_mbps": o.whole_mbps, "first_data_s": o.first_data_s,
                "subflows_established": (
                    established.get((f.src_ip, f.client_port, f.dst_ip, f.server_port), 0)
                    if subflows > 1 else 0 if o.error else 1),
                "error": o.error,
            })
        flags = run_flags(subflows, flows, outcomes, cpu, counters) + net.health_flags()
        link_mbps = cfg.link.bw_mbps * PAYLOAD_PER_FRAME
        hosts = len(net.fabric.hosts())
        aggregate = sum(fl["goodput_mbps"] for fl in flows)
        total_sent = sum(sent.values())
        return {
            "config": {
                "k": cfg.k, "hosts_per_rack": net.topo.hosts_per_rack, "sweep": p.sweep,
                "scheme": p.scheme, "topology": p.topology, "workload": p.workload, "x": p.x,
                "subflows": subflows, "bw_mbps": cfg.link.bw_mbps,
                "queue_pkts": cfg.link.queue_pkts, "time_s": cfg.time_s,
                "warmup_s": cfg.warmup, "seed": cfg.seed, "fabric": cfg.fabric, "cc": cfg.cc,
            },
            "hosts": hosts,
            "switch_ports": net.topo.switch_ports(),
            "link_mbps": round(link_mbps, 4),
            "matrix": matrix.to_record(),
            "local_fraction": round(matrix.local_fraction(racks), 4),
            "flows": flows,
            "aggregate_mbps": round(aggregate, 3),
            "mean_flow_mbps": round(statistics.fmean(fl["goodput_mbps"] for fl in flows), 4),
            # Aggregate over what every host's one link could carry: 100 %
            # is the perfect switch's ceiling, 200 % DHFT's.
            "pct_of_host_links": round(100.0 * aggregate / (hosts * link_mbps), 2),
            "interface_share": {f"eth{port}": round(n / total_sent, 4) if total_sent else 0.0
                                for port, n in sorted(sent.items())},
            "cpu_mean_pct": cpu.mean_pct(),
            "kernel_counters": counters,
            "flags": flags,
        }
