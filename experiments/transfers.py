"""Distributed file transfers (CS536 '13 in README's sources): how long until
every receiver has its data, TCP against MPTCP with more subflows.

* nswitch: two hosts over N switches (dctopo.NSwitch), one file from h1 to
  h2; MPTCP's subflows take paths 1..N by their addresses.
* fattree: on FatTree(4), S senders drawn from pods 0 and 2 and R
  receivers from pods 1 and 3 (seeded by S and R, the same for every
  subflow count); every sender sends its file in R equal parts, one to each
  receiver, all at once; MPTCP's subflows share the connection's address
  pair and are spread by ECMP over their ports.

The transfer driver writes 64 KB at a time, as the study's senders did.
The time of a point is from the first connection opened to the last byte of
the last part received.

Results: results/transfers/<sweep>/<n<N>|s<S>-r<R>>/flows<subflows>/run.json.
"""
from __future__ import annotations

import random
from pathlib import Path

from dctopo import FatTree, NSwitch
from emulator.network import Network
from emulator.traffic.common import CLIENT_PORT_BASE
from emulator.traffic.transfers import TRANSFER_TIMEOUT_S, Transfer
from experiments.config.transfers import TransfersConfig, TransfersPoint
from experiments.longflows import PAYLOAD_PER_FRAME, closed_connections
from experiments.runner import Experiment
from monitor import CpuMonitor

SERVER_PORT = 7100
PORTS_PER_RUN = 100         # client ports a run may use per host; a fresh block each run
PORT_BLOCKS = 100
CLOSED_WAIT_S = 2.0         # for the path manager to hear the transfers' connections close


class TransfersExperiment(Experiment):
    name = "transfers"

    def __init__(self, cfg: TransfersConfig, say=print):
        super().__init__(cfg, say)
        self.runs_done = 0

    def points(self) -> list[TransfersPoint]:
        return self.cfg.points()

    def network_key(self, p: TransfersPoint) -> tuple[str, int]:
        return (p.sweep, p.switches)

    def network(self, key: tuple[str, int]) -> Network:
        sweep, switches = key
        topo = NSwitch(n=switches, link=self.cfg.link) if sweep == "nswitch" else FatTree(k=4)
        return Network(topo, self.cfg.link, self.cfg.cc, seed=self.cfg.seed)

    def describe(self, p: TransfersPoint) -> str:
        scheme = "TCP" if p.subflows == 1 else f"MPTCP-{p.subflows}"
        where = (f"{p.switches} switches" if p.sweep == "nswitch"
                 else f"FatTree(4), {p.senders} senders to {p.receivers} receivers")
        return f"transfers {where}, {scheme}, {self.cfg.file_mb:g} MB per sender"

    def run_dir(self, p: TransfersPoint) -> Path:
        return p.run_dir(self.cfg.results)

    def run_point(self, net: Network, p: TransfersPoint, folder: Path) -> dict:
        port_base = CLIENT_PORT_BASE + (self.runs_done % PORT_BLOCKS) * PORTS_PER_RUN
        self.runs_done += 1
        net.pm.reset()
        net.pm.forget_expansions()
        parts = (self._nswitch(net, p, port_base) if p.sweep == "nswitch"
                 else self._fattree(net, p, port_base))
        cpu = CpuMonitor(interval_s=1.0)
        cpu.start()
        try:
            outcomes = net.transfers.run(parts, p.subflows > 1, folder, timeout_s=self._timeout_s(parts))
        finally:
            cpu.stop()
        cpu.write_csv(folder / "cpu.csv")
        return self._record(net, p, outcomes, cpu)

    def _timeout_s(self, parts: list[Transfer]) -> float:
        """How long a part may take: three times what the busiest receiver's
        one link needs for all it is sent (8 senders to 1 receiver: 80 MB,
        67 s at 10 Mb/s), and at least the driver's default."""
        into: dict[str, int] = {}
        for t in parts:
            into[t.dst] = into.get(t.dst, 0) + t.size
        need_s = max(into.values()) * 8 / (self.cfg.link.bw_mbps * 1e6 * PAYLOAD_PER_FRAME)
        return max(TRANSFER_TIMEOUT_S, 3 * need_s)

    def _nswitch(self, net: Network, p: TransfersPoint, port: int) -> list[Transfer]:
        src, dst = net.topo.path_addresses(0)
        if p.subflows > 1:
            net.pm.expand("h1", (src, port), (dst, SERVER_PORT), p.subflows,
                          paths=[net.topo.path_addresses(i) for i in range(1, p.subflows)])
        return [Transfer(0, "h1", "h2", src, dst, port, SERVER_PORT, 0.0, self.cfg.file_bytes)]

    def _fattree(self, net: Network, p: TransfersPoint, port_base: int) -> list[Transfer]:
        hosts = sorted(net.fabric.hosts())
        rng = random.Random(f"transfers:{self.cfg.seed}:{p.senders}:{p.receivers}")
        senders = sorted(rng.sample([h for h in hosts if _pod(h) in (0, 2)], p.senders))
        receivers = sorted(rng.sample([h for h in hosts if _pod(h) in (1, 3)], p.receivers))
        part = self.cfg.file_bytes // p.receivers
        parts = []
        for s in senders:
            for i, r in enumerate(receivers):
                src, dst, port = net.fabric.host_ip(s), net.fabric.host_ip(r), port_base + i
                if p.subflows > 1:
                    net.pm.expand(s, (src, port), (dst, SERVER_PORT), p.subflows)
                parts.append(Transfer(len(parts), s, r, src, dst, port, SERVER_PORT, 0.0, part))
        return parts

    def summarise(self, record: dict) -> str:
        done = record["completion_s"]
        return (f"all data in {done:.2f} s" if done is not None else "not every part arrived") + \
            f" ({record['parts']} parts, cpu {record['cpu_mean_pct']} %)"

    def _record(self, net: Network, p: TransfersPoint, outcomes, cpu: CpuMonitor) -> dict:
        cfg = self.cfg
        failed = [o for o in outcomes if o.completion_s is None]
        starts = [o.start_s for o in outcomes if o.start_s is not None]
        ends = [o.last_byte_s for o in outcomes if o.last_byte_s is not None]
        done = max(ends) - min(starts) if outcomes and not failed else None
        established = {(c.saddr, c.sport): c.subflows_established
                       for c in closed_connections(net.pm, CLOSED_WAIT_S) if not c.server_side}
        subflows = [established.get((o.transfer.src_ip, o.transfer.client_port), 0) if p.subflows > 1 else 1
                    for o in outcomes]
        total = sum(o.received for o in outcomes)
        flags = (["transfer_failed"] if failed else [])
        if p.subflows > 1 and any(n < p.subflows for n in subflows):
            flags.append("subflows_missing")
        if cpu.saturated():
            flags.append("cpu_saturated")
        flags += net.health_flags()
        return {
            "config": {"sweep": p.sweep, "subflows": p.subflows, "switches": p.switches,
                       "senders": p.senders, "receivers": p.receivers, "file_mb": cfg.file_mb,
                       "bw_mbps": cfg.link.bw_mbps, "queue_pkts": cfg.link.queue_pkts, "cc": cfg.cc,
                       "seed": cfg.seed, "fabric": "l3",
                       "topology": f"NSwitch({p.switches})" if p.sweep == "nswitch" else "FatTree(4)"},
            "parts": len(outcomes),
            "senders": sorted({o.transfer.src for o in outcomes}),
            "receivers": sorted({o.transfer.dst for o in outcomes}),
            "completion_s": round(done, 4) if done is not None else None,
            # One TCP flow alone over one link would take this long for one sender's file.
            "one_link_s": round(cfg.file_bytes * 8 / (cfg.link.bw_mbps * 1e6 * PAYLOAD_PER_FRAME), 4),
            "part_completion_s": [round(o.completion_s, 4) if o.completion_s is not None else None
                                  for o in outcomes],
            "subflows_established": subflows,
            "bytes": total,
            "errors": sorted({o.error for o in failed if o.error})[:10],
            "cpu_mean_pct": cpu.mean_pct(),
            "flags": flags,
        }


def _pod(host: str) -> int:
    """A FatTree host's pod: h<pod>_<edge>_<i>."""
    return int(host[1:].split("_")[0])
