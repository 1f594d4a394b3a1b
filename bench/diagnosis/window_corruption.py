#!/usr/bin/env python3
"""The corrupted windows of issue 24: who gets them, and with what state.

    sudo .venv/bin/python bench/diagnosis/window_corruption.py [--schemes uncoupled,lia]
        [--repeat 2] [--k 4] [--time 60] [--out DIR]

Runs `hotspot` (`run_mptcp.sh hotspot`: FatTree(k) one_to_one, MPTCP-8, a core
link at a tenth of its rate during the middle third), where earlier runs
saw such windows, once per scheme and repeat. During each run a
HugeWindowWatch (monitor/cwnd_watch.py: the kernel's tcp_probe
tracepoint, filtered in the kernel) records every segment received by a
socket whose window is above 2^20 packets, whatever its congestion
control: for `uncoupled` that is the kernel's own Reno. For a coupled
scheme the run's record also holds the BPF programs' repair log
(kernel/bpf/README.md, "The repair log"), printed here one line per
corrupted window with the state around it.

For a coupled scheme it also counts, over the run, how often the kernel
called the algorithm's set_state (the tcp_cong_state_set tracepoint fires
in every tcp_set_ca_state() call, on the run's 10.x sockets, all of which
use the scheme) against how often the BPF set_state program ran (the
kernel's own run_cnt, with kernel.bpf_stats_enabled on for the run and put
back after; bpftool read every 0.5 s, the last reading before the programs
are unloaded is compared with the calls traced until then), and its
recursion_misses. Every corrupted ssthresh in the repair log is printed
with the kernel symbol its value falls in when read as the low half of a
kernel text address (/proc/kallsyms).

Printed per run: valid or its flags, the watch's events (how many, on how
many sockets, the largest window), the calls against the runs, and the
repairs. The runs' folders stay in --out (a temporary folder by default,
removed). Exit status 0 whatever it finds; 1 if a watch cannot be set up.
"""
from __future__ import annotations

import argparse
import bisect
import json
import sys
import threading
import time
from collections import Counter
from pathlib import Path
from tempfile import TemporaryDirectory

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from emulator.keepawake import KeepAwake  # noqa: E402
from experiments.algorithms import CcCompareExperiment  # noqa: E402
from experiments.config import CC_SCHEMES, CcCompareConfig  # noqa: E402
from experiments.runner import Runner  # noqa: E402
from base.procs import CommandError, run  # noqa: E402
from monitor.cwnd_watch import HugeWindowWatch, StateChangeWatch, WatchError  # noqa: E402

BPF_STATS = Path("/proc/sys/kernel/bpf_stats_enabled")

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


class ProgramRuns:
    """bpftool's view of the struct_ops programs named <algo>_<callback>,
    every `period` s in a thread of its own: (time.monotonic(), {name:
    (run_cnt, recursion_misses)}) per reading. bpftool, because it prints
    run_cnt and recursion_misses as JSON and the harness installs it."""

    def __init__(self, algo: str, callbacks=("set_state", "ssthresh"), period: float = 0.5):
        self.names = {f"{algo}_{c}" for c in callbacks}
        self.period = period
        self.readings: list[tuple[float, dict[str, tuple[int, int]]]] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._poll, daemon=True)

    def _poll(self) -> None:
        while not self._stop.is_set():
            now = time.monotonic()
            try:
                progs = json.loads(run(["bpftool", "prog", "show", "--json"], timeout=10).stdout or "[]")
            except (CommandError, ValueError):
                progs = []
            found = {p["name"]: (p.get("run_cnt", 0), p.get("recursion_misses", 0))
                     for p in progs if p.get("type") == "struct_ops" and p.get("name") in self.names}
            if found:
                self.readings.append((now, found))
            self._stop.wait(self.period)

    def __enter__(self) -> "ProgramRuns":
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join(timeout=15)


def kernel_symbol(low32: int) -> str:
    """The /proc/kallsyms symbol (and offset) that 0xffffffff<low32> falls
    in, or "" if none: a value that is the low half of a kernel text
    address came off a stack or a register, not out of arithmetic."""
    addr = 0xFFFFFFFF00000000 | low32
    syms = []
    for line in Path("/proc/kallsyms").read_text().splitlines():
        parts = line.split()
        if len(parts) >= 3 and parts[1] in "tT":
            syms.append((int(parts[0], 16), parts[2]))
    syms.sort()
    i = bisect.bisect_right(syms, (addr, "\uffff")) - 1
    if i < 0 or syms[i][0] == 0 or addr - syms[i][0] > 0x10000:
        return ""
    return f"{syms[i][1]}+{addr - syms[i][0]:#x}"


def calls_against_runs(algo: str, state_events: list[dict], runs: ProgramRuns) -> str:
    """The kernel's set_state calls on 10.x sockets up to the last reading
    against the program's runs and misses at that reading."""
    if not runs.readings:
        return f"    {algo}'s programs were never seen loaded: no count"
    t, found = runs.readings[-1]
    calls = sum(1 for e in state_events
                if e.get("saddr", "").startswith("10.") and e.get("t_s", float("inf")) <= t)
    ran, missed = found.get(f"{algo}_set_state", (0, 0))
    ss_ran, ss_missed = found.get(f"{algo}_ssthresh", (0, 0))
    return (f"    the kernel called set_state {calls} times; {algo}_set_state ran {ran} times "
            f"({calls - ran:+d} not run), recursion_misses {missed}; {algo}_ssthresh ran {ss_ran} times, "
            f"recursion_misses {ss_missed}")


def run_once(scheme: str, args, results: Path) -> None:
    cfg = CcCompareConfig(experiment="hotspot", k=args.k, schemes=(scheme,), time_s=args.time,
                          results=results)
    cfg.validate()
    algo = CC_SCHEMES[scheme][0]
    watch, states = HugeWindowWatch(), StateChangeWatch()
    stats_before = BPF_STATS.read_text().strip()
    watch.start()
    try:
        states.start()
        BPF_STATS.write_text("1\n")
        with ProgramRuns(algo) as runs:
            Runner(CcCompareExperiment(cfg, say=lambda m: None), say=lambda m: None).run()
    finally:
        BPF_STATS.write_text(stats_before + "\n")
        state_events = states.stop()
        events = watch.stop()
    [path] = sorted(cfg.scheme_dir(scheme).glob("ft*/one_to_one/flows*/run.json"))
    record = json.loads(path.read_text())
    sockets = {(e.get("src"), e.get("dest")) for e in events}
    print(f"  {scheme} ({CC_SCHEMES[scheme][0]}): {'valid' if record['valid'] else ', '.join(record['flags'])}; "
          f"tcp_probe saw {len(events)} segments with a window > 2^20 on {len(sockets)} sockets"
          + (f", largest {max(e.get('snd_cwnd', 0) for e in events)}" if events else ""), flush=True)
    repairs = record.get("window_repairs")
    if repairs is not None:
        print(calls_against_runs(algo, state_events, runs))
        print(f"    repairs: {repairs['seen']} corrupted windows, {len(repairs['records'])} recorded")
        for r in repairs["records"]:
            print(repair_line(r))
        values = Counter(r["ssthresh"] for r in repairs["records"] if r["ssthresh"] > (1 << 20)
                         and r["ssthresh"] != 0x7FFFFFFF)
        for value, n in values.most_common():
            sym = kernel_symbol(value)
            print(f"    ssthresh {value} ({value:#x}) in {n} records"
                  + (f": the low half of kernel text address {0xFFFFFFFF00000000 | value:#x}, {sym}" if sym else ""))


def names(text: str) -> list[str]:
    """A comma list's names, empty ones dropped."""
    return [s for s in text.split(",") if s]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--schemes", type=names, default="uncoupled,lia")
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--k", type=int, default=4)
    ap.add_argument("--time", type=float, default=60.0)
    ap.add_argument("--out", type=Path, default=None, help="keep the runs here")
    args = ap.parse_args()
    with KeepAwake(), TemporaryDirectory() as tmp:
        out = args.out or Path(tmp)
        try:
            for rep in range(args.repeat):
                for scheme in args.schemes:
                    print(f"run {rep + 1}/{args.repeat}, {scheme}", flush=True)
                    run_once(scheme, args, out / f"rep{rep}")
        except WatchError as exc:
            print(f"window_corruption: {exc}", file=sys.stderr)
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
