"""The steady-state check of a run of long flows (experiments/longflows.py,
`still_rising`): the counted window's last third against its first third,
over all flows' per-second goodput at the receivers."""
from emulator.traffic.common import FlowEndpoints, FlowOutcome
from experiments.longflows import (RISE_LIMIT_PCT, RISE_MIN_WINDOW_S, counted_rise_pct, levelled_at,
                                   levelled_outcomes, still_rising)


def outcome(index: int, per_second: list[float]) -> FlowOutcome:
    ends = FlowEndpoints(index, "h0", "h1", "10.0.0.2", "10.0.1.2", 40000 + index, 5201)
    return FlowOutcome(ends, sum(per_second) / len(per_second), len(per_second), None, False,
                       per_second_mbps=per_second)


def test_a_ramp_inside_the_warmup_is_not_counted():
    # 5 s of slow start, then a flat 9 Mb/s on each of two flows.
    flows = [outcome(i, [1, 2, 4, 6, 8] + [9] * 40) for i in range(2)]
    assert counted_rise_pct(flows, warmup_s=5) == 0.0
    assert not still_rising(counted_rise_pct(flows, warmup_s=5))
    # Counted from the start, the same runs are still rising.
    assert counted_rise_pct(flows, warmup_s=0) > RISE_LIMIT_PCT


def test_a_window_that_begins_inside_the_ramp_is_flagged():
    # MPTCP-8's shape at 10 Mb/s: the aggregate climbs for 15 s, then holds.
    ramp = [3 + 0.45 * s for s in range(15)] + [9.5] * 25
    flows = [outcome(0, ramp), outcome(1, [9.0] * 40)]
    rise = counted_rise_pct(flows, warmup_s=5)
    # first third (s 5-15): flow 0 averages 7.5 Mb/s (1 of its 11 s at 9.5), flow 1 9
    assert rise == round(100 * ((9.5 + 9) / ((sum(ramp[5:16]) / 11) + 9) - 1), 1) == 12.3
    assert still_rising(rise)
    # Counted after the ramp, it is not.
    assert not still_rising(counted_rise_pct(flows[:1] + [outcome(1, [9.0] * 55)], warmup_s=15))


def test_what_is_not_judged():
    short = [outcome(0, [1.0 + s for s in range(RISE_MIN_WINDOW_S + 4)])]
    # One second short of the shortest window judged: no verdict, however steep.
    assert counted_rise_pct(short, warmup_s=5) is None
    assert not still_rising(None)
    assert counted_rise_pct(short, warmup_s=4) is not None
    # Nothing in the first third: no ratio to give (zero_goodput_flow says what happened).
    assert counted_rise_pct([outcome(0, [0.0] * 20 + [5.0] * 20)], warmup_s=0) is None
    # A fall is not a ramp.
    assert not still_rising(counted_rise_pct([outcome(0, [9.0] * 20 + [4.0] * 20)], warmup_s=0))


# The levelled warm-up (longflows.levelled_at): counting starts where the
# aggregate of the last window is within 5 % of the window before it.
def test_counting_starts_when_the_aggregate_levels():
    ramp = [min(9.0, 0.5 * s) for s in range(60)]       # rises for 18 s, then flat
    start, levelled = levelled_at([outcome(0, ramp), outcome(1, ramp)], window_s=5, cap_s=40)
    assert levelled and 18 <= start <= 28, start
    flat = [9.0] * 60
    assert levelled_at([outcome(0, flat)], window_s=5, cap_s=40) == (10, True)
    # Not before every subflow is up, nor after the cap.
    assert levelled_at([outcome(0, flat)], window_s=5, cap_s=40, not_before_s=12.3) == (13, True)
    climbing = [float(s) for s in range(60)]
    assert levelled_at([outcome(0, climbing)], window_s=5, cap_s=30) == (30, False)
    # A flow whose client failed has no intervals: the others still level.
    failed = outcome(1, [0.0])
    failed.per_second_mbps = None
    assert levelled_at([outcome(0, flat), failed], window_s=5, cap_s=40) == (10, True)


def test_a_levelled_run_counts_its_time_from_there():
    series = [min(8.0, 0.4 * s) for s in range(60)] + [0.0] * 5
    [counted], level = levelled_outcomes([outcome(0, series)], cap_s=30, time_s=20, bw_mbps=10)
    assert level["levelled_at_s"] == 28 and level["levelled"] and level["window_s"] == 5
    # [28, 48): the ramp and the seconds after the counted time are left out.
    assert counted.seconds == 20 and counted.goodput_mbps == 8.0
