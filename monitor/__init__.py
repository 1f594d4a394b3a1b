"""Monitors that run beside the traffic (a package: one module per monitor).

Each monitor samples in its own daemon thread on a fixed cadence (t0 + n *
interval, default 1 s) and keeps its samples in memory until written:

* `CpuMonitor`: the machine's CPU from /proc/stat (one file read) -> cpu.csv.
* `PortMonitor`: per switch port, transmitted bytes and packets, drops and
  queue backlog, from one qdisc dump per switch namespace per interval over
  an rtnetlink socket -> ports.csv; link utilisation.
* `RttMonitor`: smoothed RTT and cwnd of every TCP subflow of the watched
  connections, over one sock_diag socket per host namespace -> rtt.csv.
* `SubflowMonitor`: subflows established per watched connection, from the
  userspace path manager's records (no socket of its own) -> subflows.csv.
* `Monitors`: the bundle a run uses: start(), stop(), write(), summary().

No subprocess is started while sampling. The netlink sockets are opened
inside each namespace by start() (entering it with setns, as
kernel/mptcp_pm.py does for its generic netlink sockets) and closed by stop():
an open socket keeps its namespace alive, so none outlives its run. Messages
are built and parsed with `struct` over kernel/netlink.py's DumpSocket, as
mptcp_pm.py does. Not pyroute2: its 0.9 series wraps each socket in an
asyncio loop and decodes every attribute of every message, where a sample
needs a few fields of thousands of messages a second; so it is not a
dependency either. Every monitor
counts the CPU time its thread (and its set-up) used, so the cost of
measuring is itself reported.

Times (`t`) are seconds since the monitors started (time.monotonic()).
"""
from monitor.bundle import Monitors
from monitor.cpu import (SATURATED_PCT, SATURATED_SHARE, CpuMonitor, CpuSample, CpuTimes,
                         read_proc_stat)
from monitor.ports import (IFLA_IFNAME, IFLA_STATS_LINK_64, TC_H_ROOT, TCA_KIND, TCA_STATS2,
                           TCA_STATS_BASIC, TCA_STATS_PKT64, TCA_STATS_QUEUE, PortCounters,
                           PortMonitor, PortSample, PortUtil, Qdisc, parse_link, parse_link_stats,
                           parse_qdisc, port_counters, utilisation)
from monitor.rtt import (INET_DIAG_INFO, INET_DIAG_ULP_INFO, INET_ULP_INFO_MPTCP,
                         MPTCP_SUBFLOW_ATTR_TOKEN_LOC, SOCK_DIAG_BY_FAMILY, DiagSocket, RttMonitor,
                         RttSample, Watched, diag_lookup, diag_request, parse_diag, watched_subflows)
from monitor.sampler import MAX_ERRORS_KEPT, Sampler
from monitor.subflows import SubflowMonitor, SubflowSample

__all__ = [
    "Monitors", "SATURATED_PCT", "SATURATED_SHARE", "CpuMonitor", "CpuSample", "CpuTimes",
    "read_proc_stat", "IFLA_IFNAME", "IFLA_STATS_LINK_64", "TC_H_ROOT", "TCA_KIND", "TCA_STATS2",
    "TCA_STATS_BASIC", "TCA_STATS_PKT64", "TCA_STATS_QUEUE", "PortCounters", "PortMonitor",
    "PortSample", "PortUtil", "Qdisc", "parse_link", "parse_link_stats", "parse_qdisc",
    "port_counters", "utilisation", "INET_DIAG_INFO", "INET_DIAG_ULP_INFO", "INET_ULP_INFO_MPTCP",
    "MPTCP_SUBFLOW_ATTR_TOKEN_LOC", "SOCK_DIAG_BY_FAMILY", "DiagSocket", "RttMonitor", "RttSample",
    "Watched", "diag_lookup", "diag_request", "parse_diag", "watched_subflows", "MAX_ERRORS_KEPT",
    "Sampler", "SubflowMonitor", "SubflowSample",
]
