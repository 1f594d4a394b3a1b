#!/usr/bin/env python3
"""Fairness at a shared bottleneck and load shifting, per congestion control.

    sudo .venv/bin/python bench/cc_fairness.py [--ccs reno,lia,olia,ewtcp] [--repeat 2]
        [--time 40] [--warmup 5] [--bw 10] [--queue 100]

On dctopo.TwoPaths (two disjoint bottlenecks of --bw Mb/s, --queue packets):

  shared  an MPTCP connection with two subflows on bottleneck 0 next to
          one Reno flow on it (x1 -> x2). Printed: MPTCP / Reno goodput.
          RFC 6356's goal for LIA, OLIA, EWTCP: about 1; uncoupled Reno
          subflows: about 2.
  shift   an MPTCP connection with one subflow per bottleneck, bottleneck
          1 also carrying a Reno flow. Printed: the share of MPTCP's bytes on
          the free bottleneck 0, and the Reno flow's goodput. Coupled
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

from dctopo import TwoPaths  # noqa: E402
from harness.config import LinkParams  # noqa: E402
from harness.keepawake import KeepAwake  # noqa: E402
from harness.network import Network  # noqa: E402
from harness.traffic import CLIENT_PORT_BASE, SERVER_PORT_BASE, FlowEndpoints  # noqa: E402
from kernel.transport import read_dev_bytes  # noqa: E402


def measure(case: str, ccs: list[str], args, logdir: Path) -> dict[str, list[tuple[float, float]]]:
    cross = 0 if case == "shared" else 1
    topo = TwoPaths(bottleneck=LinkParams(bw_mbps=args.bw, queue_pkts=args.queue), cross_path=cross)
    out: dict[str, list[tuple[float, float]]] = {cc: [] for cc in ccs}
    index = 0
    with Network(topo, LinkParams(), cc="lia") as net:
        net.set_cc("x1", "reno")
        for rep in range(args.repeat):
            for cc in ccs:
                net.set_cc("h1", cc)
                src, dst = topo.path_addresses(0)
                mp = FlowEndpoints(index, "h1", "h2", src, dst, CLIENT_PORT_BASE + index,
                                   SERVER_PORT_BASE + index)
                x_src, x_dst = f"10.{cross + 1}.0.3", f"10.{cross + 1}.1.3"
                tcp = FlowEndpoints(index + 1, "x1", "x2", x_src, x_dst, CLIENT_PORT_BASE + index + 1,
                                    SERVER_PORT_BASE + index + 1)
                index += 2
                net.pm.reset()
                net.pm.expand("h1", (src, mp.client_port), (dst, mp.server_port), 2,
                              paths=None if case == "shared" else [topo.path_addresses(1)])
                before = read_dev_bytes(net.fabric.pid("h1"))
                o_mp, o_tcp = net.driver.run([mp, tcp], True, args.time, logdir / f"{case}-{index}",
                                             warmup_s=args.warmup, bind_servers=False)
                after = read_dev_bytes(net.fabric.pid("h1"))
                sent = [after[f"h1-eth{p}"][1] - before[f"h1-eth{p}"][1] for p in (0, 1)]
                errors = [o.error for o in (o_mp, o_tcp) if o.error]
                if case == "shared":
                    value = o_mp.goodput_mbps / o_tcp.goodput_mbps if o_tcp.goodput_mbps else float("nan")
                else:
                    value = sent[0] / sum(sent) if sum(sent) else float("nan")
                out[cc].append((value, o_tcp.goodput_mbps))
                print(f"  {case} {cc} run {rep + 1}: MPTCP {o_mp.goodput_mbps:.2f} Mb/s, "
                      f"Reno {o_tcp.goodput_mbps:.2f} Mb/s, "
                      + (f"ratio {value:.2f}" if case == "shared" else f"share on the free path {value:.2f}")
                      + (f"  ERRORS {errors}" if errors else ""), flush=True)
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--ccs", default="reno,lia,olia,ewtcp")
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--time", type=float, default=40.0)
    ap.add_argument("--warmup", type=float, default=5.0)
    ap.add_argument("--bw", type=float, default=10.0)
    ap.add_argument("--queue", type=int, default=100)
    args = ap.parse_args()
    ccs = args.ccs.split(",")
    with KeepAwake(), TemporaryDirectory() as tmp:
        shared = measure("shared", ccs, args, Path(tmp))
        shift = measure("shift", ccs, args, Path(tmp))
    print(f"\n=== TwoPaths, {args.bw:g} Mb/s bottlenecks, {args.queue}-packet queues, "
          f"{args.warmup:g} + {args.time:g} s, {args.repeat} runs each ===")
    print(f"{'cc':>6} {'shared: MPTCP/Reno':>19} {'shift: share on free path':>26} {'Reno there (Mb/s)':>18}")
    for cc in ccs:
        ratios = [v for v, _ in shared[cc]]
        shares = [v for v, _ in shift[cc]]
        reno = [t for _, t in shift[cc]]
        print(f"{cc:>6} {statistics.fmean(ratios):10.2f} ({' '.join(f'{r:.2f}' for r in ratios)})"
              f" {statistics.fmean(shares):12.2f} ({' '.join(f'{s:.2f}' for s in shares)})"
              f" {statistics.fmean(reno):12.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
