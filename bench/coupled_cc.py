#!/usr/bin/env python3
"""Coupled against uncoupled congestion control on the paper's permutation.

    sudo .venv/bin/python bench/coupled_cc.py [--ccs reno,lia] [--k 4] [--subflows 8]
        [--seeds 0] [--time 40] [--bw 10] [--queue 100] [--results DIR]

One FatTree(k) one_to_one sweep per (algorithm, seed), MPTCP with --subflows
(default 8). Printed per algorithm, over the flows of all seeds: mean, p10
and min % of optimal, the switch queues' mean and largest occupancy (packets,
over every switch port after the warm-up), drops per second, CPU and flags.
The paper (Fig. 9-10): on a permutation LIA is close to uncoupled in
throughput but keeps queues and loss rates lower. Exit status 0 whatever it
measures.
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from experiments.config import LinkParams, SweepConfig  # noqa: E402
from experiments.fattree import Sweep, _percentile  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--ccs", default="reno,lia")
    ap.add_argument("--k", type=int, default=4)
    ap.add_argument("--subflows", type=int, default=8)
    ap.add_argument("--seeds", default="0")
    ap.add_argument("--time", type=float, default=40.0)
    ap.add_argument("--bw", type=float, default=10.0)
    ap.add_argument("--queue", type=int, default=100)
    ap.add_argument("--results", type=Path, default=Path("/tmp/coupled-cc"))
    args = ap.parse_args()
    seeds = [int(s) for s in args.seeds.split(",")]
    rows = {}
    for cc in args.ccs.split(","):
        recs = []
        for seed in seeds:
            cfg = SweepConfig(k=args.k, subflows=(args.subflows,), time_s=args.time, seed=seed,
                              link=LinkParams(bw_mbps=args.bw, queue_pkts=args.queue), cc=cc,
                              results=args.results / f"{cc}-seed{seed}")
            print(f"--- {cc}, seed {seed}: FatTree({args.k}) one_to_one MPTCP-{args.subflows}, "
                  f"{cfg.warmup:g} + {cfg.counted:g} s, results in {cfg.results}", flush=True)
            for path in Sweep(cfg, say=lambda m: print(f"    {m}", flush=True)).run():
                recs.append(json.loads((path / "run.json").read_text()))
        rows[cc] = recs
    print(f"\n=== FatTree({args.k}) one_to_one, MPTCP-{args.subflows}, {args.bw:g} Mb/s, "
          f"{args.queue}-packet queues, {args.time:g} s counted, seeds {args.seeds} ===")
    print(f"{'cc':>6} {'mean %':>7} {'p10 %':>6} {'min %':>6} {'queue mean':>10} {'queue max':>9} "
          f"{'drops/s':>8} {'cpu %':>6}  flags")
    for cc, recs in rows.items():
        pcts = sorted(f["pct_optimal"] for r in recs for f in r["flows"])
        mon = [r.get("monitors") or {} for r in recs]
        backlog = [m["backlog_mean_pkts"] for m in mon if m.get("backlog_mean_pkts") is not None]
        most = [m["backlog_max_pkts"] for m in mon if m.get("backlog_max_pkts") is not None]
        drops = [m.get("drops", 0) / r["config"]["time_s"] for m, r in zip(mon, recs)]
        cpu = [r["cpu_mean_pct"] for r in recs if r.get("cpu_mean_pct") is not None]
        flags = sorted({fl for r in recs for fl in r["flags"]})
        print(f"{cc:>6} {statistics.fmean(pcts):7.1f} {_percentile(pcts, 10):6.1f} {pcts[0]:6.1f} "
              f"{statistics.fmean(backlog) if backlog else float('nan'):10.2f} "
              f"{max(most) if most else float('nan'):9.0f} {statistics.fmean(drops):8.1f} "
              f"{statistics.fmean(cpu) if cpu else float('nan'):6.1f}  {','.join(flags) or '-'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
