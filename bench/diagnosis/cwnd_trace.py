#!/usr/bin/env python3
"""Every window change of every flow at the shared bottleneck of
experiments/fairness.py, from the kernel's own `tcp:tcp_probe` tracepoint
(issue 24: an MPTCP connection's two uncoupled subflows take 1.2-1.4 Reno
flows' worth there, not 2, and lose a larger share of their packets).

    sudo .venv/bin/python bench/diagnosis/cwnd_trace.py [--queue 25] [--time 30] [--cc reno] [--repeat 1]
                                              [--jitter-ms J]

Per run (an MPTCP connection with two subflows under --cc, then h1's two
single-subflow Reno connections, each beside x1's Reno flow), the tracepoint
fires on every segment a socket receives, before it is processed. On the
senders those are ACKs, and each one shows the window (snd_cwnd, ssthresh)
and what is in flight (snd_nxt - snd_una). Printed per data flow, over the
run after its warm-up:

* loss events a second: ssthresh set anew (entering recovery), and how many
  of them were timeouts (the window fell to 1 or 2);
* the window's mean and its size just before each reduction;
* how fast it grows between reductions, in congestion avoidance: packets per
  smoothed RTT (Reno's rule: one);
* the share of ACKs that found the flow cwnd-limited (in flight within two
  packets of the window): Reno grows the window only when it is.

--jitter-ms J gives the access links J +- J ms of one-way delay, as
bench/fairness.py does.

The tracepoints are read through monitor/cwnd_watch.py's TraceWatch: a
tracefs instance of our own per run, removed after it. Exit status
0 whatever it measures.
"""
from __future__ import annotations

import argparse
import statistics
from bisect import bisect_left
import sys
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from tempfile import TemporaryDirectory

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from bench.cli import add_shared_bottleneck_options  # noqa: E402
from experiments.fairness import TwoPathCase, jittered_access  # noqa: E402
from emulator.keepawake import KeepAwake  # noqa: E402
from kernel.transport import counter_delta, read_netstat  # noqa: E402
from monitor.cwnd_watch import PROBE_EVENT, STATE_EVENT, TraceWatch  # noqa: E402

STATES = ("Open", "Disorder", "CWR", "Recovery", "Loss")     # enum tcp_ca_state
RETRANSMIT_EVENT = Path("events/tcp/tcp_retransmit_skb")


def watch() -> TraceWatch:
    """The three tracepoints, every socket of the machine: at this bench's
    rates a run records a few MB."""
    return TraceWatch({PROBE_EVENT: None, STATE_EVENT: None, RETRANSMIT_EVENT: None}, buffer_kb=32768)


@dataclass
class Ack:
    t: float
    inflight: int      # bytes
    cwnd: int
    ssthresh: int
    srtt_us: int


@dataclass
class Flow:
    acks: list[Ack] = field(default_factory=list)
    states: list[tuple[float, int]] = field(default_factory=list)   # (time, enum tcp_ca_state)
    retransmits: list[float] = field(default_factory=list)          # times
    mss: int = 0


def parse(events: list[dict]) -> dict[tuple[str, str], Flow]:
    """Per sender flow (src, dst): its ACKs, its congestion states, its
    retransmissions, and its largest data segment (its MSS, from the
    receiver's side). `events`: TraceWatch.stop()'s."""
    flows: dict[tuple[str, str], Flow] = defaultdict(Flow)
    for e in events:
        if e["event"] == "tcp_probe":
            if e["data_len"]:      # a receiver's data segment: its sender is dest
                flow = flows[(e["dest"], e["src"])]
                flow.mss = max(flow.mss, e["data_len"])
            else:
                inflight = (int(e["snd_nxt"], 16) - int(e["snd_una"], 16)) % (1 << 32)
                flows[(e["src"], e["dest"])].acks.append(
                    Ack(e["t_s"], inflight, e["snd_cwnd"], e["ssthresh"], e["srtt"]))
            continue
        key = (f"{e['saddr']}:{e['sport']}", f"{e['daddr']}:{e['dport']}")
        if e["event"] == "tcp_cong_state_set":
            flows[key].states.append((e["t_s"], e["cong_state"]))
        else:
            flows[key].retransmits.append(e["t_s"])
    return flows


def describe(flow: Flow, warmup_s: float) -> str:
    if len(flow.acks) < 100 or not flow.mss:
        return f"{len(flow.acks)} ACKs, too few"
    start = flow.acks[0].t + warmup_s
    acks = [a for a in flow.acks if a.t >= start]
    states = [(t, s) for t, s in flow.states if t >= start]
    span = acks[-1].t - acks[0].t
    entered = Counter(s for _, s in states)
    # Both lists are in time order (tracefs merges its per-CPU buffers by
    # timestamp), so each stretch's ACKs and retransmissions are a slice.
    times = [a.t for a in acks]
    retransmits = [t for t in flow.retransmits if t >= start]
    time_in: Counter = Counter()
    episodes: dict[int, list[float]] = defaultdict(list)
    per_recovery, growth, after, before = [], [], [], []
    bounds = [t for t, _ in states] + [acks[-1].t]
    for (t0, state), t1 in zip(states, bounds[1:]):
        time_in[state] += t1 - t0
        episodes[state].append(t1 - t0)
        if state == 3:
            per_recovery.append(bisect_left(retransmits, t1) - bisect_left(retransmits, t0))
        elif state == 0:
            inside = acks[bisect_left(times, t0):bisect_left(times, t1)]
            if len(inside) < 5:
                continue
            after.append(inside[0].cwnd)
            before.append(inside[-1].cwnd)
            srtt_s = statistics.median(a.srtt_us for a in inside) / 1e6
            if t1 - t0 >= 1.5 * srtt_s:
                growth.append((inside[-1].cwnd - inside[0].cwnd) / ((inside[-1].t - inside[0].t) / srtt_s))
    srtt = statistics.median(a.srtt_us for a in acks) / 1e6
    lasted = ", ".join(f"{STATES[s]} {statistics.fmean(episodes[s]) / srtt:.2f}"
                       for s in range(1, 5) if episodes[s])
    open_share = time_in[0] / sum(time_in.values()) if time_in else float("nan")
    limited = sum(a.inflight >= (a.cwnd - 2) * flow.mss for a in acks) / len(acks)
    per_s = ", ".join(f"{STATES[s]} {entered[s] / span:.1f}" for s in range(1, 5) if entered[s])
    return (f"entered/s: {per_s}; lasted (RTTs): {lasted}; in Open {100 * open_share:.0f} % of the time; "
            f"retransmissions {len(retransmits) / span:.1f}/s, {_mean(per_recovery)} per Recovery; "
            f"window mean {statistics.fmean(a.cwnd for a in acks):.1f}, "
            f"at the end of Open {_mean(before)}, at its start {_mean(after)}; growth in Open "
            f"{_median(growth)} pkt/RTT ({len(growth)} stretches); cwnd-limited at "
            f"{100 * limited:.0f} % of ACKs; srtt {1000 * srtt:.1f} ms; "
            f"mss {flow.mss}")


def _mean(xs: list[float]) -> str:
    return f"{statistics.fmean(xs):.1f}" if xs else "-"


def _median(xs: list[float]) -> str:
    return f"{statistics.median(xs):.2f}" if xs else "-"


def together(a: Flow, b: Flow, warmup_s: float) -> str:
    """The share of a's entries into Recovery that b also made within one
    smoothed RTT: losses the two flows met at the same overflow."""
    start = a.acks[0].t + warmup_s
    srtt_s = statistics.median(x.srtt_us for x in a.acks) / 1e6
    mine = [t for t, s in a.states if s == 3 and t >= start]
    theirs = [t for t, s in b.states if s == 3]
    both = sum(any(abs(t - u) <= srtt_s for u in theirs) for t in mine)
    return f"{both}/{len(mine)}" if mine else "-"


def report(events: list[dict], senders: dict[str, str], warmup_s: float) -> None:
    flows = {k: f for k, f in sorted(parse(events).items())
             if k[0].split(":")[0] in senders and len(f.acks) >= 100}
    for (src, dst), flow in flows.items():
        print(f"    {senders[src.split(':')[0]]} {src}->{dst}: {describe(flow, warmup_s)}")
    keys = list(flows)
    for i, a in enumerate(keys):
        for b in keys[i + 1:]:
            print(f"    Recovery within an RTT of the other's: {a[0]} of {b[0]}'s "
                  f"{together(flows[b], flows[a], warmup_s)}, {b[0]} of {a[0]}'s "
                  f"{together(flows[a], flows[b], warmup_s)}")


WATCHED = ("MPTcpExtMPTCPRetrans", "MPTcpExtDuplicateData", "MPTcpExtOFOQueue", "MPTcpExtRcvPruned",
           "MPTcpExtSubflowStale", "MPTcpExtSubflowRecover", "MPTcpExtSndWndShared", "MPTcpExtRcvWndShared",
           "MPTcpExtRcvWndConflict", "TcpExtTCPTimeouts", "TcpExtTCPLossProbes", "TcpExtTCPSackRecovery",
           "TcpExtTCPLostRetransmit", "TcpExtTCPDSACKRecv", "TcpExtTCPDSACKUndo", "TcpExtTCPSackFailures",
           "TcpExtTCPFullUndo", "TcpExtTCPPartialUndo", "TcpExtTCPSpuriousRTOs", "TcpExtTCPOFOQueue",
           "TcpExtTCPRcvQDrop", "TcpExtTCPZeroWindowDrop", "TcpExtTCPBacklogDrop")


def counters(case: TwoPathCase) -> dict[str, dict[str, int]]:
    return {h: read_netstat(case.net.fabric.pid(h)) for h in ("h1", "h2", "x1", "x2")}


def print_counters(before: dict[str, dict[str, int]], after: dict[str, dict[str, int]]) -> None:
    for host in before:
        delta = counter_delta(before[host], after[host])
        shown = ", ".join(f"{k.removeprefix('MPTcpExt').removeprefix('TcpExt')} {delta[k]}"
                          for k in WATCHED if delta.get(k))
        print(f"    {host} counters: {shown or '-'}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_shared_bottleneck_options(ap)
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--jitter-ms", type=float, default=0.0)
    args = ap.parse_args()
    access = jittered_access(args.jitter_ms)
    with KeepAwake(), TemporaryDirectory() as tmp, TwoPathCase("shared", 10, args.queue, 1, access) as case:
        senders = {case.topo.path_addresses(0)[0]: "h1", "10.1.0.3": "x1"}
        for n in range(args.repeat):
            for what in ("mptcp", "two flows"):
                before = counters(case)
                trace = watch()
                trace.start()
                try:
                    result = (case.run(args.cc, args.time, args.warmup, Path(tmp)) if what == "mptcp"
                              else case.run_two_flows(args.time, args.warmup, Path(tmp)))
                finally:
                    events = trace.stop()
                print(f"  run {n + 1}/{args.repeat} {result.line()}", flush=True)
                report(events, senders, args.warmup)
                print_counters(before, counters(case))
    return 0


if __name__ == "__main__":
    sys.exit(main())
