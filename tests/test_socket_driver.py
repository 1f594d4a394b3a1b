"""The socket driver (emulator/traffic/flowgen.py, emulator/traffic/socket_driver.py): every
connection has all its subflows before the first data byte, as the path
manager's own records show, and goodput is counted from the release."""
import errno
import os
import resource
import time

import pytest

from base.procs import ProcessTracker
from experiments.config import LinkParams, SweepConfig
from emulator.traffic.flowgen import ended_by_reset
from emulator.traffic.socket_driver import JsonLinesChild, outcomes
from experiments.longflows import client_connections, flow_key, subflows_ready
from emulator.traffic.common import FlowEndpoints
from tests.conftest import needs_root, opened_sweep
from dctopo.workloads import Flow

MB = 125_000   # bytes in one second at 1 Mb/s


def endpoints(n: int) -> list[FlowEndpoints]:
    return [FlowEndpoints(i, "h0", "h1", "10.0.0.1", "10.0.0.2", 40000 + i, 5201 + i) for i in range(n)]


def test_goodput_counts_the_seconds_after_the_warmup_from_the_release():
    record = {"warmup_s": 2, "time_s": 3, "opened": {"connected": [0], "failed": {}},
              "sent": {"flows": [{"index": 0, "sent": 1, "error": None}]},
              "received": {"flows": [{"index": 0, "accepted": True, "eof": True, "bytes": 0,
                                      "early_bytes": 8, "first_data_s": 0.0,
                                      # 2 s of warm-up at 1 Mb/s, 3 counted at 4, 1 after the end
                                      "per_second": [MB, MB, 4 * MB, 4 * MB, 4 * MB, 9 * MB],
                                      "error": None}]}}
    [o] = outcomes(endpoints(1), record)
    assert o.error is None and not o.timed_out
    assert o.goodput_mbps == pytest.approx(4.0) and o.seconds == 3
    assert o.whole_mbps == pytest.approx((2 + 12) / 5)
    assert o.per_second_mbps == [1.0, 1.0, 4.0, 4.0, 4.0]


def test_a_stalled_flow_counts_its_silent_seconds_and_a_refused_one_its_error():
    record = {"warmup_s": 1, "time_s": 3, "opened": {"connected": [0], "failed": {"1": "ECONNREFUSED"}},
              "sent": {"flows": [{"index": 0, "sent": 1, "error": None},
                                 {"index": 1, "sent": 0, "error": "ECONNREFUSED"}]},
              "received": {"flows": [
                  {"index": 0, "accepted": True, "eof": True, "bytes": 0, "early_bytes": 8,
                   "first_data_s": 0.0, "per_second": [MB, 3 * MB], "error": None},
                  {"index": 1, "accepted": False, "eof": False, "bytes": 0, "early_bytes": 0,
                   "first_data_s": None, "per_second": [], "error": None}]}}
    stalled, refused = outcomes(endpoints(2), record)
    assert stalled.goodput_mbps == pytest.approx(1.0) and stalled.seconds == 3   # 3 Mb over 3 s
    assert refused.error == "ECONNREFUSED" and refused.goodput_mbps == 0


def test_a_sender_that_never_reports_times_every_flow_out():
    record = {"warmup_s": 0, "time_s": 2, "opened": {"connected": [0], "failed": {}},
              "sent": None, "received": None}
    [o] = outcomes(endpoints(1), record)
    assert o.timed_out and o.error and o.goodput_mbps == 0


def test_only_a_reset_at_the_end_ends_a_receive_cleanly():
    """TCP's reset says ECONNRESET, MPTCP's fast close sometimes ENOTCONN,
    and either says EPIPE once the sender's FIN was read; before the end any
    of them is the flow's error, as is anything else after."""
    for err in (errno.ECONNRESET, errno.ENOTCONN, errno.EPIPE):
        assert ended_by_reset(now=10.0, end=10.0, err=err)
        assert not ended_by_reset(now=9.9, end=10.0, err=err)
        assert not ended_by_reset(now=10.0, end=None, err=err)
    assert not ended_by_reset(now=11.0, end=10.0, err=errno.ETIMEDOUT)


def test_a_child_is_heard_on_a_descriptor_above_1023(tmp_path):
    """A harness holding FatTree(8) 4:1 (512 hosts) has more than 1024 files
    open, so its pipes to the driver's children get descriptors above 1023,
    which select() refuses (it raised ValueError there)."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard != resource.RLIM_INFINITY and hard < 1200:
        pytest.skip(f"the descriptor limit here is {hard}")
    wanted = soft if soft == resource.RLIM_INFINITY else max(soft, 1200)
    resource.setrlimit(resource.RLIMIT_NOFILE, (wanted, hard))
    held = [os.open(os.devnull, os.O_RDONLY) for _ in range(1100)]
    procs = ProcessTracker()
    try:
        receiver = JsonLinesChild(procs, "receive", tmp_path / "receive.log")
        assert receiver.proc.stdout.fileno() > 1023
        receiver.tell({"mptcp": False, "flows": []})
        assert receiver.hear(10.0) == {"listening": 0}
    finally:
        procs.stop([t.proc for t in procs.procs])
        for fd in held:
            os.close(fd)
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))


@pytest.fixture(scope="module")
def ft4(tmp_path_factory):
    cfg = SweepConfig(k=4, link=LinkParams(bw_mbps=10), seed=1, fabric="l3", driver="socket",
                      results=tmp_path_factory.mktemp("results"))
    with opened_sweep(cfg) as sweep:
        yield sweep


@needs_root
@pytest.mark.parametrize("subflows", [1, 8])
def test_every_subflow_is_up_before_the_first_data(ft4, tmp_path, subflows):
    """Four flows between pods: MPTCP connections have all 8 subflows
    (MPTCP_EVENT_SUB_ESTABLISHED, counted by the path manager) before the
    release, and every flow carries data from its first second."""
    flows = ft4.driver.endpoints([Flow(f"h0_{e}_{i}", f"h2_{e}_{i}") for e in (0, 1) for i in (0, 1)])
    ft4.arm_path_manager(flows, subflows)
    outs = ft4.driver.run(flows, subflows > 1, 3, tmp_path, warmup_s=1,
                          ready=subflows_ready(ft4.pm, flows, subflows))
    assert all(o.error is None and o.goodput_mbps > 0 for o in outs), \
        [(o.endpoints.src, o.error, o.goodput_mbps) for o in outs]
    assert all(o.per_second_mbps[0] > 0 for o in outs), [o.per_second_mbps for o in outs]
    if subflows > 1:
        conns = client_connections(ft4.pm)
        for f in flows:
            c = conns[flow_key(f)]
            assert c.subflows_established == subflows
            assert c.last_subflow_at < ft4.driver.released_at
    else:
        assert ft4.pm.connections() == []


def mptcp_connection(ft4, src: str, dst: str):
    """A listener on dst and one MPTCP connection to it from src, made in
    the hosts' namespaces by this process: (flow, listener, client,
    accepted); the caller closes them."""
    import socket
    from emulator.traffic.flowgen import IPPROTO_MPTCP
    from kernel.netlink import made_in_netns

    [f] = ft4.driver.endpoints([Flow(src, dst)])

    def mptcp_socket():
        return socket.socket(socket.AF_INET, socket.SOCK_STREAM, IPPROTO_MPTCP)

    listener = made_in_netns(ft4.fabric.pid(f.dst), mptcp_socket)
    listener.bind((f.dst_ip, f.server_port))
    listener.listen()
    client = made_in_netns(ft4.fabric.pid(f.src), mptcp_socket)
    client.settimeout(5)
    client.connect((f.dst_ip, f.server_port))
    accepted, _ = listener.accept()
    return f, listener, client, accepted


@needs_root
def test_an_interrupted_run_resets_connections_its_processes_still_hold(ft4):
    """What a driver does on Ctrl-C before it stops anything: every
    connected socket of the hosts is reset while its process still holds
    it, so the process sees the reset and no MPTCP connection is left to
    close on its own. The listener stays (its process closes it)."""
    from emulator.traffic.common import reset_connections
    from kernel.transport import listening_ports, tcp_sockets_open

    f, listener, client, receiver = mptcp_connection(ft4, "h0_0_1", "h2_0_1")
    client_pid, server_pid = ft4.fabric.pid(f.src), ft4.fabric.pid(f.dst)
    with listener, client, receiver:
        client.sendall(b"x" * 1000)
        assert receiver.recv(1000)
        assert len(tcp_sockets_open(client_pid)) == 1
        reset_connections(ft4.fabric, [f.src, f.dst])
        assert tcp_sockets_open(client_pid) == []
        assert f.server_port in listening_ports(server_pid)
        assert len(tcp_sockets_open(server_pid)) == 1        # the listener alone
        with pytest.raises(OSError):
            for _ in range(100):    # the reset reaches the process, not a graceful close
                client.send(bytes(1 << 16))
                time.sleep(0.01)


@needs_root
def test_the_teardown_resets_sockets_a_run_left_open(ft4):
    """Last in this module: it resets every socket of ft4's hosts. A sender
    closed with data unsent stays in the kernel as an orphan that goes on
    sending (to a receiver that never reads); Network.abort_connections,
    which runs after the run's processes are stopped and before the
    namespaces go, must reset it and its peer and find no socket open after
    (kernel/transport.tcp_sockets_open). The listener is closed first, as its
    process would be: the kernel refuses to reset an MPTCP listener's
    subflow (net/mptcp/subflow.c, tcp_abort_override: EINVAL), so `ss -K`
    leaves it, and only its process closing it removes it."""
    from kernel.transport import tcp_sockets_open

    f, listener, client, receiver = mptcp_connection(ft4, "h0_0_0", "h2_0_0")
    client_pid, server_pid = ft4.fabric.pid(f.src), ft4.fabric.pid(f.dst)
    with listener:
        with receiver:
            client.settimeout(0.5)
            try:
                while True:          # until the receiver's window and our buffer are full
                    client.send(bytes(1 << 16))
            except (TimeoutError, BlockingIOError):
                pass
            client.close()           # an orphan, FIN_WAIT1 with data still to send
            listener.close()
            assert tcp_sockets_open(client_pid), "the closed sender left no orphan to reset"
            assert tcp_sockets_open(server_pid)
            assert ft4.net.abort_connections() == {}
            assert tcp_sockets_open(client_pid) == tcp_sockets_open(server_pid) == []
