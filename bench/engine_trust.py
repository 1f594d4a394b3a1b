#!/usr/bin/env python3
"""How much lateness the model fabric's results bear: delivery noise injected.

    sudo .venv/bin/python bench/engine_trust.py [--k 4] [--bw 10] [--noise 0,100,300,1000,3000]
        [--repeats 3] [--subflows 8] [--time 30] [--warmup 10] [--driver socket] [--results DIR]

The engine's --noise-us X makes every delivery up to X µs later than the
model says (uniform, in order). For each X in turn (X1 X2 ... then again,
--repeats times), one FatTree(k) one_to_one sweep on the model fabric: the
runs' mean % of optimal, the data subflows' mean RTT, and the engine's own
lateness. Printed: per X the mean and spread over repeats, and the smallest
X whose mean % of optimal or RTT moved beyond the repeats' spread at X = 0
by a point (RTT: by 1 %). Half that X is the lateness a run may have before
its figures move (docs/fabrics.md, "The model fabric"). Exit 0: it measures.
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from experiments.config import LinkParams, SweepConfig  # noqa: E402
from experiments.fattree import Sweep  # noqa: E402


def one(noise_us: int, args, folder: Path) -> dict:
    cfg = SweepConfig(k=args.k, workloads=("one_to_one",), subflows=(args.subflows,), time_s=args.time,
                      warmup_s=args.warmup, link=LinkParams(bw_mbps=args.bw, queue_pkts=100),
                      fabric="model", driver=args.driver, results=folder, force=True)
    sweep = Sweep(cfg, say=lambda m: print(f"  [noise {noise_us} us] {m}", flush=True))
    sweep.fabric.engine_options["noise-us"] = noise_us
    try:
        sweep.open()
        sweep.baseline_mbps = sweep.measure_baseline()
        [rc] = cfg.runs()
        sweep.run_one(rc)
        rec = json.loads((rc.run_dir(cfg.results) / "run.json").read_text())
    finally:
        sweep.close()
    return {"noise_us": noise_us, "mean_pct": rec["summary"]["mean_pct"],
            "rtt_ms": rec["monitors"].get("rtt_mean_ms"), "late": rec["fabric_engine"]["lateness_us"],
            "flags": rec["flags"]}


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--k", type=int, default=4)
    p.add_argument("--bw", type=float, default=10.0)
    p.add_argument("--noise", type=lambda t: [int(x) for x in t.split(",")], default=[0, 100, 300, 1000, 3000])
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--subflows", type=int, default=8)
    p.add_argument("--time", type=float, default=30.0)
    p.add_argument("--warmup", type=float, default=10.0)
    p.add_argument("--driver", default="socket")
    p.add_argument("--results", type=Path, default=None)
    args = p.parse_args()
    results = args.results or Path(tempfile.mkdtemp(prefix="engine-trust-"))
    rows = [one(x, args, results / f"noise{x}-{r}") for r in range(args.repeats) for x in args.noise]
    print(f"\nFatTree({args.k}) one_to_one MPTCP-{args.subflows} at {args.bw:g} Mb/s on the model fabric, "
          f"{args.time:g} s after {args.warmup:g} s, {args.repeats} repeats")
    print("| noise µs | mean % (each) | RTT ms (each) | engine lateness p50/p99 µs | flags |")
    print("| --- | --- | --- | --- | --- |")
    by = {x: [r for r in rows if r["noise_us"] == x] for x in args.noise}
    for x, rs in by.items():
        means = [r["mean_pct"] for r in rs]
        rtts = [r["rtt_ms"] or 0.0 for r in rs]
        late = "/".join(str(r["late"]["p50_us"]) for r in rs) + " - " + "/".join(str(r["late"]["p99_us"]) for r in rs)
        flags = ",".join(sorted({f for r in rs for f in r["flags"]})) or "-"
        print(f"| {x} | {statistics.fmean(means):.1f} ({', '.join(f'{m:.1f}' for m in means)}) "
              f"| {statistics.fmean(rtts):.1f} ({', '.join(f'{v:.1f}' for v in rtts)}) | {late} | {flags} |")
    base = by[args.noise[0]]
    lo = min(r["mean_pct"] for r in base) - 1.0
    hi = max(r["mean_pct"] for r in base) + 1.0
    rtt_lo = min(r["rtt_ms"] or 0 for r in base) * 0.99
    rtt_hi = max(r["rtt_ms"] or 0 for r in base) * 1.01
    moved = [x for x, rs in by.items() if x != args.noise[0] and (
        not lo <= statistics.fmean(r["mean_pct"] for r in rs) <= hi
        or not rtt_lo <= statistics.fmean(r["rtt_ms"] or 0 for r in rs) <= rtt_hi)]
    print(f"smallest noise that moved the mean by a point or the RTT by 1 % beyond the spread at "
          f"{args.noise[0]} µs: {min(moved) if moved else 'none of those tried'} µs")
    print(f"records: {results}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
