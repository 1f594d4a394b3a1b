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


def test_a_hosts_queue_is_its_limit_in_mtu_frames_a_switchs_in_packets():
    """A host's TCP hands its qdisc GSO packets, so its FIFO counts bytes
    (tests/test_links.py shows it on the wire); switches see MTU frames."""
    f = L3Fabric(FatTree(k=4), LinkParams(bw_mbps=10, queue_pkts=100))
    host, switch = "\n".join(f.host_script("h0_0_0")), "\n".join(f.switch_script("e0_0"))
    assert "bfifo limit 151400" in host and "pfifo" not in host
    assert "pfifo limit 100" in switch and "bfifo" not in switch


def test_vl2_structure_and_rates():
    """VL2(4, 4): 4 aggregation and 2 intermediate switches, 4 ToRs of 20
    hosts; every aggregation switch reaches every intermediate; ToR uplinks
    and the layer above run at 10 times the hosts' rate."""
    from dctopo import VL2
    link = LinkParams(bw_mbps=10, queue_pkts=100)
    t = VL2(d_a=4, d_i=4, hosts_per_tor=20, link=link)
    roles = {}
    for n in t.nodes():
        roles.setdefault(t.role(n), []).append(n)
    assert {r: len(v) for r, v in roles.items()} == {"agg": 4, "core": 2, "edge": 4, "host": 80}
    for agg in roles["agg"]:
        ups = [i for i in t.interfaces(agg) if t.role(i.peer) == "core"]
        assert sorted(i.peer for i in ups) == ["i0", "i1"]
        assert all(i.link.bw_mbps == 100 for i in t.interfaces(agg))
    for tor in roles["edge"]:
        intfs = t.interfaces(tor)
        assert [i.link.bw_mbps for i in intfs] == [10] * 20 + [100, 100]
        # its two uplinks go to the two switches of one aggregation pair
        a, b = sorted(int(i.peer[1:]) for i in intfs[20:])
        assert b == a + 1 and a % 2 == 0
    assert len(set(t.host_addresses(h)[0] for h in roles["host"])) == 80


def test_vl2_spreads_over_every_intermediate_and_aggregation_pair():
    """Between ToRs under different aggregation pairs: both aggregation
    switches up, then both intermediates; within a pair, through the pair."""
    from dctopo import VL2
    t = VL2(d_a=4, d_i=4, hosts_per_tor=2)
    hops = t.next_hops()
    far = t.host_addresses("h3_0")[0]      # ToR 3: aggregation pair 1
    assert sorted(i.peer for i in hops["t0"][far]) == ["a0", "a1"]
    assert sorted(i.peer for i in hops["a0"][far]) == ["i0", "i1"]
    assert sorted(i.peer for i in hops["i0"][far]) == ["a2", "a3"]
    near = t.host_addresses("h1_0")[0]     # ToR 1 shares t0's pair
    assert sorted(i.peer for i in hops["t0"][near]) == ["a0", "a1"]
    assert [i.peer for i in hops["a0"][near]] == ["t1"]
    assert t.path_links("h0_0", "h3_0") == 6


@pytest.mark.parametrize("d_a,d_i", [(3, 4), (4, 1), (0, 4)])
def test_vl2_refuses_odd_sizes(d_a, d_i):
    from dctopo import VL2
    with pytest.raises(ValueError):
        VL2(d_a=d_a, d_i=d_i)


def test_an_oversubscribed_fattree_has_four_hosts_per_rack_uplink():
    """FatTree(4, oversubscription=4): 8 hosts under each edge switch, its
    2 uplinks and everything above as in FatTree(4), all at one rate."""
    from dctopo import FatTree
    t, plain = FatTree(k=4, oversubscription=4), FatTree(k=4)
    assert len(t.hosts()) == 64 and t.switches() == plain.switches()
    for edge in ("e0_0", "e3_1"):
        intfs = t.interfaces(edge)
        assert [i.peer for i in intfs[:8]] == [f"h{edge[1:]}_{i}" for i in range(8)]
        assert sorted(i.peer for i in intfs[8:]) == sorted(i.peer for i in plain.interfaces(edge)[2:])
    assert all(i.link is None for s in t.switches() for i in t.interfaces(s))
    assert t.switch_ports() == plain.switch_ports() + 48       # 6 more host ports per edge
    racks = t.racks()
    assert sum(r == "0_0" for r in racks.values()) == 8
    with pytest.raises(ValueError):
        FatTree(k=4, oversubscription=0)


def test_bcube_structure():
    """BCube(4,1): 16 hosts with 2 interfaces, 2 levels of 4 four-port
    switches; a level-l switch joins the hosts differing only in digit l."""
    from dctopo import BCube
    t = BCube(n=4, k=1)
    hosts = t.hosts()
    assert len(hosts) == 16 and all(len(t.interfaces(h)) == 2 for h in hosts)
    switches = t.switches()
    assert len(switches) == 8 and all(len(t.interfaces(s)) == 4 for s in switches)
    for s in switches:
        level = int(s[1])
        members = [t.digits(t.names.index(i.peer)) for i in t.interfaces(s)]
        others = {tuple(d[:level] + d[level + 1:]) for d in members}
        assert len(others) == 1                                   # the same apart from digit `level`
        assert sorted(d[level] for d in members) == [0, 1, 2, 3]  # port = that digit
    addresses = [a for h in hosts for a in t.host_addresses(h)]
    assert len(set(addresses)) == 32


def test_bcube_paths_correct_one_digit_per_level_from_each_interface():
    from dctopo import BCube
    t = BCube(n=4, k=2)                      # 64 hosts, 3 levels
    src, dst = t.index([1, 2, 3]), t.index([0, 0, 0])
    assert t.path_levels(src, dst, 0) == [0, 2, 1]
    assert t.path_levels(src, dst, 1) == [1, 0, 2]
    assert t.path_levels(src, dst, 2) == [2, 1, 0]
    # Following the relays reaches dst in one hop per differing digit, and
    # the three paths share no relay host: BCube's parallel paths.
    walks = [t.walk(src, dst, start) for start in range(3)]
    assert all(w[-1] == dst and len(w) == 3 for w in walks)
    relays = [set(w[:-1]) for w in walks]
    assert not (relays[0] & relays[1] or relays[1] & relays[2] or relays[0] & relays[2])


def test_bcube_paths_to_a_neighbour_detour_on_the_other_levels():
    """A neighbour differing only in digit 0: one hop from the level-0
    interface; from level 1 and 2 a detour to the neighbour one digit
    higher there, digit 0, and back: three hops, no relay shared."""
    from dctopo import BCube
    t = BCube(n=4, k=2)
    src, dst = t.index([1, 2, 3]), t.index([2, 2, 3])
    assert t.path_levels(src, dst, 0) == [0]
    assert t.path_levels(src, dst, 1) == [1, 0, 1]
    assert t.path_levels(src, dst, 2) == [2, 0, 2]
    walks = [t.walk(src, dst, start) for start in range(3)]
    assert walks[0] == [dst]
    assert walks[1] == [t.index([1, 3, 3]), t.index([2, 3, 3]), dst]
    assert walks[2] == [t.index([1, 2, 0]), t.index([2, 2, 0]), dst]
    assert not set(walks[1][:-1]) & set(walks[2][:-1])
    # Every relay's own next level is the one path_levels gives.
    for start in range(3):
        levels = t.path_levels(src, dst, start)
        for here, level in zip(t.walk(src, dst, start), levels[1:]):
            assert t.relay_next_level(here, dst, start) == level


def test_bcube_neighbours_are_the_papers_twelve():
    from dctopo import BCube
    t = BCube(n=4, k=3)
    assert len(t.hosts()) == 256
    nb = t.neighbours(0)
    assert len(nb) == 12 == len(set(nb)) and 0 not in nb
    assert all(sum(a != b for a, b in zip(t.digits(0), t.digits(j))) == 1 for j in nb)
