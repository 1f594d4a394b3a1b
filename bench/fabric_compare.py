#!/usr/bin/env python3
"""Fabric benchmark: the same FatTree(4) workload on each fabric, side by side.

    sudo .venv/bin/python bench/fabric_compare.py [--fabrics l3,openflow]
        [--subflows 1,8] [--time 40] [--seed 0] [--cc lia] [--results DIR]

Each fabric gets one sweep (one network, the same traffic matrix): one_to_one
at 10 Mb/s with 100-packet queues, TCP and MPTCP-8 by default. Printed per
fabric and subflow count: mean, p10 and min % of optimal, the machine's mean
CPU, the forwarding cost in CPU seconds per Gb carried (all CPU time, both
cores, over the goodput the flows delivered), and on the openflow fabrics the
switch daemon's own share (ovs-vswitchd's CPU seconds from /proc), and the
runs' flags. Exit status 0 whether or not the fabrics agree: this measures.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from harness.options import parse_subflows  # noqa: E402
from experiments.config import LinkParams, SweepConfig  # noqa: E402
from experiments.fattree import Sweep  # noqa: E402

TICK = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pids: list[int]) -> float:
    """utime + stime of these processes, in seconds."""
    total = 0
    for pid in pids:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        total += int(fields[11]) + int(fields[12])
    return total / TICK


def vswitchd_pids(sweep: Sweep) -> list[int]:
    pids = getattr(sweep.fabric, "vswitchd_pids", None)
    return pids() if pids else []


def measure(fabric: str, args) -> list[dict]:
    cfg = SweepConfig(k=4, workloads=("one_to_one",), subflows=args.subflows, time_s=args.time,
                      link=LinkParams(bw_mbps=10, queue_pkts=100), seed=args.seed, cc=args.cc,
                      fabric=fabric, results=args.results / fabric)

    sweep = Sweep(cfg, say=lambda m: print(f"  [{fabric}] {m}", flush=True))
    if args.switch_daemons and hasattr(sweep.fabric, "use_switch_daemons"):
        sweep.fabric.use_switch_daemons(args.switch_daemons)
    daemons = getattr(sweep.fabric, "switch_daemons", 0)
    rows = []
    try:
        sweep.open()
        sweep.baseline_mbps = sweep.measure_baseline()
        for rc in cfg.runs():
            before = cpu_seconds(vswitchd_pids(sweep))
            sweep.run_one(rc)
            switch_cpu = cpu_seconds(vswitchd_pids(sweep)) - before
            rec = json.loads((rc.run_dir(cfg.results) / "run.json").read_text())
            goodput_gbps = sum(f["goodput_mbps"] for f in rec["flows"]) / 1000
            busy_cores = (rec["cpu_mean_pct"] or 0) / 100 * os.cpu_count()
            wall = rc.time_s + rc.warmup_s
            rows.append({
                "fabric": f"{fabric}/{daemons}d" if daemons else fabric, "subflows": rc.subflows, "summary": rec["summary"],
                "cpu_pct": rec["cpu_mean_pct"], "flags": rec["flags"],
                "goodput_gbps": goodput_gbps,
                "cpu_s_per_gb": busy_cores / goodput_gbps if goodput_gbps else float("inf"),
                "switch_cpu_s_per_gb": (switch_cpu / wall) / goodput_gbps if goodput_gbps else None,
            })
    finally:
        sweep.close()
    return rows


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--fabrics", default="l3,openflow")
    ap.add_argument("--subflows", default="1,8")
    ap.add_argument("--time", type=float, default=40.0)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--cc", default="lia")
    ap.add_argument("--switch-daemons", type=int, default=None,
                    help="Open vSwitch instances of the openflow fabrics (default: one per CPU)")
    ap.add_argument("--results", type=Path, default=Path("/tmp/fabric-compare"))
    args = ap.parse_args()
    args.subflows = parse_subflows(args.subflows)
    rows = [row for fabric in args.fabrics.split(",") for row in measure(fabric, args)]
    print(f"\n=== FatTree(4) one_to_one, 10 Mb/s, 100-packet queues, {args.time:g} s, "
          f"seed {args.seed}, cc {args.cc} ===")
    print(f"{'fabric':>22} {'flows':>6} {'mean %':>7} {'p10 %':>6} {'min %':>6} {'cpu %':>6} "
          f"{'Gb/s':>6} {'CPU-s/Gb':>9} {'switchd CPU-s/Gb':>17}  flags")
    for r in rows:
        s = r["summary"]
        label = "TCP" if r["subflows"] == 1 else f"MPTCP-{r['subflows']}"
        sw = "-" if not r["switch_cpu_s_per_gb"] else f"{r['switch_cpu_s_per_gb']:.1f}"
        print(f"{r['fabric']:>22} {label:>6} {s['mean_pct']:7.1f} {s['p10_pct']:6.1f} {s['min_pct']:6.1f} "
              f"{r['cpu_pct'] or 0:6.1f} {r['goodput_gbps']:6.3f} {r['cpu_s_per_gb']:9.1f} {sw:>17}  "
              f"{','.join(r['flags']) or '-'}")
    by = {(r["fabric"].split("/")[0], r["subflows"]): r["summary"]["mean_pct"] for r in rows}
    top = max(args.subflows)
    if ("l3", top) in by and ("openflow", top) in by:
        gap = by[("l3", top)] - by[("openflow", top)]
        print(f"openflow MPTCP-{top} is {gap:.1f} points below l3 (target: within 5)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
