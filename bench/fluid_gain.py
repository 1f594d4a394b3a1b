#!/usr/bin/env python3
"""The fluid model's gain (dctopo/dctopo/fluid_model.py) on the 4:1 oversubscribed
FatTree, against load and locality, for the networks `oversub` can run and the
paper's: pooled multipath over TCP on ECMP, both max-min fair. No network,
no root: arithmetic over the same matrices `oversub` draws (workloads.make_rack_matrix).

    .venv/bin/python bench/fluid_gain.py [--ks 4,8] [--ratio 4] [--seeds 0]
        [--draws 10] [--loads 0.015625,0.0625,0.25,1,2] [--localities 0,0.25,0.5,0.75,1]

Prints one line per network and sweep: the pooled aggregate over TCP's
(mean over the ECMP draws), summed over the seeds before dividing. At k=8
(512 hosts) one seed takes a few seconds.

Exit status 0 whatever it computes: this reports, it does not test.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from dctopo import FatTree  # noqa: E402
from dctopo.fluid_model import EcmpModel  # noqa: E402
from dctopo.workloads import make_rack_matrix  # noqa: E402


def floats(text: str) -> list[float]:
    return [float(v) for v in text.split(",")]


def gains(model: EcmpModel, workload: str, xs: list[float], seeds: list[int], draws: int) -> list[float]:
    topo, out = model.topo, []
    for x in xs:
        tcp = pooled = 0.0
        for seed in seeds:
            matrix = make_rack_matrix(workload, topo.hosts(), topo.racks(), x, seed)
            result = model.evaluate(matrix.pairs(), draws, seed)
            tcp, pooled = tcp + result.tcp, pooled + result.pooled
        out.append(pooled / tcp if tcp else float("nan"))
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--ks", default="4,8")
    ap.add_argument("--ratio", type=int, default=4)
    ap.add_argument("--seeds", default="0")
    ap.add_argument("--draws", type=int, default=10)
    ap.add_argument("--loads", default="0.015625,0.0625,0.25,1,2")
    ap.add_argument("--localities", default="0,0.25,0.5,0.75,1")
    args = ap.parse_args()
    seeds = [int(s) for s in args.seeds.split(",")]
    loads, localities = floats(args.loads), floats(args.localities)
    print(f"pooled / TCP, max-min fluid model, seeds {seeds}, {args.draws} ECMP draws")
    print("loads (connections per host): " + " ".join(f"{x:g}" for x in loads))
    print("localities (rack-local share): " + " ".join(f"{x:g}" for x in localities))
    for k in (int(v) for v in args.ks.split(",")):
        model = EcmpModel(FatTree(k=k, oversubscription=args.ratio), link_mbps=1.0)
        name = f"FatTree({k}) {args.ratio}:1, {len(model.access)} hosts"
        for workload, xs in (("permutation", loads), ("random", loads), ("random_locality", localities)):
            values = gains(model, workload, xs, seeds, args.draws)
            print(f"{name}, {workload}: " + " ".join(f"{v:.2f}" for v in values), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
