#!/usr/bin/env python3
"""Fidelity benchmark: does the FatTree figure match the paper, run after run?

    sudo .venv/bin/python bench/fidelity.py [--k 4,6] [--judge 8] [--seeds 0,1,2]
        [--subflows 1-8] [--time SECONDS] [--bw 10] [--fabric l3] [--cc reno] [--results DIR]

For every k: the capacity guard's verdict at --bw; where the guard refuses,
the benchmark runs at the rate it suggests and says so. Each seed is one sweep
(one network; the seed draws the traffic matrix and the per-switch ECMP hash
seeds) over TCP and MPTCP with 2..8 subflows, one_to_one.

Printed per subflow count, over the flows of all seeds: mean, p10 and min %
of optimal, the per-seed means, the runs' flags; per sweep its wall time
against its traffic time. For k=4 the project's fidelity targets are
checked and printed as PASS/FAIL (TCP mean <= 65 %, MPTCP-8 mean >= 85 % with
p10 >= 60 %, means rising with subflows, no flagged run, wall <= 1.25 x
traffic). `--judge K` prints only the guard's verdict for FatTree(K).
Exit status 0 whether or not targets are met: this measures, it does not test.
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.cli import exit_timed  # noqa: E402
from experiments import capacity  # noqa: E402
from harness.options import parse_subflows  # noqa: E402
from experiments.config import LinkParams, SweepConfig  # noqa: E402
from experiments.fattree import Sweep, _percentile, traffic_seconds  # noqa: E402

# The project's k=4 targets. The paper has no k=4 figure: its Fig. 2 is
# k=8 (TCP under half of optimal, MPTCP-8 about 90 %); these bounds come
# from a packet-level simulation of FatTree(4) with 100-packet queues and
# hashed paths (TCP about 60 %, MPTCP with 4-8 subflows about 89 %), with
# room for run-to-run spread (docs/methodology.md, "The packet-level reference").
TCP_MEAN_MAX, MPTCP8_MEAN_MIN, MPTCP8_P10_MIN, WALL_RATIO_MAX = 65.0, 85.0, 60.0, 1.25
RISING_TOLERANCE = 1.0    # points a mean may dip from one subflow count to the next


def ints(text: str) -> list[int]:
    return [int(x) for x in text.split(",") if x]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--k", type=ints, default=[4, 6])
    ap.add_argument("--judge", type=ints, default=[8], help="k values to judge only")
    ap.add_argument("--seeds", type=ints, default=[0, 1, 2])
    ap.add_argument("--subflows", default="1-8")
    ap.add_argument("--time", type=float, default=None,
                    help="seconds counted per run (default: the sweep's, scaled to the link rate)")
    ap.add_argument("--bw", type=float, default=10.0)
    ap.add_argument("--fabric", default="l3")
    ap.add_argument("--cc", default="reno")
    ap.add_argument("--results", type=Path, default=Path("/tmp/fidelity"))
    args = ap.parse_args()
    subflows = parse_subflows(args.subflows)
    cal = capacity.calibration_for(args.fabric)

    for k in args.judge:
        v = capacity.judge(SweepConfig(k=k, link=LinkParams(bw_mbps=args.bw), fabric=args.fabric), cal)
        print(f"FatTree({k}) guard: {'fits' if v.fits else 'REFUSED'}: {v.reason()}")

    for k in args.k:
        cfg = SweepConfig(k=k, subflows=subflows, link=LinkParams(bw_mbps=args.bw),
                          time_s=args.time, fabric=args.fabric, cc=args.cc)
        verdict = capacity.judge(cfg, cal)
        print(f"\nFatTree({k}) guard: {verdict.reason()}")
        if not verdict.fits:
            cfg = cfg.replace(link=LinkParams(bw_mbps=verdict.suggested_bw_mbps))
            verdict = capacity.judge(cfg, cal)
            print(f"FatTree({k}): running at the suggested {cfg.link.bw_mbps:g} Mb/s: {verdict.reason()}")
        runs: dict[int, list[dict]] = {n: [] for n in subflows}
        sweeps = []
        for seed in args.seeds:
            scfg = cfg.replace(seed=seed, results=args.results / f"ft{k}-{cfg.link.bw_mbps:g}mbps-seed{seed}")
            print(f"--- FatTree({k}) seed {seed}: {len(subflows)} runs of {scfg.warmup:g} + "
                  f"{scfg.counted:g} s at {scfg.link.bw_mbps:g} Mb/s, results in {scfg.results}", flush=True)
            sweep = Sweep(scfg, say=lambda m: print(f"    {m}", flush=True), capacity=verdict)
            for path in sweep.run():
                rec = json.loads((path / "run.json").read_text())
                runs[rec["config"]["subflows"]].append(rec)
            sweeps.append((seed, sweep.wall_s, *traffic_seconds(scfg.runs())))
        report(k, cfg, runs, sweeps)
    return 0


def report(k: int, cfg: SweepConfig, runs: dict[int, list[dict]], sweeps) -> None:
    print(f"\n=== FatTree({k}) one_to_one, {cfg.link.bw_mbps:g} Mb/s, {cfg.link.queue_pkts}-packet "
          f"queues, {cfg.warmup:g} s warm-up + {cfg.counted:g} s, cc {cfg.cc}, fabric {cfg.fabric}, "
          f"{len(sweeps)} seeds ===")
    print(f"{'subflows':>8} {'mean %':>7} {'p10 %':>6} {'min %':>6} {'cpu %':>6}  per-seed means   flags")
    means = {}
    for n, recs in sorted(runs.items()):
        pcts = sorted(f["pct_optimal"] for r in recs for f in r["flows"])
        if not pcts:
            continue
        means[n] = statistics.fmean(pcts)
        flags = sorted({fl for r in recs for fl in r["flags"]})
        cpu = statistics.fmean(r["cpu_mean_pct"] or 0 for r in recs)
        per_seed = " ".join(f"{r['summary']['mean_pct']:.1f}" for r in recs)
        print(f"{'TCP' if n == 1 else n:>8} {means[n]:7.1f} {_percentile(pcts, 10):6.1f} "
              f"{pcts[0]:6.1f} {cpu:6.1f}  {per_seed:15s}  {','.join(flags) or '-'}")
    for seed, wall, traffic, counted in sweeps:
        print(f"seed {seed}: wall {wall:.0f} s, traffic {traffic:.0f} s (of which counted {counted:.0f} s): "
              f"wall/traffic {wall / traffic:.2f}, wall/counted {wall / counted:.2f}")
    if k != 4:
        return
    checks = []
    if 1 in runs:
        checks.append((f"TCP mean <= {TCP_MEAN_MAX:g} %", means.get(1, 1e9) <= TCP_MEAN_MAX))
    if 8 in runs:
        p10_8 = _percentile(sorted(f["pct_optimal"] for r in runs[8] for f in r["flows"]), 10)
        checks.append((f"MPTCP-8 mean >= {MPTCP8_MEAN_MIN:g} %", means.get(8, 0) >= MPTCP8_MEAN_MIN))
        checks.append((f"MPTCP-8 p10 >= {MPTCP8_P10_MIN:g} %", p10_8 >= MPTCP8_P10_MIN))
    order = sorted(means)
    checks.append((f"mean rising with subflows (dips <= {RISING_TOLERANCE:g} point)",
                   all(means[b] >= means[a] - RISING_TOLERANCE for a, b in zip(order, order[1:]))))
    checks.append(("no flagged run", all(not r["flags"] for recs in runs.values() for r in recs)))
    checks.append((f"wall <= {WALL_RATIO_MAX:g} x traffic",
                   all(w / t <= WALL_RATIO_MAX for _, w, t, _ in sweeps)))
    for what, ok in checks:
        print(f"  {'PASS' if ok else 'FAIL'}  {what}")


if __name__ == "__main__":
    exit_timed(main, "interrupted; every sweep cleaned up after itself")
