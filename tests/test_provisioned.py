"""Provisioned paths (dctopo.Provisioned, experiments/provisioned.py): the
topology's paths as data, each path's traffic on exactly its links by the
switches' own interface counters on both fabrics, a small run end to end,
and the figure from records."""
from __future__ import annotations

import json
import subprocess

import pytest

from base.links import LinkParams
from base.platform import netem_available
from base.provisioning import (TESTBED_DESTINATIONS, TESTBED_LINKS, TESTBED_PATHS, TESTBED_SOURCES,
                               choose_paths, link_disjoint)
from dctopo import FatTree, Provisioned
from emulator.links import FRAME_BYTES
from emulator.network import Network
from emulator.traffic.common import CLIENT_PORT_BASE, SERVER_PORT_BASE, FlowEndpoints
from experiments.config import ConfigError, ProvisionedConfig
from experiments.config.provisioned import DISJOINT
from kernel.transport import read_dev_bytes
from tests.conftest import ROOT, needs_root

SWITCH_LINKS = {("a1", "b1"), ("a2", "b2"), ("a1", "a2"), ("b1", "b2")}


def test_paths_are_the_testbeds_and_the_switches_forward_along_them():
    """Paths 1 and 2 each cross one long link and nothing else; 3 and 4
    cross the local link a1-a2 (in opposite directions) and then the long
    link of 2 and of 1. Every switch forwards an address only along the
    path that owns it, both ways."""
    topo = Provisioned()
    assert [topo.path_links(i) for i in range(4)] == [
        [("a1", "b1")], [("a2", "b2")], [("a1", "a2"), ("a2", "b2")], [("a2", "a1"), ("a1", "b1")]]
    # The experiment's (stdlib-only) config names the pair it counts as
    # disjoint; the topology's own links say so: each crosses one long link
    # only, the two have no cable in common, paths 3 and 4 share the local
    # cable a1-a2 and each a long link with one of the pair.
    cables = [{frozenset(hop) for hop in topo.path_links(i)} for i in range(4)]
    a, b = DISJOINT
    assert len(cables[a]) == len(cables[b]) == 1 and not cables[a] & cables[b]
    assert cables[2] & cables[3] == {frozenset(("a1", "a2"))}
    assert cables[2] & cables[b] and cables[3] & cables[a]
    table = topo.next_hops()
    for i in range(4):
        src, dst = topo.path_addresses(i)
        hops = topo.paths[i]
        for direction, addr, order in (("out", dst, hops), ("back", src, hops[::-1])):
            seen = [sw for sw in topo.switches() if addr in table[sw]]
            assert sorted(seen) == sorted(order), (i, direction, seen)
            for here, there in zip(order, order[1:]):
                assert [h.peer for h in table[here][addr]] == [there], (i, direction, here)
            end = table[order[-1]][addr]
            assert [h.peer for h in end] == ["h2" if direction == "out" else "h1"]


def test_a_path_off_the_testbeds_links_is_refused():
    with pytest.raises(ValueError, match="path 1 a1-b2: no link a1-b2"):
        Provisioned(paths=(("a1", "b2"),))


def test_the_computed_paths_are_the_testbeds_disjoint_ones_first():
    """The controller's choice over the testbed's links: the two direct,
    link-disjoint paths, then the two over the local link a1-a2, which the
    testbed's report describes; asked for more, the next ones share a long
    link and a local one."""
    def choose(k):
        return choose_paths(TESTBED_LINKS, TESTBED_SOURCES, TESTBED_DESTINATIONS, k)
    assert choose(4) == TESTBED_PATHS == Provisioned().paths
    assert link_disjoint(choose(4)) == DISJOINT == (0, 1)
    assert choose(6)[4:] == (("a1", "b1", "b2"), ("a2", "b2", "b1"))
    with pytest.raises(ValueError, match="9 paths asked for, and only 8 exist"):
        choose(9)


def test_the_computed_paths_on_a_fattree_use_every_uplink_before_sharing_one():
    """Between two edge switches of different pods of FatTree(4) there are
    four shortest paths and two edge uplinks at each end: the first two
    chosen share no link, and each of the four shares its uplinks with one
    other at most."""
    topo = FatTree(k=4)
    switches = set(topo.switches())
    links = [(a, b) for a, b in topo.links() if a in switches and b in switches]
    src, dst = "e0_0", "e1_0"       # edge switches of pods 0 and 1
    assert topo.role(src) == topo.role(dst) == "edge"
    chosen = choose_paths(links, [src], [dst], 4)
    assert all(len(p) == 5 for p in chosen), chosen       # edge agg core agg edge
    assert link_disjoint(chosen) == (0, 1)
    uplinks = [p[:2] for p in chosen]
    assert sorted(uplinks.count(u) for u in set(uplinks)) == [2, 2], chosen


def test_given_paths_go_to_their_own_folder_and_name_their_disjoint_pair(tmp_path):
    given = (("a1", "b1"), ("a2", "b2"), ("a1", "b1", "b2"), ("a2", "b2", "b1"))
    cfg = ProvisionedConfig(paths=given, results=tmp_path)
    cfg.validate()
    assert cfg.disjoint == (0, 1)
    mptcp = next(p for p in cfg.points() if p.scheme == "mptcp")
    assert mptcp.run_dir(tmp_path, "l3") == tmp_path / "provisioned-l3-paths-a1b1-a2b2-a1b1b2-a2b2b1/mptcp"
    # Given in another order, the first disjoint pair found is another one.
    assert ProvisionedConfig(paths=(given[2], given[0], given[1], given[3])).disjoint == (0, 2)
    # The computed paths, given as such, are the default's own folder.
    same = ProvisionedConfig(paths=TESTBED_PATHS, results=tmp_path)
    assert next(p for p in same.points() if p.scheme == "mptcp").run_dir(tmp_path, "l3") == \
        tmp_path / "provisioned-l3/mptcp"


@pytest.mark.parametrize("kwargs, message", [
    (dict(local_bw_mbps=0.0), "--local-bw 0"),
    (dict(settle_s=-1.0), "--warmup -1"),
    (dict(schemes=()), "--schemes"),
    (dict(schemes=("tcp", "mptcp2")), "mptcp2"),
    (dict(order=(0, 1, 2, 2)), "--order 1,2,3,3"),
    (dict(paths=(("a1", "b1"),)), "1 given; give 4"),
    (dict(paths=(("a1", "b1"),) * 4), "given twice"),
    (dict(paths=(("a1", "b1"), ("a2", "b2"), ("a1", "a2", "b2"), ("b1", "a1"))), "path 4 b1-a1: it starts on b1"),
    (dict(paths=(("a1", "b1"), ("a2", "b2"), ("a1", "a2", "a1", "b1"), ("a2", "b1"))), "path 3 .*twice"),
])
def test_bad_settings_are_refused(kwargs, message):
    with pytest.raises(ConfigError, match=message):
        ProvisionedConfig(**kwargs).validate()


def test_warmup_was_settle_and_the_old_spelling_is_refused():
    """--warmup, as elsewhere; --settle, its old name, refused naming it."""
    from harness import cli
    cfg, args = cli.COMMANDS["provisioned"].config_from(["--warmup", "12", "--cc", "reno"])
    assert cfg.settle_s == 12 and args.notes == []
    with pytest.raises(ConfigError, match="^--settle is now --warmup$"):
        cli.COMMANDS["provisioned"].config_from(["--settle", "12", "--cc", "reno"])


@pytest.mark.skipif(netem_available(), reason="this kernel has sch_netem: openflow can delay")
def test_openflow_with_delay_is_refused_without_netem():
    with pytest.raises(ConfigError, match="no sch_netem"):
        ProvisionedConfig(fabric="openflow").validate()
    ProvisionedConfig(fabric="openflow", long=LinkParams(delay_ms=0)).validate()


def test_another_subflow_order_goes_to_its_own_folder(tmp_path):
    from experiments.config import ProvisionedPoint
    cfg = ProvisionedConfig(order=(2, 3, 0, 1), results=tmp_path)
    mptcp, disjoint = [p for p in cfg.points() if p.scheme in ("mptcp", "mptcp_disjoint")]
    assert mptcp.paths == (2, 3, 0, 1) and disjoint.paths == (0, 1)
    assert mptcp.run_dir(tmp_path, "l3") == tmp_path / "provisioned-l3-order3412/mptcp"
    assert ProvisionedPoint("mptcp").run_dir(tmp_path, "l3") == tmp_path / "provisioned-l3/mptcp"


def switch_sent(net: Network) -> dict[str, int]:
    """Bytes every switch interface has sent (on openflow the switches share
    namespaces; interface names are unique either way)."""
    sent = {}
    for sw in net.topo.switches():
        for name, (_, tx) in read_dev_bytes(net.fabric.pid(sw)).items():
            if name.split("-")[0] in net.topo.switches():
                sent[name] = tx
    return sent


def switch_drops(net: Network) -> dict[str, int]:
    """Packets every switch interface's egress has dropped (its root qdisc's
    count, as the port monitor reads it)."""
    from monitor import PortMonitor
    monitor = PortMonitor({sw: net.fabric.pid(sw) for sw in net.topo.switches()})
    monitor.open()
    try:
        return {name: c.drops for sw in net.topo.switches() for name, c in monitor.read(sw).items()}
    finally:
        monitor.close()


def link_intf(topo: Provisioned, here: str, there: str) -> str:
    return next(i.name for i in topo.interfaces(here) if i.peer == there)


@needs_root
@pytest.mark.parametrize("fabric", ["l3", "openflow"])
def test_each_path_carries_its_flow_on_exactly_its_links(fabric, tmp_path, no_leftovers):
    """TCP on one path at a time, 3 s each: the switch ports on its links
    sent at least 90 % of what h1 put on the path, the switch-to-switch
    ports off it less than 5 % (ACKs and ARP only), on the kernel-routing
    fabric and with the controller's flow entries."""
    topo = Provisioned(long=LinkParams(bw_mbps=10), local=LinkParams(bw_mbps=10))
    with Network(topo, LinkParams(), "reno", fabric=fabric) as net:
        for i in range(4):
            src, dst = topo.path_addresses(i)
            flow = FlowEndpoints(i, "h1", "h2", src, dst, CLIENT_PORT_BASE + i, SERVER_PORT_BASE)
            before, h1_before = switch_sent(net), read_dev_bytes(net.fabric.pid("h1"))
            [out] = net.driver.run([flow], False, 3, tmp_path / str(i), bind_servers=False)
            after, h1_after = switch_sent(net), read_dev_bytes(net.fabric.pid("h1"))
            assert out.error is None and out.goodput_mbps > 5, (i, out)
            put = h1_after[f"h1-eth{i}"][1] - h1_before[f"h1-eth{i}"][1]
            on = {link_intf(topo, a, b) for a, b in topo.path_links(i)}
            off = {link_intf(topo, a, b) for a, b in SWITCH_LINKS | {(b, a) for a, b in SWITCH_LINKS}} - on
            for name in on:
                assert after[name] - before[name] >= 0.9 * put, (i, name, after[name] - before[name], put)
            for name in off:
                assert after[name] - before[name] < 0.05 * put, (i, name, after[name] - before[name], put)
        # One MPTCP connection, a subflow per path: each switch-to-switch
        # port sent what h1 put on the paths that cross it, less what their
        # queues dropped on the way, plus the ACKs h2 sent back on the path
        # that crosses it the other way (measured at h2: a port whose own
        # path carried half what the other did sent 10.0 % more than it,
        # past an allowance of 10 % that had been assumed for those ACKs).
        src, dst = topo.path_addresses(0)
        port = CLIENT_PORT_BASE + 4
        net.pm.expand("h1", (src, port), (dst, SERVER_PORT_BASE), 4,
                      paths=[topo.path_addresses(i) for i in (1, 2, 3)])
        flow = FlowEndpoints(4, "h1", "h2", src, dst, port, SERVER_PORT_BASE)
        before, h1_before = switch_sent(net), read_dev_bytes(net.fabric.pid("h1"))
        h2_before = read_dev_bytes(net.fabric.pid("h2"))
        drops_before = switch_drops(net)
        [out] = net.driver.run([flow], True, 4, tmp_path / "mptcp", bind_servers=False)
        after, h1_after = switch_sent(net), read_dev_bytes(net.fabric.pid("h1"))
        h2_after = read_dev_bytes(net.fabric.pid("h2"))
        dropped = {name: n - drops_before.get(name, 0) for name, n in switch_drops(net).items()}
        assert out.error is None, out
        put = [h1_after[f"h1-eth{i}"][1] - h1_before[f"h1-eth{i}"][1] for i in range(4)]
        acked = [h2_after[f"h2-eth{i}"][1] - h2_before[f"h2-eth{i}"][1] for i in range(4)]
        assert all(p > 0.5e6 for p in put), put      # every subflow carried data
        for i in range(4):
            for a, b in topo.path_links(i):
                name = link_intf(topo, a, b)
                crossing = [j for j in range(4) if (a, b) in topo.path_links(j)]
                expected = sum(put[j] for j in crossing)
                # What the subflows lost on the way (at this port, or before
                # it on their paths) h1 put but this port never sent: two
                # subflows share each 10 Mb/s long link, so its queue drops.
                upstream = {link_intf(topo, *link) for j in crossing
                            for link in topo.path_links(j)[:topo.path_links(j).index((a, b)) + 1]}
                lost = FRAME_BYTES * sum(dropped.get(port, 0) for port in upstream)
                acks = sum(acked[j] for j in range(4) if (b, a) in topo.path_links(j))
                got = after[name] - before[name]
                assert 0.95 * expected - lost <= got <= 1.1 * expected + acks, (
                    i, name, got, expected, lost, acks, put)


@needs_root
def test_small_run_writes_records_and_the_figure(tmp_path, no_leftovers):
    """MPTCP over the four paths for 8 s: every path carries data, the
    connection has its four subflows, and the figure and report are drawn."""
    results = tmp_path / "results"
    done = subprocess.run(
        [str(ROOT / "run_mptcp.sh"), "provisioned", "--schemes", "mptcp", "--time", "6",
         "--warmup", "2", "--delay", "5", "--cc", "reno", "--results", str(results)],
        capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    record = json.loads((results / "provisioned-l3/mptcp/run.json").read_text())
    assert record["valid"], record["flags"]
    assert record["subflows_established"] == 4
    # --time counts after the warm-up, as everywhere.
    assert (record["config"]["time_s"], record["config"]["run_s"]) == (6, 8)
    assert all(v and v > 0.5 for v in record["settled_path_mbps"].values()), record["settled_path_mbps"]
    assert 0 < record["disjoint_share"] < 1
    assert (results / "plots/provisioned-l3.png").stat().st_size > 10000
    assert "## Provisioned paths" in (results / "report.md").read_text()


def write_run(results, name: str, scheme: str, sent: dict[str, list[float]], valid: bool = True):
    d = results / "provisioned-l3" / name
    d.mkdir(parents=True)
    settled = {p: sum(s[2:]) / len(s[2:]) for p, s in sent.items()}
    total = sum(settled.values())
    d.joinpath("run.json").write_text(json.dumps({
        "config": {"scheme": scheme, "cc": "lia", "fabric": "l3", "bw_mbps": 10, "delay_ms": 20,
                   "queue_pkts": 100, "local_bw_mbps": 10, "settle_s": 2, "time_s": 6},
        "goodput_mbps": total, "per_second_mbps": [total] * 6, "path_sent_mbps": sent,
        "settled_path_mbps": settled, "disjoint_share": (settled["p1"] + settled["p2"]) / total,
        "time_to_90pct_s": 2, "valid": valid, "flags": [] if valid else ["subflows_missing"]}))


def test_figure_and_report_from_records(tmp_path):
    import plot
    write_run(tmp_path, "mptcp", "mptcp", {"p1": [8] * 6, "p2": [8] * 6, "p3": [2] * 6, "p4": [2] * 6})
    write_run(tmp_path, "uncoupled", "uncoupled", {"p1": [5] * 6, "p2": [5] * 6, "p3": [5] * 6,
                                                   "p4": [5] * 6}, valid=False)
    drawing = plot.draw_all(tmp_path)
    drawn = drawing.others["provisioned-l3"]
    assert drawn.data["mptcp"]["disjoint_share"] == 0.8
    assert drawn.data["uncoupled"]["valid"] is False and drawn.mentions("subflows_missing")
    report = (tmp_path / "report.md").read_text()
    assert "| mptcp | lia | 20.00 | 8.00 / 8.00 / 2.00 / 2.00 | 80% | 2 s |" in report
    assert "| uncoupled ! |" in report


@pytest.mark.skipif(netem_available(), reason="this kernel has sch_netem: openflow can delay")
def test_the_openflow_fabric_refuses_delayed_links_without_netem():
    """Before anything is built: the delay line never sees what Open vSwitch
    forwards, so a delayed link would carry no delay (or nothing)."""
    from emulator.fabrics.openflow import OpenFlowFabric
    with pytest.raises(ValueError, match="need sch_netem"):
        OpenFlowFabric(Provisioned(), LinkParams())
    OpenFlowFabric(Provisioned(long=LinkParams(delay_ms=0)), LinkParams())
