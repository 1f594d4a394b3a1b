#!/usr/bin/env python3
"""Shaper benchmark: the CPU a packet costs per link it crosses, on a bare
chain of routers with and without the shaper, and on FatTree(4) MPTCP-8.

    sudo .venv/bin/python bench/shaper_cost.py [--routers 5] [--flows 8] [--time 10]
        [--rates 10000,1000,100,10] [--no-fattree]

Part 1, the chain: h0 - r0 - ... - r<routers-1> - h1, kernel routing
(emulator/fabrics/l3.py), offloads off, so every packet is one frame.
--flows Reno flows h0 -> h1 (iperf3) for --time seconds, once with no qdisc
on any interface ("unshaped"), then with the harness's own shaping (HTB rate
+ pfifo of 100 packets on both ends of every link) at each of --rates Mb/s.
The highest rate should be one the chain never reaches, so HTB is there but
never throttles; below it HTB throttles.

Part 2: the capacity calibration's own measurement
(experiments/capacity/measurement.py calibrate(), not cached), FatTree(4)
one_to_one, MPTCP with 8 subflows at 10 Mb/s.

Unit, as the capacity guard counts: the machine's CPU above idle (core
seconds, /proc/stat, steal excluded) over the goodput delivered times the
links each flow crossed (Gbit-hops); per packet-hop, that times the bits of
one 1514-byte frame: 1 core-s per Gbit-hop is 12.1 us per packet-hop.

Exit status 0 whatever it measures: this measures, it does not test.
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from base.procs import ProcessTracker, run  # noqa: E402
from dctopo import DCTopo  # noqa: E402
from emulator.fabrics.l3 import L3Fabric  # noqa: E402
from emulator.traffic.iperf_driver import IperfDriver  # noqa: E402
from experiments import capacity  # noqa: E402
from experiments.config import LinkParams  # noqa: E402
from monitor import CpuTimes, read_proc_stat  # noqa: E402
from dctopo.workloads import Flow  # noqa: E402

FRAME_GBIT = 1514 * 8 / 1e9
US_PER_CORE_S_PER_GBIT_HOP = FRAME_GBIT * 1e6     # 12.1


class Chain(DCTopo):
    """h0 - r0 - r1 - ... - r<n-1> - h1: one path, n + 1 links."""

    def build(self, routers: int = 5):
        rs = [self.addSwitch(f"r{i}", role="edge", router_id=f"10.9.{i}.1", dpid=f"{i + 1:016x}")
              for i in range(routers)]
        h0 = self.addHost("h0", role="host")
        h1 = self.addHost("h1", role="host")
        self.addLink(h0, rs[0], port1=0, port2=0, params1={"ip": "10.9.100.2/32"})
        for a, b in zip(rs, rs[1:]):
            self.addLink(a, b, port1=1, port2=0)
        self.addLink(rs[-1], h1, port1=1, port2=0, params2={"ip": "10.9.101.2/32"})


def busy_core_s(seconds: float) -> float:
    """Core-seconds the machine was busy over the next `seconds` (steal excluded)."""
    before = read_proc_stat()["cpu"]
    time.sleep(seconds)
    return _busy_since(before)


def _busy_since(before: list[int]) -> float:
    d = CpuTimes.between(before, read_proc_stat()["cpu"])
    return (d.busy - d.steal) / os.sysconf("SC_CLK_TCK")


def unshape(fabric: L3Fabric) -> None:
    """Remove every root qdisc the fabric installed: the kernel's default
    (noqueue on veth) takes over, so nothing shapes or queues."""
    for node in fabric.topo.nodes():
        for intf in fabric.topo.interfaces(node):
            run(["tc", "qdisc", "del", "dev", intf.name, "root"], 10, ns_pid=fabric.pid(node), check=False)


def alternating(topo: Chain, servers: list) -> dict[str, str]:
    """Each node of the chain on the other server from its neighbours: every link crosses."""
    order = ["h0", *(f"r{i}" for i in range(len(topo.switches()))), "h1"]
    return {node: servers[i % len(servers)].name for i, node in enumerate(order)}


def chain_cost(routers: int, flows: int, time_s: float, rate_mbps: float | None, logdir: Path,
               servers: list | None = None) -> dict:
    """One measurement on a fresh chain: rate None is unshaped; with
    `servers` (emulator.tunnels.Server), every link a tunnel between them."""
    topo = Chain(routers=routers)
    fabric = L3Fabric(topo, LinkParams(bw_mbps=rate_mbps or 10000.0, queue_pkts=100))
    if servers:
        fabric.spread(servers, alternating(topo, servers))
    procs = ProcessTracker()
    try:
        fabric.start()
        for h in fabric.hosts():
            run(["sysctl", "-q", "-w", "net.ipv4.tcp_congestion_control=reno"], 10, ns_pid=fabric.pid(h))
        if rate_mbps is None:
            unshape(fabric)
        idle_per_s = busy_core_s(3.0) / 3.0
        driver = IperfDriver(fabric, procs)
        before, t0 = read_proc_stat()["cpu"], time.monotonic()
        outcomes = driver.run(driver.endpoints([Flow("h0", "h1")] * flows), mptcp=False,
                              time_s=time_s, logdir=logdir)
        busy, wall = _busy_since(before), time.monotonic() - t0
    finally:
        procs.stop_all()
        fabric.stop()
    hops = topo.path_links("h0", "h1")
    goodput = sum(o.whole_mbps for o in outcomes)
    # Per frame on the wire: a tunnel's frames are smaller (emulator/tunnels.py).
    gbit_hops = goodput * time_s / 1000 * hops * 1514 / fabric.frame_bytes
    above_idle = max(0.0, busy - idle_per_s * wall)
    cost = above_idle / gbit_hops if gbit_hops else None
    return {"goodput_mbps": goodput, "busy_pct": 100 * busy / wall / (os.cpu_count() or 1), "core_s": above_idle,
            "gbit_hops": gbit_hops, "errors": [o.error for o in outcomes if o.error],
            "us_per_packet_hop": cost * US_PER_CORE_S_PER_GBIT_HOP if cost else None}


def show(label: str, m: dict) -> None:
    us = "-" if m["us_per_packet_hop"] is None else f"{m['us_per_packet_hop']:.2f}"
    print(f"{label:<28} {m['goodput_mbps']:9.1f} {m['busy_pct']:7.1f} {m['core_s']:8.2f} "
          f"{m['gbit_hops']:9.2f} {us:>10}" + (f"  errors: {m['errors']}" if m["errors"] else ""),
          flush=True)


def chain_parser(doc: str, rates: str) -> argparse.ArgumentParser:
    """The chain's options, for this benchmark and bench/tunnel_cost.py."""
    ap = argparse.ArgumentParser(description=doc.split("\n\n")[0])
    ap.add_argument("--routers", type=int, default=5)
    ap.add_argument("--flows", type=int, default=8)
    ap.add_argument("--time", type=float, default=10.0, help="seconds per measurement")
    ap.add_argument("--rates", default=rates, help="shaped rates, Mb/s")
    return ap


def chain_header(args, first_column: str) -> list[float]:
    """Print the chain's title and the table's head; the rates asked for."""
    print(f"=== a chain of {args.routers} routers ({args.routers + 1} links), {args.flows} Reno flows, "
          f"{args.time:g} s each, offloads off ===")
    print(f"{first_column:<28} {'Mb/s':>9} {'busy %':>7} {'core-s':>8} {'Gbit-hop':>9} {'us/pkt-hop':>10}")
    return [float(r) for r in args.rates.split(",") if r.strip()]


def main() -> int:
    ap = chain_parser(__doc__, "10000,1000,100,10")
    ap.add_argument("--no-fattree", action="store_true", help="skip part 2")
    args = ap.parse_args()
    rates = chain_header(args, "shaping")
    with tempfile.TemporaryDirectory(prefix="bench-shaper-") as tmp:
        for i, rate in enumerate([None, *rates]):
            label = "unshaped (no qdisc)" if rate is None else f"HTB + pfifo at {rate:g} Mb/s"
            show(label, chain_cost(args.routers, args.flows, args.time, rate, Path(tmp) / str(i)))
    if not args.no_fattree:
        print("\n=== FatTree(4) one_to_one, MPTCP-8 at 10 Mb/s: the capacity calibration, not cached ===")
        cal = capacity.calibrate("l3", say=lambda m: print(f"    {m}", flush=True))
        per_run = ", ".join(f"{o['per_delivered']:.3f}" for o in cal.observations)
        print(f"core-s per Gbit-hop: median {cal.core_s_per_gbit_hop:.3f} (repeats {per_run}); "
              f"{cal.core_s_per_gbit_hop * US_PER_CORE_S_PER_GBIT_HOP:.2f} us per packet-hop"
              + (f"; taken under load: {cal.under_load}" if cal.under_load else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
