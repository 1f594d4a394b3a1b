"""FatTree as data: sizes, names, addresses, and the equal-cost paths the
kernel-routing fabric will install (no root needed)."""
import ipaddress

import pytest

from dctopo import FatTree
from experiments.config import LinkParams
from emulator.fabrics.l3 import L3Fabric


@pytest.mark.parametrize("k", [4, 6, 8])
def test_sizes(k):
    t = FatTree(k=k)
    assert len(t.hosts()) == k ** 3 // 4
    assert len(t.switches()) == 5 * k * k // 4
    roles = [t.role(s) for s in t.switches()]
    assert roles.count("core") == (k // 2) ** 2
    assert roles.count("agg") == roles.count("edge") == k * k // 2
    # every switch has k ports, every host one
    assert all(len(t.interfaces(s)) == k for s in t.switches())
    assert all(len(t.interfaces(h)) == 1 for h in t.hosts())


def test_names_and_addresses_are_deterministic_and_unique():
    a, b = FatTree(k=6), FatTree(k=6)
    assert a.hosts(sort=True) == b.hosts(sort=True)
    addrs = [ip for h in a.hosts() for ip in a.host_addresses(h)]
    router_ids = [a.nodeInfo(s)["router_id"] for s in a.switches()]
    assert len(set(addrs + router_ids)) == len(addrs) + len(router_ids)
    assert a.host_addresses("h3_2_1") == ["10.3.2.3"]
    assert a.nodeInfo("e3_2")["router_id"] == "10.3.2.1"
    assert a.nodeInfo("a3_0")["router_id"] == "10.3.3.1"
    assert a.nodeInfo("c4")["router_id"] == "10.6.2.2"
    assert all(len(i.name) <= 15 for n in a.nodes() for i in a.interfaces(n))
    for ip in addrs:
        assert ipaddress.ip_address(ip) in ipaddress.ip_network("10.0.0.0/8")


def test_core_links_to_one_aggregation_switch_per_pod():
    t = FatTree(k=4)
    assert sorted(i.peer for i in t.interfaces("c2")) == ["a0_1", "a1_1", "a2_1", "a3_1"]


@pytest.mark.parametrize("k", [4, 8])
def test_equal_cost_next_hops(k):
    """Upward every choice is open (k/2 ways at edge and aggregation),
    downward exactly one: k^2/4 paths between pods, k/2 within a pod."""
    f = L3Fabric(FatTree(k=k), LinkParams())
    hops = f.next_hops()
    half = k // 2
    far, same_pod, same_edge = "10.1.0.2", "10.0.1.2", "10.0.0.3"
    assert len(hops["e0_0"][far]) == half
    assert len(hops["e0_0"][same_pod]) == half
    assert [i.peer for i in hops["e0_0"][same_edge]] == ["h0_0_1"]
    assert len(hops["a0_0"][far]) == half          # up to any of its cores
    assert [i.peer for i in hops["a0_0"][same_pod]] == ["e0_1"]
    assert len(hops["c0"][far]) == 1                # down to pod 1 only
    assert [i.peer for i in hops["a1_0"][far]] == ["e1_0"]


def test_switch_script_hashes_headers_with_a_seed_per_router():
    f = L3Fabric(FatTree(k=4), LinkParams(bw_mbps=10, queue_pkts=100), seed=7)
    script = "\n".join(f.switch_script("a0_0"))
    assert "net.ipv4.fib_multipath_hash_policy=3" in script
    assert "net.ipv4.fib_multipath_hash_fields=0x0037" in script
    seeds = {f.hash_seed(s) for s in f.topo.switches()}
    assert len(seeds) == len(f.topo.switches())
    assert "pfifo limit 100" in script and "rate 10mbit" in script
