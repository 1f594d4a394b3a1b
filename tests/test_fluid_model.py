"""The fluid model (dctopo/dctopo/fluid_model.py) against allocations worked by hand:
max-min by progressive filling, the paths ECMP can take on a FatTree, and
TCP's expected collisions against the pooled rate on small matrices."""
from __future__ import annotations

import random

import pytest

from dctopo import DHFT, FatTree
from dctopo.fluid_model import EcmpModel, max_min_rates

FT4 = EcmpModel(FatTree(k=4), link_mbps=10.0)


def test_max_min_freezes_flows_at_the_first_full_link():
    # Link A (1) has flows 0 and 1, link B (2) flows 0 and 2. Filling
    # together, A fills at 0.5 each; flow 2 then takes what B has left.
    assert max_min_rates([["A", "B"], ["A"], ["B"]], {"A": 1.0, "B": 2.0}) == pytest.approx([0.5, 0.5, 1.5])


def test_a_flow_without_a_resource_is_refused():
    with pytest.raises(ValueError, match="unbounded"):
        max_min_rates([["A"], []], {"A": 1.0})


def test_ecmp_paths_cross_the_fattree_tier_by_tier():
    # Across pods: host, one of 2 edge uplinks, one of the pod's 4 core
    # links, one of 4 core downlinks, then the 2 ways into the rack, host.
    assert [len(s) for s in FT4.hop_sets("h0_0_0", "h1_0_0")] == [1, 2, 4, 4, 2, 1]
    assert [len(s) for s in FT4.hop_sets("h0_0_0", "h0_1_0")] == [1, 2, 2, 1]
    assert [len(s) for s in FT4.hop_sets("h0_0_0", "h0_0_1")] == [1, 1]
    path = FT4.random_path("h0_0_0", "h1_0_0", random.Random(1))
    assert len(path) == 6 and path[0] == ("h0_0_0", 0)
    assert all(link in hop for link, hop in zip(path, FT4.hop_sets("h0_0_0", "h1_0_0")))


def test_two_flows_collide_on_an_uplink_half_the_time():
    # Two hosts of one rack to two of another pod's rack: each takes either
    # uplink; on the same one (chance 1/2) they share it, 1 in all, else 2.
    # Pooled, each fills its own host link.
    result = FT4.evaluate([("h0_0_0", "h1_0_0"), ("h0_0_1", "h1_0_1")], draws=4000, seed=0)
    assert result.pooled == pytest.approx(2.0)
    assert result.tcp == pytest.approx(1.5, abs=0.04)
    one = FT4.evaluate([("h0_0_0", "h1_0_0")], draws=20, seed=0)
    assert one.tcp == pytest.approx(1.0) and one.pooled == pytest.approx(1.0)


def test_a_4_to_1_racks_flows_pool_its_two_uplinks():
    model = EcmpModel(FatTree(k=4, oversubscription=4), link_mbps=10.0)
    pairs = [(f"h0_0_{i}", f"h2_1_{i}") for i in range(8)]
    assert model.pooled_rates(pairs) == pytest.approx([0.25] * 8)
    # TCP fills both uplinks unless all 8 flows hash onto one (2 / 2^8).
    tcp = model.evaluate(pairs, draws=50, seed=3).tcp
    assert 1.0 <= tcp <= 2.0 + 1e-9
    record = model.evaluate(pairs, draws=5, seed=3).to_record(link_mbps=9.56)
    assert record["pooled_mbps"] == pytest.approx(2 * 9.56)


def test_multi_homed_hosts_are_refused():
    with pytest.raises(ValueError, match="single-homed"):
        EcmpModel(DHFT(k=4), link_mbps=10.0)
