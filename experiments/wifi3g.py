"""`wifi3g`, WiFi + 3G: goodput against receive buffer, WiFi loss and WiFi RTT
(the CS244 '14 reproduction of Raiciu et al., NSDI 2012, Fig. 4).

One sender and one receiver joined by a WiFi and a 3G path (dctopo.WiFi3G).
Four schemes, one long flow each: TCP over WiFi, TCP over 3G, MPTCP with
its initial subflow on WiFi and a second one, opened by the path manager
between the 3G addresses, on 3G; and the same MPTCP with the sender on
liap, LIA with the NSDI 2012 penalization of slow subflows
(kernel/bpf/penalize.h; the paper's Fig. 4 "MPTCP + optimizations" less
opportunistic retransmission, which needs the packet scheduler). Each
run.json says its sender's congestion control and, with the coupled
algorithms loaded, how many windows liap halved (`penalties`).

* The receive buffer is the receiver namespace's tcp_rmem (default = max =
  the buffer), for TCP and MPTCP alike: the kernel never grows a socket's
  receive buffer past it, and MPTCP's connection-level buffer follows the
  same limit. Autotuning below it stays on.
* Each point: one flow for the warm-up plus `samples` seconds; its goodput
  is the median of the receiver's one-second samples after the warm-up
  (CS244 '14 took the median of three one-second samples).
* The network is rebuilt whenever the paths change (the loss and RTT
  sweeps), never between runs on the same paths.

Results: results/wifi3g/<sweep>/<scheme>/<value>/run.json, one per point.
"""
from __future__ import annotations

import statistics
from pathlib import Path

from dctopo import WiFi3G
from experiments.config import (WIFI3G_MPTCP_SCHEMES, WIFI3G_SCHEME_CC, LinkParams, Wifi3GConfig,
                                Wifi3GPoint)
from emulator.delayline import stats_delta
from emulator.keepawake import KeepAwake
from emulator.network import Network
from experiments.runner import Experiment
from experiments.longflows import PAYLOAD_PER_FRAME
from emulator.traffic.common import CLIENT_PORT_BASE, SERVER_PORT_BASE, FlowEndpoints
from kernel import transport

# A run is flagged delay_line_late when more than this share (%) of its
# packets left the delay line over 10 ms late (host contention on a VM): half
# the WiFi path's RTT, enough to distort what the run measured.
LATE_PCT_FLAG = 1.0
SENDER_WMEM_MAX = 32 << 20
PATH_OF_SCHEME = {"tcp_wifi": "wifi", "tcp_3g": "3g", "mptcp": "wifi", "mptcp_penalized": "wifi",
                  "mptcp_hold": "wifi"}
SCHEME_LABELS = {"tcp_wifi": "TCP over WiFi", "tcp_3g": "TCP over 3G", "mptcp": "MPTCP",
                 "mptcp_penalized": "MPTCP + penalization (liap)",
                 "mptcp_hold": "MPTCP + hold (liab)"}


class Wifi3GNetwork(Network):
    """The WiFi3G topology on the kernel-routing fabric, with the path manager
    and iperf3 driver of one pair of paths."""

    def __init__(self, wifi: LinkParams, cell: LinkParams, cfg: Wifi3GConfig):
        super().__init__(WiFi3G(wifi=wifi, cell=cell), LinkParams(), cfg.cc, seed=cfg.seed)
        # `wifi3g` measures goodput and delays, not CPU: keep the VM's vCPUs from
        # idling, or their late wake-ups add to every delay (keepawake.py).
        self.keep_awake = KeepAwake()

    def start(self) -> None:
        try:
            self.keep_awake.start()
            super().start()
            # Only the receive buffer is varied: the sender's send buffer must
            # never be what limits a run (MPTCP keeps data until the slowest
            # path acknowledges it at the connection level).
            self.sysctl("h1", {"net.ipv4.tcp_wmem": f"4096 16384 {SENDER_WMEM_MAX}"})
        except BaseException:
            self.close()
            raise

    def close(self) -> None:
        super().close()
        self.keep_awake.stop()

    def set_receive_buffer(self, kb: int) -> None:
        size = kb * 1024
        self.sysctl("h2", {"net.ipv4.tcp_rmem": f"4096 {size} {size}"})

    def rx_bytes(self) -> dict[str, int]:
        """Bytes the receiver has taken in on each path's interface."""
        counts = transport.read_dev_bytes(self.fabric.pid("h2"))
        return {path: counts.get(f"h2-eth{port}", (0, 0))[0]
                for port, path in enumerate(self.topo.paths)}


class Wifi3GExperiment(Experiment):
    name = "wifi3g"

    def __init__(self, cfg: Wifi3GConfig, say=print):
        super().__init__(cfg, say)
        self.runs_done = 0      # each run's client port is a new one: no TIME_WAIT clash

    def points(self) -> list[Wifi3GPoint]:
        return self.cfg.points()

    def network_key(self, p: Wifi3GPoint) -> tuple[LinkParams, LinkParams]:
        return p.wifi, p.cell

    def network(self, paths: tuple[LinkParams, LinkParams]) -> Wifi3GNetwork:
        return Wifi3GNetwork(*paths, self.cfg)

    def describe(self, p: Wifi3GPoint) -> str:
        return (f"wifi3g {p.sweep} {SCHEME_LABELS[p.scheme]}, buffer {p.buffer_kb} KB, "
                f"WiFi {2 * p.wifi.delay_ms:g} ms RTT {p.wifi.loss_pct:g} % loss"
                + (f", run {p.repeat + 1} of {self.cfg.repeats}" if self.cfg.repeats > 1 else ""))

    def run_dir(self, p: Wifi3GPoint) -> Path:
        return p.run_dir(self.cfg.results)

    def run_point(self, net: Wifi3GNetwork, p: Wifi3GPoint, folder: Path) -> dict:
        cfg = self.cfg
        mptcp = p.scheme in WIFI3G_MPTCP_SCHEMES
        cc = WIFI3G_SCHEME_CC.get(p.scheme, cfg.cc)
        src_ip, dst_ip = net.topo.path_addresses(PATH_OF_SCHEME[p.scheme])
        flow = FlowEndpoints(0, "h1", "h2", src_ip, dst_ip,
                             CLIENT_PORT_BASE + self.runs_done, SERVER_PORT_BASE)
        self.runs_done += 1
        # The previous run's packets still queued on the 3G path (up to 2 s
        # of them) must not be counted as this run's.
        net.wait_quiet(net.rx_bytes)
        net.set_receive_buffer(p.buffer_kb)
        net.pm.reset()
        net.pm.forget_expansions()
        if mptcp:
            net.pm.expand("h1", (src_ip, flow.client_port), (dst_ip, flow.server_port), 2,
                          paths=[net.topo.path_addresses("3g")])
        before, line_before = net.rx_bytes(), net.delay_line_snapshot()
        counters = {name: net.coupled_cc.counter(name) for name in ("penalties", "holds")}
        # The sender's subflows take the namespace's default algorithm.
        if cc != cfg.cc:
            net.set_cc("h1", cc)
        try:
            [outcome] = net.driver.run([flow], mptcp, cfg.samples, folder / "iperf",
                                       warmup_s=cfg.warmup_s, bind_servers=not mptcp)
        finally:
            if cc != cfg.cc:
                net.set_cc("h1", cfg.cc)
        after = net.rx_bytes()
        counters_after = {name: net.coupled_cc.counter(name) for name in counters}
        delay_line = stats_delta(line_before, net.delay_line_snapshot())
        samples = outcome.counted_per_second_mbps(cfg.warmup_s)[:cfg.samples]
        record = self._record(net, p, outcome, samples, {k: after[k] - before[k] for k in after})
        record["config"]["cc"] = cc
        # Windows liap halved during the run (kernel/bpf/penalize.h),
        # holds liab began (kernel/bpf/hold.h); None where the coupled
        # algorithms are not loaded.
        for name, value in counters.items():
            after_value = counters_after[name]
            record[name] = after_value - value if value is not None and after_value is not None else None
        record["delay_line"] = delay_line
        if delay_line["late_over_10ms_pct"] > LATE_PCT_FLAG:
            record["flags"].append("delay_line_late")
        return record

    def summarise(self, record: dict) -> str:
        return (f"median {record['goodput_mbps']:.2f} Mb/s"
                + (f" (WiFi {record['path_share']['wifi']:.0%} of bytes)"
                   if record["config"]["scheme"] in WIFI3G_MPTCP_SCHEMES else "")
                + (f", {record['penalties']} penalties" if record.get("penalties") else "")
                + (f", {record['holds']} holds" if record.get("holds") else ""))

    def _record(self, net: Wifi3GNetwork, p: Wifi3GPoint, outcome, samples: list[float],
                path_bytes: dict[str, int]) -> dict:
        mptcp = p.scheme in WIFI3G_MPTCP_SCHEMES
        conns = [c for c in net.pm.connections() if not c.server_side and c.ns == "h1"]
        established = max((c.subflows_established for c in conns), default=0) if mptcp else 1
        total_bytes = sum(path_bytes.values())
        flags = []
        if outcome.error and not outcome.timed_out:
            flags.append("handshake_failed")
        if outcome.timed_out:
            flags.append("timed_out")
        if not samples or statistics.median(samples) <= 0:
            flags.append("zero_goodput_flow")
        if mptcp and established < 2:
            flags.append("subflows_missing")
        flags += net.health_flags()
        return {
            "config": {
                "sweep": p.sweep, "scheme": p.scheme, "x": p.x, "repeat": p.repeat,
                "receive_buffer_kb": p.buffer_kb,
                "wifi": _link_record(p.wifi), "3g": _link_record(p.cell),
                "samples": self.cfg.samples, "warmup_s": self.cfg.warmup_s,
                "seed": self.cfg.seed, "cc": self.cfg.cc,
                "delay_backend": net.fabric.delay_backend,
                "keep_awake": True,
            },
            "goodput_mbps": round(statistics.median(samples), 4) if samples else 0.0,
            "mean_mbps": round(statistics.fmean(samples), 4) if samples else 0.0,
            "samples_mbps": [round(s, 4) for s in samples],
            "whole_run_mbps": outcome.whole_mbps,
            "first_data_s": outcome.first_data_s,
            # What each path could carry as TCP goodput, and both together.
            "capacity_mbps": {"wifi": round(p.wifi.bw_mbps * PAYLOAD_PER_FRAME, 4),
                              "3g": round(p.cell.bw_mbps * PAYLOAD_PER_FRAME, 4)},
            "path_bytes": path_bytes,
            "path_share": {k: round(v / total_bytes, 4) if total_bytes else 0.0
                           for k, v in path_bytes.items()},
            "subflows_established": established,
            "subflow_create_errors": [e for c in conns for e in c.create_errors],
            "error": outcome.error,
            "flags": flags,
        }


def _link_record(link: LinkParams) -> dict:
    return {"bw_mbps": link.bw_mbps, "queue_pkts": link.queue_pkts,
            "rtt_ms": 2 * link.delay_ms, "jitter_ms": link.jitter_ms, "loss_pct": link.loss_pct}
