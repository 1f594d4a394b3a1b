"""From a kernel trace (bench/diagnosis/diagnosis_trace.trace_record), the run's
record and the subflows' paths: per candidate cause, how much of the run's
missing throughput it can account for, and the worst connections' state.

Every share is taken over the counted window (samples after the warm-up),
between consecutive samples of the same socket (an interval of `dt`):

* subflow time in RTO recovery: the growth of tcpi_total_rto_time (the
  kernel's own clock of time spent in RTO recoveries, unfinished included)
  over dt; `backoff > 0` at the interval's end is the coarser second view;
* subflow time idle with data queued: the subflow sent nothing over dt
  (bytes_sent unchanged) while its connection had data queued at both ends
  of dt: written and not yet given to any subflow (write_seq - snd_una
  beyond the MPTCP-level bytes in flight, bytes_sent - bytes_acked, which
  count what the scheduler pushed into subflow queues) or waiting unsent in
  some subflow's queue (tcpi_notsent_bytes); split into: in RTO recovery
  (the RTO clock moved during dt), window full (unacked >= cwnd at both
  ends: waiting a whole interval for ACKs, a round trip longer than dt),
  own queue stuck (window open, its own queue not empty), and starved
  (window open, own queue empty: the data waits in the MPTCP send queue
  or other subflows' queues, where the scheduler did not or could not
  give it this subflow). Idle with nothing queued anywhere is the sender's
  own limit (its MPTCP send buffer, or the application);
* MPTCP send buffer full: wmem_queued at 90 % of sndbuf or more (the
  application then cannot write, and what is queued is what the
  subflows already hold);
* subflow backlog: what the scheduler put in a subflow's queue and it has
  not sent (notsent), in seconds at that subflow's own delivery rate;
* slow start: cwnd below ssthresh at the interval's end, not in RTO;
* connection time window-blocked: at the interval's end, MPTCP-level bytes
  in flight at least the peer's window (the most recently updated
  subflow's tcpi_snd_wnd) less 2 MSS, with data still unsent; and the
  subflows' own rwnd-limited clock (tcpi_rwnd_limited);
* receive buffer pressure: the receiver's MPTCP socket memory (in-order
  unread plus its out-of-order queue, SK_MEMINFO_RMEM_ALLOC) at half its
  receive buffer or more; bytes held out of order: what the receiver's
  subflows received (in order each) less what the connection delivered in
  order (reinjected duplicates included, so an upper bound), also in
  seconds of the connection's goodput (how far in-order delivery lags);
* in-order delivery stalled (head-of-line blocking): receiver time in
  which its subflows received data and the connection delivered none in
  order (the data sequence waits for a hole another subflow must fill).

The bound of a time share s on the gap is s x 100 points (a subflow or
connection that sends nothing for s of the time loses at most that share,
if the others do not take it up); rank correlation (Spearman) of a cause's
per-connection share with the connection's shortfall says whether it is
where the throughput is missing.
"""
from __future__ import annotations

import itertools
import statistics
from collections import Counter

import diagnosis_kernel as dk

BLOCK_SLACK_MSS = 2
PRESSURE = 0.5
SNDBUF_FULL = 0.9


def _rows(series: dict) -> list[dict]:
    fields = series["fields"]
    return [dict(zip(fields, r)) for r in series["rows"]]


def _pairs(rows: list[dict], from_ms: int):
    for a, b in zip(rows, rows[1:]):
        if b["t_ms"] > from_ms and b["t_ms"] > a["t_ms"]:
            yield a, b, (b["t_ms"] - a["t_ms"]) / 1000.0


def _unsent(c: dict) -> int:
    """Bytes written to the MPTCP socket and not yet sent on any subflow."""
    return max(0, c["pending"] - max(0, c["bytes_sent"] - c["bytes_acked"]))


def subflow_stats(rows: list[dict], queued_at: dict[int, int], from_ms: int) -> dict:
    """`queued_at`: t_ms -> the connection's queued bytes (unsent at MPTCP
    level plus every subflow's notsent) at that pass."""
    acc = dict.fromkeys(("time", "rto", "backoff", "idle_pending", "idle_pending_rto", "idle_window_full",
                         "idle_own_queue", "idle_starved",
                         "idle_nothing", "slow_start",
                         "initial_slow_start", "cwnd_limited", "rwnd_limited", "sndbuf_limited",
                         "busy"), 0.0)
    acked = retrans = sent = rtos = 0
    cwnds, rtts, notsent = [], [], []
    for a, b, dt in _pairs(rows, from_ms):
        acc["time"] += dt
        rto = min(dt, max(0, b["total_rto_time_ms"] - a["total_rto_time_ms"]) / 1000.0)
        acc["rto"] += rto
        acc["backoff"] += dt if b["backoff"] > 0 else 0.0
        qa, qb = queued_at.get(a["t_ms"]), queued_at.get(b["t_ms"])
        if b["bytes_sent"] == a["bytes_sent"] and qa is not None and qb is not None:
            if qa > 0 and qb > 0:
                acc["idle_pending"] += dt
                if rto > 0:
                    acc["idle_pending_rto"] += dt
                elif a["unacked"] >= a["cwnd"] and b["unacked"] >= b["cwnd"]:
                    acc["idle_window_full"] += dt       # waiting for ACKs a whole interval
                elif a["notsent"] > 0 and b["notsent"] > 0:
                    acc["idle_own_queue"] += dt
                else:
                    acc["idle_starved"] += dt
            elif qa == 0 and qb == 0:
                acc["idle_nothing"] += dt
        if b["ca_state"] != dk.CA_LOSS and rto == 0:
            if b["ssthresh"] >= dk.SSTHRESH_INFINITE:
                acc["initial_slow_start"] += dt
                acc["slow_start"] += dt
            elif b["cwnd"] < b["ssthresh"]:
                acc["slow_start"] += dt
        acc["cwnd_limited"] += dt if b["unacked"] >= b["cwnd"] else 0.0
        for k in ("rwnd_limited", "sndbuf_limited", "busy"):
            acc[k] += min(dt, max(0, b[f"{k}_us"] - a[f"{k}_us"]) / 1e6)
        acked += b["bytes_acked"] - a["bytes_acked"]
        sent += b["bytes_sent"] - a["bytes_sent"]
        retrans += b["bytes_retrans"] - a["bytes_retrans"]
        rtos += b["total_rto"] - a["total_rto"]
        cwnds.append(b["cwnd"])
        rtts.append(b["rtt_us"] / 1000.0)
        notsent.append(b["notsent"])
    last = rows[-1] if rows else {}
    rate = acked / acc["time"] if acc["time"] else 0.0
    backlog = statistics.median(notsent) if notsent else None
    return {**{k: round(v, 3) for k, v in acc.items()}, "bytes_acked": acked, "bytes_sent": sent,
            "bytes_retrans": retrans, "rtos": rtos,
            "cwnd_median": statistics.median(cwnds) if cwnds else None,
            "srtt_ms_median": round(statistics.median(rtts), 1) if rtts else None,
            "notsent_median": backlog,
            "backlog_s": round(backlog / rate, 2) if backlog is not None and rate > 0 else None,
            "last": {k: last.get(k) for k in ("cwnd", "ssthresh", "backoff", "ca_state", "rto_us",
                                               "unacked", "total_rto", "rtt_us")}}


def connection_stats(snd: list[dict], rcv: list[dict], sub_at: dict[int, list[dict]],
                     rcv_sub_at: dict[int, int], from_ms: int) -> dict:
    acc = dict.fromkeys(("time", "window_blocked", "unsent", "nothing_queued", "sndbuf_full", "pressure",
                         "held_half", "hol_stalled"), 0.0)
    mptcp_sent = mptcp_retrans = 0
    for a, b, dt in _pairs(snd, from_ms):
        acc["time"] += dt
        subs = sub_at.get(b["t_ms"], [])
        inflight = max(0, b["bytes_sent"] - b["bytes_acked"])
        if b["sndbuf"] and b["wmem_queued"] >= SNDBUF_FULL * b["sndbuf"]:
            acc["sndbuf_full"] += dt
        if subs and _unsent(b) == 0 and not any(s["notsent"] for s in subs):
            acc["nothing_queued"] += dt
        if _unsent(b) > 0:
            acc["unsent"] += dt
            if subs:
                fresh = min(subs, key=lambda s: s["last_ack_recv_ms"])
                if inflight >= fresh["snd_wnd"] - BLOCK_SLACK_MSS * fresh["mss"]:
                    acc["window_blocked"] += dt
        mptcp_sent += b["bytes_sent"] - a["bytes_sent"]
        mptcp_retrans += b["bytes_retrans"] - a["bytes_retrans"]
    delivered, span, held, ratio = 0, 0.0, [], []
    for a, b, dt in _pairs(rcv, from_ms):
        delivered += b["bytes_received"] - a["bytes_received"]
        span += dt
        if b["rcvbuf"]:
            ratio.append(b["rmem_alloc"] / b["rcvbuf"])
            acc["pressure"] += dt if b["rmem_alloc"] >= PRESSURE * b["rcvbuf"] else 0.0
        if a["t_ms"] in rcv_sub_at and b["t_ms"] in rcv_sub_at and \
                b["bytes_received"] == a["bytes_received"] and rcv_sub_at[b["t_ms"]] > rcv_sub_at[a["t_ms"]]:
            acc["hol_stalled"] += dt
        if b["t_ms"] in rcv_sub_at:
            h = max(0, rcv_sub_at[b["t_ms"]] - b["bytes_received"])
            held.append(h)
            acc["held_half"] += dt if b["rcvbuf"] and h >= PRESSURE * b["rcvbuf"] else 0.0
    goodput = delivered / span if span else 0.0
    return {**{k: round(v, 3) for k, v in acc.items()}, "rcv_time": round(span, 3),
            "goodput_mbps": round(goodput * 8 / 1e6, 4) if span else None,
            "held_s": round(statistics.fmean(held) / goodput, 2) if held and goodput > 0 else None,
            "mptcp_bytes_sent": mptcp_sent, "mptcp_bytes_retrans": mptcp_retrans,
            "rmem_over_rcvbuf_mean": round(statistics.fmean(ratio), 3) if ratio else None,
            "held_bytes_mean": round(statistics.fmean(held)) if held else None,
            "held_bytes_max": max(held) if held else None}


def per_connection(trace: dict, warmup_s: float) -> list[dict]:
    """Each traced flow's connection and subflow statistics."""
    from_ms = int(warmup_s * 1000)
    out = []
    for f in trace["flows"]:
        i = str(f["index"])
        snd = _rows(trace["snd_conn"][i]) if i in trace["snd_conn"] else []
        rcv = _rows(trace["rcv_conn"][i]) if i in trace["rcv_conn"] else []
        subs, sub_at, rcv_total = {}, {}, {}
        for key, series in trace["snd_sub"].items():
            flow, port = key.split(":")
            if flow == i:
                rows = _rows(series)
                subs[int(port)] = rows
                for r in rows:
                    sub_at.setdefault(r["t_ms"], []).append(r)
        for key, series in trace["rcv_sub"].items():
            if key.split(":")[0] == i:
                for r in _rows(series):
                    rcv_total[r["t_ms"]] = rcv_total.get(r["t_ms"], 0) + r["bytes_received"]
        queued_at = {r["t_ms"]: _unsent(r) + sum(s["notsent"] for s in sub_at.get(r["t_ms"], ()))
                     for r in snd}
        series = [[round(b["t_ms"] / 1000, 1), round((b["bytes_received"] - a["bytes_received"]) * 8 / dt / 1e6, 4)]
                  for a, b, dt in _pairs(rcv, -1)]
        out.append({"flow": f, "conn": connection_stats(snd, rcv, sub_at, rcv_total, from_ms),
                    "goodput_series_mbps": series,
                    "subflows": {p: subflow_stats(rows, queued_at, from_ms) for p, rows in sorted(subs.items())}})
    return out


def _share(num: float, den: float) -> float | None:
    return num / den if den else None


def ranks(xs: list[float]) -> list[float]:
    """Ranks from 1, ties sharing their average (statistics ranks only from Python 3.12)."""
    order = sorted(range(len(xs)), key=xs.__getitem__)
    r = [0.0] * len(xs)
    done = 0
    for _, tied in itertools.groupby(order, key=xs.__getitem__):
        tied = list(tied)
        for i in tied:
            r[i] = done + (len(tied) + 1) / 2
        done += len(tied)
    return r


def spearman(xs: list[float], ys: list[float]) -> float | None:
    """Rank correlation (average ranks for ties); None where undefined."""
    if len(xs) < 3 or len(xs) != len(ys):
        return None
    try:
        return round(statistics.correlation(ranks(xs), ranks(ys)), 3)
    except statistics.StatisticsError:   # a constant list
        return None


def _sub_share(c: dict, key: str) -> float | None:
    time = sum(s["time"] for s in c["subflows"].values())
    return _share(sum(s[key] for s in c["subflows"].values()), time)


def _sub_median(c: dict, key: str) -> float | None:
    xs = [s[key] for s in c["subflows"].values() if s[key] is not None]
    return statistics.median(xs) if xs else None


def _conn_share(c: dict, key: str, time: str = "time") -> float | None:
    return _share(c["conn"][key], c["conn"][time])


# (label, how it is measured, per-connection value, unit): "%" a share
# (of time where `bounded`: its bound on the gap is share x 100 points),
# "s" seconds
CAUSES = [
    ("RTO recovery", "subflow-time in RTO recovery (tcpi_total_rto_time)",
     lambda c, p: _sub_share(c, "rto"), "%", True),
    ("RTO backoff > 0", "subflow-time with backoff > 0 at the sample",
     lambda c, p: _sub_share(c, "backoff"), "%", True),
    ("idle, data queued", "subflow-time sending nothing, connection with data queued",
     lambda c, p: _sub_share(c, "idle_pending"), "%", True),
    ("  of which in RTO recovery", "the same, the subflow in RTO recovery during it",
     lambda c, p: _sub_share(c, "idle_pending_rto"), "%", True),
    ("  of which window full", "the same, not in RTO, unacked >= cwnd: waiting for ACKs",
     lambda c, p: _sub_share(c, "idle_window_full"), "%", True),
    ("  of which own queue stuck", "the same, window open, data in its own queue unsent",
     lambda c, p: _sub_share(c, "idle_own_queue"), "%", True),
    ("  of which starved", "the same, window open, own queue empty: data held elsewhere",
     lambda c, p: _sub_share(c, "idle_starved"), "%", True),
    ("idle, nothing queued", "subflow-time sending nothing, connection with nothing queued",
     lambda c, p: _sub_share(c, "idle_nothing"), "%", True),
    ("MPTCP send buffer >= 90 % full", "sender wmem_queued >= 0.9 sndbuf",
     lambda c, p: _conn_share(c, "sndbuf_full"), "%", False),
    ("connection nothing queued", "sender: nothing unsent, no subflow notsent",
     lambda c, p: _conn_share(c, "nothing_queued"), "%", False),
    ("connection window-blocked", "MPTCP in flight >= peer window - 2 MSS, data unsent",
     lambda c, p: _conn_share(c, "window_blocked"), "%", True),
    ("rwnd-limited (subflow clock)", "tcpi_rwnd_limited over subflow-time",
     lambda c, p: _sub_share(c, "rwnd_limited"), "%", True),
    ("sndbuf-limited (subflow clock)", "tcpi_sndbuf_limited over subflow-time",
     lambda c, p: _sub_share(c, "sndbuf_limited"), "%", False),
    ("receive buffer >= 1/2 full", "receiver MPTCP rmem_alloc >= rcvbuf / 2",
     lambda c, p: _conn_share(c, "pressure", "rcv_time"), "%", True),
    ("out-of-order held >= 1/2 rcvbuf", "subflow bytes received - in-order delivered",
     lambda c, p: _conn_share(c, "held_half", "rcv_time"), "%", True),
    ("in-order delivery stalled (HOL)", "receiver: subflows received, nothing delivered in order",
     lambda c, p: _conn_share(c, "hol_stalled", "rcv_time"), "%", True),
    ("app delivery stalled (per second)", "seconds the receiving app got < 10 % of its mean rate",
     lambda c, p: (c.get("delivery") or {}).get("stalled"), "%", False),
    ("  bytes delivered in bursts", "bytes in seconds above 3 x the mean rate (a stall released)",
     lambda c, p: (c.get("delivery") or {}).get("in_bursts"), "%", False),
    ("out-of-order held, s of goodput", "mean held bytes / the connection's goodput",
     lambda c, p: c["conn"]["held_s"], "s", False),
    ("subflow backlog, s", "median notsent / the subflow's own rate (median subflow)",
     lambda c, p: _sub_median(c, "backlog_s"), "s", False),
    ("slow start", "subflow-time with cwnd < ssthresh, not in RTO",
     lambda c, p: _sub_share(c, "slow_start"), "%", False),
    ("  initial slow start", "subflow-time never out of slow start",
     lambda c, p: _sub_share(c, "initial_slow_start"), "%", False),
    ("cwnd-limited", "subflow-time with unacked >= cwnd (a busy subflow's normal)",
     lambda c, p: _sub_share(c, "cwnd_limited"), "%", False),
    ("MPTCP reinjected bytes", "mptcpi_bytes_retrans / bytes_sent",
     lambda c, p: _share(c["conn"]["mptcp_bytes_retrans"], c["conn"]["mptcp_bytes_sent"]), "%", True),
    ("TCP retransmitted bytes", "subflow bytes_retrans / bytes_sent",
     lambda c, p: _share(sum(s["bytes_retrans"] for s in c["subflows"].values()),
                         sum(s["bytes_sent"] for s in c["subflows"].values())), "%", False),
    ("fewer distinct paths than random", "distinct top-tier switches < E[random] (see placement)",
     lambda c, p: (None if not p or p.get("expected_distinct") is None
                   else float(p["distinct"] < p["expected_distinct"])), "%", False),
]


def delivery(per_second_mbps: list[float], warmup_s: float, time_s: float) -> dict | None:
    """How evenly the receiving application got its data over the counted
    window (iperf3's one-second samples at the server): the share of seconds
    under a tenth of its mean rate, and the share of bytes that came in
    seconds above three times it. A connection whose in-order delivery waits
    for one subflow gets nothing for many seconds, then all at once."""
    xs = per_second_mbps[int(warmup_s):int(warmup_s + time_s)]
    mean = statistics.fmean(xs) if xs else 0.0
    if mean <= 0:
        return None
    return {"stalled": sum(x < 0.1 * mean for x in xs) / len(xs),
            "in_bursts": sum(x for x in xs if x > 3 * mean) / sum(xs)}


def causes_table(conns: list[dict], pct: dict[int, float], paths: dict[int, dict]) -> list[dict]:
    """One row per cause: mean over connections, bound on the gap in
    points, rank correlation with the shortfall, mean among the 10 worst."""
    worst = set(sorted(pct, key=pct.get)[:10])
    rows = []
    for label, how, fn, unit, bounded in CAUSES:
        xs, ys, bad = [], [], []
        for c in conns:
            i = c["flow"]["index"]
            v = fn(c, paths.get(i))
            if v is None or i not in pct:
                continue
            xs.append(v)
            ys.append(100.0 - pct[i])
            if i in worst:
                bad.append(v)
        mean = statistics.fmean(xs) if xs else None
        rows.append({"cause": label, "measure": how, "unit": unit, "connections": len(xs),
                     "mean": round(mean, 6) if mean is not None else None,
                     "bound_pts": round(100 * mean, 1) if bounded and mean is not None else None,
                     "rank_corr_with_shortfall": spearman(xs, ys),
                     "worst10_mean": round(statistics.fmean(bad), 6) if bad else None})
    return rows


def placement_summary(paths: dict[int, dict]) -> dict:
    """Distinct top-tier switches per connection against random choices."""
    walked = [p for p in paths.values() if p.get("expected_distinct") is not None]
    if not walked:
        return {"connections": 0}
    return {
        "connections": len(walked), "complete": sum(p["complete"] for p in walked),
        "distinct_mean": round(statistics.fmean(p["distinct"] for p in walked), 3),
        "expected_mean": round(statistics.fmean(p["expected_distinct"] for p in walked), 3),
        "mid_rank_mean": round(statistics.fmean(p["mid_rank"] for p in walked), 3),
        "below_expected_share": round(statistics.fmean(p["distinct"] < p["expected_distinct"]
                                                       for p in walked), 3),
        "below_expected_share_random": round(statistics.fmean(p["p_below_expected"] for p in walked), 3),
        "histogram": {str(x): n for x, n in sorted(Counter(p["distinct"] for p in walked).items())},
    }


def over_time(trace: dict, baseline_mbps: float, bins: int = 10) -> list[dict]:
    """Aggregate in-order goodput at the receivers, % of what every flow at
    the baseline would carry, and the share of subflows in RTO recovery, in
    `bins` equal stretches of the trace."""
    delivered: dict[int, int] = {}
    rto: dict[int, list[float]] = {}
    end = 0
    for series in trace["rcv_conn"].values():
        rows = _rows(series)
        for a, b, _ in _pairs(rows, -1):
            delivered[b["t_ms"]] = delivered.get(b["t_ms"], 0) + b["bytes_received"] - a["bytes_received"]
            end = max(end, b["t_ms"])
    for series in trace["snd_sub"].values():
        for a, b, dt in _pairs(_rows(series), -1):
            share = min(1.0, (b["total_rto_time_ms"] - a["total_rto_time_ms"]) / 1000.0 / dt)
            rto.setdefault(b["t_ms"], []).append(share)
    if not end:
        return []
    width = end / bins
    out = []
    n_flows = max(1, len(trace["flows"]))
    for k in range(bins):
        lo, hi = k * width, (k + 1) * width
        got = sum(v for t, v in delivered.items() if lo < t <= hi)
        shares = [s for t, v in rto.items() if lo < t <= hi for s in v]
        out.append({"from_s": round(lo / 1000, 1), "to_s": round(hi / 1000, 1),
                    "pct_of_optimal": round(100 * got * 8 / (width / 1000) / 1e6 / (n_flows * baseline_mbps), 1)
                    if baseline_mbps else None,
                    "subflows_in_rto_pct": round(100 * statistics.fmean(shares), 1) if shares else None})
    return out
