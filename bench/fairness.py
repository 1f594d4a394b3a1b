#!/usr/bin/env python3
"""Fairness at a shared bottleneck and load shifting, per congestion control.

    sudo .venv/bin/python bench/fairness.py [--ccs reno,lia,olia,ewtcp] [--repeat 2]
        [--time 40] [--warmup 5] [--bw 10] [--queue 100] [--cross 1]
        [--cases shared,shift] [--two-flows] [--jitter-ms J]

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

--two-flows adds, in the shared case, h1 sending two single-subflow Reno
connections instead: what two flows' worth is on this network. Each run
also prints h1's and x1's retransmitted share of the segments they sent.

--jitter-ms J gives every access link a one-way delay of J ms with a
uniform jitter of +-J ms (the delay line of emulator/delayline.py, never
reordering). Without it every link's timing is exact, and a drop-tail
queue then drops by phase (Floyd and Jacobson 1992): which flow's packet
arrives at the instant the queue is full is fixed by the round trips, not
by chance, and an MPTCP connection's subflows come out on the losing side
(docs/notebook.md, "Benchmarks' measurements").

Each case runs --repeat times per algorithm, interleaved. Exit status 0
whatever it measures.
"""
from __future__ import annotations

import argparse
import math
import statistics
import sys
from pathlib import Path
from tempfile import TemporaryDirectory

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from experiments.fairness import CASES, TWO_FLOWS, TwoPathCase, TwoPathResult, jittered_access  # noqa: E402
from emulator.keepawake import KeepAwake  # noqa: E402


def measure(case: str, ccs: list[str], args, logdir: Path) -> dict[str, list[TwoPathResult]]:
    two_flows = args.two_flows and case == "shared"
    out: dict[str, list[TwoPathResult]] = {cc: [] for cc in ccs + ([TWO_FLOWS] if two_flows else [])}
    access = jittered_access(args.jitter_ms)
    with TwoPathCase(case, args.bw, args.queue, args.cross, access) as two_paths:
        for rep in range(args.repeat):
            for cc in out:
                if cc == TWO_FLOWS:
                    result = two_paths.run_two_flows(args.time, args.warmup, logdir)
                else:
                    result = two_paths.run(cc, args.time, args.warmup, logdir)
                out[cc].append(result)
                print(f"  run {rep + 1}/{args.repeat}: {result.line()}", flush=True)
    return out


def spread(values: list[float], fmt: str = ".2f") -> str:
    """mean, standard deviation and each value."""
    sd = f" sd {statistics.stdev(values):{fmt}}" if len(values) > 1 else ""
    return f"mean {statistics.fmean(values):{fmt}}{sd} ({' '.join(f'{v:{fmt}}' for v in values)})"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--ccs", default="reno,lia,olia,ewtcp")
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--time", type=float, default=40.0)
    ap.add_argument("--warmup", type=float, default=5.0)
    ap.add_argument("--bw", type=float, default=10.0)
    ap.add_argument("--queue", type=int, default=100)
    ap.add_argument("--cross", type=int, default=1, help="Reno flows of competing traffic (1)")
    ap.add_argument("--cases", default=",".join(CASES), help="comma list of " + ", ".join(CASES))
    ap.add_argument("--two-flows", action="store_true",
                    help="also two single-subflow Reno connections from h1 (shared case)")
    ap.add_argument("--jitter-ms", type=float, default=0.0,
                    help="access links' one-way delay and its +- jitter, ms (0: exact timing)")
    args = ap.parse_args()
    if not (math.isfinite(args.jitter_ms) and 0 <= args.jitter_ms <= 100):
        ap.error("--jitter-ms: must be within 0..100")
    ccs = args.ccs.split(",")
    cases = args.cases.split(",")
    if not set(cases) <= set(CASES):
        ap.error(f"--cases: choose from {', '.join(CASES)}")
    with KeepAwake(), TemporaryDirectory() as tmp:
        results = {case: measure(case, ccs, args, Path(tmp)) for case in cases}
    jitter = f", access links {args.jitter_ms:g} +- {args.jitter_ms:g} ms" if args.jitter_ms else ""
    print(f"\n=== TwoPaths, {args.bw:g} Mb/s bottlenecks, {args.queue}-packet queues{jitter}, "
          f"{args.cross} Reno flow(s), {args.warmup:g} + {args.time:g} s, {args.repeat} runs each ===")
    for cc, runs in results.get("shared", {}).items():
        h1 = [r.retrans_pct["h1"] for r in runs]
        x1 = [r.retrans_pct["x1"] for r in runs]
        print(f"shared {cc:>7}: over the Reno flow {spread([r.ratio for r in runs])}; retransmitted "
              f"% of segments sent: h1 {statistics.fmean(h1):.2f}, x1 {statistics.fmean(x1):.2f}")
    for cc, runs in results.get("shift", {}).items():
        reno = [statistics.fmean(r.reno_mbps) for r in runs]
        print(f"shift  {cc:>7}: share on the free path {spread([r.free_share for r in runs])}; "
              f"Reno there {statistics.fmean(reno):.2f} Mb/s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
