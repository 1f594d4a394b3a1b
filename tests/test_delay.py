"""Link delay, jitter and loss checked on the wire, in real namespaces: on a
kernel without sch_netem by the NFQUEUE delay line (emulator/delayline.py),
and by netem on kernels that have it (the `guest`-marked variants, run in
stock-kernel guests, guest/README.md).

Each test builds dctopo.WiFi3G with the links it needs: the path link
(switch to receiver) carries the delay and loss, the access link none, so a
path's round trip crosses the impaired link once each way.
"""
import contextlib
import dataclasses
import os
import re
import statistics
import sys
import time

import pytest

from dctopo import WiFi3G
from emulator import links
from experiments.config import LinkParams
from emulator.fabrics.common import wait_until
from emulator.fabrics.l3 import L3Fabric
from base.procs import ProcessTracker, run
from emulator.traffic.common import FlowEndpoints
from emulator.traffic.iperf_driver import IperfDriver
from emulator.tunnels import local_servers
from kernel.transport import listening_ports, read_sysctls
from tests.conftest import EMULATION_RTT_SLACK_MS, FULL_EMULATION, needs_root, stock_kernel_path
from tests.hostpair import payload_share


@pytest.fixture(params=["nfqueue", pytest.param("netem", marks=stock_kernel_path("netem")),
                        "nfqueue-tunnel"])
def network(request, no_leftovers):
    """network(wifi=LinkParams, cell=LinkParams) -> started fabric, stopped
    after the test; once with the NFQUEUE delay line, once with netem (on
    kernels that have it: the stock kernels' default), and once with the
    receiver h2 on a second server, its links VXLAN tunnels that are
    delayed like any other (emulator/tunnels.py)."""
    backend, _, tunnel = request.param.partition("-")
    with contextlib.ExitStack() as stack:
        servers = stack.enter_context(local_servers(2)) if tunnel else []

        def build(wifi: LinkParams, cell: LinkParams) -> L3Fabric:
            fabric = L3Fabric(WiFi3G(wifi=wifi, cell=cell), LinkParams(), delay_backend=backend)
            if servers:
                fabric.spread(servers, {n: "srv1" if n == "h2" else "srv0" for n in fabric.topo.nodes()})
            stack.callback(fabric.stop)
            fabric.start()
            for h in fabric.hosts():
                run(["sysctl", "-q", "-w", "net.ipv4.tcp_congestion_control=reno"], 10,
                    ns_pid=fabric.pid(h))
            return fabric
        build.backend = backend
        yield build


def ping_rtts(fabric, path: str, count: int = 60, interval: float = 0.05) -> list[float]:
    """User-to-user RTTs (ms) over a path. `-U`: the kernel stamps a reply when
    it reaches the interface, before the delay line holds it; the user-level
    time includes the whole delay, as TCP sees it."""
    src, dst = fabric.topo.path_addresses(path)
    out = run(["ping", "-U", "-n", "-c", str(count), "-i", str(interval), "-I", src, dst],
              timeout=count * interval + 30, ns_pid=fabric.pid("h1")).stdout
    return [float(m) for m in re.findall(r"time=([\d.]+) ms", out)]


# 100 Mb/s, or 5 under full emulation. A TCG guest carried 55.9 Mb/s unshaped,
# but through 10 Mb/s of HTB + netem with 50 ms a Debian 12 guest's 8 tries
# averaged 8.60-9.17 Mb/s, 3 of them above the 9.08 asked for; at 5 Mb/s,
# 4.72-4.77 in 5 of 5 (Debian 12 and 13) against 4.54 asked for.
FULL_RATE_MBPS = 5 if FULL_EMULATION else 100


def sysctl_int(fabric, host: str, name: str) -> int:
    """A host's value; the root namespace's where the kernel keeps it there
    only (net.core.rmem_max on Debian 12's 6.1)."""
    value = read_sysctls(fabric.pid(host), (name,))[name]
    return int(value if value != "absent" else read_sysctls(None, (name,))[name])


def within(measured: float, configured: float) -> bool:
    """5 % or 1 ms, whichever is larger; under full emulation the emulator's
    own share of a round trip on top (conftest.EMULATION_RTT_SLACK_MS)."""
    return abs(measured - configured) <= max(0.05 * configured, 1.0) + EMULATION_RTT_SLACK_MS


# Ping runs per path. Under full emulation a late reading is taken again: the
# emulated CPU can lag for seconds (a Debian 12 guest in CI read a 9.23 ms
# median for 4 ms once), which a wrong delay would not do run after run.
RTT_ATTEMPTS = 3 if FULL_EMULATION else 1


@needs_root
def test_rtt_matches_configured_delay(network):
    # 25 ms one-way on WiFi (RTT 50), 2 ms on 3G (RTT 4: the 1 ms regime).
    fabric = network(LinkParams(bw_mbps=100, queue_pkts=100, delay_ms=25),
                     LinkParams(bw_mbps=100, queue_pkts=100, delay_ms=2))
    for path, rtt in (("wifi", 50.0), ("3g", 4.0)):
        medians = []
        for _ in range(RTT_ATTEMPTS):
            rtts = ping_rtts(fabric, path)
            assert len(rtts) >= 55, f"{path}: only {len(rtts)} of 60 replies"
            # No reply can come back faster than the delay (the line never releases early).
            assert min(rtts) >= rtt - 0.05, f"{path}: a reply in {min(rtts)} ms < {rtt} ms"
            medians.append(statistics.median(rtts))
            if within(medians[-1], rtt):
                break
        assert within(medians[-1], rtt), f"{path}: median RTTs {medians} ms, configured {rtt} ms"


@needs_root
def test_jitter_spreads_rtt_without_going_below_delay_minus_jitter(network):
    # No keep-awake loops, as in the RTT test: with them the median came out
    # 41.1-42.2 ms in 5 of 5 tries (45.7 once in CI), without them 39.6-40.7.
    fabric = network(LinkParams(bw_mbps=100, queue_pkts=100, delay_ms=20, jitter_ms=5),
                     LinkParams(bw_mbps=100, queue_pkts=100, delay_ms=1))
    rtts = ping_rtts(fabric, "wifi", count=80, interval=0.1)
    assert len(rtts) >= 75
    assert statistics.pstdev(rtts) > 1.0, f"jitter 5 ms but RTT sd {statistics.pstdev(rtts):.2f} ms"
    assert min(rtts) >= 2 * (20 - 5) - 0.05
    median = statistics.median(rtts)
    if FULL_EMULATION:
        # The emulator's timers fire late, never early: in a Debian 12 guest on
        # a slower host (AMD EPYC; a clean-clone CI run whose guest suite took
        # 1000 s) the median came out 44.3 ms while the same guest's plain 40 ms
        # RTT test passed. The median stays within the jitter's amplitude
        # above the delay there, and within the usual tolerance below it.
        assert within(median, 40.0) or 40.0 <= median <= 40.0 + 5, median
    else:
        assert within(median, 40.0), median


# A paced, numbered-datagram sender. Not iperf3: iperf 3.12 (Debian 12) opens
# a UDP test with one datagram and one reply, neither retried, so when the
# lossy link drops either (about 1 run in 10 at 5 % each way) the client
# waits forever; a clean-clone CI run in a Debian 12 guest timed out there.
UDP_SENDER = """
import socket, sys, time
src, dst, port, count, pps = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), float(sys.argv[5])
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.bind((src, 0))
pad = bytes(996)
due = time.monotonic()
for i in range(count):
    wait = due - time.monotonic()
    if wait > 0:
        time.sleep(wait)
    # Paced from the later of the due time and now: after the machine held
    # the sender back it goes on at the same rate, with no catch-up burst
    # for the queues to drop.
    due = max(due, time.monotonic()) + 1 / pps
    s.sendto(i.to_bytes(4, "big") + pad, (dst, port))
"""
# A receiver that drains the socket until it is stopped; what it reads is
# not the verdict (see the test), it keeps the datagrams from piling up.
UDP_SINK = """
import socket, sys
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.bind((sys.argv[1], int(sys.argv[2])))
while True:
    s.recv(2048)
"""


def resolve_neighbours(fabric, path: str, tries: int = 20) -> bool:
    """Ping across a path until one reply comes back, so that every hop has
    resolved its next hop's link-layer address before anything is counted.

    netem drops ARP like any other packet (the NFQUEUE line sees only IP).
    While a lost ARP request waits for its 1 s retry, the neighbour queue
    holds what fits in unres_qlen_bytes (about 90 of these datagrams) and
    discards the rest: up to 900 of 1000 a second, counted as lost on the
    wire though the loss model never chose them. That is the 24 % a Debian 12
    guest's CI run counted once (and a Debian 13 run the round before)."""
    src, dst = fabric.topo.path_addresses(path)
    for _ in range(tries):
        if run(["ping", "-n", "-c", "1", "-W", "2", "-I", src, dst], timeout=10, check=False,
               ns_pid=fabric.pid("h1")).returncode == 0:
            return True
    return False


def unresolved_discards() -> int:
    """Packets the IPv4 neighbour table discarded while waiting on ARP, over
    all CPUs (/proc/net/stat/arp_cache: hex columns, a row per CPU)."""
    with open("/proc/net/stat/arp_cache") as f:
        names = f.readline().split()
        column = names.index("unresolved_discards")
        return sum(int(row.split()[column], 16) for row in f)


def snmp_counters(ns_pid: int, proto: str) -> dict[str, int]:
    """A namespace's MIB counters of one protocol ("Ip", "Udp") from
    /proc/PID/net/snmp, where each protocol has a line of names and a line
    of values."""
    with open(f"/proc/{ns_pid}/net/snmp") as f:
        names, values = [line.split()[1:] for line in f if line.startswith(proto + ":")]
    return dict(zip(names, map(int, values)))


@needs_root
def test_random_loss_rate_on_the_wire(network):
    """4000 numbered UDP datagrams through a link with 5 % loss: the share
    lost on the wire must be within 4 standard deviations of 5 %.

    What crossed the wire is what the receiver's IP layer handed to UDP
    (Ip InDelivers, counted after netfilter, so after the delay line's
    drops, and whether or not the socket had room): a receiving program's
    own count also misses what it was too slow for. A CI run in a Debian 13
    guest counted 24 % lost by the receiving program's count, with no
    receive-buffer overflow; where the rest went was not recorded."""
    loss, count, port = 5.0, 4000, 5301
    fabric = network(LinkParams(bw_mbps=100, queue_pkts=1000, loss_pct=loss),
                     LinkParams(bw_mbps=100, queue_pkts=100, delay_ms=1))
    src, dst = fabric.topo.path_addresses("wifi")
    receiver_pid, sender_pid = fabric.pid("h2"), fabric.pid("h1")
    procs = ProcessTracker()
    try:
        procs.spawn("udp sink", [sys.executable, "-c", UDP_SINK, dst, str(port)], ns_pid=receiver_pid)
        assert wait_until(lambda: port in listening_ports(receiver_pid, "udp"), 30), "the receiver never bound"
        assert resolve_neighbours(fabric, "wifi"), "no ping crossed the lossy link in 20 tries"
        discards_before = unresolved_discards()
        before = snmp_counters(receiver_pid, "Ip")["InDelivers"]
        sender_before = snmp_counters(sender_pid, "Udp")["SndbufErrors"]
        # 1000 datagrams a second: 8 Mb/s, a tenth of the link.
        run([sys.executable, "-c", UDP_SENDER, src, dst, str(port), str(count), "1000"],
            timeout=120, ns_pid=sender_pid)

        # The last datagrams may still be in the link's queue: done when the
        # count has not moved for a second.
        arrived, deadline = -1, time.monotonic() + 30
        while (now := snmp_counters(receiver_pid, "Ip")["InDelivers"] - before) != arrived:
            assert time.monotonic() < deadline, "datagrams kept arriving for 30 s"
            arrived = now
            time.sleep(1.0)
    finally:
        procs.stop_all()
    # Datagrams the sender's own qdisc refused: counted, not reported to the sender.
    unsent = snmp_counters(sender_pid, "Udp")["SndbufErrors"] - sender_before
    lost = count - arrived
    p = loss / 100
    sd = (p * (1 - p) / count) ** 0.5
    measured = lost / count
    assert abs(measured - p) <= 4 * sd, (
        f"lost {100 * measured:.2f} % of {count} on the wire (the sender's qdisc refused {unsent}, "
        f"{unresolved_discards() - discards_before} waited on ARP and were discarded), "
        f"configured {loss} %")


@needs_root
def test_full_rate_through_a_50ms_delayed_100mbps_link(network, tmp_path, awake):
    """One Reno flow through a 100 Mb/s link (5 under full emulation) with 50 ms of one-way delay (RTT
    100 ms) and a bandwidth-delay product of buffer (1.5 under full
    emulation): at least 95 % of what
    the link can carry, once the flow is in its steady state. Reno grows its
    window by one packet per RTT after slow start, so on this long fat link
    it takes several seconds to get there (measured: 88 % of the rate in
    second 2, 95 % by second 9); the warm-up is 8 s."""
    rate = FULL_RATE_MBPS
    bdp_pkts = round(rate * 1e6 * 0.1 / (1514 * 8))
    # Under full emulation, half a BDP more: with exactly one BDP the queue
    # just empties after each halving, so any stall of the emulated CPU idles
    # the link.
    queue = round(bdp_pkts * 1.5) if FULL_EMULATION else bdp_pkts
    fabric = network(LinkParams(bw_mbps=rate, queue_pkts=queue, delay_ms=50),
                     LinkParams(bw_mbps=100, queue_pkts=100, delay_ms=1))
    procs = ProcessTracker()
    src, dst = fabric.topo.path_addresses("wifi")
    best = 0.0
    try:
        driver = IperfDriver(fabric, procs)
        # A busy VM host can withhold the CPU for a moment; an emulated one, longer.
        for attempt in range(3 if FULL_EMULATION else 2):
            flow = FlowEndpoints(0, "h1", "h2", src, dst, 40100 + attempt, 5201)
            [outcome] = driver.run([flow], False, 6, tmp_path / f"try{attempt}", warmup_s=8)
            assert outcome.error is None, outcome.error
            best = max(best, outcome.goodput_mbps)
            if best >= 0.95 * rate * payload_share(fabric):
                break
    finally:
        procs.stop_all()
    assert best >= 0.95 * rate * payload_share(fabric), f"{best:.1f} Mb/s through {rate} Mb/s, 50 ms"


@needs_root
def test_delay_line_is_gone_after_stop(network):
    if network.backend != "nfqueue":
        pytest.skip("netem needs no delay line")
    fabric = network(LinkParams(bw_mbps=10, queue_pkts=100, delay_ms=5),
                     LinkParams(bw_mbps=10, queue_pkts=100, delay_ms=5))
    line = fabric.delay_line
    pid, workdir = line.proc.pid, line._dir
    assert len(line.specs) == 4   # both ends of both path links
    fabric.stop()
    assert not os.path.exists(f"/proc/{pid}") or "zombie" in open(f"/proc/{pid}/status").read().lower()
    assert not workdir.exists()
    assert [s["intf"] for s in fabric.delay_stats] == [s.intf for s in line.specs]


def test_netem_lines_where_the_kernel_has_netem():
    link = LinkParams(bw_mbps=10, queue_pkts=50, delay_ms=10, jitter_ms=2, loss_pct=1)
    lines = links.tc_batch("x-eth0", link, netem=True)
    # 10 Mb/s over 12 ms holds 10 frames on top of the 50-packet queue.
    assert lines[-1] == "qdisc replace dev x-eth0 parent 1:1 handle 10: netem limit 60 delay 10ms 2ms loss 1%"
    plain = links.tc_batch("x-eth0", dataclasses.replace(link, delay_ms=0, jitter_ms=0, loss_pct=0),
                           netem=True)
    assert plain[-1].endswith("pfifo limit 50")


def test_nfqueue_rules():
    assert links.nfqueue_rules([("s1-eth1", 2), ("s1-eth0", 1)]) == [
        "*raw", "-A PREROUTING -i s1-eth1 -j NFQUEUE --queue-num 2",
        "-A PREROUTING -i s1-eth0 -j NFQUEUE --queue-num 1", "COMMIT"]
    assert links.nfqueue_rules([]) == []


@pytest.mark.parametrize("bad", [dict(delay_ms=-1), dict(delay_ms=5, jitter_ms=6), dict(loss_pct=100)])
def test_bad_impairments_are_refused(bad):
    from experiments.config import ConfigError
    with pytest.raises(ConfigError):
        LinkParams(**bad).validate()
