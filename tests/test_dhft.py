"""`dhft`, the dual-homed FatTree: its construction and routing (no root), its
workloads, and on the real kernel: one MPTCP connection across both
interfaces against TCP on one, and a small experiment drawn by plot.py."""
import json
import subprocess
from collections import Counter

import pytest

from dctopo import DHFT, FatTree, PerfectSwitch
from experiments.config import DhftConfig, LinkParams
from emulator.fabrics.l3 import L3Fabric
from experiments.longflows import PAYLOAD_PER_FRAME
from emulator.traffic.common import FlowEndpoints
from tests.conftest import ROOT, needs_root
from tests.subflows import assert_subflows
from dctopo.workloads import Flow, TrafficMatrix, make_rack_matrix


@pytest.mark.parametrize("k,hosts,ports", [(4, 24, 112), (8, 160, 832), (12, 576, 2880)])
def test_sizes_and_switch_ports(k, hosts, ports):
    """The paper's construction: 2k/3 hosts per pair of edge switches; at
    k=12 576 hosts and 5 switch ports per host, as a FatTree."""
    t = DHFT(k=k)
    assert len(t.hosts()) == hosts and t.switch_ports() == ports
    roles = Counter(t.role(s) for s in t.switches())
    assert roles == {"edge": k * k, "agg": k * k // 2, "core": k * k // 4}
    assert all(len(t.interfaces(s)) == t.hosts_per_rack + k // 4
               for s in t.switches() if t.role(s) == "edge")
    if k == 12:
        assert t.switch_ports() / len(t.hosts()) == FatTree(k=4).switch_ports() / 16 == 5


def test_each_host_has_one_interface_on_each_edge_switch_of_its_rack():
    t = DHFT(k=4)
    intfs = t.interfaces("h1_1_2")
    assert [(i.name, i.ip, i.peer) for i in intfs] == [("h1_1_2-eth0", "10.1.2.4/32", "e1_2"),
                                                       ("h1_1_2-eth1", "10.1.3.4/32", "e1_3")]
    assert t.racks()["h1_1_2"] == "1_1"
    assert {i.peer for i in t.interfaces("e1_2")} == {"h1_1_0", "h1_1_1", "h1_1_2", "a1_0"}
    assert {i.peer for i in t.interfaces("e1_3")} == {"h1_1_0", "h1_1_1", "h1_1_2", "a1_1"}
    with pytest.raises(ValueError):
        DHFT(k=6)


def _paths(topo, hops: dict, switch: str, dest: str) -> int:
    """Equal-cost paths from `switch` to host address `dest`."""
    return sum(_paths(topo, hops, i.peer, dest) if topo.isSwitch(i.peer) else 1
               for i in hops[switch][dest])


def test_planes_are_disjoint_and_offer_the_documented_paths():
    """A plane reaches only its own addresses: (k/4)(k/2) = 2 paths between
    pods at k=4, k/4 = 1 within a pod, 1 within a rack."""
    f = L3Fabric(DHFT(k=4), LinkParams())
    hops = f.next_hops()
    plane0 = [s for s in f.topo.switches() if f.topo.role(s) == "edge" and int(s[-1]) % 2 == 0]
    for s in plane0:
        assert all(int(ip.split(".")[2]) % 2 == 0 for ip in hops[s]), s
    assert _paths(f.topo, hops, "e0_0", "10.2.2.3") == 2       # h0_0_0 plane 0 -> h2_1_1 plane 0
    assert _paths(f.topo, hops, "e0_1", "10.2.3.3") == 2       # plane 1
    assert _paths(f.topo, hops, "e0_0", "10.0.2.2") == 1       # other rack, same pod
    assert [i.peer for i in hops["e0_0"]["10.0.0.3"]] == ["h0_0_1"]   # same rack
    assert "10.2.3.3" not in hops["e0_0"]


def test_perfect_switch_has_the_dhft_hosts_on_one_switch():
    d, p = DHFT(k=4), PerfectSwitch(k=4)
    assert p.hosts(sort=True) == d.hosts(sort=True) and p.racks() == d.racks()
    assert all(p.host_addresses(h) == d.host_addresses(h)[:1] for h in p.hosts())
    assert p.switches() == ["s0"] and p.switch_ports() == 24


def test_config_racks_match_the_topology_and_points_group_by_topology():
    cfg = DhftConfig(localities=(0, 0.5), loads=(1, 2))  # 2 x 2 points, 3 schemes each
    assert cfg.racks() == DHFT(k=4).racks()
    pts = cfg.points()
    assert len(pts) == 4 * 3
    assert [p.topology for p in pts] == ["dhft"] * 8 + ["perfect"] * 4
    assert str(pts[1].run_dir(cfg.results, 4)) == "results/dhft4/locality/mptcp_dhft/0pct"


@pytest.mark.parametrize("locality", [0, 0.25, 0.5, 0.75, 1])
def test_locality_matrix_is_a_permutation_with_that_share_of_rack_local_flows(locality):
    t = DHFT(k=4)
    racks = t.racks()
    for seed in range(10):
        m = make_rack_matrix("locality", t.hosts(), racks, locality, seed)
        assert sorted(f.src for f in m.flows) == sorted(f.dst for f in m.flows) == t.hosts(sort=True)
        assert all(f.src != f.dst for f in m.flows)
        assert m.local_fraction(racks) == locality
    assert m == make_rack_matrix("locality", t.hosts(), racks, locality, seed)


def test_random_matrix_has_c_connections_per_host_to_other_hosts():
    t = DHFT(k=4)
    m = make_rack_matrix("random", t.hosts(), t.racks(), 3, seed=1)
    assert Counter(f.src for f in m.flows) == {h: 3 for h in t.hosts()}
    assert all(f.src != f.dst for f in m.flows)
    assert len({f.dst for f in m.flows}) > 12        # destinations spread
    assert TrafficMatrix.from_record(json.loads(json.dumps(m.to_record()))) == m
    light = make_rack_matrix("random", t.hosts(), t.racks(), 0.25, seed=1)
    assert len(light.flows) == 6 and len({f.src for f in light.flows}) == 6
    assert sorted(Counter(f.src for f in make_rack_matrix(
        "random", t.hosts(), t.racks(), 1.5, seed=1).flows).values()) == [1] * 12 + [2] * 12


def test_mptcp_subflows_alternate_between_the_planes():
    from dctopo import DHFT
    from experiments.racknet import RackNetwork
    net = RackNetwork(DHFT(k=4), DhftConfig())
    f = FlowEndpoints(0, "h0_0_0", "h2_1_1", "10.0.1.2", "10.2.3.3", 40000, 5201)
    assert net.subflow_paths(f, 4) == [("10.0.0.2", "10.2.2.3"), ("10.0.1.2", "10.2.3.3"),
                                       ("10.0.0.2", "10.2.2.3")]


@needs_root
def test_idle_dhft_mptcp_uses_both_links_tcp_one(tmp_path, awake, no_leftovers):
    """Must-show 1: one connection between hosts in different pods of an idle
    DHFT(4): TCP at most 1.05 times what one link carries, MPTCP (one
    subflow per interface) at least 1.8 times what TCP got. Measured against
    TCP, not the link's rate: when the VM's host is busy both fall short
    alike (CI: TCP 8.94, MPTCP 16.2 Mb/s on 9.56 Mb/s links; here once 8.48
    and 15.47, and on a quiet host 9.53-9.56 and 18.2-18.8)."""
    from dctopo import DHFT
    from experiments.racknet import RackNetwork
    cfg = DhftConfig(link=LinkParams(bw_mbps=10))
    link = cfg.link.bw_mbps * PAYLOAD_PER_FRAME
    matrix = TrafficMatrix("pair", 0, (Flow("h0_0_0", "h2_1_1"),))
    rates = {}
    with RackNetwork(DHFT(k=cfg.k), cfg) as net:
        for subflows in (1, 2):
            flows = net.endpoints(matrix, seed=0)
            net.arm(flows, subflows)
            before = net.sent_by_interface()
            [out] = net.driver.run(flows, subflows > 1, 8, tmp_path / f"flows{subflows}",
                                   warmup_s=3, bind_servers=subflows == 1)
            after = net.sent_by_interface()
            assert out.error is None, out.error
            rates[subflows] = out.goodput_mbps
            sent = sorted(after[p] - before[p] for p in after)
            if subflows == 1:
                assert sent[0] < 0.05 * sent[1]          # one interface carried it
            else:
                assert sent[0] > 0.4 * sent[1]           # both did
    assert rates[1] <= 1.05 * link, rates
    assert rates[2] >= 1.8 * rates[1], rates


@needs_root
def test_small_experiment_draws_both_figures(tmp_path, no_leftovers):
    results = tmp_path / "results"
    done = subprocess.run(
        [str(ROOT / "run_mptcp.sh"), "dhft", "--localities", "0", "--loads", "1",
         "--subflows", "2", "--time", "2", "--warmup", "1", "--results", str(results)],
        capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    base = results / "dhft4"
    full = json.loads((base / "locality/mptcp_dhft/0pct/run.json").read_text())
    assert full["local_fraction"] == 0.0 and full["config"]["subflows"] == 2
    assert_subflows(full, 2)
    assert min(full["interface_share"].values()) > 0.3      # both interfaces carry MPTCP
    tcp = json.loads((base / "locality/tcp_dhft/0pct/run.json").read_text())
    assert tcp["local_fraction"] == 0.0 and all(f["subflows_established"] == 1 for f in tcp["flows"])
    perfect = json.loads((base / "load/tcp_perfect/1conn/run.json").read_text())
    assert perfect["hosts"] == 24 and perfect["switch_ports"] == 24 and len(perfect["flows"]) == 24
    for r in (full, tcp, perfect):
        assert r["aggregate_mbps"] > 0 and "zero_goodput_flow" not in r["flags"]
        # The start-up, recorded as the FatTree sweep's: every client started.
        assert r["startup"]["clients"] == len(r["flows"]) and r["startup"]["clients_started_s"] >= 0
    # MPTCP's: every data connection and all its subflows, from the path
    # manager's events, within the run (TCP has no such events).
    start = full["startup"]
    assert start["established"] == len(full["flows"]) and start["complete_s"] is not None, start
    assert 0 <= start["first_established_s"] <= start["last_established_s"] <= start["complete_s"], start
    assert tcp["startup"]["established"] is None
    assert (results / "plots" / "dhft4-locality.png").stat().st_size > 10000
    assert (results / "plots" / "dhft4-load.png").stat().st_size > 10000
    assert "Dual-homed FatTree" in (results / "report.md").read_text()


def test_figures_from_records_without_root(tmp_path):
    """plot.py draws both `dhft` figures from run.json alone: locality at each
    run's real share of local flows, load relative to the perfect switch,
    an invalid run marked with its flags."""
    import plot
    cfg = DhftConfig(localities=(0, 0.5), loads=(1, 2))
    aggregate = {"tcp_dhft": 100.0, "mptcp_dhft": 150.0, "tcp_perfect": 200.0}
    for p in cfg.points():
        d = p.run_dir(tmp_path, 4)
        d.mkdir(parents=True)
        invalid = p.scheme == "mptcp_dhft" and p.x == 2
        d.joinpath("run.json").write_text(json.dumps({
            "config": {"k": 4, "hosts_per_rack": 3, "sweep": p.sweep, "scheme": p.scheme,
                       "x": p.x, "subflows": 8 if p.scheme == "mptcp_dhft" else 1,
                       "bw_mbps": 10, "queue_pkts": 100, "time_s": 20, "warmup_s": 5,
                       "cc": "reno", "fabric": "l3"},
            "hosts": 24, "link_mbps": 9.56, "local_fraction": p.x if p.sweep == "locality" else 0.04,
            "aggregate_mbps": aggregate[p.scheme] * (1 + p.x),
            "valid": not invalid, "flags": ["subflows_missing"] if invalid else []}))
    drawing = plot.draw_all(tmp_path)
    locality, load = drawing.dhft["dhft4-locality"], drawing.dhft["dhft4-load"]
    assert locality.data["mptcp_dhft"] == [(0.0, 150.0, True), (0.5, 225.0, True)]
    assert load.data["mptcp_dhft"] == [(1.0, 0.75, True), (2.0, 0.75, False)]
    assert load.data["tcp_dhft"] == [(1.0, 0.5, True), (2.0, 0.5, True)]
    assert load.mentions("subflows_missing") and not locality.mentions("INVALID")
    report = (tmp_path / "report.md").read_text()
    assert "| 50% | 150.0 | 225.0 | 300.0 | 0.75 | 0.50 |" in report
    assert (tmp_path / "plots" / "dhft4-load.png").exists()
