#!/usr/bin/env python3
"""Tunnel benchmark: the CPU a packet costs per link it crosses when every
link is a VXLAN tunnel between two servers, against the same links local.

    sudo .venv/bin/python bench/tunnel_cost.py [--routers 5] [--flows 8] [--time 10]
        [--rates 1000,10]

The chain of bench/shaper_cost.py (h0 - r0 - ... - h1, kernel routing,
offloads off), shaped at each of --rates: once with every node on this
machine, once spread over two server namespaces on a bridged LAN
(emulator.tunnels.local_servers) with neighbours on different servers, so
that every link is a tunnel (emulator/tunnels.py) shaped like a local one.
Here both servers share this machine's cores, so a tunnelled link's cost is
both ends' encapsulation plus the LAN between them; across real servers it
is split between two machines and their NICs. It also prints the round trip
through one tunnel and its spread, which the harness compares with a
packet's time on the link.

Exit status 0 whatever it measures: this measures, it does not test.
"""
from __future__ import annotations

import re
import statistics
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from base.procs import run  # noqa: E402
from bench.shaper_cost import chain_cost, chain_header, chain_parser, show  # noqa: E402
from emulator.tunnels import local_servers  # noqa: E402


def tunnel_rtts(servers, count: int = 50) -> list[float]:
    """Round trips (ms) between the two servers' own addresses, the tunnels' underlay."""
    out = run(["ping", "-n", "-c", str(count), "-i", "0.02", servers[1].address], timeout=count + 20,
              ns_pid=servers[0].ns_pid).stdout
    return [float(m) for m in re.findall(r"time=([\d.]+) ms", out)]


def main() -> int:
    args = chain_parser(__doc__, "1000,10").parse_args()
    rates = chain_header(args, "links")
    with tempfile.TemporaryDirectory(prefix="bench-tunnel-") as tmp, local_servers(2) as servers:
        rtts = tunnel_rtts(servers)
        if rtts:
            print(f"underlay round trip: median {statistics.median(rtts):.3f} ms, sd "
                  f"{statistics.pstdev(rtts):.3f} ms, max {max(rtts):.3f} ms ({len(rtts)} pings)")
        for i, rate in enumerate(rates):
            show(f"local, {rate:g} Mb/s", chain_cost(args.routers, args.flows, args.time, rate,
                                                      Path(tmp) / f"l{i}"))
            show(f"tunnelled, {rate:g} Mb/s", chain_cost(args.routers, args.flows, args.time, rate,
                                                          Path(tmp) / f"t{i}", servers=servers))
    return 0


if __name__ == "__main__":
    sys.exit(main())
