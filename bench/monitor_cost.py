#!/usr/bin/env python3
"""What the monitors cost: FatTree(4), one_to_one, MPTCP with 8 subflows.

    sudo .venv/bin/python bench/monitor_cost.py [--time S] [--interval S]

Builds the network as the sweep does (Sweep.open/close), then runs the same
traffic twice: once with CpuMonitor alone (what the sweep had before), once
with every monitor (CPU, ports of every switch, RTT of every flow's subflows,
subflow counts) at the same interval. Prints, for each: the machine's CPU
during the traffic, the CPU this Python process used (its path manager, the
monitors, the main thread), and the monitor threads' own CPU as % of one core.
The last figure is the cost of measuring; the target is <= 3 % of one core.

Thread CPU time under this load overstates what the monitors themselves do:
on a kernel without CONFIG_IRQ_TIME_ACCOUNTING, softirq work (here: the
fabric's packet forwarding) that runs when an interrupt or a bh-enable hits a
running thread is charged to that thread. So the script first runs the port
monitor alone on the idle network for a few seconds: it does the same work
idle or loaded (the same qdisc dumps of the same switches), and the ratio of
its CPU per second loaded to idle shows how much the load inflates a
thread's CPU time.
"""
from __future__ import annotations

import argparse
import os
import resource
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from experiments.config import LinkParams, SweepConfig  # noqa: E402
from experiments.fattree import Sweep  # noqa: E402
from monitor import CpuMonitor, Monitors, PortMonitor  # noqa: E402
from dctopo.workloads import make_matrix  # noqa: E402

K, WORKLOAD, SUBFLOWS = 4, "one_to_one", 8
IDLE_S = 10


def process_cpu_s() -> float:
    ru = resource.getrusage(resource.RUSAGE_SELF)
    return ru.ru_utime + ru.ru_stime


def one_run(sweep: Sweep, mon: Monitors, flows_of, seconds: float, logdir: Path) -> dict:
    flows = sweep.driver.endpoints(flows_of)
    sweep.arm_path_manager(flows, SUBFLOWS)
    mon.watch(flows, subflows=SUBFLOWS)
    c0, t0 = process_cpu_s(), time.monotonic()
    try:
        outcomes = sweep.driver.run(flows, True, seconds, logdir, on_started=mon.start)
    finally:
        mon.stop()
    wall = time.monotonic() - t0
    errors = [o.error for o in outcomes if o.error]
    if errors:
        raise SystemExit(f"traffic failed: {errors[:3]}")
    return {"machine_cpu_pct": mon.cpu.mean_pct(),
            "process_cpu_pct": 100 * (process_cpu_s() - c0) / wall,
            "goodput_mbps": sum(o.goodput_mbps for o in outcomes),
            "rtt_dumps": mon.rtt.dumps if mon.rtt else None,
            "wall_s": mon.wall_s,
            "summary": mon.summary(from_s=2.0)}


def _mean_of(runs: list[dict]) -> dict:
    """The passes of one kind averaged; the summary is the last pass's, with
    the monitors' CPU averaged."""
    n = len(runs)
    summary = dict(runs[-1]["summary"])
    summary["monitor_cpu_pct"] = sum(r["summary"]["monitor_cpu_pct"] or 0 for r in runs) / n
    return {"machine_cpu_pct": sum(r["machine_cpu_pct"] for r in runs) / n,
            "process_cpu_pct": sum(r["process_cpu_pct"] for r in runs) / n,
            "goodput_mbps": sum(r["goodput_mbps"] for r in runs) / n,
            "rtt_dumps": runs[-1].get("rtt_dumps"), "summary": summary,
            "wall_s": runs[-1]["wall_s"]}   # the summary's per-monitor seconds are the last pass's


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--time", type=float, default=20.0, help="seconds of traffic per pass")
    ap.add_argument("--interval", type=float, default=1.0, help="sampling interval, s")
    ap.add_argument("--rounds", type=int, default=2,
                    help="rounds of both passes, in ABBA order so drift does not favour either (2)")
    args = ap.parse_args()
    if os.geteuid() != 0:
        raise SystemExit("monitor_cost.py: must be run as root (it builds network namespaces)")

    tmp = Path(tempfile.mkdtemp(prefix="monitor-cost-"))
    cfg = SweepConfig(k=K, link=LinkParams(bw_mbps=10, queue_pkts=100), time_s=args.time,
                      seed=0, results=tmp)
    sweep = Sweep(cfg, say=print)
    try:
        sweep.open()
        flows_of = list(make_matrix(WORKLOAD, sweep.fabric.hosts(), cfg.seed).flows)
        print(f"port monitor alone on the idle network, {IDLE_S} s ...", flush=True)
        idle = PortMonitor({s: sweep.fabric.pid(s) for s in sweep.topo.switches()}, args.interval)
        with Monitors(args.interval, ports=idle) as mon:
            time.sleep(IDLE_S)
        idle_ms_per_s = 1000 * idle.cpu_s / mon.wall_s
        print(f"    port monitor CPU on the idle network: {idle_ms_per_s:.2f} ms per second")
        passes = {
            "CpuMonitor only": Monitors(args.interval, cpu=CpuMonitor()),
            "all monitors": Monitors.for_fabric(sweep.fabric, sweep.pm, args.interval),
        }
        labels = list(passes)
        order = [lab for r in range(args.rounds) for lab in (labels if r % 2 == 0 else labels[::-1])]
        each: dict[str, list[dict]] = {lab: [] for lab in labels}
        for i, label in enumerate(order):
            print(f"[{i + 1}/{len(order)}] {label}: {WORKLOAD}, {len(flows_of)} flows x {SUBFLOWS} "
                  f"subflows, {args.time:g} s ...", flush=True)
            r = one_run(sweep, passes[label], flows_of, args.time, tmp / f"{i}-{label.replace(' ', '-')}")
            print(f"    machine CPU {r['machine_cpu_pct']:.1f} %, monitors "
                  f"{r['summary']['monitor_cpu_pct']:.3f} % of one core, {r['goodput_mbps']:.1f} Mb/s")
            each[label].append(r)
        results = {lab: _mean_of(rs) for lab, rs in each.items()}
    finally:
        sweep.close()
        shutil.rmtree(tmp, ignore_errors=True)

    print(f"\nFatTree({K}), {WORKLOAD}, MPTCP-{SUBFLOWS}, {args.time:g} s, sampling every "
          f"{args.interval:g} s; means of {args.rounds} passes each")
    print(f"{'':18} {'machine CPU':>12} {'process CPU':>12} {'monitors CPU':>13} {'goodput':>10}")
    for label, r in results.items():
        s = r["summary"]
        print(f"{label:18} {r['machine_cpu_pct']:>10.1f} % {r['process_cpu_pct']:>8.1f} %/core "
              f"{s['monitor_cpu_pct']:>7.3f} %/core {r['goodput_mbps']:>6.1f} Mb/s")
    full = results["all monitors"]["summary"]
    print("\nmonitor threads' CPU, seconds:", full["monitor_cpu_s_by"],
          f"(total {full['monitor_cpu_s']} s, {full['monitor_cpu_pct']} % of one core; "
          f"errors {full['monitor_errors']}; socket dumps by the RTT monitor: "
          f"{results['all monitors']['rtt_dumps']})")
    loaded_ms_per_s = 1000 * full["monitor_cpu_s_by"]["ports"] / results["all monitors"]["wall_s"]
    print(f"port monitor CPU, same work: idle {idle_ms_per_s:.2f} ms/s, under load "
          f"{loaded_ms_per_s:.2f} ms/s: the load inflates thread CPU time "
          f"{loaded_ms_per_s / idle_ms_per_s:.1f}x; all monitors deflated by that: "
          f"~{full['monitor_cpu_pct'] / (loaded_ms_per_s / idle_ms_per_s):.2f} % of one core")
    print("summary of the full pass (after 2 s):",
          {k: v for k, v in full.items() if not k.startswith("monitor_")})


if __name__ == "__main__":
    main()
