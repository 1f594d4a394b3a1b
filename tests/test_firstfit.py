"""Hedera's Global First Fit (controller/firstfit.py) on numbers alone: the
first path with room, reservations kept and freed, small flows left to ECMP."""
from __future__ import annotations

import pytest

from controller.firstfit import FirstFit, Move, links_of

MBPS = 1e6
# Paths from e0: P1 and P2 share no link; P3 shares e0's port 3 with P2 and nothing with P1.
P1 = (("e0", 0, 2), ("a0", 0, 2), ("c0", 0, 1))
P2 = (("e0", 0, 3), ("a1", 0, 2), ("c2", 0, 1))
P3 = (("e0", 0, 3), ("a1", 0, 3), ("c3", 0, 1))
BOTH = [P1, P2]


def test_links_are_the_egress_ports_of_a_path():
    assert links_of(P3) == [("e0", 3), ("a1", 3), ("c3", 1)]


def test_large_flows_take_the_first_path_with_room_and_small_ones_stay():
    ff = FirstFit(capacity_bps=10 * MBPS)
    moves = ff.round({"a": 6 * MBPS, "b": 6 * MBPS, "small": 0.5 * MBPS},
                     {"a": BOTH, "b": BOTH, "small": BOTH}, current={"a": P2, "b": P2})
    assert moves == [Move("a", P2, P1, 6 * MBPS)]
    assert ff.placed == {"a": P1, "b": P2}           # b was already where first fit puts it
    assert ff.reserved()[("e0", 2)] == 6 * MBPS and ("e0", 3) in ff.reserved()
    assert "small" not in ff.placed


def test_a_gone_flow_frees_its_links_and_a_placed_one_stays():
    ff = FirstFit(capacity_bps=10 * MBPS)
    ff.round({"a": 6 * MBPS, "b": 6 * MBPS}, {"a": BOTH, "b": BOTH})
    assert ff.placed == {"a": P1, "b": P2}
    moves = ff.round({"b": 7 * MBPS, "d": 5 * MBPS}, {"b": BOTH, "d": BOTH})
    assert moves == [Move("d", None, P1, 5 * MBPS)]
    assert ff.placed == {"b": P2, "d": P1} and ff.reserved()[("e0", 3)] == 7 * MBPS


def test_a_flow_without_room_stays_and_is_tried_next_round():
    ff = FirstFit(capacity_bps=10 * MBPS)
    ff.round({"a": 6 * MBPS, "b": 6 * MBPS}, {"a": BOTH, "b": BOTH})
    assert ff.round({"a": 6 * MBPS, "b": 6 * MBPS, "c": 5 * MBPS},
                    {"a": BOTH, "b": BOTH, "c": [P1, P3]}) == []
    assert "c" not in ff.placed
    # b has ended: P1 is still too full for c, P3 has room now.
    assert ff.round({"a": 6 * MBPS, "c": 5 * MBPS}, {"a": BOTH, "c": [P1, P3]}) == [
        Move("c", None, P3, 5 * MBPS)]


def test_the_threshold_is_a_tenth_of_the_link_rate():
    ff = FirstFit(capacity_bps=10 * MBPS)
    assert ff.threshold_bps == 1 * MBPS
    assert ff.round({"edge": 0.99 * MBPS}, {"edge": BOTH}) == []
    assert ff.round({"edge": 1.0 * MBPS}, {"edge": BOTH}) == [Move("edge", None, P1, 1.0 * MBPS)]


@pytest.mark.parametrize("kwargs", [{"capacity_bps": 0}, {"capacity_bps": 1e7, "large_share": 0},
                                    {"capacity_bps": 1e7, "large_share": 1.5}])
def test_bad_settings_are_refused(kwargs):
    with pytest.raises(ValueError):
        FirstFit(**kwargs)


def test_demands_are_what_the_hosts_interfaces_allow():
    """Hedera's estimator: a permutation's flows each demand the link rate;
    a sender's two flows share its interface; a receiver taking from three
    senders gives each a third, and a sender's other flow takes the rest."""
    from controller.firstfit import estimate_demands
    cap = 10 * MBPS
    assert estimate_demands({"a": ("h0", "h1"), "b": ("h1", "h0")}, cap) == {"a": cap, "b": cap}
    split = estimate_demands({"a": ("h0", "h1"), "b": ("h0", "h2")}, cap)
    assert split == {"a": pytest.approx(cap / 2), "b": pytest.approx(cap / 2)}
    d = estimate_demands({"x": ("s0", "r"), "y": ("s1", "r"), "z": ("s2", "r"), "w": ("s0", "q")}, cap)
    assert d["x"] == pytest.approx(cap / 3) and d["y"] == pytest.approx(cap / 3)
    assert d["z"] == pytest.approx(cap / 3) and d["w"] == pytest.approx(2 * cap / 3)


def test_two_flows_sharing_a_link_are_parted_by_their_demands():
    """Measured at half the link each, two flows fit on the link they share;
    by their demands (the link rate each) the second goes to the other path."""
    ff = FirstFit(capacity_bps=10 * MBPS)
    shared = {"a": P1, "b": P1}
    rates = {"a": 4.8 * MBPS, "b": 4.7 * MBPS}
    assert FirstFit(capacity_bps=10 * MBPS).round(rates, {"a": BOTH, "b": BOTH}, shared) == []
    moves = ff.round(rates, {"a": BOTH, "b": BOTH}, shared, demands_bps={"a": 10 * MBPS, "b": 10 * MBPS})
    assert moves == [Move("b", P1, P2, 10 * MBPS)]
