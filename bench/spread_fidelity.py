#!/usr/bin/env python3
"""Spread benchmark: a FatTree sweep on this machine against the same sweep
spread over two servers, each a namespace on this machine with its own sshd
(emulator/local_sshd.py), joined by a bridged LAN; every link between them
is a VXLAN tunnel shaped like a local one.

    sudo .venv/bin/python bench/spread_fidelity.py [--runs 2] [-- SWEEP OPTIONS]

Each layout runs `run_mptcp.sh 4 --subflows 1,8 --driver socket` --runs
times, in turns (one server, two servers, one, two...), then prints every
point's mean % of optimal per layout, and the mean over all points. Options
after `--` go to every sweep (e.g. `--bw 5`). Exit status 0 whatever it
measures: this measures, it does not test.
"""
from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from emulator.local_sshd import ssh_config_file, sshd_on  # noqa: E402
from emulator.tunnels import local_servers  # noqa: E402

SWEEP_S = 1800      # one sweep's time limit


def sweep(results: Path, extra: list[str]) -> dict[int, dict]:
    """One run_mptcp.sh sweep; subflows -> its run's record."""
    argv = [str(ROOT / "run_mptcp.sh"), "4", "--subflows", "1,8", "--driver", "socket",
            "--no-plots", "--results", str(results), *extra]
    print("$ " + " ".join(argv), flush=True)
    subprocess.run(argv, check=True, timeout=SWEEP_S)
    records = (json.loads(p.read_text()) for p in results.glob("**/run.json"))
    return {r["config"]["subflows"]: r for r in records}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=2, help="sweeps per layout (default: 2)")
    parser.add_argument("sweep_options", nargs="*", help="after --: options for every sweep")
    args = parser.parse_args()
    table: dict[str, list[dict[int, dict]]] = {"one server": [], "two servers": []}
    with tempfile.TemporaryDirectory(prefix="spread-") as folder, \
            local_servers(2, reachable=True) as servers, sshd_on(servers, Path(folder)) as options:
        spread = ["--servers", ",".join(f"root@{s.address}" for s in servers),
                  "--ssh-config", str(ssh_config_file(Path(folder), options))]
        for i in range(args.runs):
            table["one server"].append(sweep(Path(folder) / f"one-{i}", args.sweep_options))
            table["two servers"].append(sweep(Path(folder) / f"two-{i}", spread + args.sweep_options))
    print("\n| layout | run | TCP mean % | MPTCP-8 mean % | mean over points | flags | CPU % |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    means = {}
    for layout, runs in table.items():
        for i, records in enumerate(runs):
            pcts = [records[n]["summary"]["mean_pct"] for n in (1, 8)]
            flags = sorted({f for r in records.values() for f in r["flags"]})
            cpu = [records[n]["cpu_mean_pct"] for n in (1, 8)]
            print(f"| {layout} | {i + 1} | {pcts[0]:.1f} | {pcts[1]:.1f} | {statistics.fmean(pcts):.1f} "
                  f"| {', '.join(flags) or 'none'} | {cpu[0]}, {cpu[1]} |")
        means[layout] = {n: statistics.fmean(r[n]["summary"]["mean_pct"] for r in runs) for n in (1, 8)}
    print()
    for n in (1, 8):
        gap = means["two servers"][n] - means["one server"][n]
        print(f"{'TCP' if n == 1 else 'MPTCP-8'}: one server {means['one server'][n]:.1f} %, "
              f"two servers {means['two servers'][n]:.1f} % ({gap:+.1f})")
    overall = {layout: statistics.fmean(m.values()) for layout, m in means.items()}
    print(f"mean over all points: one server {overall['one server']:.1f} %, two servers "
          f"{overall['two servers']:.1f} % ({overall['two servers'] - overall['one server']:+.1f})")


if __name__ == "__main__":
    main()
