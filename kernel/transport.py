"""Per-namespace kernel settings of the hosts, and the kernel's own counters.

Everything here is per network namespace: the root namespace is never
touched (unlike Mininet's fixLimits), and what was set is recorded per run.
"""
from __future__ import annotations

from pathlib import Path

from base.platform import sysctl_exists
from base.procs import CommandError, run

# Client ports of flows are fixed (see emulator/traffic/common.py) above this range,
# so ephemeral ports of extra subflows never collide with them.
EPHEMERAL_PORTS = "10000 39999"


MPTCP_CLOSE_TIMEOUT_S = 2

# Receive buffers start at 4 MB (and may grow to 16): the paper's simulations
# have no receive-window limit. An MPTCP receiver holds what its fast
# subflows deliver while it waits for a slow or lossy subflow's data; with
# the kernel's default start (128 KB, grown by autotuning) the coupled
# algorithms, whose small per-subflow windows recover by timeout, stalled
# whole connections (FatTree(4) one_to_one, LIA with 8 subflows: 75-79 % of
# optimal and 1-2 thousand reinjected segments per run, against 87 % and
# under 100 with 4 MB). `wifi3g` sets its receiver's buffer itself.
TCP_RMEM = "4096 4194304 16777216"
STALE_LOSS_COUNT = "1000"               # see host_sysctls


# Settings a kernel may lack: left out there (net.mptcp.close_timeout came
# with Linux 6.7; Debian 12's 6.1 has none, and nothing coupled loads there;
# blackhole_timeout with 6.12, syn_retrans_before_tcp_fallback with 6.14).
OPTIONAL_SYSCTLS = ("net.mptcp.close_timeout", "net.mptcp.blackhole_timeout",
                    "net.mptcp.syn_retrans_before_tcp_fallback")


def host_sysctls(cc: str) -> dict[str, str]:
    wanted = {
        "net.mptcp.enabled": "1",
        # The userspace path manager: the harness itself opens exactly N-1
        # extra subflows per connection (with the in-kernel PM,
        # hosts that are both client and server race to add subflows).
        "net.mptcp.pm_type": "1",
        "net.ipv4.tcp_congestion_control": cc,
        "net.ipv4.ip_local_port_range": EPHEMERAL_PORTS,
        # A flow's fixed client port is reused run after run; allow it while
        # the previous connection on it sits in TIME_WAIT.
        "net.ipv4.tcp_tw_reuse": "1",
        # An orphaned MPTCP connection lingers this long (default 60 s), even
        # after its namespace is gone, holding its subflows' congestion
        # control: a coupled algorithm unregistered at the end of a run would
        # stay in the kernel until then.
        "net.mptcp.close_timeout": str(MPTCP_CLOSE_TIMEOUT_S),
        "net.ipv4.tcp_rmem": TCP_RMEM,
        # Since 6.12 a client whose SYN + MP_CAPABLE goes unanswered twice
        # retries as plain TCP, and then (blackhole detection) opens plain
        # TCP from that namespace for an hour. Both guard against middleboxes
        # that drop MPTCP options; our fabric has none, and at low link rates
        # a SYN waits behind full queues: FatTree(8) at 1.5 Mb/s lost 3 of
        # 256 connections to plain TCP this way (MPCapableSYNTXDrop 3), the
        # run flagged subflows_missing. 128: every retransmission keeps the
        # option (Documentation/networking/mptcp-sysctl.rst); 0: no blackhole
        # detection.
        "net.mptcp.syn_retrans_before_tcp_fallback": "128",
        "net.mptcp.blackhole_timeout": "0",
        # A subflow with data outstanding and no ACK for this many MPTCP-level
        # retransmission intervals is "stale": the scheduler skips it and its
        # unacknowledged data is sent again on the others (default 4, for
        # fast switch-over to a backup path). No path here ever goes dead,
        # but at low link rates a 100-packet queue holds over a second and
        # subflows wait that long routinely: FatTree(6) 4:1 at 1 Mb/s, one
        # connection per host, MPTCP-4 (docs/methodology.md, item 4) marked subflows stale 588
        # times, the receivers counted 29100 duplicate segments, and MPTCP
        # carried 42.0 Mb/s to TCP's 52.3; with 1000 (in effect never within
        # a run), 4340 duplicates and 52.5 Mb/s. The kernel's documentation
        # (mptcp-sysctl.rst): "an high value maximize links utilization".
        "net.mptcp.stale_loss_cnt": STALE_LOSS_COUNT,
    }
    return {k: v for k, v in wanted.items() if k not in OPTIONAL_SYSCTLS or sysctl_exists(k)}


RECORDED_SYSCTLS = ("net.ipv4.tcp_rmem", "net.ipv4.tcp_wmem", "net.core.rmem_max",
                    "net.core.wmem_max", "net.ipv4.tcp_congestion_control",
                    "net.mptcp.pm_type", "net.mptcp.enabled",
                    "net.mptcp.syn_retrans_before_tcp_fallback", "net.mptcp.blackhole_timeout",
                    "net.mptcp.stale_loss_cnt", "net.ipv4.tcp_notsent_lowat")


def read_sysctls(ns_pid: int | None, names=RECORDED_SYSCTLS) -> dict[str, str]:
    """Values as seen inside a namespace. /proc/sys/net resolves through the
    reading process's namespace, so the read runs inside it. One a namespace
    does not have reads "absent" (Debian 12's 6.1 shows net.core.rmem_max
    in the root namespace only; 6.18 in every namespace)."""
    script = 'for n; do sysctl -n "$n" 2>/dev/null || echo absent; done'
    done = run(["sh", "-c", script, "sh", *names], timeout=10, ns_pid=ns_pid)
    return {n: " ".join(v.split()) for n, v in zip(names, done.stdout.splitlines())}


def read_netstat(ns_pid: int, prefixes=("MPTcpExt", "TcpExt")) -> dict[str, int]:
    """The kernel's extended MIB counters (what `nstat` shows) of a namespace,
    from /proc/PID/net/netstat (the netstat file of PID's network namespace)."""
    return _read_mib(Path(f"/proc/{ns_pid}/net/netstat"), prefixes)


def read_snmp(ns_pid: int, prefixes=("Tcp",)) -> dict[str, int]:
    """The kernel's RFC MIB counters of a namespace (TcpOutSegs,
    TcpRetransSegs, ...), from /proc/PID/net/snmp."""
    return _read_mib(Path(f"/proc/{ns_pid}/net/snmp"), prefixes)


ARP_STATS = Path("/proc/net/stat/arp_cache")


def read_arp_table_stats(path: Path = ARP_STATS) -> dict[str, int]:
    """The kernel's ARP table counters, summed over CPUs: `ArpTableFulls`,
    new entries refused because the table was full, and `ArpForcedGcRuns`.
    The table is one for every namespace on the machine, and so are these.
    Read by hand: no library parses this file (a header line, then one row
    of hexadecimal columns per CPU)."""
    lines = path.read_text().split("\n")
    names = lines[0].split()
    totals = dict.fromkeys(names, 0)
    for row in lines[1:]:
        for name, value in zip(names, row.split()):
            totals[name] += int(value, 16)
    return {"ArpTableFulls": totals.get("table_fulls", 0),
            "ArpForcedGcRuns": totals.get("forced_gc_runs", 0)}


def _read_mib(path: Path, prefixes) -> dict[str, int]:
    """Lines come in pairs: "Prefix: name name ..." then "Prefix: value
    value ...". Read by hand: nstat prints the same, but would need parsing
    too, and a process per read."""
    counters: dict[str, int] = {}
    lines = path.read_text().splitlines()
    for names, values in zip(lines[::2], lines[1::2]):
        prefix, _, names = names.partition(":")
        if prefix not in prefixes:
            continue
        for n, v in zip(names.split(), values.split(":", 1)[1].split()):
            counters[prefix + n] = int(v)
    return counters


def read_dev_bytes(ns_pid: int) -> dict[str, tuple[int, int]]:
    """(received, sent) bytes of each interface of a namespace but lo, from
    /proc/PID/net/dev (the net/dev file of PID's network namespace)."""
    counts = {}
    for line in Path(f"/proc/{ns_pid}/net/dev").read_text().splitlines()[2:]:
        name, _, fields = line.partition(":")
        f = fields.split()
        if name.strip() != "lo":
            counts[name.strip()] = (int(f[0]), int(f[8]))
    return counts


# Socket states in /proc/net/{tcp,udp} by number (include/net/tcp_states.h).
TCP_STATES = {1: "ESTABLISHED", 2: "SYN_SENT", 3: "SYN_RECV", 4: "FIN_WAIT1", 5: "FIN_WAIT2",
              6: "TIME_WAIT", 7: "CLOSE", 8: "CLOSE_WAIT", 9: "LAST_ACK", 10: "LISTEN",
              11: "CLOSING", 12: "NEW_SYN_RECV"}
_TIME_WAIT, _CLOSE, _LISTEN = 6, 7, 10
# A TCP listener is TCP_LISTEN; a bound, unconnected UDP socket stays TCP_CLOSE.
_WAITING_STATE = {"tcp": _LISTEN, "udp": _CLOSE}


def _socket_table(ns_pid: int, proto: str):
    """(state, local, remote) of each IPv4 socket in a namespace's own table,
    /proc/PID/net/{proto}; addresses as the file gives them (hex ip:port)."""
    with open(f"/proc/{ns_pid}/net/{proto}") as f:
        next(f)
        for line in f:
            fields = line.split()
            yield int(fields[3], 16), fields[1], fields[2]


def listening_ports(ns_pid: int, proto: str = "tcp") -> set[int]:
    """Local ports with a socket waiting for peers in a namespace: TCP
    listeners (MPTCP listeners included: their first subflow is a TCP
    listener) or bound, unconnected UDP sockets."""
    return {int(local.rsplit(":", 1)[1], 16) for state, local, _ in _socket_table(ns_pid, proto)
            if state == _WAITING_STATE[proto]}


def tcp_sockets_open(ns_pid: int) -> list[str]:
    """The IPv4 TCP sockets a namespace still has, but TIME_WAIT ones (those
    are minisockets: no congestion control, no buffers), each as
    "STATE local -> remote" in /proc/PID/net/tcp's hex addresses. MPTCP
    subflows are TCP sockets and show here."""
    return [f"{TCP_STATES.get(state, state)} {local} -> {remote}"
            for state, local, remote in _socket_table(ns_pid, "tcp") if state != _TIME_WAIT]


def reset_connections(ns_pid: int, timeout_s: float = 5.0) -> bool:
    """Reset (`ss -K`) every connected TCP socket of a namespace, MPTCP
    subflows included, once; listeners stay (the kernel refuses to reset an
    MPTCP listener's subflow). For connections whose processes still hold
    them: the processes then see a reset instead of closing gracefully, and
    no MPTCP connection is left to close on its own as an orphan
    (docs/cleanup.md says what that has leaked). Returns whether ss
    ran to its end; what is left is for the caller to check, if it must."""
    try:
        run(["ss", "-K", "-t", "state", "connected"], timeout=timeout_s, ns_pid=ns_pid,
            check=False)
    except (CommandError, OSError):     # timed out, or the namespace is gone
        return False
    return True


def counter_delta(before: dict[str, int], after: dict[str, int]) -> dict[str, int]:
    return {k: after[k] - before.get(k, 0) for k in after if after[k] != before.get(k, 0)}
