#!/usr/bin/env python3
"""The corrupted windows of issue 24: who gets them, and with what state.

    sudo .venv/bin/python bench/window_corruption.py [--schemes uncoupled,lia]
        [--repeat 2] [--k 4] [--time 60] [--out DIR]

Runs E6 (`run_mptcp.sh hotspot`: FatTree(k) one_to_one, MPTCP-8, a core
link at a tenth of its rate during the middle third), where earlier runs
saw such windows, once per scheme and repeat. During each run a
HugeWindowWatch (monitor/cwnd_watch.py: the kernel's tcp_probe
tracepoint, filtered in the kernel) records every segment received by a
socket whose window is above 2^20 packets, whatever its congestion
control: for `uncoupled` that is the kernel's own Reno. For a coupled
scheme the run's record also holds the BPF programs' repair log
(kernel/bpf/README.md, "The repair log"), printed here one line per
corrupted window with the state around it.

Printed per run: valid or its flags, the watch's events (how many, on how
many sockets, the largest window), and the repairs. The runs' folders stay
in --out (a temporary folder by default, removed). Exit status 0 whatever
it finds; 1 if the watch cannot be set up.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from tempfile import TemporaryDirectory

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from emulator.keepawake import KeepAwake  # noqa: E402
from experiments.algorithms import CcCompareExperiment  # noqa: E402
from experiments.config import CC_SCHEMES, CcCompareConfig  # noqa: E402
from experiments.runner import Runner  # noqa: E402
from monitor.cwnd_watch import HugeWindowWatch, WatchError  # noqa: E402

COLUMNS = ("hook", "kind", "ca_state", "cwnd", "ssthresh", "prior_cwnd", "prior_ssthresh",
           "undo_marker", "prr_delivered", "prr_out", "packets_out", "sacked_out", "lost_out",
           "retrans_out", "acked")


def in_flight(r: dict) -> int:
    """tcp_packets_in_flight() of the record, in u32 as the kernel computes it."""
    return (r["packets_out"] - r["sacked_out"] - r["lost_out"] + r["retrans_out"]) % (1 << 32)


def repair_line(r: dict) -> str:
    last = r.get("last") or {}
    own = " ".join(f"{c}={','.join(r[c]) if isinstance(r[c], list) else r[c]}" for c in COLUMNS)
    return (f"    {own} in_flight={in_flight(r)} | before it: {last.get('hook')} "
            f"state={last.get('ca_state')} cwnd={last.get('cwnd')} ssthresh={last.get('ssthresh')} "
            f"prior_ssthresh={last.get('prior_ssthresh')} acked={last.get('acked')}")


def run_once(scheme: str, args, results: Path) -> None:
    cfg = CcCompareConfig(experiment="hotspot", k=args.k, schemes=(scheme,), time_s=args.time,
                          results=results)
    cfg.validate()
    watch = HugeWindowWatch()
    watch.start()
    try:
        Runner(CcCompareExperiment(cfg, say=lambda m: None), say=lambda m: None).run()
    finally:
        events = watch.stop()
    [path] = sorted(cfg.scheme_dir(scheme).glob("ft*/one_to_one/flows*/run.json"))
    record = json.loads(path.read_text())
    sockets = {(e.get("src"), e.get("dest")) for e in events}
    print(f"  {scheme} ({CC_SCHEMES[scheme][0]}): {'valid' if record['valid'] else ', '.join(record['flags'])}; "
          f"tcp_probe saw {len(events)} segments with a window > 2^20 on {len(sockets)} sockets"
          + (f", largest {max(e.get('snd_cwnd', 0) for e in events)}" if events else ""), flush=True)
    repairs = record.get("window_repairs")
    if repairs is not None:
        print(f"    repairs: {repairs['seen']} corrupted windows, {len(repairs['records'])} recorded")
        for r in repairs["records"]:
            print(repair_line(r))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--schemes", default="uncoupled,lia")
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--k", type=int, default=4)
    ap.add_argument("--time", type=float, default=60.0)
    ap.add_argument("--out", type=Path, default=None, help="keep the runs here")
    args = ap.parse_args()
    schemes = [s for s in args.schemes.split(",") if s]
    with KeepAwake(), TemporaryDirectory() as tmp:
        out = args.out or Path(tmp)
        try:
            for rep in range(args.repeat):
                for scheme in schemes:
                    print(f"run {rep + 1}/{args.repeat}, {scheme}", flush=True)
                    run_once(scheme, args, out / f"rep{rep}")
        except WatchError as exc:
            print(f"window_corruption: {exc}", file=sys.stderr)
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
