#!/usr/bin/env python3
"""Fairness at a shared bottleneck and load shifting, per congestion control.

    sudo .venv/bin/python bench/fairness.py [--ccs reno,lia,olia,ewtcp] [--repeat 2]
        [--time 40] [--warmup 5] [--bw 10] [--queue 100] [--cross 1]

On dctopo.TwoPaths (two disjoint bottlenecks of --bw Mb/s, --queue packets,
--cross Reno flows as competing traffic; experiments/fairness.py):

  shared  an MPTCP connection with two subflows on bottleneck 0 next to
          the Reno flows on it (x1 -> x2). Printed: MPTCP / mean Reno goodput.
          RFC 6356's goal for LIA, OLIA, EWTCP: about 1; uncoupled Reno
          subflows: about 2.
  shift   an MPTCP connection with one subflow per bottleneck, bottleneck
          1 also carrying the Reno flows. Printed: the share of MPTCP's bytes on
          the free bottleneck 0, and the mean Reno goodput. Coupled
          algorithms that move traffic off congestion (LIA, OLIA) should
          put more on bottleneck 0 than uncoupled Reno and EWTCP.

Each case runs --repeat times per algorithm, interleaved. Exit status 0
whatever it measures.
"""
from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path
from tempfile import TemporaryDirectory

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from experiments.fairness import CASES, TwoPathCase, TwoPathResult  # noqa: E402
from emulator.keepawake import KeepAwake  # noqa: E402


def measure(case: str, ccs: list[str], args, logdir: Path) -> dict[str, list[TwoPathResult]]:
    out: dict[str, list[TwoPathResult]] = {cc: [] for cc in ccs}
    with TwoPathCase(case, args.bw, args.queue, args.cross) as two_paths:
        for rep in range(args.repeat):
            for cc in ccs:
                result = two_paths.run(cc, args.time, args.warmup, logdir)
                out[cc].append(result)
                print(f"  run {rep + 1}: {result.line()}", flush=True)
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--ccs", default="reno,lia,olia,ewtcp")
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--time", type=float, default=40.0)
    ap.add_argument("--warmup", type=float, default=5.0)
    ap.add_argument("--bw", type=float, default=10.0)
    ap.add_argument("--queue", type=int, default=100)
    ap.add_argument("--cross", type=int, default=1, help="Reno flows of competing traffic (1)")
    args = ap.parse_args()
    ccs = args.ccs.split(",")
    with KeepAwake(), TemporaryDirectory() as tmp:
        shared, shift = (measure(case, ccs, args, Path(tmp)) for case in CASES)
    print(f"\n=== TwoPaths, {args.bw:g} Mb/s bottlenecks, {args.queue}-packet queues, "
          f"{args.cross} Reno flow(s), {args.warmup:g} + {args.time:g} s, {args.repeat} runs each ===")
    print(f"{'cc':>6} {'shared: MPTCP/Reno':>19} {'shift: share on free path':>26} {'Reno there (Mb/s)':>18}")
    for cc in ccs:
        ratios = [r.ratio for r in shared[cc]]
        shares = [r.free_share for r in shift[cc]]
        reno = [statistics.fmean(r.reno_mbps) for r in shift[cc]]
        print(f"{cc:>6} {statistics.fmean(ratios):10.2f} ({' '.join(f'{r:.2f}' for r in ratios)})"
              f" {statistics.fmean(shares):12.2f} ({' '.join(f'{s:.2f}' for s in shares)})"
              f" {statistics.fmean(reno):12.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
