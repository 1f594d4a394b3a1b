"""Link shaping checked on the wire, in real namespaces: the rate a TCP flow
gets through a shaped link, and a queue that never holds more packets than
configured (and does drop when full)."""
import contextlib
import json
import threading
import time

import pytest

from experiments.config import LinkParams
from emulator.fabrics.l3 import L3Fabric
from emulator.links import host_queue_bytes, netem_in_flight_pkts, rate_change
from emulator.tunnels import local_servers
from base.procs import ProcessTracker, run
from emulator.traffic.iperf_driver import IperfDriver
from tests.conftest import FULL_EMULATION, needs_root, stock_kernel_path
from tests.hostpair import TwoHostsOneRouter, payload_share
from dctopo.workloads import Flow

pytestmark = needs_root

# The link rate: 20 Mb/s, or 8 under full emulation (conftest.FULL_EMULATION:
# a TCG guest carried 15.5 Mb/s through a 20 Mb/s netem link). The queue
# test slows the router's port to 5 Mb/s either way: at 1 and 2 Mb/s a 6.12
# guest's HTB above netem let 9.7 % more through (1.05 and 2.10 Mb/s of
# goodput), also shaped anew; 6.1 held 1 Mb/s. Not understood (docs/platforms.md).
RATE_MBPS = 8 if FULL_EMULATION else 20
# How far above the slowed rate the queue test's goodput may read. Under full
# emulation iperf3's one-second intervals jitter: a Debian 13 guest in CI read
# 4.187, 5.234, 4.201, ..., 4.195 Mb/s seconds through the 5 Mb/s port, a mean
# of 4.87 after the warm-up, 1.9 % above what the port carries. A shaper that
# does not shape reads several times the rate either way.
QUEUE_TEST_OVER = 1.08 if FULL_EMULATION else 1.01
SLOW_MBPS = 5
# The queue's qdisc: a FIFO where the link has no delay or loss; netem, which
# then also holds the queue, where it has. On kernels with netem the second
# case is tested with 1 ms of delay, whose in-flight packets netem's limit
# counts too (links.netem_args).
QUEUE_PKTS = 25
FIFO_LINK = LinkParams(bw_mbps=RATE_MBPS, queue_pkts=QUEUE_PKTS)
NETEM_LINK = LinkParams(bw_mbps=RATE_MBPS, queue_pkts=QUEUE_PKTS, delay_ms=1)
# "tunnel": the fifo link with h0 and h1 on one server and r0 on another
# (namespaces on a LAN here), so that both links are VXLAN tunnels.
LINKS = {"fifo": (FIFO_LINK, "pfifo", QUEUE_PKTS),
         "netem": (NETEM_LINK, "netem", QUEUE_PKTS + netem_in_flight_pkts(NETEM_LINK)),
         "tunnel": (FIFO_LINK, "pfifo", QUEUE_PKTS)}
SPREAD = {"h0": "srv0", "h1": "srv0", "r0": "srv1"}


@pytest.fixture(params=["fifo", pytest.param("netem", marks=stock_kernel_path("netem")), "tunnel"])
def pair(request, no_leftovers):
    link, queue_kind, queue_limit = LINKS[request.param]
    fabric = L3Fabric(TwoHostsOneRouter(), link)
    procs = ProcessTracker()
    with contextlib.ExitStack() as stack:
        if request.param == "tunnel":
            fabric.spread(stack.enter_context(local_servers(2)), SPREAD)
        stack.callback(fabric.stop)
        stack.callback(procs.stop_all)
        fabric.start()
        for h in fabric.hosts():
            run(["sysctl", "-q", "-w", "net.ipv4.tcp_congestion_control=reno"], 10, ns_pid=fabric.pid(h))
        yield fabric, procs, queue_kind, queue_limit


# A reading below the expected rate is taken again: once, or twice under full
# emulation, where a Debian 12 guest in CI read 5.98 and 6.10 of 7.65 Mb/s
# through the 1 ms netem link in a row.
ATTEMPTS = 3 if FULL_EMULATION else 2
# The share of the rate a reading must reach. Under full emulation the
# guest's emulated CPU, not the shaper, can be what stops a flow short: a
# Debian 12 guest in a clean-clone CI run read 7.09 and 7.06 Mb/s through the
# 8 Mb/s netem link (92.6 and 92.3 % of the 7.65 Mb/s of goodput it
# carries), where the host reaches 93 % every time.
RATE_REACHED = 0.85 if FULL_EMULATION else 0.93


def qdisc_stats(fabric, node, dev):
    out = run(["tc", "-s", "-j", "qdisc", "show", "dev", dev], 5, ns_pid=fabric.pid(node)).stdout
    return {q["kind"]: q for q in json.loads(out)}


@contextlib.contextmanager
def sampled(read, interval_s: float = 0.05):
    """What `read()` returns every `interval_s` while the block runs, in a
    list (filled by a thread, complete when the block has ended)."""
    values, stop = [], threading.Event()

    def sample():
        while not stop.is_set():
            values.append(read())
            time.sleep(interval_s)

    sampler = threading.Thread(target=sample)
    sampler.start()
    try:
        yield values
    finally:
        stop.set()
        sampler.join()


def test_rate_holds(pair, tmp_path, awake):
    fabric, procs, _, _ = pair
    driver = IperfDriver(fabric, procs)
    expected = RATE_MBPS * payload_share(fabric)
    seen = []
    # The shaper must never let more through; reaching the rate needs the
    # machine's CPU, which a busy VM host can withhold for a moment (steal
    # time), so a low reading is measured once more before it counts.
    for attempt in range(ATTEMPTS):
        [out] = driver.run(driver.endpoints([Flow("h0", "h1")]), mptcp=False, time_s=5,
                           logdir=tmp_path / str(attempt))
        assert out.error is None
        assert out.goodput_mbps <= 1.01 * expected, out.goodput_mbps
        seen.append(out.goodput_mbps)
        if out.goodput_mbps >= RATE_REACHED * expected:
            break
    assert max(seen) >= RATE_REACHED * expected, seen
    if fabric.where:    # tunnelled: the bytes crossed the servers' own LAN
        srv0 = fabric.servers["srv0"]
        stats = json.loads(run(["ip", "-s", "-j", "link", "show", "up0"], 5, ns_pid=srv0.ns_pid).stdout)
        assert stats[0]["stats64"]["tx"]["bytes"] >= sum(seen) * 5e6 / 8


def test_queue_never_exceeds_its_limit(pair, tmp_path, awake):
    """Slow the router's port towards h1 to 5 Mb/s so the queue builds there,
    then sample its backlog while TCP pushes into it."""
    fabric, procs, queue_kind, queue_limit = pair
    run(["tc", *rate_change("r0-eth1", SLOW_MBPS)], 5, ns_pid=fabric.pid("r0"))
    with sampled(lambda: qdisc_stats(fabric, "r0", "r0-eth1")[queue_kind]["qlen"]) as backlog:
        driver = IperfDriver(fabric, procs)
        # Under full emulation 1 s of warm-up: a 6.12 guest lost the first SYN
        # once (0, 1.05, 1.05, 1.05 Mb/s, a mean of 0.73). Not on the host: its
        # slow-start second keeps the mean under the tight upper bound, which
        # one 5.05 Mb/s second after a warm-up broke (4.85 > 4.83 in CI).
        [out] = driver.run(driver.endpoints([Flow("h0", "h1")]), mptcp=False, time_s=4,
                           logdir=tmp_path, warmup_s=1 if FULL_EMULATION else 0)
    pfifo = qdisc_stats(fabric, "r0", "r0-eth1")[queue_kind]
    assert max(backlog) <= queue_limit, max(backlog)
    assert max(backlog) >= 20          # the queue did fill: the limit was what held it
    assert pfifo["drops"] > 0
    assert pfifo["bytes"] / pfifo["packets"] <= fabric.frame_bytes   # MTU frames, no superpackets
    # Never above the slowed rate; how close to it is test_rate_holds's concern
    # (with a retry for a starved VM), so here only a clearly wrong rate fails.
    share = payload_share(fabric)
    assert 0.8 * SLOW_MBPS * share <= out.goodput_mbps <= QUEUE_TEST_OVER * SLOW_MBPS * share


def test_a_hosts_queue_holds_its_limit_in_frames_not_gso_packets(pair, tmp_path, awake):
    """The host's own TCP hands its qdisc GSO packets of up to 64 KB, so a
    FIFO of QUEUE_PKTS *packets* there could hold QUEUE_PKTS x 64 KB. The
    host's queue is bounded in bytes instead: QUEUE_PKTS MTU frames. Both
    links run at the same rate, so the queue builds at h0's own egress."""
    fabric, procs, queue_kind, _ = pair
    if queue_kind != "pfifo":
        pytest.skip("a link with delay queues in netem, whose limit counts packets")
    with sampled(lambda: qdisc_stats(fabric, "h0", "h0-eth0")["bfifo"]["backlog"]) as backlog:
        driver = IperfDriver(fabric, procs)
        [out] = driver.run(driver.endpoints([Flow("h0", "h1")]), mptcp=False, time_s=3,
                           logdir=tmp_path)
    assert out.error is None, out.error
    limit = host_queue_bytes(FIFO_LINK, fabric.frame_bytes)
    assert limit == QUEUE_PKTS * (1514 if not fabric.where else 1464)
    assert max(backlog) <= limit, (max(backlog), limit)
    assert max(backlog) >= limit // 2, max(backlog)     # it filled: the limit held it
    assert qdisc_stats(fabric, "h0", "h0-eth0")["htb"]["drops"] > 0


def class_packets(fabric, node, dev) -> dict[str, int]:
    """Packets each HTB class of `dev` sent, by its leaf qdisc's counters
    (10: under the data's class 1:1, 20: under the ACK lane's 1:2)."""
    out = run(["tc", "-s", "-j", "qdisc", "show", "dev", dev], 5, ns_pid=fabric.pid(node)).stdout
    leaves = {"10:": "1:1", "20:": "1:2"}
    return {leaves[q["handle"]]: q["packets"] for q in json.loads(out) if q["handle"] in leaves}


@pytest.mark.parametrize("lane", [False, True], ids=["shared", "ack-lane"])
def test_the_ack_lane_takes_the_acks_and_leaves_the_data_queue_to_data(tmp_path, no_leftovers, lane):
    """--ack-lane: at the router, the port towards the sender sends the
    receiver's ACKs from a class of their own, the port towards the
    receiver sends the data from the data's class."""
    fabric = L3Fabric(TwoHostsOneRouter(), LinkParams(bw_mbps=RATE_MBPS, queue_pkts=QUEUE_PKTS,
                                                      ack_lane=lane))
    procs = ProcessTracker()
    try:
        fabric.start()
        for h in fabric.hosts():
            run(["sysctl", "-q", "-w", "net.ipv4.tcp_congestion_control=reno"], 10, ns_pid=fabric.pid(h))
        [out] = IperfDriver(fabric, procs).run(IperfDriver(fabric, procs).endpoints([Flow("h0", "h1")]),
                                               mptcp=False, time_s=2, logdir=tmp_path)
        assert out.error is None
        ports = [class_packets(fabric, "r0", f"r0-eth{p}") for p in (0, 1)]
    finally:
        procs.stop_all()
        fabric.stop()
    # The port that sent the data faces the receiver (whichever end iperf3 made it).
    to_receiver, to_sender = sorted(ports, key=lambda p: p["1:1"], reverse=True)
    data = to_receiver["1:1"]
    assert data > 1000
    if lane:
        # One ACK for every one or two segments (delayed ACKs), all in 1:2.
        assert to_sender["1:2"] >= data / 2 * 0.9 and to_sender["1:1"] < data / 50
        assert to_receiver["1:2"] < data / 50    # handshakes and iperf3's control messages
    else:
        assert "1:2" not in to_sender and to_sender["1:1"] >= data / 2 * 0.9


def test_queue_bytes_bounds_a_switch_queue_in_frames_worth_of_bytes(no_leftovers):
    fabric = L3Fabric(TwoHostsOneRouter(), LinkParams(bw_mbps=RATE_MBPS, queue_pkts=QUEUE_PKTS,
                                                      queue_bytes=True))
    try:
        fabric.start()
        leaf = qdisc_stats(fabric, "r0", "r0-eth0")
    finally:
        fabric.stop()
    assert "bfifo" in leaf and "pfifo" not in leaf
    assert leaf["bfifo"]["options"]["limit"] == QUEUE_PKTS * fabric.frame_bytes
