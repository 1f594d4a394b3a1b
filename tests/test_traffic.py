"""Goodput as the receiver counted it, after the warm-up, and how long a
client may take to connect (no root)."""
import pytest

from emulator.traffic.iperf_driver import CONNECT_TIMEOUT_MS, connect_timeout_ms, receiver_goodput


def server_json(per_second_bytes, tail=None):
    intervals, t = [], 0.0
    for b in per_second_bytes:
        intervals.append({"sum": {"start": t, "end": t + 1.0, "seconds": 1.0, "bytes": b}})
        t += 1.0
    if tail is not None:            # the fragment after the sender stopped
        intervals.append({"sum": {"start": t, "end": t + 0.1, "seconds": 0.1, "bytes": tail}})
    total = sum(per_second_bytes) + (tail or 0)
    return {"intervals": intervals,
            "end": {"sum_received": {"bytes": total, "seconds": t + (0.1 if tail is not None else 0)}}}


def test_warmup_seconds_are_not_counted():
    # 2 slow seconds of warm-up at 1 Mb/s, then 3 s at 8 Mb/s
    j = server_json([125_000, 125_000, 1_000_000, 1_000_000, 1_000_000])
    goodput, seconds, whole, first = receiver_goodput(j, warmup_s=2)
    assert goodput == pytest.approx(8.0) and seconds == pytest.approx(3.0)
    assert whole == pytest.approx(8 * 3.25e6 / 5 / 1e6)
    assert first == 0.0
    assert receiver_goodput(j, warmup_s=0)[0] == pytest.approx(whole)


def test_first_data_second_and_nothing_after_warmup():
    j = server_json([0, 0, 500_000])
    assert receiver_goodput(j, warmup_s=0)[3] == 2.0
    assert receiver_goodput(j, warmup_s=10)[:2] == (0.0, 0.0)
    assert receiver_goodput(None, warmup_s=1) == (0.0, 0.0, 0.0, None)


def test_the_tail_fragment_counts_at_its_own_length():
    j = server_json([1_000_000, 1_000_000], tail=100_000)
    goodput, seconds, _, _ = receiver_goodput(j, warmup_s=1)
    assert seconds == pytest.approx(1.1)
    assert goodput == pytest.approx(8 * 1.1e6 / 1.1 / 1e6)


def test_listening_ports_tell_tcp_listeners_from_bound_udp_sockets():
    """Read from this process's own namespace: a TCP listener shows under
    tcp only, a bound UDP socket under udp only, a closed one nowhere."""
    import os
    import socket

    from kernel.transport import listening_ports
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as tcp, \
            socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as udp:
        tcp.bind(("127.0.0.1", 0))
        tcp.listen()
        udp.bind(("127.0.0.1", 0))
        t, u = tcp.getsockname()[1], udp.getsockname()[1]
        assert t in listening_ports(os.getpid(), "tcp") and t not in listening_ports(os.getpid(), "udp")
        assert u in listening_ports(os.getpid(), "udp") and u not in listening_ports(os.getpid(), "tcp")
    assert t not in listening_ports(os.getpid(), "tcp")


def test_a_client_may_take_the_warm_up_to_connect():
    # At 10 Mb/s the warm-up is 5 s, the floor; a 20 s warm-up (1 Mb/s)
    # gives its clients 20 s; a floor set higher (a test under full
    # emulation) stays.
    assert connect_timeout_ms(CONNECT_TIMEOUT_MS, 5.0) == 5000
    assert connect_timeout_ms(CONNECT_TIMEOUT_MS, 0.0) == 5000
    assert connect_timeout_ms(CONNECT_TIMEOUT_MS, 20.0) == 20000
    assert connect_timeout_ms(30000, 20.0) == 30000
