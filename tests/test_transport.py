"""The hosts' kernel settings (kernel/transport.py) on a real network: an
MPTCP connection whose SYNs are dropped stays MPTCP, as the harness needs
at low link rates where SYNs wait behind full queues."""
import sys

import pytest

from base.platform import sysctl_exists
from experiments.longflows import run_flags
from kernel.transport import ARP_STATS, read_arp_table_stats
from monitor import CpuMonitor
from tests.conftest import needs_root

FALLBACK_KNOB = "net.mptcp.syn_retrans_before_tcp_fallback"
SERVER = "10.9.0.3"
PORT = 5599
# SYNs dropped before the server answers: more than the kernel's default of
# 2 retransmissions before it falls back to plain TCP.
DROPPED_SYNS = 3

# A client that opens one MPTCP connection, sends a byte and says whether the
# socket is still MPTCP (MPTCP_INFO, SOL_MPTCP 284 / 1, fails on a fallback).
CLIENT = f"""
import socket, sys
s = socket.socket(socket.AF_INET, socket.SOCK_STREAM, 262)
s.settimeout(30)
s.connect(("{SERVER}", {PORT}))
s.sendall(b"x")
try:
    s.getsockopt(284, 1, 64)
    print("mptcp")
except OSError:
    print("tcp")
"""
SERVER_SCRIPT = f"""
import socket
l = socket.socket(socket.AF_INET, socket.SOCK_STREAM, 262)
l.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
l.bind(("{SERVER}", {PORT}))
l.listen(1)
c, _ = l.accept()
c.recv(1)
"""


@pytest.fixture
def two_hosts(no_leftovers):
    from tests.hostpair import host_pair
    with host_pair() as (fabric, procs, _):
        yield fabric, procs


@needs_root
@pytest.mark.skipif(not sysctl_exists(FALLBACK_KNOB),
                    reason=f"{FALLBACK_KNOB} came with Linux 6.14; earlier kernels fall back as they do")
def test_a_connection_whose_syns_are_dropped_stays_mptcp(two_hosts):
    """The server drops the first SYNs; the client retransmits (a second
    apart) and, with the hosts' settings, still offers MPTCP: the connection
    is MPTCP and the client's kernel counted no MP_CAPABLE SYN given up."""
    from base.procs import run
    from emulator.fabrics.common import wait_until
    from kernel.transport import listening_ports, read_netstat
    fabric, procs = two_hosts
    client, server = fabric.pid("h0"), fabric.pid("h1")
    rule = ["-p", "tcp", "--syn", "--dport", str(PORT), "-m", "limit", "--limit", "1/hour",
            "--limit-burst", str(DROPPED_SYNS), "-j", "DROP"]
    # The first DROPPED_SYNS SYNs match the limit (burst) and are dropped;
    # later ones pass. No timing is involved.
    run(["iptables", "-A", "INPUT", *rule], 10, ns_pid=server)
    procs.spawn("server", [sys.executable, "-c", SERVER_SCRIPT], ns_pid=server)
    assert wait_until(lambda: PORT in listening_ports(server), timeout=10)
    before = read_netstat(client)
    done = run([sys.executable, "-c", CLIENT], timeout=40, ns_pid=client)
    after = read_netstat(client)
    dropped = run(["iptables", "-L", "INPUT", "-v", "-x", "-n"], 10, ns_pid=server).stdout
    assert f" {DROPPED_SYNS} " in dropped.splitlines()[2], dropped
    grew = {k: after.get(k, 0) - before.get(k, 0) for k in after}
    assert grew.get("TcpExtTCPSynRetrans", 0) >= DROPPED_SYNS, grew
    assert grew.get("MPTcpExtMPCapableSYNTXDrop", 0) == 0, grew
    assert grew.get("MPTcpExtMPCapableSYNACKRX", 0) == 1, grew
    assert done.stdout.split() == ["mptcp"], done.stdout


# Two CPUs' rows as /proc/net/stat/arp_cache gives them (columns abridged to
# the last three; the real file has 13).
ARP_CACHE_SAMPLE = """forced_gc_runs unresolved_discards table_fulls
0000000a       00000000            00000d5c
00000001       00000002            00001711
"""


def test_arp_table_overflows_are_summed_over_cpus_and_flag_a_run(tmp_path):
    path = tmp_path / "arp_cache"
    path.write_text(ARP_CACHE_SAMPLE)
    assert read_arp_table_stats(path) == {"ArpTableFulls": 0xd5c + 0x1711, "ArpForcedGcRuns": 11}
    cpu = CpuMonitor(interval_s=1.0)
    flow = {"goodput_mbps": 1.0, "subflows_established": 1}
    assert run_flags(1, [flow], [], cpu, {"ArpForcedGcRuns": 3}) == []
    assert run_flags(1, [flow], [], cpu, {"ArpTableFulls": 1}) == ["neighbour_table_full"]
    # This kernel's file has the columns read.
    header = ARP_STATS.read_text().split("\n")[0].split()
    assert {"table_fulls", "forced_gc_runs"} <= set(header), header


def test_a_flow_that_fell_back_to_tcp_is_told_apart_from_a_missing_join():
    cpu = CpuMonitor(interval_s=1.0)
    full = {"goodput_mbps": 1.0, "subflows_established": 4, "fell_back_to_tcp": False}
    fell_back = {"goodput_mbps": 1.0, "subflows_established": 1, "fell_back_to_tcp": True}
    short = {"goodput_mbps": 1.0, "subflows_established": 3, "fell_back_to_tcp": False}
    assert run_flags(4, [full, full], [], cpu, {}) == []
    assert run_flags(4, [full, fell_back], [], cpu, {}) == ["mptcp_fallback"]
    assert run_flags(4, [short, fell_back], [], cpu, {}) == ["mptcp_fallback", "subflows_missing"]
