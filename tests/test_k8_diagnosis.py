"""bench/diagnosis/k8_diagnosis.py's parts: reading sockets from `ss -tinHM` text and
from sock_diag replies (both captured from the real tools on this kernel,
6.18, iproute2 6.1, in tests/k8_diagnosis_capture.py: an MPTCP connection
with three subflows between two namespaces of tests/hostpair.py, while
iptables in the router dropped the sender's packets for 2.5 s, so every
subflow was in RTO backoff; and its receiver once the connection had gone
idle), the routers' `ip route get` answers, the choice of spread paths, the arithmetic of distinct paths under random choices, and the
per-interval accounting of the report. Then, as root, the trace on a real
pair: both ends of a connection found and cross-checked against ss."""
from __future__ import annotations

import itertools
import sys
import time
from fractions import Fraction
from pathlib import Path
from types import SimpleNamespace

import pytest

from tests.conftest import needs_root

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "bench" / "diagnosis"))

import diagnosis_kernel as dk  # noqa: E402
import diagnosis_paths as dp  # noqa: E402
import diagnosis_report as dr  # noqa: E402

from tests.k8_diagnosis_capture import (BLOCKED_SENDER_MPTCP, BLOCKED_SENDER_SS,  # noqa: E402
                                       BLOCKED_SENDER_TCP, IDLE_RECEIVER_MPTCP, IDLE_RECEIVER_SS,
                                       IDLE_RECEIVER_TCP, ROUTE_BATCH)


def _diag(hexes, parse):
    return [parse(bytes.fromhex(h)) for h in hexes]


# --- ss text --------------------------------------------------------------------------------

def test_parse_ss_reads_a_subflow_in_rto_backoff():
    tcp, msk = dk.parse_ss(BLOCKED_SENDER_SS)
    assert [s["sport"] for s in tcp] == [16323, 37539, 40001] and len(msk) == 1
    s = tcp[0]
    assert (s["saddr"], s["daddr"], s["dport"], s["wqueue"]) == ("10.9.0.2", "10.9.0.3", 5201, 12616)
    assert s["backoff"] == 3 and s["rto_us"] == 1_760_000 and s["cwnd"] == 1 and s["ssthresh"] == 5
    assert (s["rtt_us"], s["rttvar_us"]) == (17457, 12079)
    assert (s["retrans"], s["total_retrans"], s["lost"], s["unacked"]) == (1, 3, 10, 10)
    assert (s["bytes_sent"], s["bytes_retrans"], s["bytes_acked"]) == (1612360, 4272, 1576961)
    assert s["notsent"] == 0 and tcp[1]["notsent"] == 64112      # ss leaves a zero out
    assert (s["busy_us"], s["sndbuf_limited_us"]) == (4_940_000, 384_000)
    assert s["token"] == 0x66A3F850 and s["token_rem"] == 0x596F44CB   # local after the slash
    assert tcp[2]["token"] == s["token"] and tcp[2]["token_rem"] == 0    # the initial subflow


def test_parse_ss_reads_the_mptcp_socket():
    _, [m] = dk.parse_ss(BLOCKED_SENDER_SS)
    assert (m["saddr"], m["sport"], m["daddr"], m["dport"]) == ("10.9.0.2", 40001, "10.9.0.3", 5201)
    assert m["subflows"] == 2 and m["token"] == 0x66A3F850
    assert m["write_seq"] == 0xC80FF925AF2FB1A5 and m["snd_una"] == 0xC80FF925AF2B8505


def test_parse_ss_reads_a_receiver_and_infinite_ssthresh():
    tcp, [m] = dk.parse_ss(IDLE_RECEIVER_SS)
    first = next(s for s in tcp if s["dport"] == 40001)
    assert first["bytes_received"] == 2943960 and first["rcv_ooopack"] == 2
    assert first["ssthresh"] == dk.SSTHRESH_INFINITE and first["backoff"] == 0   # neither printed
    assert first["token"] == 0x596F44CB == m["token"]
    assert m["rqueue"] == 0 and m["rcv_nxt"] == 0xC80FF925AF3BB1A5


# --- sock_diag replies -------------------------------------------------------------------------

@pytest.mark.parametrize("ss, tcp_hex, mptcp_hex", [
    (BLOCKED_SENDER_SS, BLOCKED_SENDER_TCP, BLOCKED_SENDER_MPTCP),
    (IDLE_RECEIVER_SS, IDLE_RECEIVER_TCP, IDLE_RECEIVER_MPTCP),
])
def test_sock_diag_decoding_agrees_with_ss(ss, tcp_hex, mptcp_hex):
    """Read back to back from the same still sockets: every field both print
    must be equal (a wrong offset in TCP_INFO or MPTCP_INFO shows here)."""
    tcp_ss, msk_ss = dk.parse_ss(ss)
    tcp, msk = _diag(tcp_hex, dk.parse_tcp_diag), _diag(mptcp_hex, dk.parse_mptcp_diag)
    assert dk.disagreements(tcp, tcp_ss, dk.SHARED_TCP + ("rto_us", "rtt_us", "rttvar_us", "lost",
                                                          "retrans", "bytes_retrans", "rcv_ooopack")) == []
    assert dk.disagreements(msk, msk_ss, dk.SHARED_MPTCP) == []
    compared = sum(1 for r in tcp for f in dk.SHARED_TCP if f in r and f in next(
        o for o in tcp_ss if o["sport"] == r["sport"] and o["dport"] == r["dport"]))
    assert compared >= 3 * 10


def test_disagreements_names_a_changed_field_and_a_missing_socket():
    tcp_ss, _ = dk.parse_ss(BLOCKED_SENDER_SS)
    tcp = _diag(BLOCKED_SENDER_TCP, dk.parse_tcp_diag)
    tcp[1]["cwnd"] += 1
    out = dk.disagreements(tcp, tcp_ss[:2], dk.SHARED_TCP)
    assert out == ["10.9.0.2:37539->10.9.0.3:5201 cwnd: diag 2 ss 1",
                   "10.9.0.2:40001->10.9.0.3:5201: not in ss"]


def test_sock_diag_has_what_ss_does_not_print():
    """RTO recovery state and clock (Linux 6.7+), and the MPTCP-level byte
    counts (6.5+) whose difference is what is in flight."""
    tcp = _diag(BLOCKED_SENDER_TCP, dk.parse_tcp_diag)
    assert [(s["ca_state"], s["total_rto"], s["total_rto_recoveries"]) for s in tcp] == [(dk.CA_LOSS, 3, 1)] * 3
    assert [s["total_rto_time_ms"] for s in tcp] == [2286, 2250, 2294]
    [m] = _diag(BLOCKED_SENDER_MPTCP, dk.parse_mptcp_diag)
    assert m["bytes_sent"] - m["bytes_acked"] == (m["write_seq"] - m["snd_una"]) == 273568
    assert (m["wmem_queued"], m["sndbuf"], m["rcvbuf"]) == (274128, 363520, 4194304)
    rcv = _diag(IDLE_RECEIVER_TCP, dk.parse_tcp_diag)
    [r] = _diag(IDLE_RECEIVER_MPTCP, dk.parse_mptcp_diag)
    assert sum(s["bytes_received"] for s in rcv) == r["bytes_received"] == 6750208   # nothing held


def test_a_reduced_layout_decodes_only_its_fields():
    layout = dk.tcp_layout({"cwnd", "total_rto_time_ms"})
    s = dk.parse_tcp_diag(bytes.fromhex(BLOCKED_SENDER_TCP[0]), layout)
    assert s["cwnd"] == 1 and s["total_rto_time_ms"] == 2286 and "bytes_acked" not in s
    assert s["token"] == 0x66A3F850


def test_the_mptcp_request_names_mptcp_in_an_attribute():
    req = dk.mptcp_request()
    assert len(req) == 56 + 8 and req[1] == 6             # sdiag_protocol is a u8: IPPROTO_TCP there
    assert req[56:] == bytes([8, 0, dk.INET_DIAG_REQ_PROTOCOL, 0]) + (262).to_bytes(4, "little")


# --- routes -----------------------------------------------------------------------------------

def test_parse_route_get_reads_each_answer_of_a_batch():
    assert dp.parse_route_get(ROUTE_BATCH) == ["r0-eth1", "r0-eth0"]
    assert dp.parse_route_get("10.1.0.2 from 10.0.0.2 via 10.0.2.1 dev e0_0-eth2 \n"
                              "    cache iif e0_0-eth0 \n") == ["e0_0-eth2"]
    assert dp.route_question("10.0.0.2", 10001, "10.1.0.2", 5201, "e0_0-eth0") == (
        "route get 10.1.0.2 from 10.0.0.2 iif e0_0-eth0 ipproto tcp sport 10001 dport 5201")


def test_path_choices_and_top_node_on_a_fattree():
    assert dp.path_choices("h0_0_0", "h1_0_0", 8) == (16, "core")
    assert dp.path_choices("h0_0_0", "h0_1_0", 8) == (4, "agg")
    assert dp.path_choices("h0_0_0", "h0_0_1", 8) == (1, "edge")
    topo = SimpleNamespace(isSwitch=lambda n: n[0] in "eac",
                           role=lambda n: {"e": "edge", "a": "agg", "c": "core"}[n[0]])
    assert dp.top_node(["e0_0", "a0_1", "c5", "a1_1", "e1_0", "h1_0_0"], topo) == "c5"
    paths = [["e0_0", "a0_0", "c0", "a1_0", "e1_0", "h1_0_0"], ["e0_0", "a0_0", "c0", "a1_0", "e1_0", "h1_0_0"],
             ["e0_0", "a0_1", "c2", "a1_1", "e1_0", "h1_0_0"], ["e0_0", "a0_1"]]      # the last: unanswered
    got = dp.connection_paths(paths, "h0_0_0", "h1_0_0", 4, topo)
    assert (got["distinct"], got["subflows_walked"], got["complete"]) == (2, 3, False)
    assert got["expected_distinct"] == pytest.approx(float(dp.expected_distinct(4, 3)))


# --- distinct paths under random choices ---------------------------------------------------

def _brute(c: int, n: int) -> list[Fraction]:
    counts = [0] * (n + 1)
    for draw in itertools.product(range(c), repeat=n):
        counts[len(set(draw))] += 1
    return [Fraction(x, c ** n) for x in counts]


@pytest.mark.parametrize("c, n", [(1, 3), (2, 5), (4, 3), (3, 4), (4, 6), (5, 5)])
def test_distinct_distribution_is_exact(c, n):
    dist = dp.distinct_distribution(c, n)
    assert dist == _brute(c, n)
    assert sum(dist) == 1
    assert sum(d * p for d, p in enumerate(dist)) == dp.expected_distinct(c, n)


def test_expected_distinct_at_fattree_8_with_8_subflows():
    e = dp.expected_distinct(16, 8)
    assert e == 16 * (1 - Fraction(15, 16) ** 8)
    assert float(e) == pytest.approx(6.4525, abs=1e-4)
    assert dp.expected_distinct(4, 8) == 4 * (1 - Fraction(3, 4) ** 8)       # within a pod
    assert dp.expected_distinct(16, 1) == 1 and dp.expected_distinct(1, 8) == 1


def test_mid_rank_is_a_half_on_average_under_random_choices():
    for c, n in ((16, 8), (4, 8), (3, 2)):
        dist = dp.distinct_distribution(c, n)
        assert sum(p * dp.mid_rank(d, c, n) for d, p in enumerate(dist)) == Fraction(1, 2)
    assert dp.mid_rank(1, 16, 8) < Fraction(1, 10**6) and dp.mid_rank(8, 16, 8) > Fraction(9, 10)


def test_placement_takes_the_least_used_top_switch_each_time():
    from diagnosis_placement import choose
    tops = ["c0", "c0", "c1", None, "c2", "c1", "c3", "c0", "c2", "c3"]
    picked = choose(tops, "c0", 7)
    counts = {}
    for t in ["c0"] + [tops[i] for i in picked]:
        counts[t] = counts.get(t, 0) + 1
    assert len(picked) == 7 and len(set(picked)) == 7 and 3 not in picked      # no unanswered port
    assert counts == {"c0": 2, "c1": 2, "c2": 2, "c3": 2}                     # 8 subflows, 4 cores
    assert choose(["c0", "c0"], "c0", 3) == [0, 1]                           # fewer candidates than asked


# --- the report's accounting -----------------------------------------------------------------

def _sub(t_ms, **kw):
    row = dict.fromkeys(("cwnd", "ssthresh", "rtt_us", "backoff", "ca_state", "unacked", "notsent",
                         "bytes_sent", "bytes_retrans", "bytes_acked", "busy_us", "rwnd_limited_us",
                         "sndbuf_limited_us", "total_rto", "total_rto_time_ms"), 0)
    row.update(t_ms=t_ms, cwnd=10, ssthresh=20, rtt_us=1000)
    row.update(kw)
    return row


def test_subflow_stats_splits_rto_idle_and_slow_start():
    rows = [_sub(0), _sub(2000, bytes_sent=100, bytes_acked=100),
            _sub(4000, bytes_sent=100, bytes_acked=100, total_rto_time_ms=1500, backoff=1, ca_state=4,
                 total_rto=1, notsent=50),
            _sub(6000, bytes_sent=100, bytes_acked=100, total_rto_time_ms=1500, total_rto=1, notsent=50),
            _sub(8000, bytes_sent=200, bytes_acked=150, total_rto_time_ms=1500, total_rto=1,
                 ssthresh=dk.SSTHRESH_INFINITE)]
    queued = {0: 10, 2000: 10, 4000: 10, 6000: 10, 8000: 0}
    s = dr.subflow_stats(rows, queued, from_ms=1000)
    assert s["time"] == 8.0 and s["rto"] == 1.5 and s["backoff"] == 2.0 and s["rtos"] == 1
    assert s["idle_pending"] == 4.0 and s["idle_pending_rto"] == 2.0      # 2-4 s (RTO) and 4-6 s
    assert s["idle_own_queue"] == 2.0 and s["idle_starved"] == 0.0         # 4-6 s: its own 50 B waited
    full = [_sub(0, unacked=10), _sub(2000, unacked=10), _sub(4000, unacked=3)]
    waiting = dr.subflow_stats(full, {0: 5, 2000: 5, 4000: 5}, from_ms=0)
    assert (waiting["idle_window_full"], waiting["idle_starved"]) == (2.0, 2.0)   # window full, then open
    assert s["slow_start"] == 6.0 and s["initial_slow_start"] == 2.0       # not the interval in RTO
    assert (s["bytes_acked"], s["bytes_sent"]) == (150, 200)
    assert dr.subflow_stats(rows, queued, from_ms=5000)["time"] == 4.0    # the window only


def test_connection_stats_finds_blocked_full_and_stalled_time():
    def snd(t, pending, sent, acked, wq=0):
        return {"t_ms": t, "pending": pending, "bytes_sent": sent, "bytes_acked": acked,
                "bytes_retrans": 0, "wmem_queued": wq, "sndbuf": 1000}
    def rcv(t, got):
        return {"t_ms": t, "bytes_received": got, "rmem_alloc": 0, "rcvbuf": 1000}
    sub = {"snd_wnd": 500, "mss": 100, "last_ack_recv_ms": 5, "notsent": 0}
    sender = [snd(0, 0, 0, 0), snd(1000, 900, 400, 0, wq=950),     # 500 unsent, 400 in flight >= 500 - 200
              snd(2000, 300, 300, 0)]                              # nothing unsent nor queued
    receiver = [rcv(0, 0), rcv(1000, 100), rcv(2000, 100), rcv(3000, 400)]
    at = {0: [sub], 1000: [sub], 2000: [sub]}
    received = {0: 0, 1000: 100, 2000: 300, 3000: 400}             # 2 s: 200 held, none delivered
    c = dr.connection_stats(sender, receiver, at, received, from_ms=0)
    assert (c["time"], c["unsent"], c["window_blocked"], c["sndbuf_full"], c["nothing_queued"]) == (
        2.0, 1.0, 1.0, 1.0, 1.0)
    assert c["hol_stalled"] == 1.0 and c["held_bytes_max"] == 200 and c["rcv_time"] == 3.0
    assert c["goodput_mbps"] == round(400 * 8 / 3 / 1e6, 4)


def test_spearman_on_ranks_with_ties():
    assert dr.spearman([1, 2, 3, 4], [10, 20, 30, 40]) == 1.0
    assert dr.spearman([1, 2, 3, 4], [4, 3, 2, 1]) == -1.0
    assert dr.ranks([5, 1, 5, 2]) == [3.5, 1.0, 3.5, 2.0]
    assert dr.spearman([1, 1, 1], [1, 2, 3]) is None


# --- on a real pair ---------------------------------------------------------------------------

SERVER = """
import socket
s = socket.socket(socket.AF_INET, socket.SOCK_STREAM, 262)
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("10.9.0.3", 5201)); s.listen(4)
c, _ = s.accept()
while c.recv(65536):
    pass
"""
CLIENT = """
import socket, time
s = socket.socket(socket.AF_INET, socket.SOCK_STREAM, 262)
s.bind(("10.9.0.2", 40001)); s.connect(("10.9.0.3", 5201))
end = time.time() + 8
while time.time() < end:
    s.send(b"x" * 65536)
"""


@needs_root
def test_trace_follows_both_ends_of_a_real_connection(no_leftovers):
    from diagnosis_trace import KernelTrace, trace_record
    from tests.hostpair import host_pair
    flow = SimpleNamespace(src="h0", dst="h1", src_ip="10.9.0.2", dst_ip="10.9.0.3",
                           client_port=40001, server_port=5201)
    with host_pair(path_manager=True) as (fabric, procs, pm):
        pm.expand("h0", ("10.9.0.2", 40001), ("10.9.0.3", 5201), 3)
        procs.spawn("server", [sys.executable, "-c", SERVER], ns_pid=fabric.pid("h1"))
        time.sleep(0.5)
        procs.spawn("client", [sys.executable, "-c", CLIENT], ns_pid=fabric.pid("h0"))
        walked = {}
        trace = KernelTrace({h: fabric.pid(h) for h in fabric.hosts()}, 0.5, check_at_s=2.0,
                            at_check=lambda t: walked.update(dp.PathWalker(fabric).walk(t.subflow_tuples())))
        trace.watch([flow])
        trace.start()
        time.sleep(4)
        trace.stop()
    rec = trace_record(trace)
    assert rec["sampler_error_count"] == 0 and rec["fields_missing"] == []
    assert len(rec["snd_sub"]) == 3 and len(rec["rcv_sub"]) == 3
    assert set(rec["snd_conn"]) == set(rec["rcv_conn"]) == {"0"}
    check = rec["ss_check"]
    assert check["errors"] == [] and check["fields_compared"] >= 10 and check["disagreement_count"] == 0
    assert sorted(walked.values()) == [["r0", "h1"]] * 3
    conns = dr.per_connection(rec, 0.0)
    assert conns[0]["conn"]["goodput_mbps"] > 5 and len(conns[0]["subflows"]) == 3
