"""monitor/: message parsing and utilisation arithmetic (no root), then the
samplers on real namespaces: queue samples bounded by the configured queue,
utilisation of a saturated shaped link at (not above) 100 %, counters that
agree with `ip` and `tc`, and RTT samples taken from the watched connection's
subflows only (not its iperf3 control connection, not another connection to
the same server)."""
from __future__ import annotations

import csv
import dataclasses
import errno
import json
import os
import re
import socket
import struct
import threading
import time
from types import SimpleNamespace

import pytest

import monitor
from monitor import (CpuTimes, DiagSocket, Monitors, PortMonitor, PortSample, Qdisc, RttMonitor,
                     SubflowMonitor, Watched, parse_diag, parse_link, parse_link_stats,
                     parse_qdisc, port_counters, utilisation, watched_subflows)
from tests.conftest import needs_root

# --- building kernel messages for the parsers ---------------------------------------


def nla(kind: int, payload: bytes) -> bytes:
    raw = struct.pack("=HH", 4 + len(payload), kind) + payload
    return raw + b"\0" * (-len(raw) % 4)


def qdisc_msg(ifindex, handle, parent, kind, qlen, backlog, drops, nbytes=0, packets=0) -> bytes:
    stats = (nla(monitor.TCA_STATS_BASIC, struct.pack("=QI4x", nbytes, packets))
             + nla(monitor.TCA_STATS_QUEUE, struct.pack("=IIIII", qlen, backlog, drops, 0, 7)))
    return (struct.pack("=BxxxiIII", socket.AF_UNSPEC, ifindex, handle, parent, 1)
            + nla(monitor.TCA_KIND, kind.encode() + b"\0") + nla(2, b"\0" * 8)
            + nla(monitor.TCA_STATS2, stats))


ROOT = monitor.TC_H_ROOT


# --- parsing ------------------------------------------------------------------------


def test_parse_qdisc_reads_kind_place_counters_and_backlog():
    q = parse_qdisc(qdisc_msg(3, 0x100000, 0x10001, "pfifo", qlen=17, backlog=25738, drops=42,
                              nbytes=6_000_000_000, packets=4_000_000))
    assert q == Qdisc(ifindex=3, handle=0x100000, parent=0x10001, kind="pfifo", qlen=17, drops=42,
                      bytes=6_000_000_000, packets=4_000_000)


def test_parse_qdisc_prefers_64_bit_packets():
    """Past 2^32 packets the kernel adds TCA_STATS_PKT64 beside the u32 count."""
    stats2 = (nla(monitor.TCA_STATS_BASIC, struct.pack("=QI4x", 1, 5))
              + nla(monitor.TCA_STATS_PKT64, struct.pack("=Q", 1 << 33)))
    body = (struct.pack("=BxxxiIII", 0, 3, 0x10000, ROOT, 1) + nla(monitor.TCA_KIND, b"htb\0")
            + nla(monitor.TCA_STATS2, stats2))
    assert parse_qdisc(body).packets == 1 << 33


def test_parse_qdisc_without_stats_reads_zero():
    body = struct.pack("=BxxxiIII", 0, 2, 0, ROOT, 1) + nla(monitor.TCA_KIND, b"noqueue\0")
    assert parse_qdisc(body) == Qdisc(2, 0, ROOT, "noqueue", 0, 0)


def test_parse_link_and_link_stats():
    link = struct.pack("=BxHiII", 0, 1, 7, 0x1043, 0) + nla(monitor.IFLA_IFNAME, b"e0_0-eth2\0")
    assert parse_link(link) == (7, "e0_0-eth2", 0x1043)
    stats64 = struct.pack("=24Q", 11, 22, 3300, 4400, *range(20))   # rx_p tx_p rx_b tx_b ...
    msg = struct.pack("=BxxxII", 0, 7, 1) + nla(monitor.IFLA_STATS_LINK_64, stats64)
    assert parse_link_stats(msg) == (7, 4400, 22)
    assert parse_link_stats(struct.pack("=BxxxII", 0, 7, 1)) is None


def test_port_counters_take_tx_and_drops_from_the_root_and_backlog_from_the_leaf():
    qdiscs = [Qdisc(2, 0x10000, ROOT, "htb", 9, 30, 1000, 10),   # root counts its child's drops too
              Qdisc(2, 0x100000, 0x10001, "pfifo", 9, 30, 990, 9),
              Qdisc(3, 0, ROOT, "noqueue", 0, 0),                # no shaping: the device counts
              Qdisc(4, 0x10000, ROOT, "htb", 5, 4, 500, 5),      # two classes: two leaves
              Qdisc(4, 0x100000, 0x10001, "pfifo", 3, 1),
              Qdisc(4, 0x200000, 0x10002, "pfifo", 2, 3)]
    names = {2: "s-eth0", 3: "s-eth1", 4: "s-eth2", 5: "s-eth3"}
    out = port_counters(names, qdiscs, device_tx={3: (700, 7), 2: (1, 1)})
    assert out["s-eth0"] == (1000, 10, 30, 9)
    assert out["s-eth1"] == (700, 7, 0, 0)
    assert out["s-eth2"] == (500, 5, 4, 5)
    assert out["s-eth3"] == (0, 0, 0, 0)                          # nothing known of it


def test_port_counters_find_leaves_below_an_inner_qdisc():
    # prio 1: at the root, htb 2: under 1:1, pfifo 20: under 2:1 -> the leaf is the pfifo.
    qdiscs = [Qdisc(2, 0x10000, ROOT, "prio", 6, 0), Qdisc(2, 0x20000, 0x10001, "htb", 6, 0),
              Qdisc(2, 0x200000, 0x20001, "pfifo", 6, 0)]
    assert port_counters({2: "x"}, qdiscs)["x"].backlog_pkts == 6


def tcp_info(rtt_us: int, cwnd: int, size: int = 232) -> bytes:
    info = bytearray(max(size, 84))
    struct.pack_into("=I", info, 68, rtt_us)
    struct.pack_into("=I", info, 72, 999)          # tcpi_rttvar next to it: must not be read
    struct.pack_into("=I", info, 76, 0x7FFFFFFF)   # tcpi_snd_ssthresh
    struct.pack_into("=I", info, 80, cwnd)
    return bytes(info[:size])


def diag_msg(src, sport, dst, dport, rtt_us=5000, cwnd=10, token=None, info_size=232) -> bytes:
    head = struct.pack("=BBBB", socket.AF_INET, 1, 0, 0) + struct.pack("!HH", sport, dport)
    head += socket.inet_aton(src) + b"\0" * 12 + socket.inet_aton(dst) + b"\0" * 12
    head += struct.pack("=I8sIIIII", 0, b"\0" * 8, 0, 0, 0, 0, 1234)
    attrs = nla(monitor.INET_DIAG_INFO, tcp_info(rtt_us, cwnd, info_size))
    if token is not None:
        mptcp = nla(1, struct.pack("=I", 0xDEAD)) + nla(monitor.MPTCP_SUBFLOW_ATTR_TOKEN_LOC,
                                                        struct.pack("=I", token))
        attrs += nla(monitor.INET_DIAG_ULP_INFO, nla(1, b"mptcp\0")
                     + nla(monitor.INET_ULP_INFO_MPTCP | 0x8000, mptcp))
    return head + attrs


def test_parse_diag_reads_addresses_rtt_cwnd_and_token():
    s = parse_diag(diag_msg("10.0.0.2", 40000, "10.2.0.2", 5201, rtt_us=81234, cwnd=27, token=0xF129CA6A))
    assert s == DiagSocket("10.0.0.2", 40000, "10.2.0.2", 5201, 0xF129CA6A, 81234, 27)
    plain = parse_diag(diag_msg("10.0.0.2", 40000, "10.2.0.2", 5201))
    assert plain.token is None
    assert parse_diag(diag_msg("10.0.0.2", 1, "10.0.0.3", 2, info_size=64)) is None


def test_diag_request_asks_for_established_ipv4_tcp_with_tcp_info():
    req = monitor.diag_request()
    assert len(req) == 56                               # sizeof(struct inet_diag_req_v2)
    family, proto, ext, states = struct.unpack_from("=BBBxI", req)
    assert (family, proto, ext, states) == (socket.AF_INET, socket.IPPROTO_TCP, 1 << 1, 1 << 1)


# --- matching subflows to a watched connection ---------------------------------------------

FLOW = Watched("h0", "h1", "10.0.0.2", 40000, "10.0.1.2", 5201)


def sock(sport, token, dport=5201, daddr="10.0.1.2", rtt=1000):
    return DiagSocket("10.0.0.2", sport, daddr, dport, token, rtt, 10)


def test_subflows_follow_the_token_of_the_client_port_not_the_destination():
    sockets = [sock(40000, 7), sock(23111, 7), sock(31005, 7),
               sock(12563, 9),                     # iperf3's control connection: same server port
               sock(40001, 5, dport=5202),         # another flow to the same server host
               sock(5201, 11, dport=40123)]        # a connection this host serves
    subflows, token = watched_subflows(FLOW, sockets)
    assert token == 7
    assert sorted(s.sport for s in subflows) == [23111, 31005, 40000]


def test_a_learnt_token_keeps_the_subflows_when_the_first_one_is_gone():
    subflows, token = watched_subflows(FLOW, [sock(23111, 7), sock(12563, 9)], token=7)
    assert [s.sport for s in subflows] == [23111] and token == 7
    assert watched_subflows(FLOW, [sock(12563, 9)]) == ([], None)


def test_plain_tcp_is_the_client_port_socket_alone():
    subflows, token = watched_subflows(FLOW, [sock(40000, None), sock(12563, None)])
    assert [s.sport for s in subflows] == [40000] and token is None


class FakeDiag:
    """A host's sock_diag socket: `table` maps a local port to its socket."""

    def __init__(self, table: dict[int, DiagSocket]):
        self.table = table
        self.dumped = self.looked_up = 0

    def encode(self, s: DiagSocket) -> bytes:
        return diag_msg(s.saddr, s.sport, s.daddr, s.dport, s.rtt_us, s.cwnd, s.token)

    def dump(self, msg_type, payload):
        self.dumped += 1
        return [(msg_type, self.encode(s)) for s in self.table.values()]

    def requests(self, msg_type, payloads):
        self.looked_up += len(payloads)
        ports = [struct.unpack_from("!H", p, 8)[0] for p in payloads]   # idiag_sport
        return [self.encode(self.table[port]) if port in self.table else 2 for port in ports]


def rtt_monitor(table, subflows=None):
    """An RttMonitor over a fake socket, sampled by hand at times t."""
    mon = RttMonitor({"h0": 0}, interval_s=1.0)
    mon.watch([FLOW], subflows=subflows)
    fake = FakeDiag(table)
    mon._socks = {"h0": fake}
    clock = [0.0]
    mon.now = lambda: clock[0]

    def sample_at(t):
        clock[0] = t
        mon._sample()
        return sorted(s.subflow_local_port for s in mon.samples if s.t == t)
    return mon, fake, sample_at


def test_rtt_monitor_dumps_to_discover_then_looks_subflows_up():
    table = {p: sock(p, 7) for p in (40000, 23111)} | {12563: sock(12563, 9)}
    mon, fake, sample_at = rtt_monitor(table, subflows=3)
    assert sample_at(1) == [23111, 40000] and fake.dumped == 1
    table[31005] = sock(31005, 7)                    # a late join: still missing one, so dump again
    assert sample_at(2) == [23111, 31005, 40000] and fake.dumped == 2
    assert sample_at(3) == [23111, 31005, 40000] and fake.dumped == 2   # all found: lookups only
    assert fake.looked_up == 3
    del table[23111]                                 # a subflow closes: its lookup fails ...
    assert sample_at(4) == [31005, 40000]
    assert sample_at(5) == [31005, 40000] and fake.dumped == 3          # ... and the host is dumped
    assert sample_at(6) == [31005, 40000] and fake.dumped == 3          # 2 of 3 after 5 s: wait
    assert sample_at(10) == [31005, 40000] and fake.dumped == 4         # ... REDISCOVER_S


def test_rtt_monitor_without_an_expected_count_rediscovers_periodically():
    table = {40000: sock(40000, 7), 12563: sock(12563, 9)}
    mon, fake, sample_at = rtt_monitor(table)
    sample_at(1)
    table[23111] = sock(23111, 7)
    assert sample_at(2) == [40000] and sample_at(5) == [40000] and fake.dumped == 1
    assert sample_at(6) == [23111, 40000] and fake.dumped == 2


# --- utilisation arithmetic -------------------------------------------------------------


def test_utilisation_is_bytes_over_the_measured_interval_and_the_rate():
    # 10 Mb/s = 1.25 MB/s; port a sends 1.25 MB in 1 s, then 0.625 MB in 0.5 s (a late sample)
    samples = [PortSample(0.0, "s", "a", 0, 0, 0, 0), PortSample(0.0, "s", "b", 0, 0, 0, 0),
               PortSample(1.0, "s", "a", 1_250_000, 0, 0, 0), PortSample(1.0, "s", "b", 125_000, 0, 0, 0),
               PortSample(1.5, "s", "a", 1_875_000, 0, 0, 0)]
    got = {(u.intf, u.t): u.fraction for u in utilisation(samples, bw_mbps=10)}
    assert got == pytest.approx({("a", 1.0): 1.0, ("b", 1.0): 0.1, ("a", 1.5): 1.0})


def test_port_summary_uses_samples_after_from_s():
    pm = PortMonitor({}, bw_mbps=8)   # 1 MB/s
    pm.samples = [PortSample(0.0, "s", "a", 0, 0, 0, 0), PortSample(1.0, "s", "a", 100_000, 0, 5, 3),
                  PortSample(2.0, "s", "a", 1_100_000, 0, 9, 20), PortSample(3.0, "s", "a", 1_600_000, 0, 9, 10)]
    s = pm.summary()
    assert s["util_max_pct"] == 100.0 and s["backlog_max_pkts"] == 20 and s["drops"] == 9
    s = pm.summary(from_s=1.0)
    assert s["util_mean_pct"] == 75.0 and s["drops"] == 4 and s["backlog_mean_pkts"] == 11.0
    assert pm.mean_utilisation() == {("s", "a"): pytest.approx(1.6 / 3)}


# --- the sampling machinery, the subflow monitor and the bundle (no root) ------------------


class Failing(monitor.Sampler):
    def __init__(self):
        self._init_sampler(0.02)
        self.calls = 0

    def _sample(self):
        self.calls += 1
        raise OSError(5, "no such thing")


def test_a_failing_sample_is_counted_and_sampling_goes_on():
    m = Failing()
    m.start()
    time.sleep(0.15)
    m.stop()
    assert m.calls >= 3 and m.error_count == m.calls
    assert len(m.errors) == min(m.calls, monitor.MAX_ERRORS_KEPT) and "no such thing" in m.errors[0]


def conn(sport, n, server_side=False, daddr="10.0.1.2", dport=5201):
    return SimpleNamespace(saddr="10.0.0.2", sport=sport, daddr=daddr, dport=dport,
                           server_side=server_side, subflows_established=n)


def test_bundle_writes_the_subflow_counts_of_watched_connections_only(tmp_path):
    records = [conn(40000, 1)]
    pm = SimpleNamespace(connections=lambda: list(records))
    mon = Monitors(0.05, cpu=monitor.CpuMonitor(), subflows=SubflowMonitor(pm))
    mon.watch([FLOW])
    mon.start()
    time.sleep(0.12)
    records[:] = [conn(40000, 4), conn(12563, 1), conn(5201, 4, server_side=True)]
    time.sleep(0.12)
    mon.stop()
    assert [p.name for p in mon.write(tmp_path)] == ["cpu.csv", "subflows.csv"]
    rows = list(csv.DictReader(open(tmp_path / "subflows.csv")))
    assert rows and {r["sport"] for r in rows} == {"40000"}
    assert list(rows[0]) == ["t_s", "saddr", "sport", "daddr", "dport", "subflows"]
    assert rows[0]["subflows"] == "1" and rows[-1]["subflows"] == "4"
    s = mon.summary()
    assert s["subflows_final_min"] == s["subflows_final_max"] == 4
    assert s["monitor_errors"] == 0 and s["monitor_cpu_s"] > 0
    assert 0 < s["monitor_cpu_pct"] < 100
    json.dumps(s)


def test_cpu_times_count_steal_as_busy_and_leave_guest_time_out():
    # user nice system idle iowait irq softirq steal guest guest_nice
    before = [100, 0, 50, 1000, 10, 0, 5, 0, 40, 0]
    after = [160, 0, 70, 1100, 30, 0, 15, 20, 90, 0]
    d = CpuTimes.between(before, after)
    assert d.total == 60 + 20 + 100 + 20 + 10 + 20      # guest's +50 is inside user's +60
    assert d.busy == 60 + 20 + 10 + 20
    assert d.pct(d.steal) == pytest.approx(100 * 20 / 230)


def test_cpu_monitor_keeps_its_api(tmp_path):
    cpu = monitor.CpuMonitor(interval_s=0.05)
    cpu.start()
    time.sleep(0.2)
    cpu.stop()
    assert cpu.samples and cpu.mean_pct() is not None
    # saturated: every core above SATURATED_PCT in more than SATURATED_SHARE of the samples
    hot = monitor.CpuSample(t=0, cores_busy_pct=[95.0, 97.0], user_pct=0, system_pct=0, softirq_pct=0)
    one_core = monitor.CpuSample(t=0, cores_busy_pct=[99.0, 40.0], user_pct=0, system_pct=0, softirq_pct=0)
    cpu.samples = [hot] * 2 + [one_core] * 8
    assert cpu.saturated()
    cpu.samples = [hot] * 1 + [one_core] * 9
    assert not cpu.saturated()
    # Only the counted window counts: a hot start before it is not saturation.
    cpu.samples = ([dataclasses.replace(hot, t=t) for t in range(5)]
                   + [dataclasses.replace(one_core, t=t) for t in range(5, 25)])
    assert cpu.saturated() and not cpu.saturated(window=(5, 25))
    cpu.write_csv(tmp_path / "cpu.csv")
    assert open(tmp_path / "cpu.csv").readline().startswith("t_s,busy_pct,user_pct")


# --- on real namespaces --------------------------------------------------------------------

PAYLOAD_SHARE = 1448 / 1514


@pytest.fixture
def pair(no_leftovers):
    """h0 - r0 - h1 at 20 Mb/s with 20-packet queues, plus the userspace path
    manager (tests/hostpair.py)."""
    from tests.hostpair import host_pair
    with host_pair(path_manager=True) as network:
        yield network


def slow_port(fabric, mbit: float) -> None:
    """r0's port towards h1 at `mbit`: the bottleneck queue builds there."""
    from base.procs import run
    run(["tc", "class", "change", "dev", "r0-eth1", "parent", "1:", "classid", "1:1", "htb",
         "rate", f"{mbit:g}mbit", "ceil", f"{mbit:g}mbit", "quantum", "1514"], 5, ns_pid=fabric.pid("r0"))


def saturate(fabric, procs, logdir, seconds, monitors):
    from emulator.traffic.iperf_driver import IperfDriver
    from dctopo.workloads import Flow
    driver = IperfDriver(fabric, procs)
    try:
        [out] = driver.run(driver.endpoints([Flow("h0", "h1")]), mptcp=False, time_s=seconds,
                           logdir=logdir, on_started=monitors.start)
    finally:
        monitors.stop()
    assert out.error is None, out.error
    return out


@needs_root
def test_queue_samples_never_exceed_the_queue_limit(pair, tmp_path):
    fabric, procs, _ = pair
    slow_port(fabric, 5)
    ports = PortMonitor({"r0": fabric.pid("r0")}, interval_s=0.1)
    saturate(fabric, procs, tmp_path, 4, Monitors(0.1, ports=ports))
    backlog = [s.backlog_pkts for s in ports.samples if s.intf == "r0-eth1"]
    assert len(backlog) >= 30
    assert max(backlog) <= 20, max(backlog)
    assert max(backlog) >= 17, max(backlog)           # the queue filled: the limit held it
    assert any(s.drops > 0 for s in ports.samples if s.intf == "r0-eth1")    # and it overflowed
    assert ports.error_count == 0, ports.errors


@needs_root
def test_utilisation_of_a_saturated_link_is_near_and_not_above_100_pct(pair, tmp_path, awake):
    fabric, procs, _ = pair
    slow_port(fabric, 5)
    tolerance = 0.05
    # Never above the rate, on every attempt; near it needs CPU that a busy VM
    # host can withhold for a moment (steal time), so a low mean is measured
    # once more before it counts.
    for attempt in range(2):
        ports = PortMonitor({"r0": fabric.pid("r0")}, interval_s=0.25, bw_mbps=20)
        out = saturate(fabric, procs, tmp_path / str(attempt), 5, Monitors(0.25, ports=ports))
        # r0-eth1 runs at 5 Mb/s: its utilisation is measured against that rate.
        bottleneck = [u for u in ports.utilisation(bw_mbps=5) if u.intf == "r0-eth1"]
        steady = [u.fraction for u in bottleneck if 1.0 <= u.t <= 4.5]
        assert len(steady) >= 10
        assert max(u.fraction for u in bottleneck) <= 1 + tolerance, bottleneck
        if sum(steady) / len(steady) >= 0.95:
            break
    assert sum(steady) / len(steady) >= 0.95, steady
    # The reverse direction carries only ACKs; no 20 Mb/s port is above its rate either.
    assert all(u.fraction <= 1 + tolerance for u in ports.utilisation() if u.intf != "r0-eth1")
    # What left the port agrees with what arrived (payload share of the frames).
    assert out.goodput_mbps == pytest.approx(5 * PAYLOAD_SHARE * sum(steady) / len(steady), rel=0.05)


@needs_root
def test_port_counters_agree_with_ip_and_tc(pair, tmp_path):
    """A PortMonitor read sandwiched between two `ip`/`tc` reads (or the other
    way round) on a port that is still busy."""
    from base.procs import run
    fabric, procs, _ = pair
    slow_port(fabric, 5)
    ports = PortMonitor({"r0": fabric.pid("r0")})
    reads = []

    def sample_during_traffic():
        time.sleep(2)
        ports.open()
        try:
            for _ in range(5):
                ip0 = ip_tx(run, fabric)
                ours = ports.read("r0")["r0-eth1"]
                tc1 = tc_qdiscs(run, fabric)
                reads.append((ip0, ours, tc1))
        finally:
            ports.close()

    sampler = threading.Thread(target=sample_during_traffic)
    sampler.start()
    try:
        saturate(fabric, procs, tmp_path, 4, Monitors(1.0))
    finally:
        sampler.join()
    assert len(reads) == 5
    for (ip_bytes, ip_packets), ours, (htb, pfifo) in reads:
        assert ip_bytes <= ours.tx_bytes and ip_packets <= ours.tx_packets
        assert ours.drops <= htb["drops"] and htb["drops"] == pfifo["drops"]
        assert ours.tx_bytes <= htb["bytes"]    # what left the qdisc later is what the device sent
    # The root's backlog is its leaf's. `tc` reads them one after the other,
    # each under its own lock, not both at once, so on a busy port they can
    # differ by the packets that came or went in between. In a clean-clone CI
    # run one of the five reads did (the values were not
    # printed); in 50 reads by hand (10 runs of this test, 6 of them beside a
    # busy loop per core) none did. A few packets of the 20 the queue holds.
    qlens = [(htb["qlen"], pfifo["qlen"]) for _, _, (htb, pfifo) in reads]
    assert all(abs(root - leaf) <= QLEN_READ_APART for root, leaf in qlens), qlens


# Packets by which a root's and its leaf's backlog can differ when read apart.
QLEN_READ_APART = 3


def ip_tx(run, fabric) -> tuple[int, int]:
    links = json.loads(run(["ip", "-s", "-j", "link", "show", "dev", "r0-eth1"], 5,
                           ns_pid=fabric.pid("r0")).stdout)
    tx = links[0]["stats64"]["tx"]
    return tx["bytes"], tx["packets"]


def tc_qdiscs(run, fabric) -> tuple[dict, dict]:
    qs = json.loads(run(["tc", "-s", "-j", "qdisc", "show", "dev", "r0-eth1"], 5,
                        ns_pid=fabric.pid("r0")).stdout)
    by_kind = {q["kind"]: q for q in qs}
    return by_kind["htb"], by_kind["pfifo"]


SS_SUBFLOW = re.compile(r"(\S+):(\d+)\s+(\S+):(\d+)\s*\n[^\n]*?token:[0-9a-f]+\(id:\d+\)/([0-9a-f]+)\(id")


def ss_tokens(fabric, host) -> dict[int, tuple[int, int]]:
    """local port -> (server port, local MPTCP token) of every established
    MPTCP subflow in `host`, as `ss` (not our parser) reads them."""
    from base.procs import run
    out = run(["ss", "-tniH", "state", "established"], 5, ns_pid=fabric.pid(host)).stdout
    return {int(m[1]): (int(m[3]), int(m[4], 16)) for m in SS_SUBFLOW.findall(out)}


@needs_root
def test_rtt_samples_come_from_the_watched_connections_subflows_only(pair, tmp_path):
    """Two MPTCP connections h0 -> h1: the watched one with 4 subflows, an
    unwatched one with 3; each has an iperf3 control connection to its own
    server port as well."""
    from emulator.traffic.iperf_driver import IperfDriver
    from dctopo.workloads import Flow
    fabric, procs, pm = pair
    driver = IperfDriver(fabric, procs)
    watched, other = driver.endpoints([Flow("h0", "h1"), Flow("h0", "h1")])
    for f, n in ((watched, 4), (other, 3)):
        pm.expand(f.src, (f.src_ip, f.client_port), (f.dst_ip, f.server_port), n)
    mon = Monitors(0.2, cpu=monitor.CpuMonitor(),
                   ports=PortMonitor({"r0": fabric.pid("r0")}, bw_mbps=20),
                   rtt=RttMonitor({h: fabric.pid(h) for h in fabric.hosts()}),
                   subflows=SubflowMonitor(pm))
    mon.watch([watched], subflows=4)
    truth: dict[int, tuple[int, int]] = {}

    def look():
        time.sleep(2.5)
        truth.update(ss_tokens(fabric, "h0"))

    looker = threading.Thread(target=look)
    looker.start()
    try:
        outs = driver.run([watched, other], mptcp=True, time_s=4, logdir=tmp_path / "iperf",
                          on_started=mon.start)
    finally:
        mon.stop()
        looker.join()
    assert all(o.error is None for o in outs), outs

    # ss's view: the watched connection is the token of the client port's subflow.
    token = truth[watched.client_port][1]
    expected = {port for port, (_, tok) in truth.items() if tok == token}
    control = {port for port, (sport, tok) in truth.items()
               if sport == watched.server_port and tok != token}
    assert len(expected) == 4 and len(control) == 1
    sampled = {s.subflow_local_port for s in mon.rtt.samples}
    assert sampled == expected
    assert all((s.src, s.dst, s.client_port) == ("h0", "h1", watched.client_port) for s in mon.rtt.samples)
    assert all(s.rtt_ms > 0 and s.cwnd > 0 for s in mon.rtt.samples)
    # Only the watched connection is counted, with all its subflows.
    assert {(s.sport, s.subflows) for s in mon.subflows.samples if s.t > 2} == {(watched.client_port, 4)}

    written = {p.name for p in mon.write(tmp_path)}
    assert written == {"cpu.csv", "ports.csv", "rtt.csv", "subflows.csv"}
    header = {name: open(tmp_path / name).readline().strip() for name in written}
    assert header["ports.csv"] == "t_s,node,intf,tx_bytes,tx_packets,drops,backlog_pkts"
    assert header["rtt.csv"] == "t_s,src,dst,client_port,subflow_local_port,rtt_ms,cwnd"
    assert header["subflows.csv"] == "t_s,saddr,sport,daddr,dport,subflows"
    s = mon.summary(from_s=1.0)
    assert s["rtt_subflows"] == 4 and s["rtt_mean_ms"] > 0 and s["rtt_sd_ms"] >= 0
    assert s["subflows_final_min"] == 4 and s["monitor_errors"] == 0
    assert s["util_max_pct"] <= 105


@needs_root
def test_sock_diag_reads_what_getsockopt_tcp_info_reports():
    """An idle loopback connection of this process (root namespace): the
    smoothed RTT and cwnd read through sock_diag equal TCP_INFO's."""
    with socket.socket() as srv:
        srv.bind(("127.0.0.1", 0))
        srv.listen(1)
        cli = socket.create_connection(srv.getsockname())
        acc, _ = srv.accept()
        try:
            cli.sendall(b"x" * 1000)
            acc.recv(1000)
            time.sleep(0.05)
            info = cli.getsockopt(socket.IPPROTO_TCP, socket.TCP_INFO, 104)
            rtt_us, cwnd = struct.unpack_from("=I", info, 68)[0], struct.unpack_from("=I", info, 80)[0]
            rtt = RttMonitor({"self": os.getpid()})
            rtt.watch([Watched("self", "self", "127.0.0.1", cli.getsockname()[1], "127.0.0.1",
                               srv.getsockname()[1])])
            rtt.open()
            try:
                [mine] = [s for s in rtt.sockets("self") if s.sport == cli.getsockname()[1]]
                # The exact lookup finds the same socket; one that does not exist is ENOENT.
                one, absent = rtt._socks["self"].requests(monitor.SOCK_DIAG_BY_FAMILY, [
                    monitor.diag_lookup(*mine.key),
                    monitor.diag_lookup("127.0.0.1", 1, "127.0.0.1", mine.dport)])
                # More requests than go into one datagram: every one answered, in order.
                many = rtt._socks["self"].requests(monitor.SOCK_DIAG_BY_FAMILY,
                                                   [monitor.diag_lookup(*mine.key)] * 70)
            finally:
                rtt.close()
            assert (mine.rtt_us, mine.cwnd, mine.token) == (rtt_us, cwnd, None)
            assert parse_diag(one) == mine and absent == errno.ENOENT
            assert len(many) == 70 and all(parse_diag(r).key == mine.key for r in many)
            # IW10 plus slow start's growth for one ACK (a neighbouring field would read
            # e.g. ssthresh 2^31-1 or advmss 65483); a loopback RTT.
            assert 10 <= cwnd <= 16 and 0 < rtt_us < 100_000
        finally:
            cli.close()
            acc.close()
