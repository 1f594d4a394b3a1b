#!/usr/bin/env python3
"""What the transfer driver (emulator/traffic/transfergen.py) costs in CPU,
per transfer and per MB, for TCP and MPTCP.

    sudo .venv/bin/python bench/transfer_cost.py [--bw MBPS] [--short N] [--rate R]

Two hosts joined by two paths (dctopo.WiFi3G with both alike, --bw each).
Two loads per protocol, each one run() of the driver:
  short  N transfers of 70 KB (the paper's short flows, Fig. 12) arriving as
         a Poisson process of R a second;
  bulk   5 transfers of 10 MB, one every (10 MB at --bw) x 1.5 seconds.
The driver is one process with both ends of every transfer: its CPU time
(user + system, from getrusage at its end) divided by transfers and by MB
moved. MPTCP transfers get a second subflow on the second path from the
path manager, which runs in this process and is not counted.
"""
from __future__ import annotations

import argparse
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from base.links import LinkParams  # noqa: E402
from dctopo import WiFi3G  # noqa: E402
from emulator.network import Network  # noqa: E402
from emulator.traffic.common import CLIENT_PORT_BASE, SERVER_PORT_BASE  # noqa: E402
from emulator.traffic.transfers import Transfer  # noqa: E402
from dctopo.workloads import poisson_starts  # noqa: E402

SHORT_BYTES = 70_000
BULK_BYTES = 10_000_000
BULK_COUNT = 5


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--bw", type=float, default=100.0, help="rate of each path, Mb/s (100)")
    ap.add_argument("--short", type=int, default=500, help="short transfers per protocol (500)")
    ap.add_argument("--rate", type=float, default=50.0, help="short transfers a second (50)")
    ap.add_argument("--cc", default="reno", help="congestion control (reno)")
    args = ap.parse_args()
    link = LinkParams(bw_mbps=args.bw)
    bulk_gap = 1.5 * BULK_BYTES * 8 / (args.bw * 1e6)
    rows = []
    with Network(WiFi3G(wifi=link, cell=link), LinkParams(), args.cc) as net, \
            tempfile.TemporaryDirectory() as tmp:
        driver = net.transfers
        src, dst = net.topo.path_addresses("wifi")
        second = net.topo.path_addresses("3g")
        port = CLIENT_PORT_BASE
        for load in ("short", "bulk"):
            if load == "short":
                starts = poisson_starts(args.rate, args.short / args.rate, random.Random(1))
                size = SHORT_BYTES
            else:
                starts, size = [i * bulk_gap for i in range(BULK_COUNT)], BULK_BYTES
            for mptcp in (False, True):
                net.pm.reset()
                net.pm.forget_expansions()
                transfers = []
                for i, at in enumerate(starts):
                    transfers.append(Transfer(i, "h1", "h2", src, dst, port, SERVER_PORT_BASE, at, size))
                    if mptcp:
                        net.pm.expand("h1", (src, port), (dst, SERVER_PORT_BASE), 2, paths=[second])
                    port += 1
                print(f"{load} {'MPTCP' if mptcp else 'TCP'}: {len(transfers)} transfers of "
                      f"{size / 1e6:g} MB ...", flush=True)
                wall = time.monotonic()
                outs = driver.run(transfers, mptcp, Path(tmp) / f"{load}-{mptcp}")
                wall = time.monotonic() - wall
                done = [o for o in outs if o.completion_s is not None]
                mb = sum(o.received for o in done) / 1e6
                cpu = driver.cpu_s or 0.0
                rows.append((load, "MPTCP" if mptcp else "TCP", len(transfers), len(done), wall, cpu,
                             1e6 * cpu / max(len(done), 1), 1e3 * cpu / mb if mb else float("nan"),
                             1e3 * statistics.median(o.completion_s for o in done) if done else float("nan")))
    print(f"\ntwo paths of {args.bw:g} Mb/s, cc {args.cc}; the driver's own CPU (both ends)")
    print(f"{'load':6} {'proto':6} {'transfers':>9} {'done':>5} {'wall s':>7} {'CPU s':>7} "
          f"{'CPU us/transfer':>16} {'CPU ms/MB':>10} {'median ms':>10}")
    for r in rows:
        print(f"{r[0]:6} {r[1]:6} {r[2]:9d} {r[3]:5d} {r[4]:7.1f} {r[5]:7.3f} {r[6]:16.0f} {r[7]:10.2f} "
              f"{r[8]:10.2f}")


if __name__ == "__main__":
    main()
