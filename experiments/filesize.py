"""File size (paper Fig. 17): how long it takes to open a connection and move
one file, TCP against MPTCP, from 1 to 1000 packets.

Two hosts with two interfaces each and a path per interface pair
(dctopo.WiFi3G with both paths alike). TCP uses the first path; MPTCP opens
on the first path and the path manager adds a subflow on the second one as
soon as the connection is established (MPTCP_EVENT_ESTABLISHED, after the
first data is acknowledged). One transfer at a time, on idle links, by the
transfer driver (emulator/traffic/transfers.py); a point is `repeats`
transfers and its figure their median.

MPTCP pays for its second path before it can use it: the join's handshake
starts only once the first subflow is established, so a small file is over
before the second subflow carries anything, and the extra handshake and
signalling cost time. Above some size the second path's capacity wins: that
crossover is what the figure shows.

Results: results/filesize/<bw>mbps-<delay>ms/<scheme>/<size>pkts/run.json.
"""
from __future__ import annotations

import statistics
from pathlib import Path

from base.links import LinkParams
from dctopo import WiFi3G
from emulator.network import Network
from emulator.traffic.common import CLIENT_PORT_BASE, SERVER_PORT_BASE
from emulator.traffic.transfers import Transfer
from experiments.config.filesize import PACKET_BYTES, FilesizeConfig, FilesizePoint
from experiments.longflows import closed_connections
from experiments.runner import Experiment

SCHEME_LABELS = {"tcp": "TCP", "mptcp": "MPTCP, 2 paths"}
# How long the path manager may take to hear that a finished transfer's
# connection closed (its subflow counts are final then).
CLOSED_WAIT_S = 2.0


class FilesizeNetwork(Network):
    """Two hosts, two equal paths.

    No keep-awake loops (emulator/keepawake.py), unlike `wifi3g`: here they made
    completion times worse. One TCP transfer at a time at 100 Mb/s, 9 per
    size, reno, alternately without and with them, twice: without them medians
    of 0.64, 1.01, 1.60 and 2.81 ms at 2, 5, 10 and 20 packets, none over
    3.1 ms; with them medians within 0.1 ms of those (one of 4.13 at 20
    packets) but single transfers of 4.6 to 9.5 ms at every size."""

    def __init__(self, link: LinkParams, cfg: FilesizeConfig):
        super().__init__(WiFi3G(wifi=link, cell=link), LinkParams(), cfg.cc, seed=cfg.seed)


class FilesizeExperiment(Experiment):
    name = "filesize"

    def __init__(self, cfg: FilesizeConfig, say=print):
        super().__init__(cfg, say)
        self.transfers_done = 0     # each transfer has a client port of its own

    def points(self) -> list[FilesizePoint]:
        return self.cfg.points()

    def network_key(self, p: FilesizePoint) -> LinkParams:
        return self.cfg.link

    def network(self, link: LinkParams) -> FilesizeNetwork:
        return FilesizeNetwork(link, self.cfg)

    def describe(self, p: FilesizePoint) -> str:
        return (f"filesize {SCHEME_LABELS[p.scheme]}, {p.size_pkts} packets "
                f"({p.size_pkts * PACKET_BYTES} bytes), {self.cfg.repeats} transfers")

    def run_dir(self, p: FilesizePoint) -> Path:
        return p.run_dir(self.cfg.results, self.cfg.link)

    def run_point(self, net: FilesizeNetwork, p: FilesizePoint, folder: Path) -> dict:
        mptcp = p.scheme == "mptcp"
        src, dst = net.topo.path_addresses("wifi")
        second = net.topo.path_addresses("3g")
        outcomes, established = [], []
        for i in range(self.cfg.repeats):
            port = CLIENT_PORT_BASE + self.transfers_done
            self.transfers_done += 1
            net.pm.reset()
            net.pm.forget_expansions()
            if mptcp:
                net.pm.expand("h1", (src, port), (dst, SERVER_PORT_BASE), 2, paths=[second])
            [outcome] = net.transfers.run([Transfer(i, "h1", "h2", src, dst, port, SERVER_PORT_BASE,
                                                    0.0, p.size_pkts * PACKET_BYTES)], mptcp, folder)
            outcomes.append(outcome)
            established.append(_subflows_established(net, port) if mptcp else 1)
        return self._record(net, p, outcomes, established)

    def summarise(self, record: dict) -> str:
        if record["median_ms"] is None:
            return "no transfer completed"
        return (f"median {record['median_ms']:.2f} ms (p10 {record['p10_ms']:.2f}, "
                f"p90 {record['p90_ms']:.2f})")

    def _record(self, net: FilesizeNetwork, p: FilesizePoint, outcomes, established) -> dict:
        cfg = self.cfg
        times = [1000 * o.completion_s for o in outcomes if o.completion_s is not None]
        errors = [o.error for o in outcomes if o.error]
        flags = (["transfer_failed"] if errors else []) + net.health_flags()
        q = statistics.quantiles(times, n=10, method="inclusive") if len(times) > 1 else times * 9
        return {
            "config": {
                "scheme": p.scheme, "size_pkts": p.size_pkts, "size_bytes": p.size_pkts * PACKET_BYTES,
                "repeats": cfg.repeats, "bw_mbps": cfg.link.bw_mbps, "delay_ms": cfg.link.delay_ms,
                "queue_pkts": cfg.link.queue_pkts, "cc": cfg.cc, "seed": cfg.seed, "fabric": "l3",
                "paths": 2 if p.scheme == "mptcp" else 1, "keep_awake": False,
            },
            "completion_ms": [round(t, 4) for t in times],
            "median_ms": round(statistics.median(times), 4) if times else None,
            "p10_ms": round(q[0], 4) if times else None,
            "p90_ms": round(q[-1], 4) if times else None,
            "connect_ms": [round(1000 * (o.connected_s - o.start_s), 4) for o in outcomes
                           if o.connected_s is not None and o.start_s is not None],
            # The path manager's count (initial subflow + joins established) once
            # the connection closed, and the sender's MPTCP_INFO at the answer
            # (joins still in progress included).
            "subflows_established": established,
            "subflows_opened": [o.subflows for o in outcomes],
            "errors": errors,
            "flags": flags,
        }


def _subflows_established(net: FilesizeNetwork, port: int) -> int:
    """Subflows the path manager saw established on the transfer's connection
    (the initial one included), once it has heard the connection close."""
    conns = [c for c in closed_connections(net.pm, CLOSED_WAIT_S)
             if c.ns == "h1" and not c.server_side and c.sport == port]
    return max((c.subflows_established for c in conns), default=0)
