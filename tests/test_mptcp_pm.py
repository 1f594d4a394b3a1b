"""kernel/mptcp_pm.py against the running kernel, in two throw-away namespaces.

Needs root and a kernel with MPTCP and the userspace path manager. Builds two
namespaces joined by a veth pair, sets net.mptcp.pm_type=1 in both, and runs
small MPTCP servers and clients (Python sockets, IPPROTO_MPTCP) in them. Each
outcome is checked three ways: the module's records, the kernel's MIB
counters of each namespace, and the client socket's own view (MPTCP_INFO and
MPTCP_TCPINFO).
"""
from __future__ import annotations

import json
import os
import secrets
import select
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from kernel.mptcp_pm import Connection, UserspacePM  # noqa: E402

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="needs root (namespaces, netlink admin)")

PY = sys.executable
CMD_TIMEOUT = 10      # any single command
READY_TIMEOUT = 5     # a server reaching listen()
RECORD_TIMEOUT = 3    # events reaching the module after the client is done

# A one-connection echo server: prints "ready" once listening, echoes until EOF.
SERVER = r"""
import socket, sys
addr, port = sys.argv[1], int(sys.argv[2])
s = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_MPTCP)
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind((addr, port))
s.listen(8)
print("ready", flush=True)
s.settimeout(8)
c, _ = s.accept()
c.settimeout(8)
while data := c.recv(65536):
    c.sendall(data)
"""

# A client bound to a known local port. After one echo exchange (data both
# ways, so the connection gets fully established) it waits until `want`
# subflows are ESTABLISHED or `wait` s pass, then `settle` s more (so that
# unwanted extra subflows would show), and prints what the kernel reports:
#   MPTCP_TCPINFO: the state of every subflow of the connection;
#   MPTCP_INFO:    mptcpi_subflows, the number of *additional* subflows.
CLIENT = r"""
import ctypes, json, socket, struct, sys, time
laddr, lport, raddr, rport = sys.argv[1], int(sys.argv[2]), sys.argv[3], int(sys.argv[4])
want, wait, settle = int(sys.argv[5]), float(sys.argv[6]), float(sys.argv[7])
SOL_MPTCP, MPTCP_INFO, MPTCP_TCPINFO, TCP_ESTABLISHED = 284, 1, 2, 1
libc = ctypes.CDLL(None, use_errno=True)

def subflow_states(fd, room=16, size_user=8):
    # struct mptcp_subflow_data {size_subflow_data, num_subflows, size_kernel,
    # size_user} must be filled in on input, which socket.getsockopt cannot do.
    buf = ctypes.create_string_buffer(16 + room * size_user)
    struct.pack_into("=IIII", buf, 0, 16, 0, 0, size_user)
    length = ctypes.c_uint32(len(buf))
    if libc.getsockopt(fd, SOL_MPTCP, MPTCP_TCPINFO, buf, ctypes.byref(length)):
        raise OSError(ctypes.get_errno(), "getsockopt(MPTCP_TCPINFO)")
    _, num, _, stride = struct.unpack_from("=IIII", buf, 0)
    return [buf.raw[16 + i * stride] for i in range(min(num, room))]  # tcpi_state

s = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_MPTCP)
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind((laddr, lport))
s.settimeout(5)
s.connect((raddr, rport))
s.sendall(b"ping")
assert s.recv(16) == b"ping"
deadline = time.monotonic() + wait
while subflow_states(s.fileno()).count(TCP_ESTABLISHED) < want and time.monotonic() < deadline:
    time.sleep(0.02)
time.sleep(settle)
states = subflow_states(s.fileno())
print(json.dumps({"established": states.count(TCP_ESTABLISHED), "states": states,
                  "mptcpi_subflows": s.getsockopt(SOL_MPTCP, MPTCP_INFO, 256)[0]}), flush=True)
s.close()
"""


@dataclass
class Net:
    a: str                      # namespace names
    b: str
    ip: dict[str, str]          # namespace -> its veth address
    anchor: dict[str, int]      # namespace -> pid of a process living in it
    procs: list[subprocess.Popen] = field(default_factory=list)   # everything we started


def run(*cmd: str) -> None:
    subprocess.run(cmd, check=True, timeout=CMD_TIMEOUT, capture_output=True)


def wait_in_netns(pid: int, ns: str) -> None:
    """`ip netns exec` forks first and enters the namespace after: wait for
    it, or /proc/<pid>/ns/net would still be the parent's namespace."""
    target = os.stat(f"/run/netns/{ns}").st_ino
    deadline = time.monotonic() + READY_TIMEOUT
    while os.stat(f"/proc/{pid}/ns/net").st_ino != target:
        assert time.monotonic() < deadline, f"pid {pid} never entered {ns}"
        time.sleep(0.01)


@pytest.fixture(scope="module")
def net():
    prefix = f"mpm{secrets.token_hex(3)}"
    a, b = f"{prefix}a", f"{prefix}b"
    made: list[str] = []
    n = Net(a=a, b=b, ip={a: "10.77.0.1", b: "10.77.0.2"}, anchor={})
    try:
        for ns in (a, b):
            run("ip", "netns", "add", ns)
            made.append(ns)
        # veth ends are named after their namespaces; deleting those deletes them.
        run("ip", "link", "add", a, "netns", a, "type", "veth", "peer", "name", b, "netns", b)
        for ns in (a, b):
            run("ip", "-n", ns, "addr", "add", f"{n.ip[ns]}/24", "dev", ns)
            run("ip", "-n", ns, "link", "set", "lo", "up")
            run("ip", "-n", ns, "link", "set", ns, "up")
            run("ip", "netns", "exec", ns, "sysctl", "-qw", "net.mptcp.enabled=1")
            run("ip", "netns", "exec", ns, "sysctl", "-qw", "net.mptcp.pm_type=1")
            anchor = subprocess.Popen(["ip", "netns", "exec", ns, "sleep", "120"])
            n.procs.append(anchor)
            wait_in_netns(anchor.pid, ns)
            n.anchor[ns] = anchor.pid
        yield n
    finally:
        for p in n.procs:           # exactly the processes this module started
            if p.poll() is None:
                p.kill()
            try:
                p.wait(timeout=5)
            except subprocess.TimeoutExpired:
                pass
        for ns in made:             # exactly the namespaces this module made
            subprocess.run(["ip", "netns", "del", ns], timeout=CMD_TIMEOUT, check=False)


@pytest.fixture(scope="module")
def module_pm(net):
    pm = UserspacePM()
    try:
        for ns in (net.a, net.b):
            pm.attach(ns, net.anchor[ns])
        pm.start()
        yield pm
    finally:
        pm.close()


@pytest.fixture
def pm(module_pm):
    module_pm.reset()
    module_pm.forget_expansions()
    yield module_pm


# --- helpers ---

def mib(net: Net, ns: str) -> dict[str, int]:
    """The MPTcpExt counters of namespace ns (/proc/<pid>/net is per-netns)."""
    with open(f"/proc/{net.anchor[ns]}/net/netstat") as f:
        lines = [line.split() for line in f if line.startswith("MPTcpExt:")]
    names, values = lines
    return {k: int(v) for k, v in zip(names[1:], values[1:])}


def delta(after: dict[str, int], before: dict[str, int], key: str) -> int:
    return after.get(key, 0) - before.get(key, 0)


def start_server(net: Net, ns: str, port: int) -> subprocess.Popen:
    p = subprocess.Popen(["ip", "netns", "exec", ns, PY, "-c", SERVER, net.ip[ns], str(port)],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    net.procs.append(p)
    ready, _, _ = select.select([p.stdout], [], [], READY_TIMEOUT)
    assert ready and p.stdout.readline().strip() == "ready", f"server in {ns} did not start"
    return p


def start_client(net: Net, ns: str, lport: int, server_ns: str, sport: int,
                 want: int, wait: float = 5.0, settle: float = 0.3) -> subprocess.Popen:
    p = subprocess.Popen(["ip", "netns", "exec", ns, PY, "-c", CLIENT, net.ip[ns], str(lport),
                          net.ip[server_ns], str(sport), str(want), str(wait), str(settle)],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    net.procs.append(p)
    return p


def finish(p: subprocess.Popen) -> str:
    out, err = p.communicate(timeout=CMD_TIMEOUT)
    assert p.returncode == 0, f"exit {p.returncode}: {err}"
    return out


def find(conns: list[Connection], ns: str, *, server_side: bool, client_port: int) -> Connection:
    """The record in ns of the connection whose client used client_port."""
    hits = [c for c in conns if c.ns == ns and c.server_side == server_side
            and (c.dport if server_side else c.sport) == client_port]
    assert len(hits) == 1, f"expected one record, got {hits} in {conns}"
    return hits[0]


def wait_records(pm: UserspacePM, done, timeout: float = RECORD_TIMEOUT) -> list[Connection]:
    """connections() once done(connections) holds, or at the deadline."""
    deadline = time.monotonic() + timeout
    while True:
        conns = pm.connections()
        if done(conns) or time.monotonic() >= deadline:
            return conns
        time.sleep(0.05)


def established(conns, ns, server_side, client_port) -> int:
    return sum(c.subflows_established for c in conns if c.ns == ns
               and c.server_side == server_side
               and (c.dport if server_side else c.sport) == client_port)


def check_expanded(net, pm, client_ns, server_ns, cport, sport, subflows):
    """One client->server connection expanded to `subflows`, checked three ways."""
    before = {ns: mib(net, ns) for ns in (client_ns, server_ns)}
    pm.expand(client_ns, (net.ip[client_ns], cport), (net.ip[server_ns], sport), subflows)
    server = start_server(net, server_ns, sport)
    report = json.loads(finish(start_client(net, client_ns, cport, server_ns, sport, subflows)))
    finish(server)
    conns = wait_records(pm, lambda cs: established(cs, server_ns, True, cport) >= subflows)
    after = {ns: mib(net, ns) for ns in (client_ns, server_ns)}

    client = find(conns, client_ns, server_side=False, client_port=cport)
    served = find(conns, server_ns, server_side=True, client_port=cport)
    # The module's view.
    assert (client.saddr, client.daddr, client.dport) == (net.ip[client_ns], net.ip[server_ns], sport)
    assert client.create_errors == []
    assert client.creates_sent == subflows - 1
    assert client.subflows_established == subflows
    assert served.subflows_established == subflows
    # The kernel's counters: one SYN-ACK+JOIN per extra subflow on the client,
    # one JOIN ACK per extra subflow on the server.
    assert delta(after[client_ns], before[client_ns], "MPJoinSynAckRx") == subflows - 1
    assert delta(after[server_ns], before[server_ns], "MPJoinAckRx") == subflows - 1
    for ns in (client_ns, server_ns):
        assert delta(after[ns], before[ns], "MPJoinRejected") == 0
    # The client socket's view.
    assert report["established"] == subflows, report
    assert report["mptcpi_subflows"] == subflows - 1, report


# --- tests ---

def test_expand_to_four_subflows(net, pm):
    check_expanded(net, pm, net.a, net.b, cport=41001, sport=5001, subflows=4)


def test_kernel_maximum_of_eight(net, pm):
    check_expanded(net, pm, net.b, net.a, cport=41002, sport=5002, subflows=8)


def test_unregistered_connection_keeps_one_subflow(net, pm):
    a, b = net.a, net.b
    # A registration for another local port of the same pair must not match,
    # and one matching the server's view of the connection must not make the
    # server side open subflows (only clients expand).
    pm.expand(a, (net.ip[a], 41999), (net.ip[b], 5003), 4)
    pm.expand(b, (net.ip[b], 5003), (net.ip[a], 41003), 4)
    before = {ns: mib(net, ns) for ns in (a, b)}
    server = start_server(net, b, 5003)
    report = json.loads(finish(start_client(net, a, 41003, b, 5003, want=1, settle=1.0)))
    finish(server)
    conns = wait_records(pm, lambda cs: any(c.ns == b and c.server_side for c in cs))
    after = {ns: mib(net, ns) for ns in (a, b)}

    client = find(conns, a, server_side=False, client_port=41003)
    served = find(conns, b, server_side=True, client_port=41003)
    assert (client.creates_sent, client.subflows_established, client.create_errors) == (0, 1, [])
    assert (served.creates_sent, served.subflows_established) == (0, 1)
    assert delta(after[a], before[a], "MPJoinSynTx") == 0
    assert delta(after[b], before[b], "MPJoinSynTx") == 0
    assert delta(after[b], before[b], "MPJoinSynRx") == 0
    assert report["established"] == 1, report
    assert report["mptcpi_subflows"] == 0, report


def test_both_namespaces_client_and_server_at_once(net, pm):
    a, b = net.a, net.b
    subflows = 8
    pm.expand(a, (net.ip[a], 41004), (net.ip[b], 5004), subflows)
    pm.expand(b, (net.ip[b], 41005), (net.ip[a], 5005), subflows)
    before = {ns: mib(net, ns) for ns in (a, b)}
    servers = [start_server(net, b, 5004), start_server(net, a, 5005)]
    clients = [start_client(net, a, 41004, b, 5004, subflows),
               start_client(net, b, 41005, a, 5005, subflows)]
    reports = [json.loads(finish(c)) for c in clients]
    for s in servers:
        finish(s)
    conns = wait_records(pm, lambda cs: established(cs, b, True, 41004) >= subflows
                         and established(cs, a, True, 41005) >= subflows)
    after = {ns: mib(net, ns) for ns in (a, b)}

    for client_ns, server_ns, cport in ((a, b, 41004), (b, a, 41005)):
        client = find(conns, client_ns, server_side=False, client_port=cport)
        served = find(conns, server_ns, server_side=True, client_port=cport)
        assert client.create_errors == []
        assert client.subflows_established == subflows
        assert served.subflows_established == subflows
    for ns in (a, b):
        # Each namespace ran one expanded client and one server.
        assert delta(after[ns], before[ns], "MPJoinSynAckRx") == subflows - 1
        assert delta(after[ns], before[ns], "MPJoinAckRx") == subflows - 1
        assert delta(after[ns], before[ns], "MPJoinRejected") == 0
    for report in reports:
        assert report["established"] == subflows, report
        assert report["mptcpi_subflows"] == subflows - 1, report


def test_api_guards():
    pm = UserspacePM()
    for bad in (0, 9):
        with pytest.raises(ValueError):
            pm.expand("x", ("10.0.0.1", 1), ("10.0.0.2", 2), bad)
    pm.start()
    pm.close()
    pm.close()  # idempotent
    with pytest.raises(RuntimeError):
        pm.attach("x", os.getpid())


# A client whose handshake's last ACK and first data are lost: the server's
# namespace drops those segments, and their retransmissions, for `hold` s;
# then the client removes the rule itself. Prints whether its socket still answers
# MPTCP_INFO (one that fell back to TCP fails with EOPNOTSUPP).
LOSSY_CLIENT = r"""
import json, socket, subprocess, sys, time
laddr, lport, raddr, rport, hold, server_ns = (sys.argv[1], int(sys.argv[2]), sys.argv[3], int(sys.argv[4]),
                                              float(sys.argv[5]), sys.argv[6])
# 61 bytes and more: the ACK (72) and data (80) with MP_CAPABLE, not a bare ACK with a DSS (60).
rule = ["INPUT", "-p", "tcp", "-s", laddr, "--dport", str(rport), "!", "--syn",
        "-m", "length", "--length", "61:65535", "-j", "DROP"]
iptables = ["ip", "netns", "exec", server_ns, "iptables", "-w", "5"]
subprocess.run([*iptables, "-A", *rule], check=True, timeout=10)
s = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_MPTCP)
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind((laddr, lport))
s.settimeout(8)
s.connect((raddr, rport))
s.sendall(b"ping")
time.sleep(hold)
subprocess.run([*iptables, "-D", *rule], check=True, timeout=10)
echo = s.recv(16)
try:
    s.getsockopt(284, 1, 256)   # SOL_MPTCP, MPTCP_INFO
    mptcp = True
except OSError:                 # EOPNOTSUPP: the socket is plain TCP now
    mptcp = False
print(json.dumps({"echo": echo.decode(), "mptcp": mptcp}), flush=True)
s.close()
"""


def test_a_lost_mp_capable_ack_makes_the_server_fall_back_to_tcp(net, pm):
    # The client puts MP_CAPABLE only on segments at its first sequence
    # number: the handshake's last ACK and the first data, and the data's
    # retransmissions (here at 0.2, 0.4, 0.8, 1.7 s). With those lost, the
    # server's SYN-ACK comes again after its 1 s timeout, and the client's
    # duplicate ACK to it carries a DSS, not MP_CAPABLE: the server, still
    # in SYN_RECV, completes the handshake as plain TCP. Traced on the
    # server's link (kernel 6.18); a retransmission of the data that arrives
    # first keeps the connection MPTCP. Full queues at a run's start do the
    # same (`mptcp_fallback`).
    cport, sport = 43100, 5300
    before = {ns: mib(net, ns) for ns in (net.a, net.b)}
    pm.expand(net.a, (net.ip[net.a], cport), (net.ip[net.b], sport), 2)
    server = start_server(net, net.b, sport)
    client = subprocess.Popen(["ip", "netns", "exec", net.a, PY, "-c", LOSSY_CLIENT, net.ip[net.a],
                               str(cport), net.ip[net.b], str(sport), "1.3", net.b],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    net.procs.append(client)
    report = json.loads(finish(client))
    finish(server)
    conns = wait_records(pm, lambda cs: any(c.closed for c in cs if c.ns == net.a))
    after = {ns: mib(net, ns) for ns in (net.a, net.b)}

    assert report == {"echo": "ping", "mptcp": False}
    assert delta(after[net.b], before[net.b], "MPCapableFallbackACK") == 1
    assert delta(after[net.a], before[net.a], "MPJoinSynTx") == 0
    record = find(conns, net.a, server_side=False, client_port=cport)
    assert record.established_at is None and record.creates_sent == 0
    assert record.subflows_established == 1
