"""Many-to-one on BCube (paper §4.3.1, the table after Fig. 11): every host
reads from each of its neighbours, the hosts one digit away at any level (a
distributed file system reading from nearby servers; the paper's BCube(4,3)
gives 12 per host). Each neighbour sends one long flow to the host.

A neighbour that differs in digit L is one hop away on level L and three
hops away on every other level (a detour through the relays, dctopo.BCube).
Single-path TCP takes the one-hop path: every flow starts on the level its
neighbour differs in, so a host's k+1 interfaces are each shared by the n-1
neighbours of their level. MPTCP's first subflow takes that path too and
its others start on the other levels, the long paths. What is measured is
what the paper tabulates, each host's total read rate, and how much of the
network's forwarding went to relaying (Ip ForwDatagrams of every host, per
datagram the hosts sent themselves): EWTCP, pushing equally on every path,
relays much; LIA should move its traffic to the short path.

Results: results/manytoone/bcube<n>-<k>/<scheme>/reads/run.json, one network
per scheme (its congestion control is every host's default).
"""
from __future__ import annotations

import statistics
from pathlib import Path

from dctopo import BCube
from emulator.traffic.common import FlowEndpoints
from experiments.config.manytoone import ManyToOnePoint
from experiments.longflows import PAYLOAD_PER_FRAME
from experiments.racknet import RackExperiment, RackNetwork
from kernel import transport
from dctopo.workloads import Flow, TrafficMatrix

SCHEME_LABELS = {"tcp": "TCP", "ewtcp": "EWTCP", "lia": "LIA (MPTCP)", "olia": "OLIA",
                 "uncoupled": "UNCOUPLED"}
# The paper's per-host read rates in BCube(4,3) with 100 Mb/s links (three
# of whose four NICs the reads can fill, so 300 Mb/s is the most): its table
# after Fig. 11.
PAPER_READ_MBPS = {"tcp": 297.0, "ewtcp": 229.0, "lia": 272.0}
PAPER_READ_MAX_MBPS = 300.0


def differing_level(topo: BCube, i: int, j: int) -> int:
    """The one level at which neighbours i and j differ."""
    levels = [lv for lv, (a, b) in enumerate(zip(topo.digits(i), topo.digits(j))) if a != b]
    if len(levels) != 1:
        raise ValueError(f"{topo.names[i]} and {topo.names[j]} are not neighbours")
    return levels[0]


def neighbour_reads(topo: BCube, seed: int) -> TrafficMatrix:
    """Every host receiving one flow from each of its neighbours (`seed`
    only goes into the record: the matrix has no randomness)."""
    flows = [Flow(topo.names[j], topo.names[i]) for i in range(len(topo.names))
             for j in topo.neighbours(i)]
    return TrafficMatrix("many_to_one", seed, tuple(flows))


class NeighbourNetwork(RackNetwork):
    """A BCube whose flows start on their direct path."""

    def endpoints(self, matrix: TrafficMatrix, seed: int) -> list[FlowEndpoints]:
        topo = self.topo
        flows = self.driver.endpoints(list(matrix.flows))
        for f in flows:
            i, j = topo.names.index(f.src), topo.names.index(f.dst)
            level = differing_level(topo, i, j)
            f.src_ip, f.dst_ip = topo.address(i, level), topo.address(j, level)
        return flows


def relay_counters(net: RackNetwork) -> dict[str, int]:
    """Datagrams every host relayed and sent itself, summed (Ip MIB)."""
    total = {"IpForwDatagrams": 0, "IpOutRequests": 0}
    for host in net.fabric.hosts():
        snmp = transport.read_snmp(net.fabric.pid(host), ("Ip",))
        for name in total:
            total[name] += snmp[name]
    return total


class ManyToOneExperiment(RackExperiment):
    name = "manytoone"
    MPTCP_SCHEMES = ("ewtcp", "lia", "olia", "uncoupled")
    network_class = NeighbourNetwork
    network_per_cc = True

    def topology(self, cc: str) -> BCube:
        return BCube(n=self.cfg.n, k=self.cfg.k)

    def prepare(self, net: RackNetwork) -> None:
        cfg = self.cfg
        self.say(f"built BCube({cfg.n},{cfg.k}) with cc {net.cc}: {len(net.fabric.hosts())} hosts "
                 f"reading from {(cfg.n - 1) * cfg.levels} neighbours each, {cfg.n_flows} flows")

    def describe(self, p: ManyToOnePoint) -> str:
        cfg = self.cfg
        scheme = SCHEME_LABELS[p.scheme] + ("" if p.scheme == "tcp" else f", {cfg.subflows} subflows")
        return f"manytoone BCube({cfg.n},{cfg.k}) {scheme}, {cfg.time_s:g} s after {cfg.warmup:g} s warm-up"

    def run_dir(self, p: ManyToOnePoint) -> Path:
        return p.run_dir(self.cfg.results, self.cfg.n, self.cfg.k)

    def matrix_on(self, topo: BCube, p: ManyToOnePoint) -> TrafficMatrix:
        return neighbour_reads(topo, self.cfg.seed)

    def run_point(self, net: RackNetwork, p: ManyToOnePoint, folder: Path) -> dict:
        before = relay_counters(net)
        record = super().run_point(net, p, folder)
        after = relay_counters(net)
        relayed = {name: after[name] - before[name] for name in after}
        link_mbps = self.cfg.link.bw_mbps * PAYLOAD_PER_FRAME
        reads: dict[str, float] = {}
        for f in record["flows"]:
            reads[f["dst"]] = reads.get(f["dst"], 0.0) + f["goodput_mbps"]
        per_host = sorted(reads.values())
        record["reads_mbps"] = {h: round(v, 3) for h, v in sorted(reads.items())}
        record["read_mean_mbps"] = round(statistics.fmean(per_host), 3)
        record["read_min_mbps"] = round(per_host[0], 3)
        # The most a host can read: every one of its interfaces full.
        record["read_max_mbps"] = round(self.cfg.levels * link_mbps, 3)
        record["read_pct_of_max"] = round(100.0 * record["read_mean_mbps"] / record["read_max_mbps"], 2)
        record["relay"] = {
            "forwarded": relayed["IpForwDatagrams"], "sent": relayed["IpOutRequests"],
            # Over the whole run, warm-up included; both directions (ACKs
            # follow their subflow's path back).
            "forwarded_per_sent": round(relayed["IpForwDatagrams"] / relayed["IpOutRequests"], 4)
            if relayed["IpOutRequests"] else 0.0,
        }
        return record

    def summarise(self, record: dict) -> str:
        return (f"per-host read {record['read_mean_mbps']:.2f} Mb/s ({record['read_pct_of_max']:.0f} % "
                f"of its interfaces), min {record['read_min_mbps']:.2f}; relayed "
                f"{record['relay']['forwarded_per_sent']:.2f} per datagram sent, "
                f"cpu {record['cpu_mean_pct']} %")

    def config_record(self, net: RackNetwork, p: ManyToOnePoint, subflows: int) -> dict:
        cfg = self.cfg
        return {
            **cfg.settings_record(), "scheme": p.scheme, "cc": p.cc, "subflows": subflows,
            "network": f"BCube({cfg.n},{cfg.k})", "n": cfg.n, "k": cfg.k, "workload": "many_to_one",
        }
