#!/usr/bin/env python3
"""How often a Ctrl-C of a sweep leaves a TCP socket, and with it its
coupled congestion control's BPF map, in the kernel (docs/cleanup.md).

    sudo .venv/bin/python bench/ctrl_c_leaks.py [--tries N] [--settle S] [--cc CC]

Each try runs `run_mptcp.sh 4 --subflows 1,2 --time 6` into a folder of its
own, waits for the TCP run's record, lets MPTCP-2's traffic go for --settle
seconds and sends SIGINT, as a researcher's Ctrl-C would. A try leaked when
the kernel holds more of our struct_ops maps after it than before (counted
a few seconds after the harness exited, by id: a map that outlives its
sockets is gone by then). Prints one line per try and the total.

Nothing else may run on the machine meanwhile: the harness's lock refuses a
second experiment, and a map another run loads would be counted.
"""
from __future__ import annotations

import argparse
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from kernel.coupled_cc import COUPLED, loaded_maps  # noqa: E402

# After the harness exits, how long a map may take to go with its last
# socket (an orphan's reset and RCU) before it counts as kept.
SETTLE_AFTER_EXIT_S = 5.0


def struct_ops_ids() -> set[int]:
    """Ids of our algorithms' struct_ops maps in the kernel now."""
    return {map_id for map_id, name in loaded_maps().items() if name in COUPLED}


def one_try(results: Path, settle_s: float, cc: str) -> int:
    """One interrupted sweep; returns its exit status."""
    argv = [str(ROOT / "run_mptcp.sh"), "4", "--subflows", "1,2", "--time", "6",
            "--cc", cc, "--results", str(results)]
    first = results / "ft4" / "one_to_one" / "flows1" / "run.json"
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 180
        while not first.exists() and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.2)
        if not first.exists():
            raise SystemExit(f"the TCP run never finished: {proc.communicate(timeout=60)[1][-500:]}")
        time.sleep(settle_s)
        proc.send_signal(signal.SIGINT)
        proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=10)
    return proc.returncode


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--tries", type=int, default=10, help="interrupted sweeps (10)")
    ap.add_argument("--settle", type=float, default=3.0,
                    help="seconds of MPTCP-2's traffic before the Ctrl-C (3)")
    ap.add_argument("--cc", default="lia", help="congestion control of the runs (lia)")
    args = ap.parse_args()
    leaks = 0
    with tempfile.TemporaryDirectory() as tmp:
        for n in range(1, args.tries + 1):
            before = struct_ops_ids()
            status = one_try(Path(tmp) / f"try{n}", args.settle, args.cc)
            time.sleep(SETTLE_AFTER_EXIT_S)
            kept = sorted(struct_ops_ids() - before)
            leaks += bool(kept)
            print(f"try {n}/{args.tries}: exit status {status}, "
                  f"{'kept map(s) ' + ', '.join(map(str, kept)) if kept else 'nothing kept'}",
                  flush=True)
    print(f"{leaks} of {args.tries} Ctrl-Cs left a {args.cc} map in the kernel "
          f"(settle {args.settle:g} s)")


if __name__ == "__main__":
    main()
