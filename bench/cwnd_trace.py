#!/usr/bin/env python3
"""Every window change of every flow at the shared bottleneck of
experiments/fairness.py, from the kernel's own `tcp:tcp_probe` tracepoint
(issue 24: an MPTCP connection's two uncoupled subflows take 1.2-1.4 Reno
flows' worth there, not 2, and lose a larger share of their packets).

    sudo .venv/bin/python bench/cwnd_trace.py [--queue 25] [--time 30] [--cc reno] [--repeat 1]
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

The tracepoint is enabled in a tracefs instance of our own, named after
this process, and the instance is removed when the bench ends. Exit status
0 whatever it measures.
"""
from __future__ import annotations

import argparse
import os
import re
import statistics
import sys
import time
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from tempfile import TemporaryDirectory

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from experiments.fairness import TwoPathCase, jittered_access  # noqa: E402
from emulator.keepawake import KeepAwake  # noqa: E402
from kernel.transport import counter_delta, read_netstat  # noqa: E402

TRACEFS = Path("/sys/kernel/tracing")
# By hand: the tracepoint's text format is the kernel's, and no library here reads it.
LINE = re.compile(r"\s(?P<ts>\d+\.\d+): tcp_probe: family=AF_INET src=(?P<src>[\d.:]+) "
                  r"dest=(?P<dst>[\d.:]+) mark=\S+ data_len=(?P<len>\d+) snd_nxt=(?P<nxt>0x[0-9a-f]+) "
                  r"snd_una=(?P<una>0x[0-9a-f]+) snd_cwnd=(?P<cwnd>\d+) ssthresh=(?P<ssth>\d+) "
                  r"snd_wnd=\d+ srtt=(?P<srtt>\d+)")
STATE = re.compile(r"\s(?P<ts>\d+\.\d+): tcp_cong_state_set: family=AF_INET sport=(?P<sport>\d+) "
                   r"dport=(?P<dport>\d+) saddr=(?P<saddr>[\d.]+) daddr=(?P<daddr>[\d.]+) .*"
                   r"cong_state=(?P<state>\d+)")
RETRANS = re.compile(r"\s(?P<ts>\d+\.\d+): tcp_retransmit_skb: .*sport=(?P<sport>\d+) "
                     r"dport=(?P<dport>\d+) saddr=(?P<saddr>[\d.]+) daddr=(?P<daddr>[\d.]+) ")
STATES = ("Open", "Disorder", "CWR", "Recovery", "Loss")     # enum tcp_ca_state
EVENTS = ("tcp/tcp_probe", "tcp/tcp_cong_state_set", "tcp/tcp_retransmit_skb")


class ProbeTrace:
    """The tracepoints EVENTS in a tracefs instance of our own, for the
    length of a `with`."""

    def __init__(self, buffer_kb: int = 32768):
        self.dir = TRACEFS / "instances" / f"mptcp-dc-bench-{os.getpid()}"
        self.buffer_kb = buffer_kb

    def __enter__(self) -> "ProbeTrace":
        self.dir.mkdir()
        try:
            (self.dir / "buffer_size_kb").write_text(str(self.buffer_kb))
            for event in EVENTS:
                (self.dir / "events" / event / "enable").write_text("1")
        except BaseException:
            self.__exit__()
            raise
        return self

    def read(self) -> list[str]:
        """Everything recorded so far, and start afresh."""
        lines = (self.dir / "trace").read_text().splitlines()
        (self.dir / "trace").write_text("")
        return lines

    def __exit__(self, *exc) -> None:
        for event in EVENTS:
            try:
                (self.dir / "events" / event / "enable").write_text("0")
            except OSError:
                pass
        for _ in range(50):      # the instance is busy for a moment after its event is off
            try:
                self.dir.rmdir()
                return
            except OSError:
                time.sleep(0.1)
        print(f"could not remove {self.dir}", file=sys.stderr)


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


def parse(lines: list[str]) -> dict[tuple[str, str], Flow]:
    """Per sender flow (src, dst): its ACKs, its congestion states, and its
    largest data segment (its MSS, from the receiver's side)."""
    flows: dict[tuple[str, str], Flow] = defaultdict(Flow)
    for line in lines:
        if m := LINE.search(line):
            length = int(m["len"])
            if length:      # a receiver's data segment: its sender is dst
                flow = flows[(m["dst"], m["src"])]
                flow.mss = max(flow.mss, length)
            else:
                inflight = (int(m["nxt"], 16) - int(m["una"], 16)) % (1 << 32)
                flows[(m["src"], m["dst"])].acks.append(
                    Ack(float(m["ts"]), inflight, int(m["cwnd"]), int(m["ssth"]), int(m["srtt"])))
        elif m := STATE.search(line):
            key = (f"{m['saddr']}:{m['sport']}", f"{m['daddr']}:{m['dport']}")
            flows[key].states.append((float(m["ts"]), int(m["state"])))
        elif m := RETRANS.search(line):
            key = (f"{m['saddr']}:{m['sport']}", f"{m['daddr']}:{m['dport']}")
            flows[key].retransmits.append(float(m["ts"]))
    return flows


def describe(flow: Flow, warmup_s: float) -> str:
    if len(flow.acks) < 100 or not flow.mss:
        return f"{len(flow.acks)} ACKs, too few"
    start = flow.acks[0].t + warmup_s
    acks = [a for a in flow.acks if a.t >= start]
    states = [(t, s) for t, s in flow.states if t >= start]
    span = acks[-1].t - acks[0].t
    entered = Counter(s for _, s in states)
    growth, after, before = [], [], []
    bounds = [t for t, _ in states] + [acks[-1].t]
    for (t0, state), t1 in zip(states, bounds[1:]):
        if state != 0:
            continue
        inside = [a for a in acks if t0 <= a.t < t1]
        if len(inside) < 5:
            continue
        after.append(inside[0].cwnd)
        before.append(inside[-1].cwnd)
        srtt_s = statistics.median(a.srtt_us for a in inside) / 1e6
        if t1 - t0 >= 1.5 * srtt_s:
            growth.append((inside[-1].cwnd - inside[0].cwnd) / ((inside[-1].t - inside[0].t) / srtt_s))
    time_in = Counter()
    episodes: dict[int, list[float]] = defaultdict(list)
    per_recovery = []
    for (t0, state), t1 in zip(states, bounds[1:]):
        time_in[state] += t1 - t0
        episodes[state].append(t1 - t0)
        if state == 3:
            per_recovery.append(sum(t0 <= t < t1 for t in flow.retransmits))
    retransmits = sum(t >= start for t in flow.retransmits)
    srtt = statistics.median(a.srtt_us for a in acks) / 1e6
    lasted = ", ".join(f"{STATES[s]} {statistics.fmean(episodes[s]) / srtt:.2f}"
                       for s in range(1, 5) if episodes[s])
    open_share = time_in[0] / sum(time_in.values()) if time_in else float("nan")
    limited = sum(a.inflight >= (a.cwnd - 2) * flow.mss for a in acks) / len(acks)
    per_s = ", ".join(f"{STATES[s]} {entered[s] / span:.1f}" for s in range(1, 5) if entered[s])
    return (f"entered/s: {per_s}; lasted (RTTs): {lasted}; in Open {100 * open_share:.0f} % of the time; "
            f"retransmissions {retransmits / span:.1f}/s, {_mean(per_recovery)} per Recovery; window mean {statistics.fmean(a.cwnd for a in acks):.1f}, "
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


def report(lines: list[str], senders: dict[str, str], warmup_s: float) -> None:
    flows = {k: f for k, f in sorted(parse(lines).items())
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
    ap.add_argument("--queue", type=int, default=25)
    ap.add_argument("--time", type=float, default=30.0)
    ap.add_argument("--warmup", type=float, default=5.0)
    ap.add_argument("--cc", default="reno", help="the MPTCP connection's (reno)")
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--jitter-ms", type=float, default=0.0)
    args = ap.parse_args()
    access = jittered_access(args.jitter_ms)
    with KeepAwake(), TemporaryDirectory() as tmp, TwoPathCase("shared", 10, args.queue, 1, access) as case, \
            ProbeTrace() as trace:
        senders = {case.topo.path_addresses(0)[0]: "h1", "10.1.0.3": "x1"}
        for n in range(args.repeat):
            for what in ("mptcp", "two flows"):
                trace.read()
                before = counters(case)
                result = (case.run(args.cc, args.time, args.warmup, Path(tmp)) if what == "mptcp"
                          else case.run_two_flows(args.time, args.warmup, Path(tmp)))
                print(f"  run {n + 1}/{args.repeat} {result.line()}", flush=True)
                report(trace.read(), senders, args.warmup)
                print_counters(before, counters(case))
    return 0


if __name__ == "__main__":
    sys.exit(main())
