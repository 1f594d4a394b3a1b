"""What every experiment of long flows reads the same way: the kernel's
MPTCP counters over all hosts, the path manager's connections per flow, the
flags that make a run of long flows untrustworthy (among them whether its
counted window had reached a steady rate), when a levelled warm-up ends,
and what the controller's first fit did during a run (the FatTree sweep's
and the scheduling experiment's)."""
from __future__ import annotations

import dataclasses
import math
import time

from emulator.traffic.common import FlowEndpoints, FlowOutcome
from kernel.mptcp_pm import Connection, UserspacePM
from monitor import CpuMonitor

PAYLOAD_PER_FRAME = 1448 / 1514   # TCP payload with timestamps in a full Ethernet frame


def flow_key(f: FlowEndpoints) -> tuple:
    return (f.src_ip, f.client_port, f.dst_ip, f.server_port)


def client_connections(pm: UserspacePM) -> dict[tuple, Connection]:
    """The path manager's client-side data connections, keyed like flow_key."""
    return {(c.saddr, c.sport, c.daddr, c.dport): c for c in pm.connections() if not c.server_side}


def all_subflows_up(pm: UserspacePM, flows: list[FlowEndpoints], subflows: int) -> bool:
    """Whether every flow's data connection has all its subflows (for plain
    TCP, connected is all there is)."""
    if subflows == 1:
        return True
    conns = client_connections(pm)
    return all(conns.get(flow_key(f)) is not None and conns[flow_key(f)].subflows_established >= subflows
               for f in flows)


def subflows_ready(pm: UserspacePM, flows: list[FlowEndpoints], subflows: int):
    """For a driver's `ready`: a driver that opens the connections before
    data flows (the socket driver) releases the data once this says every
    flow has its subflows."""
    return lambda: all_subflows_up(pm, flows, subflows)


def closed_connections(pm: UserspacePM, timeout_s: float = 2.0) -> list[Connection]:
    """pm.connections() once every one has reported MPTCP_EVENT_CLOSED (their
    subflow counts are final then), or as they are at the timeout: for
    transfers, whose connections close before their records are read."""
    deadline = time.monotonic() + timeout_s
    while True:
        conns = pm.connections()
        if all(c.closed for c in conns) or time.monotonic() >= deadline:
            return conns
        time.sleep(0.01)


def flow_mptcp_fields(pm: UserspacePM, subflows: int):
    """A function of a flow's outcome giving its record's
    `subflows_established` and `fell_back_to_tcp`. A data connection that
    carried data but that the kernel never reported MPTCP-established fell
    back to plain TCP: its handshake's MP_CAPABLE ACK and first data were
    lost and the server completed the handshake without them
    (tests/test_mptcp_pm.py, test_a_lost_mp_capable_ack_...), or, on kernels
    before 6.14, its SYN went out without MP_CAPABLE after two losses."""
    conns = client_connections(pm) if subflows > 1 else {}

    def fields(o: FlowOutcome) -> dict:
        if subflows <= 1:
            return {"subflows_established": 0 if o.error else 1, "fell_back_to_tcp": False}
        c = conns.get(flow_key(o.endpoints))
        return {"subflows_established": c.subflows_established if c else 0,
                "fell_back_to_tcp": o.goodput_mbps > 0 and (c is None or c.established_at is None)}
    return fields


def run_flags(subflows: int, flows: list[dict], outcomes: list[FlowOutcome], cpu: CpuMonitor,
              counters: dict[str, int], window: tuple[float, float] | None = None) -> list[str]:
    """Why a run of long flows cannot be trusted, from its flow records
    (goodput_mbps, subflows_established, fell_back_to_tcp), its iperf3 outcomes, the CPU and
    the MPTCP counters' change over the run; empty if it can."""
    flags = []
    if any(o.error and not o.timed_out for o in outcomes):
        flags.append("handshake_failed")
    if any(o.timed_out for o in outcomes):
        flags.append("timed_out")
    if any(fl["goodput_mbps"] <= 0 for fl in flows):
        flags.append("zero_goodput_flow")
    if subflows > 1 and any(fl.get("fell_back_to_tcp") for fl in flows):
        flags.append("mptcp_fallback")
    if subflows > 1 and any(fl["subflows_established"] < subflows and not fl.get("fell_back_to_tcp")
                            for fl in flows):
        flags.append("subflows_missing")
    if subflows == 1 and counters.get("MPTcpExtMPCapableSYNTX", 0):
        flags.append("unexpected_mptcp")
    if cpu.saturated(window):
        flags.append("cpu_saturated")
    if counters.get("ArpTableFulls", 0) > 0:
        flags.append("neighbour_table_full")
    return flags


# The steady-state check (`still_rising`): the aggregate goodput of the
# counted window's last third against its first third. MPTCP-8 on FatTree(4)
# at 10 Mb/s keeps rising for 15 s after its start (docs/methodology.md,
# item 6): a window that begins inside that ramp measures the ramp.
# Measured there (docs/notebook.md, "The ramp"): 30 s windows from 5 s rose
# 0.4-15 % third to third (iperf3, six seeds) and 13.5-22 % (socket driver);
# 40 s windows from 15 s and later moved -1.3 to +1.8 % (MPTCP-8) and TCP's
# -1.8 to +1.9 %. Thirds of a shorter window hold too few one-second samples
# to tell (MPTCP delivers in order, so in bursts: 5 s thirds of windows from
# 20 s differed by up to 12 %), so one is not judged.
RISE_LIMIT_PCT = 10.0
RISE_MIN_WINDOW_S = 30


def counted_rise_pct(outcomes: list[FlowOutcome], warmup_s: float,
                     time_s: float | None = None) -> float | None:
    """How much the aggregate goodput of the counted window (`time_s` from
    `warmup_s`, or all after it) rises from its first third to its last, in
    %; None for a window under RISE_MIN_WINDOW_S seconds or one whose first
    third carried nothing."""
    keep = None if time_s is None else int(round(time_s))
    series = [o.counted_per_second_mbps(warmup_s)[:keep] for o in outcomes if o.per_second_mbps]
    seconds = min((len(s) for s in series), default=0)
    if seconds < RISE_MIN_WINDOW_S:
        return None
    aggregate = [sum(s[i] for s in series) for i in range(seconds)]
    third = seconds // 3
    first, last = sum(aggregate[:third]), sum(aggregate[-third:])
    return round(100.0 * (last / first - 1.0), 1) if first > 0 else None


def still_rising(rise_pct: float | None) -> bool:
    return rise_pct is not None and rise_pct > RISE_LIMIT_PCT


# The levelled warm-up (the FatTree sweep without --warmup): counting starts
# at the first second where the aggregate goodput of the last window is not
# more than LEVEL_TOLERANCE_PCT above the window before it, not before a
# floor (the caller's: every subflow up, the fixed warm-up), at the latest
# at the cap. The window is
# 5 s at 10 Mb/s, times 10/bw within 5..60 s (at 0.5 Mb/s FatTree(8)'s
# MPTCP-8 rises for minutes: docs/notebook.md, the FatTree(8) diagnosis).
LEVEL_TOLERANCE_PCT = 5.0
LEVEL_WINDOW_S_AT_10MBPS, LEVEL_WINDOW_MIN_S, LEVEL_WINDOW_MAX_S = 5, 5, 60


def level_window_s(bw_mbps: float) -> int:
    return int(min(LEVEL_WINDOW_MAX_S, max(LEVEL_WINDOW_MIN_S, round(LEVEL_WINDOW_S_AT_10MBPS * 10 / bw_mbps))))


def levelled_at(outcomes: list[FlowOutcome], window_s: int, cap_s: float,
                not_before_s: float = 0.0) -> tuple[int, bool]:
    """(second counting starts, whether the aggregate levelled by then or
    the cap was reached)."""
    # A flow that carried nothing (its client failed) has no intervals: it
    # neither levels nor stops the others from levelling.
    series = [o.per_second_mbps for o in outcomes if o.per_second_mbps]
    seconds = min((len(s) for s in series), default=0)
    aggregate = [sum(s[i] for s in series) for i in range(seconds)]
    first = max(2 * window_s, math.ceil(not_before_s))
    for t in range(first, min(int(cap_s), seconds) + 1):
        before = sum(aggregate[t - 2 * window_s:t - window_s])
        last = sum(aggregate[t - window_s:t])
        if 0 < last <= before * (1 + LEVEL_TOLERANCE_PCT / 100):
            return t, True
    return int(cap_s), False


def levelled_outcomes(outcomes: list[FlowOutcome], cap_s: float, time_s: float, bw_mbps: float,
                      not_before_s: float = 0.0) -> tuple[list[FlowOutcome], dict]:
    """The outcomes counted from when the run levelled, and the record of
    it (run.json's `warmup`)."""
    window = level_window_s(bw_mbps)
    start, levelled = levelled_at(outcomes, window, cap_s, not_before_s)
    return [recounted(o, start, time_s) for o in outcomes], {
        "levelled": levelled, "levelled_at_s": start, "cap_s": cap_s, "window_s": window,
        "tolerance_pct": LEVEL_TOLERANCE_PCT, "not_before_s": round(not_before_s, 3)}


def recounted(outcome: FlowOutcome, start_s: int, time_s: float) -> FlowOutcome:
    """The outcome counted over [start_s, start_s + time_s) from its
    one-second intervals."""
    samples = (outcome.per_second_mbps or [])[start_s:start_s + int(round(time_s))]
    goodput = sum(samples) / len(samples) if samples else 0.0
    return dataclasses.replace(outcome, goodput_mbps=round(goodput, 4), seconds=float(len(samples)))


def first_fit_record(fabric, interval_s: float, since: float, until: float) -> dict:
    """What the controller's first fit did during a run (its schedule log):
    rounds, flows moved, the longest decision, and the most flows it kept
    counts of at once (quiet flows are forgotten: controller/flowcounts.py)."""
    rounds = [r for r in fabric.schedule_rounds() if since <= r["time"] <= until]
    return {"interval_s": interval_s, "rounds": len(rounds),
            "moves": sum(len(r["moves"]) for r in rounds),
            "decision_s_max": max((r["decision_s"] for r in rounds), default=None),
            "flows_tracked_max": max((r.get("tracked", 0) for r in rounds), default=None)}
