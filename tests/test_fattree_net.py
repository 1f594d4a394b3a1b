"""FatTree(4) in real namespaces, on every fabric (kernel routing, Open
vSwitch under our controller in both modes, and the modelled switches of
--fabric model, whose counters stand in for the switches' interfaces): ECMP spreads one connection's
subflows over the core and every tier's uplinks, and each connection gets
exactly the subflows asked for, as the kernel's own counters confirm."""
import json
from pathlib import Path

import pytest

from experiments.config import LinkParams, SweepConfig
from base.procs import run
from experiments.fattree import Sweep
from kernel.transport import (EPHEMERAL_PORTS, STALE_LOSS_COUNT, counter_delta, read_dev_bytes, read_netstat,
                              read_sysctls)
from tests.conftest import FULL_EMULATION, needs_root, opened_sweep
from dctopo.workloads import Flow

pytestmark = needs_root

SRC, DST = "h0_0_0", "h2_0_0"   # different pods: 4 equal-cost paths, one per core


# `guest`: l3 and openflow also run in stock-kernel guests, where openflow
# forwards in Open vSwitch's kernel datapath and, before 6.11, l3 has no
# per-router hash seed (emulator/fabrics/l3.py). openflow-reactive runs on the
# host only: on a slower host of this machine class (AMD EPYC) its
# tests failed in both guests under full emulation, where every new 5-tuple
# waits for the controller's packet-in round at the emulator's pace (Debian
# 12: an iperf3 client not connected after 5 s; Debian 13, with 20 s allowed
# to connect: 2 of 8 subflows joined within a 4 s transfer, and a tier-test
# client still running at its deadline was stopped). Its datapath is openflow's,
# which the guests test; what it adds, the reactive controller, the host tests.
@pytest.fixture(scope="module", params=[pytest.param("l3", marks=pytest.mark.guest),
                                        pytest.param("openflow", marks=pytest.mark.guest),
                                        "openflow-reactive", "model"])
def ft4(request, tmp_path_factory):
    cfg = SweepConfig(k=4, link=LinkParams(bw_mbps=10, queue_pkts=100), seed=1,
                      results=tmp_path_factory.mktemp("results"), fabric=request.param)
    with opened_sweep(cfg) as sweep:
        yield sweep


def transfer(sweep: Sweep, subflows: int, logdir: Path, seconds: float = 4):
    # The tests share one network: wait until the previous test's connection
    # has stopped sending what its buffers held when its client closed (on
    # the host, `provisioned` saw 4 Mb/s of such leftovers in the next run's first
    # second). Suspected, not shown, in a Debian 13 guest's CI run where the
    # plain TCP test that follows the 8-subflow one carried nothing in 4 s.
    ends = [sweep.fabric.pid(h) for h in (SRC, DST)]
    sweep.net.wait_quiet(lambda: [read_dev_bytes(pid) for pid in ends])
    flows = sweep.driver.endpoints([Flow(SRC, DST)])
    sweep.arm_path_manager(flows, subflows)
    [out] = sweep.driver.run(flows, mptcp=subflows > 1, time_s=seconds, logdir=logdir)
    return flows[0], out


def netstat(sweep, host):
    return read_netstat(sweep.fabric.pid(host), ("MPTcpExt",))


def dev_bytes(sweep, node: str) -> dict[str, tuple[int, int]]:
    """(received, sent) bytes of each of a node's interfaces (on the openflow
    fabric all switches share a namespace: only this node's ports count; on
    the model fabric a port receives what its peer's egress sent)."""
    if sweep.fabric.name == "model":
        ports = sweep.fabric.counters()["ports"]
        sent = {(p["node"], p["port"]): p["out_bytes"] + p["lane_out_bytes"] for p in ports}
        position = sweep.fabric._position
        return {i.name: (sent[(i.peer, position(i.peer, i.peer_port))], sent[(node, position(node, i.port))])
                for i in sweep.topo.interfaces(node)}
    return {name: counts for name, counts in read_dev_bytes(sweep.fabric.pid(node)).items()
            if name.startswith(f"{node}-eth")}


def core_bytes_from_pod(sweep, pod: int) -> dict[str, int]:
    """Bytes every core switch received from `pod`'s aggregation switches:
    one direction only, so a core that carries only the returning ACKs of
    some subflow (the reverse 5-tuple hashes on its own) does not count."""
    return {core: sum(dev_bytes(sweep, core)[i.name][0] for i in sweep.topo.interfaces(core)
                      if sweep.topo.nodeInfo(i.peer).get("pod") == pod)
            for core in sweep.topo.switches() if sweep.topo.role(core) == "core"}


def test_eight_subflows_are_established(ft4, tmp_path):
    before = {h: netstat(ft4, h) for h in (SRC, DST)}
    flow, out = transfer(ft4, 8, tmp_path)
    client = counter_delta(before[SRC], netstat(ft4, SRC))
    server = counter_delta(before[DST], netstat(ft4, DST))
    assert out.error is None and out.goodput_mbps > 0
    [conn] = [c for c in ft4.pm.connections()
              if not c.server_side and c.sport == flow.client_port]
    assert conn.subflows_established == 8
    assert client.get("MPTcpExtMPJoinSynAckRx") == 7
    assert server.get("MPTcpExtMPJoinAckRx") == 7
    assert "MPTcpExtMPJoinRejected" not in server


def test_every_host_keeps_slow_subflows_in_use(ft4):
    """Subflows are not declared stale within a run (kernel/transport.py,
    host_sysctls, says why), in every host of every fabric."""
    knob = "net.mptcp.stale_loss_cnt"
    values = {read_sysctls(ft4.fabric.pid(h), (knob,))[knob] for h in ft4.topo.hosts()}
    assert values == {STALE_LOSS_COUNT}


def test_l3_nodes_reach_their_link_peers_without_arp(ft4, tmp_path):
    """The l3 fabric writes every link peer down as a permanent neighbour
    (the kernel's one ARP table caps dynamic entries machine-wide; FatTree(8)
    4:1 overflowed it): after traffic across the core, no node of it holds a
    neighbour entry of any other kind."""
    if ft4.fabric.name != "l3":
        pytest.skip("the openflow fabrics' hosts ARP through the controller")
    transfer(ft4, 8, tmp_path)
    states: dict[str, int] = {}
    for node in ft4.topo.nodes():
        out = run(["ip", "-j", "neigh", "show", "nud", "all"], timeout=10, ns_pid=ft4.fabric.pid(node))
        for entry in json.loads(out.stdout or "[]"):
            for state in entry.get("state", ["NONE"]):
                states[state] = states.get(state, 0) + 1
    links = len(list(ft4.topo.links()))
    assert states == {"PERMANENT": 2 * links}, states


def test_one_subflow_is_plain_tcp(ft4, tmp_path):
    before = {h: netstat(ft4, h) for h in (SRC, DST)}
    _, out = transfer(ft4, 1, tmp_path)
    assert out.error is None and out.goodput_mbps > 0
    for h in (SRC, DST):
        delta = counter_delta(before[h], netstat(ft4, h))
        assert not any(k.startswith("MPTcpExtMPCapable") for k in delta), delta
    assert ft4.pm.connections() == []


# Under full emulation a subflow whose first packets wait for the reactive
# controller joins late and, in 3 s, carried under 5 % (73-80 KB on two
# cores of 3.9 MB in a 6.1 guest): give every subflow time to take its share.
SPREAD_SECONDS = 10 if FULL_EMULATION else 3
# The same for the per-tier test: in a Debian 12 guest under the reactive
# controller, one of its four 4 s flows once ended with an error or nothing
# carried (CI-style run; which of the two was not kept).
TIER_SECONDS = 10 if FULL_EMULATION else 4
# The error, seen later: under full emulation on a slower host (a clean-clone
# CI run whose Debian 12 guest suite took 1040 s, against 596 s on the machine
# these settings came from), one of the four iperf3 clients of the tier test
# on the reactive controller was "unable to connect to server: Connection
# timed out" after iperf3's 5 s, while the other three carried from their
# first second. The path of a new 5-tuple waits for the controller's
# packet-in round, which runs at the emulator's pace there; the driver's 5 s
# is the harness's setting for real machines, so only the guests allow more.
GUEST_CONNECT_TIMEOUT_MS = 20000


def test_subflows_spread_over_the_core(ft4, tmp_path):
    """8 subflows between pods cross at least 3 of the 4 cores. The client's
    ephemeral ports are confined to 8 values so the outcome is repeatable:
    with the fabric's fixed per-router hash seeds, the 5-tuples decide."""
    pid = ft4.fabric.pid(SRC)
    run(["sysctl", "-q", "-w", "net.ipv4.ip_local_port_range=20000 20007"], 5, ns_pid=pid)
    try:
        before = core_bytes_from_pod(ft4, 0)
        _, out = transfer(ft4, 8, tmp_path, seconds=SPREAD_SECONDS)
        after = core_bytes_from_pod(ft4, 0)
    finally:
        run(["sysctl", "-q", "-w", f"net.ipv4.ip_local_port_range={EPHEMERAL_PORTS}"], 5, ns_pid=pid)
    carried = {c: after[c] - before[c] for c in after}
    total = sum(carried.values())
    assert out.goodput_mbps > 0 and total > 0
    # A core counts if it carried data, not how much: the coupled congestion
    # control may move most bytes to one path (in a Debian 13 guest under
    # full emulation one core took 78 % and two others 4-5 %, 0.57-0.66 MB
    # each). A core no subflow crosses receives nothing from pod 0.
    used = [c for c, b in carried.items() if b > 0.01 * total]
    assert len(used) >= 3, carried


# More than a few ARP exchanges (60-byte frames), less than the SYN, SYN-ACK
# and ACKs of a subflow's handshake and its first data (4280 bytes was seen).
SUBFLOWS_WERE_HERE_BYTES = 1000


def tx_bytes(sweep, node: str) -> dict[str, int]:
    """Bytes each of a node's interfaces sent."""
    return {intf: tx for intf, (_, tx) in dev_bytes(sweep, node).items()}


def test_every_tier_spreads_upward_traffic(ft4, tmp_path, monkeypatch):
    """Hash polarization shows as one idle uplink at some tier:
    all subflows that reached an aggregation switch left on one core link.
    Every host of pod 0 sends 8 subflows to pod 2 (32 subflows); every edge
    and aggregation switch on the way up must use both of its uplinks."""
    half = 2
    uplinks = {sw: [i.name for i in ft4.topo.interfaces(sw) if i.port >= half]
               for sw in ("e0_0", "e0_1", "a0_0", "a0_1")}
    flows = ft4.driver.endpoints([Flow(f"h0_{e}_{i}", f"h2_{e}_{i}") for e in (0, 1) for i in (0, 1)])
    ft4.arm_path_manager(flows, 8)
    if FULL_EMULATION:
        monkeypatch.setattr(ft4.driver, "connect_timeout_ms", GUEST_CONNECT_TIMEOUT_MS)
    before = {sw: tx_bytes(ft4, sw) for sw in uplinks}
    outs = ft4.driver.run(flows, mptcp=True, time_s=TIER_SECONDS, logdir=tmp_path)
    after = {sw: tx_bytes(ft4, sw) for sw in uplinks}
    assert all(o.error is None and o.goodput_mbps > 0 for o in outs), \
        [(o.endpoints.src, o.endpoints.dst, o.error, o.goodput_mbps, o.first_data_s) for o in outs]
    for sw, names in uplinks.items():
        sent = {n: after[sw][n] - before[sw][n] for n in names}
        total = sum(sent.values())
        assert total > 0, sw
        # A polarized tier leaves one uplink idle: no subflow leaves by it, so
        # it sends nothing but the odd ARP. Bytes need not split evenly, since
        # the coupled congestion control moves them between paths: under full
        # emulation (openflow-reactive), a0_1 once sent 8 % of its bytes on
        # one uplink (Debian 12 guest), and once 4280 bytes against 13.2 MB
        # (Debian 13 guest, a clean-clone CI run): its subflows there were set
        # up and then carried next to nothing. So the bar is that every uplink
        # carried some of the subflows' packets, not a share of the bytes.
        assert min(sent.values()) > SUBFLOWS_WERE_HERE_BYTES, (sw, sent)
