#!/usr/bin/env python3
"""Start-up benchmark: where the first seconds of a FatTree run go, per k.

    sudo .venv/bin/python bench/startup.py [--k 4,6,8] [--subflows 1,8] [--bw MBPS]
        [--time 4] [--spawns 100] [--results DIR] [--driver iperf3,socket] [--no-spawns]

Part 1, per process: the CPU and wall time of starting one short process the
ways a run starts its iperf3s: plain (`true`), entering a host's namespaces
(`mnexec -a PID true`), wrapped for MPTCP (`mptcpize run true`), and both
(`mnexec -a PID mptcpize run iperf3 --version`), each --spawns times in a row.

Part 2, per k: one short sweep (TCP and MPTCP-N, --time counted seconds after
the default warm-up) at --bw, or where the capacity guard refuses, at the rate
it suggests; printed from each run's run.json `startup` object
(experiments/startup.py): the wall time and machine CPU-seconds of each part of
the start, and the time until every connection had its data connection and
all its subflows (complete), counted from the first client's start, and the
CPU meanwhile; `mon %` is what the run's monitors cost, in % of one core.

Exit status 0 whether or not anything is fast: this measures, it does not test.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from experiments import capacity  # noqa: E402
from harness.options import parse_subflows  # noqa: E402
from experiments.config import LinkParams, SweepConfig  # noqa: E402
from base.procs import ProcessTracker  # noqa: E402
from emulator.traffic.socket_driver import SocketDriver  # noqa: E402
from experiments.fattree import Sweep  # noqa: E402

PHASES = ("reconfigure_hosts", "bookkeeping", "start_servers", "start_clients", "connect_and_join")


def ints(text: str) -> list[int]:
    return [int(x) for x in text.split(",") if x]


def spawn_cost(argv: list[str], n: int) -> tuple[float, float]:
    """(CPU ms, wall ms) per start of `argv`, run `n` times in a row: the
    children's user+system time, which includes what they exec."""
    before, t0 = os.times(), time.monotonic()
    for _ in range(n):
        subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=30)
    after, wall = os.times(), time.monotonic() - t0
    cpu = (after.children_user + after.children_system
           - before.children_user - before.children_system)
    return 1000 * cpu / n, 1000 * wall / n


def per_process(n: int) -> None:
    # A namespace of our own to enter: a sleeping process in a fresh network
    # namespace (unshare is util-linux), which dies with this script.
    procs = ProcessTracker()
    holder = procs.spawn("namespace holder", ["unshare", "--net", "sleep", "600"])
    try:
        time.sleep(0.2)
        ns = str(holder.pid)
        print(f"\n=== starting one process, {n} times each (CPU and wall ms per start) ===")
        print(f"{'how':<44} {'cpu ms':>7} {'wall ms':>8}")
        for label, argv in (
                ("true", ["true"]),
                ("mnexec -a PID true", ["mnexec", "-a", ns, "true"]),
                ("mptcpize run true", ["mptcpize", "run", "true"]),
                ("mnexec -a PID mptcpize run iperf3 --version",
                 ["mnexec", "-a", ns, "mptcpize", "run", "iperf3", "--version"]),
                ("iperf3 --version", ["iperf3", "--version"])):
            cpu, wall = spawn_cost(argv, n)
            print(f"{label:<44} {cpu:7.2f} {wall:8.2f}", flush=True)
    finally:
        procs.stop_all()


def sweep_startup(k: int, subflows: tuple[int, ...], bw: float, time_s: float,
                  results: Path, driver: str, spread_s: float = 0.0) -> list[dict]:
    cfg = SweepConfig(k=k, subflows=subflows, link=LinkParams(bw_mbps=bw), time_s=time_s,
                      results=results / f"ft{k}-{driver}", driver=driver)
    cal = capacity.calibration_for(cfg.fabric, say=lambda m: print(f"    {m}", flush=True))
    verdict = capacity.judge(cfg, cal)
    if not verdict.fits:
        cfg = cfg.replace(link=LinkParams(bw_mbps=verdict.suggested_bw_mbps))
        verdict = capacity.judge(cfg, cal)
    print(f"--- FatTree({k}) at {cfg.link.bw_mbps:g} Mb/s, driver {driver} ({verdict.reason()})",
          flush=True)
    records = []
    sweep = Sweep(cfg, say=lambda m: print(f"    {m}", flush=True), capacity=verdict)
    if isinstance(sweep.driver, SocketDriver):
        sweep.driver.release_spread_s = spread_s
    for path in sweep.run():
        records.append(json.loads((path / "run.json").read_text()))
    return records


def show(k: int, driver: str, records: list[dict]) -> None:
    print(f"\n=== FatTree({k}), driver {driver}: the start of each run, from run.json `startup` "
          f"(seconds from the first client's start; phases: wall s / machine CPU core-s) ===")
    print(f"{'run':<9} {'bw':>4} {'flows':>5} " + " ".join(f"{p:>18}" for p in PHASES)
          + f" {'established':>11} {'last conn':>9} {'complete':>8} {'cpu %':>6} {'mon %':>6}  flags")
    for rec in records:
        s, c = rec["startup"], rec["config"]
        label = "TCP" if c["subflows"] == 1 else f"MPTCP-{c['subflows']}"
        cells = []
        for p in PHASES:
            ph = s["phases"].get(p)
            cells.append(f"{ph['wall_s']:7.2f} / {ph['cpu_core_s']:6.2f}" if ph else f"{'-':>18}")
        fmt = lambda x, f="8.2f": format(x, f) if x is not None else "-"   # noqa: E731
        print(f"{label:<9} {c['bw_mbps']:4g} {s['clients']:5d} " + " ".join(f"{x:>18}" for x in cells)
              + f" {fmt(s['established'], 'd'):>11} {fmt(s['last_established_s']):>9}"
              + f" {fmt(s['complete_s']):>8} {fmt(s['cpu_until_complete_pct'], '.0f'):>6}"
              + f" {fmt(rec['monitors'].get('monitor_cpu_pct'), '.1f'):>6}"
              + f"  {','.join(rec['flags']) or '-'}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--k", type=ints, default=[4, 6, 8])
    ap.add_argument("--subflows", default="1,8")
    ap.add_argument("--bw", type=float, default=10.0)
    ap.add_argument("--time", type=float, default=4.0, help="seconds counted per run")
    ap.add_argument("--spawns", type=int, default=100)
    ap.add_argument("--results", type=Path, default=None)
    ap.add_argument("--driver", default="iperf3", help="iperf3, socket, or both: iperf3,socket")
    ap.add_argument("--no-spawns", action="store_true", help="skip part 1")
    ap.add_argument("--spread", type=float, default=0.0,
                    help="socket driver: spread the flows' starts over this many seconds")
    args = ap.parse_args()
    if not args.no_spawns:
        per_process(args.spawns)
    with tempfile.TemporaryDirectory(prefix="bench-startup-") as tmp:
        results = args.results or Path(tmp)
        for k in args.k:
            for driver in args.driver.split(","):
                show(k, driver, sweep_startup(k, parse_subflows(args.subflows), args.bw, args.time,
                                              results, driver, args.spread))
    return 0


if __name__ == "__main__":
    sys.exit(main())
