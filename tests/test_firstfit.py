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
