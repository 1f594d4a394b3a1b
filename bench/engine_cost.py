#!/usr/bin/env python3
"""What a delivered frame costs on the model fabric, against l3, and where it goes.

    sudo .venv/bin/python bench/engine_cost.py [--k 8] [--rates 2,4,10]
        [--fabrics model,l3] [--repeats 1] [--subflows 1] [--time 20] [--warmup 5]
        [--host-nic htb] [--sim-acks] [--driver iperf3] [--profile engine|all]
        [--results DIR]

For each rate, each fabric in turn (A B A B with --repeats 2), one sweep of
FatTree(k) one_to_one (a permutation) at that rate. Per run: the frames the
hosts received (data and ACKs, every host interface's rx_packets), the
machine's busy CPU over the run (/proc/stat, both cores), both per delivered
frame; on the model fabric the engine's own user and system time per frame,
its share of a core and its deliveries' lateness; the mean % of optimal and
the run's flags. With --profile, `perf record` samples the engine (or, with
`all`, the whole machine) for 10 s of the last run at each rate and the top
symbols are printed. Exit 0: this measures, it judges nothing.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from experiments.config import LinkParams, SweepConfig  # noqa: E402
from experiments.fattree import Sweep  # noqa: E402
from monitor.cpu import CpuTimes, read_proc_stat  # noqa: E402

TICK = os.sysconf("SC_CLK_TCK")

PROFILE_S = 10


def parse_list(text: str, kind):
    return [kind(x) for x in text.split(",") if x.strip()]


def engine_options(text: str) -> dict[str, int]:
    pairs = [p.split("=") for p in text.split(",") if p.strip()]
    return {k.strip(): int(v) for k, v in pairs}


def busy_seconds(before: list[int]) -> float:
    """Busy CPU-seconds of all cores since the /proc/stat `cpu` line `before`."""
    return CpuTimes.between(before, read_proc_stat()["cpu"]).busy / TICK


def host_rx_frames(sweep: Sweep) -> int:
    total = 0
    for host in sweep.fabric.hosts():
        for row in Path(f"/proc/{sweep.fabric.pid(host)}/net/dev").read_text().splitlines()[2:]:
            name, _, fields = row.partition(":")
            if name.strip().startswith(host):
                total += int(fields.split()[1])
    return total


def profile(pid: int | None, seconds: float, out: Path) -> None:
    target = ["-p", str(pid)] if pid else ["-a"]
    subprocess.run(["perf", "record", "-q", "-F", "499", "-g", *target, "-o", str(out), "--",
                    "sleep", str(seconds)], capture_output=True, timeout=seconds + 60)


def top_symbols(data: Path, lines: int = 25) -> str:
    done = subprocess.run(["perf", "report", "-i", str(data), "--stdio", "--no-children",
                           "--sort", "symbol", "--percent-limit", "1", "-g", "none"],
                          capture_output=True, text=True, timeout=300)
    rows = [r for r in done.stdout.splitlines() if r.strip() and not r.startswith("#")]
    return "\n".join(rows[:lines]) or done.stderr.strip()


def one_sweep(fabric: str, bw: float, args, folder: Path, profile_to: Path | None) -> list[dict]:
    model = fabric == "model"
    cfg = SweepConfig(k=args.k, workloads=("one_to_one",), subflows=args.subflows, time_s=args.time,
                      warmup_s=args.warmup, link=LinkParams(bw_mbps=bw, queue_pkts=100), seed=args.seed, cc=args.cc,
                      fabric=fabric, driver=args.driver, results=folder,
                      host_nic=args.host_nic if model else "htb",
                      sim_acks=model and args.sim_acks)
    sweep = Sweep(cfg, say=lambda m: print(f"  [{fabric} {bw:g}] {m}", flush=True))
    if model:
        sweep.fabric.engine_options.update(args.engine)
    rows = []
    try:
        sweep.open()
        sweep.baseline_mbps = sweep.measure_baseline()
        runs = cfg.runs()
        for i, rc in enumerate(runs):
            frames, busy = host_rx_frames(sweep), read_proc_stat()["cpu"]
            prof = None
            if profile_to is not None and i == len(runs) - 1:
                pid = sweep.fabric.engine.pid if model and args.profile == "engine" else None
                prof = threading.Timer(args.warmup + 2, profile, (pid, PROFILE_S, profile_to))
                prof.start()
            sweep.run_one(rc)
            if prof is not None:
                prof.join()
            frames = host_rx_frames(sweep) - frames
            busy_s = busy_seconds(busy)
            rec = json.loads((rc.run_dir(cfg.results) / "run.json").read_text())
            engine = rec.get("fabric_engine") or {}
            rows.append({"fabric": fabric, "bw": bw, "subflows": rc.subflows, "frames": frames,
                         "machine_us": 1e6 * busy_s / frames if frames else None,
                         "engine_user_us": (1e6 * engine["cpu_s"]["user_s"] / engine["delivered"]
                                            if engine.get("delivered") else None),
                         "engine_sys_us": (1e6 * engine["cpu_s"]["system_s"] / engine["delivered"]
                                           if engine.get("delivered") else None),
                         "engine_core_pct": engine.get("core_pct"),
                         "late_p50_us": engine.get("lateness_us", {}).get("p50_us"),
                         "late_p99_us": engine.get("lateness_us", {}).get("p99_us"),
                         "mean_pct": rec["summary"]["mean_pct"], "flags": rec["flags"]})
    finally:
        sweep.close()
    return rows


def fmt(v, spec=".1f") -> str:
    return "-" if v is None else format(v, spec)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--k", type=int, default=8)
    p.add_argument("--rates", type=lambda t: parse_list(t, float), default=[2.0, 4.0, 10.0])
    p.add_argument("--fabrics", type=lambda t: parse_list(t, str), default=["model", "l3"])
    p.add_argument("--repeats", type=int, default=1)
    p.add_argument("--subflows", type=lambda t: tuple(parse_list(t, int)), default=(1,))
    p.add_argument("--time", type=float, default=20.0)
    p.add_argument("--warmup", type=float, default=5.0)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--driver", default="iperf3")
    p.add_argument("--cc", default="lia")
    p.add_argument("--host-nic", default="htb", choices=("htb", "model"))
    p.add_argument("--sim-acks", action="store_true", help="the model fabric's ACKs through no queue")
    p.add_argument("--profile", choices=("engine", "all"))
    p.add_argument("--engine", type=engine_options, default={},
                   help="the engine's options, e.g. writers=1,slack-us=20 (engine/engine.c)")
    p.add_argument("--results", type=Path, default=None)
    args = p.parse_args()
    results = args.results or Path(tempfile.mkdtemp(prefix="engine-cost-"))
    rows, profiles = [], {}
    for bw in args.rates:
        for r in range(args.repeats):
            for fabric in args.fabrics:
                prof = (results / f"perf-{fabric}-{bw:g}.data"
                        if args.profile and r == args.repeats - 1 and (fabric == "model" or args.profile == "all")
                        else None)
                rows += one_sweep(fabric, bw, args, results / f"{fabric}-{bw:g}-{r}", prof)
                if prof is not None and prof.exists():
                    profiles[(fabric, bw)] = top_symbols(prof)
    print(f"\nFatTree({args.k}) one_to_one, {args.time:g} s after {args.warmup:g} s, driver {args.driver}, "
          f"model: host NIC {args.host_nic}, ACKs {'sim' if args.sim_acks else 'data'}, engine {args.engine or 'defaults'}; "
          "µs are CPU per frame delivered")
    print("| fabric | Mb/s | subflows | frames/s | machine µs | engine user µs | engine sys µs | "
          "engine core % | lateness p50/p99 µs | mean % | flags |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for r in rows:
        print(f"| {r['fabric']} | {r['bw']:g} | {r['subflows']} | {r['frames'] / (args.time + args.warmup):.0f} "
              f"| {fmt(r['machine_us'])} | {fmt(r['engine_user_us'], '.2f')} | {fmt(r['engine_sys_us'], '.2f')} "
              f"| {fmt(r['engine_core_pct'])} | {fmt(r['late_p50_us'], 'd')}/{fmt(r['late_p99_us'], 'd')} "
              f"| {r['mean_pct']:.1f} | {','.join(r['flags']) or '-'} |")
    for key in sorted({(r["fabric"], r["bw"], r["subflows"]) for r in rows}):
        same = [r["machine_us"] for r in rows if (r["fabric"], r["bw"], r["subflows"]) == key and r["machine_us"]]
        if len(same) > 1:
            print(f"{key[0]} {key[1]:g} Mb/s MPTCP-{key[2]}: machine µs per frame {statistics.fmean(same):.1f} "
                  f"(spread {min(same):.1f}..{max(same):.1f} over {len(same)})")
    for (fabric, bw), text in profiles.items():
        print(f"\nperf, {fabric} at {bw:g} Mb/s ({args.profile}), symbols above 1 %:\n{text}")
    print(f"\nrecords: {results}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
