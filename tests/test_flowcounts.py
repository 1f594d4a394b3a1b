"""The controller's record of the flows first fit decides on
(controller/flowcounts.py), on numbers alone: rates from the newest two
growing counts, moves that keep the counts, and flows forgotten once
nothing has been heard of them for longer than their entries live."""
from controller.flowcounts import FlowCounts

PATH_A = (("e0_0", 0, 2), ("a0_0", 0, 2))
PATH_B = (("e0_0", 0, 3), ("a0_1", 0, 2))
KEY = ("10.0.0.2", "10.1.0.2", 6, 40000, 5201)
OTHER = ("10.0.0.3", "10.1.0.3", 6, 40001, 5202)


def test_a_rate_needs_two_growing_counts_and_a_recent_one():
    flows = FlowCounts(forget_after_s=10)
    flows.routed(KEY, PATH_A, now=0.0)
    flows.count(KEY, 1.0, 1000)
    assert flows.rates(live_after=0.0) == {}
    flows.count(KEY, 1.5, 1000)          # unchanged: not a reading
    flows.count(KEY, 2.0, 126_000)
    assert flows.rates(live_after=0.0) == {KEY: 125_000 * 8 / 1.0}
    assert flows.rates(live_after=2.5) == {}
    flows.count(("10.9.9.9",), 2.0, 5)   # a flow never routed is ignored
    assert len(flows) == 1


def test_a_move_keeps_the_counts_and_a_new_route_starts_them_afresh():
    flows = FlowCounts(forget_after_s=10)
    flows.routed(KEY, PATH_A, now=0.0)
    flows.count(KEY, 1.0, 1000)
    flows.count(KEY, 2.0, 2000)
    flows.moved(KEY, PATH_B)
    assert flows.path(KEY) == PATH_B and KEY in flows.rates(0.0)
    flows.routed(KEY, PATH_A, now=3.0)
    assert flows.path(KEY) == PATH_A and flows.rates(0.0) == {}
    flows.moved(OTHER, PATH_B)           # not routed: nothing to move
    assert flows.path(OTHER) is None


def test_quiet_flows_are_forgotten_and_busy_ones_kept():
    flows = FlowCounts(forget_after_s=5)
    flows.routed(KEY, PATH_A, now=0.0)
    flows.routed(OTHER, PATH_B, now=0.0)
    for t in range(1, 9):
        flows.count(KEY, float(t), 1000 * t)     # KEY keeps sending; OTHER never does
    assert flows.forget_quiet(now=5.0) == 0      # exactly forget_after_s: still kept
    assert flows.forget_quiet(now=8.5) == 1
    assert flows.path(OTHER) is None and flows.path(KEY) == PATH_A
    assert flows.first_switches() == {"e0_0"}
    flows.count(KEY, 9.0, 8000)                  # the count stopped growing at 8 s
    assert flows.forget_quiet(now=13.5) == 1 and len(flows) == 0
