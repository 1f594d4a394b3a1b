"""The controller's groundwork without root: every shortest path through a
FatTree or DHFT as per-switch (in_port, out_port) hops, the select-group
ports, up/down ports, and a seeded 5-tuple hash that spreads flows evenly."""
from __future__ import annotations

import random
from collections import Counter

import pytest

from controller.ecmp_hash import ecmp_index, flow_hash, flow_key, switch_seed
from controller.paths import (address_paths, host_paths, levels, out_ports, points_up,
                              port_map)
from dctopo import DHFT, FatTree

FLOWS = 20_000


def assert_valid(topo, paths, src_host, dst_host):
    """Each path starts on the source's switch at the port facing it, each
    out_port leads to the next hop's in_port, the last out_port faces the
    destination, and its length agrees with dctopo's own breadth-first search."""
    ports = port_map(topo)
    facing = {(i.node, i.port): i for n in ports for i in ports[n]}
    switches = topo.path_links(src_host, dst_host) - 1
    for path in paths:
        assert_valid_path(facing, path, src_host, dst_host)
        assert len(path) == switches


def assert_valid_path(facing, path, src_host, dst_host):
    first, last = path[0], path[-1]
    assert facing[first[0], first[1]].peer == src_host
    for (switch, _, out), (nxt, in_port, _) in zip(path, path[1:]):
        link = facing[switch, out]
        assert (link.peer, link.peer_port) == (nxt, in_port)
    assert facing[last[0], last[2]].peer == dst_host


@pytest.mark.parametrize("k, src, dst, count", [
    (4, "h0_0_0", "h3_1_1", 4),      # different pods: (k/2)^2
    (4, "h0_0_0", "h0_1_0", 2),      # same pod, different edge: k/2
    (4, "h0_0_0", "h0_0_1", 1),      # same edge switch
    (8, "h0_0_0", "h7_3_3", 16),     # different pods: (k/2)^2
    (8, "h1_0_0", "h1_3_2", 4),      # same pod, different edge: k/2
])
def test_fattree_has_every_shortest_path_and_each_is_valid(k, src, dst, count):
    topo = FatTree(k=k)
    paths = host_paths(topo, src, dst)
    assert len(paths) == len(set(paths)) == count
    assert_valid(topo, paths, src, dst)
    assert address_paths(topo, *topo.host_addresses(src), *topo.host_addresses(dst)) == paths


def dhft_plane(topo: DHFT, switch: str) -> int:
    """A DHFT switch's plane, from the construction in dctopo's docstring."""
    quarter, half = topo.k // 4, topo.k // 2
    if topo.role(switch) == "edge":
        return topo.nodeInfo(switch)["plane"]
    if topo.role(switch) == "agg":
        return int(switch.split("_")[1]) // quarter
    return int(switch[1:]) // half // quarter


def test_dhft_paths_keep_to_the_plane_of_their_addresses():
    topo = DHFT(k=4)
    src, dst = "h0_0_0", "h2_1_1"
    for plane, (src_ip, dst_ip) in enumerate(zip(topo.plane_addresses(src), topo.plane_addresses(dst))):
        paths = address_paths(topo, src_ip, dst_ip)
        assert len(paths) == 2                     # (k/4)(k/2) per plane
        assert_valid(topo, paths, src, dst)
        assert all({dhft_plane(topo, hop[0]) for hop in path} == {plane} for path in paths)
    # hosts never forward: no path from one plane's address to the other's
    assert address_paths(topo, topo.plane_addresses(src)[0], topo.plane_addresses(dst)[1]) == []
    assert len(host_paths(topo, src, dst)) == 4   # both planes


def test_out_ports_are_the_select_group_buckets():
    topo = FatTree(k=4)
    table = out_ports(topo)
    assert table["e0_0"]["10.1.0.2"] == {2, 3}     # up, either aggregation switch
    assert table["e0_0"]["10.0.0.3"] == {1}        # its own host h0_0_1
    assert table["a0_0"]["10.3.1.3"] == {2, 3}     # up, either core
    assert table["a0_0"]["10.0.1.2"] == {1}        # down to e0_1
    assert table["c0"]["10.1.0.2"] == {1}          # down to pod 1
    paths = address_paths(topo, "10.0.0.2", "10.3.1.3")
    assert {p[0][2] for p in paths} == table["e0_0"]["10.3.1.3"]
    assert all(out in table[switch]["10.3.1.3"] for p in paths for switch, _, out in p)


def test_ports_point_up_toward_the_core_only():
    topo = FatTree(k=4)
    level = levels(topo)
    assert [points_up(topo, "e0_0", p, level) for p in range(4)] == [False, False, True, True]
    assert [points_up(topo, "a1_1", p, level) for p in range(4)] == [False, False, True, True]
    assert not any(points_up(topo, "c3", p, level) for p in range(4))
    for path in host_paths(topo, "h0_0_0", "h3_1_1"):   # valley-free: up, up, then down
        assert [points_up(topo, s, out, level) for s, _, out in path] == [True, True, False, False, False]
    with pytest.raises(ValueError):
        points_up(topo, "e0_0", 9, level)


def random_tuples(rng: random.Random, n: int):
    return [(f"10.{rng.randrange(8)}.{rng.randrange(4)}.{rng.randrange(2, 6)}",
             f"10.{rng.randrange(8)}.{rng.randrange(4)}.{rng.randrange(2, 6)}",
             6, rng.randrange(1024, 65536), rng.choice([5201, 80, rng.randrange(1024, 65536)]))
            for _ in range(n)]


def assert_even(counts: Counter, cells: int, total: int, tolerance: float):
    assert len(counts) == cells
    for count in counts.values():
        assert abs(count - total / cells) <= tolerance * total / cells, counts


def test_hash_spreads_flows_evenly_over_four_paths():
    flows = random_tuples(random.Random(1), FLOWS)
    assert_even(Counter(ecmp_index(4, *f, seed=42) for f in flows), 4, FLOWS, 0.05)


@pytest.mark.parametrize("seed_a, seed_b", [(1, 2), (switch_seed(7, "e0_0"), switch_seed(7, "a0_0"))],
                         ids=["two seeds", "two switches"])
def test_different_seeds_choose_independently(seed_a, seed_b):
    """The joint choice of two switches fills the 4x4 cells evenly: no
    polarization, where the second choice would follow from the first."""
    flows = random_tuples(random.Random(2), FLOWS)
    joint = Counter((ecmp_index(4, *f, seed=seed_a), ecmp_index(4, *f, seed=seed_b)) for f in flows)
    assert_even(joint, 16, FLOWS, 0.10)


def test_icmp_hashes_addresses_and_protocol_and_still_spreads():
    topo = FatTree(k=8)
    addrs = [a for h in topo.hosts(sort=True) for a in topo.host_addresses(h)]
    pairs = [(s, d) for s in addrs for d in addrs if s != d]
    assert_even(Counter(ecmp_index(4, s, d, 1, seed=3) for s, d in pairs), 4, len(pairs), 0.05)
    assert flow_key("10.0.0.2", "10.1.0.2", 1, 5, 6) == flow_key("10.0.0.2", "10.1.0.2", 1)
    with pytest.raises(ValueError):
        flow_key("10.0.0.2", "10.1.0.2", 6)        # TCP without ports


def test_hash_is_deterministic_and_stable_across_processes():
    flow = ("10.0.0.2", "10.1.0.2", 6, 40000, 5201)
    assert len({ecmp_index(8, *flow, seed=9) for _ in range(100)}) == 1
    # pinned: a change here would remap every flow after a controller upgrade
    assert flow_hash(flow_key(*flow), 0) == 16030066190252439142
    assert switch_seed(7, "e0_0") == switch_seed(7, "e0_0") != switch_seed(7, "e0_1")
