"""Switch ports from rtnetlink: transmitted bytes and packets, drops and
queue backlog from one qdisc dump per switch namespace -> ports.csv; link
utilisation."""
from __future__ import annotations

import socket
import statistics
import struct
from collections import defaultdict
from pathlib import Path
from typing import Iterable, NamedTuple

from kernel import netlink as nl
from monitor.sampler import Sampler, write_rows


# --- ports: rtnetlink ------------------------------------------------------------------

RTM_NEWLINK, RTM_GETLINK = 16, 18
RTM_NEWQDISC, RTM_GETQDISC = 36, 38
RTM_NEWSTATS, RTM_GETSTATS = 92, 94
IFLA_IFNAME = 3
IFF_LOOPBACK = 0x8
IFLA_STATS_LINK_64 = 1        # RTM_GETSTATS attribute: struct rtnl_link_stats64
TCA_KIND = 1
TCA_STATS2 = 7
TCA_STATS_BASIC = 1           # struct gnet_stats_basic {u64 bytes; u32 packets}
TCA_STATS_QUEUE = 3           # struct gnet_stats_queue {qlen backlog drops requeues overlimits}
TCA_STATS_PKT64 = 8           # u64 packets, when they no longer fit the u32 above
TC_H_ROOT = 0xFFFFFFFF

_IFINFOMSG = struct.Struct("=BxHiII")     # family, type, index, flags, change
_IF_STATS_MSG = struct.Struct("=BxxxII")  # family, ifindex, filter_mask
_TCMSG = struct.Struct("=BxxxiIII")       # family, ifindex, handle, parent, info
_STATS64_TX = struct.Struct("=QQQQ")      # rx_packets tx_packets rx_bytes tx_bytes
_GNET_BASIC = struct.Struct("=QI")
_GNET_QUEUE = struct.Struct("=IIIII")
_U64 = struct.Struct("=Q")


class Qdisc(NamedTuple):
    ifindex: int
    handle: int
    parent: int
    kind: str
    qlen: int          # packets queued now
    drops: int         # cumulative
    bytes: int = 0     # cumulative, handed on (to the device, for a root qdisc)
    packets: int = 0


class PortCounters(NamedTuple):
    tx_bytes: int
    tx_packets: int
    drops: int
    backlog_pkts: int


def parse_link(body: bytes) -> tuple[int, str, int]:
    """RTM_NEWLINK payload -> (ifindex, name, flags)."""
    _fam, _type, index, flags, _change = _IFINFOMSG.unpack_from(body)
    at = nl.attr_at(body, _IFINFOMSG.size, len(body), IFLA_IFNAME)
    name = body[at[0]:at[1]].rstrip(b"\0").decode() if at else ""
    return index, name, flags


def parse_link_stats(body: bytes) -> tuple[int, int, int] | None:
    """RTM_NEWSTATS payload -> (ifindex, tx_bytes, tx_packets), or None
    without 64-bit link stats."""
    _fam, index, _mask = _IF_STATS_MSG.unpack_from(body)
    at = nl.attr_at(body, _IF_STATS_MSG.size, len(body), IFLA_STATS_LINK_64)
    if at is None or at[1] - at[0] < _STATS64_TX.size:
        return None
    _rxp, tx_packets, _rxb, tx_bytes = _STATS64_TX.unpack_from(body, at[0])
    return index, tx_bytes, tx_packets


def parse_qdisc(body: bytes) -> Qdisc:
    """RTM_NEWQDISC payload -> its kind, place in the tree, counters and backlog."""
    _fam, index, handle, parent, _info = _TCMSG.unpack_from(body)
    end = len(body)
    at = nl.attr_at(body, _TCMSG.size, end, TCA_KIND)
    kind = body[at[0]:at[1]].rstrip(b"\0").decode() if at else ""
    qlen = drops = nbytes = packets = 0
    stats = nl.attr_at(body, _TCMSG.size, end, TCA_STATS2)
    if stats:
        at = nl.attr_at(body, *stats, TCA_STATS_QUEUE)
        if at and at[1] - at[0] >= _GNET_QUEUE.size:
            qlen, _backlog_bytes, drops, _requeues, _overlimits = _GNET_QUEUE.unpack_from(body, at[0])
        at = nl.attr_at(body, *stats, TCA_STATS_BASIC)
        if at and at[1] - at[0] >= _GNET_BASIC.size:
            nbytes, packets = _GNET_BASIC.unpack_from(body, at[0])
        at = nl.attr_at(body, *stats, TCA_STATS_PKT64)
        if at and at[1] - at[0] >= _U64.size:
            (packets,) = _U64.unpack_from(body, at[0])
    return Qdisc(index, handle, parent, kind, qlen, drops, nbytes, packets)


def counts_tx(q: Qdisc) -> bool:
    """Whether a root qdisc sees every packet its interface sends: `noqueue`
    (a virtual device's default) hands packets straight to the driver and
    counts nothing."""
    return q.kind not in ("", "noqueue")


def port_counters(names: dict[int, str], qdiscs: list[Qdisc],
                  device_tx: dict[int, tuple[int, int]] | None = None) -> dict[str, PortCounters]:
    """One namespace's qdisc dump, per interface name.

    tx bytes and packets are the root qdisc's: every packet the interface
    sends passes through it, so they are what the device was handed (equal
    to its own tx counters but for the packet in hand). `device_tx`
    (ifindex -> (bytes, packets) from the device) stands in where the root
    qdisc counts nothing (noqueue).

    Drops are the root qdisc's: HTB counts a packet its child pfifo refused
    (htb_enqueue: `if (net_xmit_drop_count(ret)) qdisc_qstats_drop(sch)`)
    as well as its own drops, so the root's count is every packet the
    interface's egress dropped.

    The backlog is the leaf queues' (in our links the pfifo under class 1:1,
    the queue whose `limit` is --queue): that is the quantity the configured
    queue length bounds. HTB's root qlen counts the same packets again (it
    goes up and down with every enqueue into and dequeue from its classes)
    plus its own direct queue, which `default 1` leaves empty; so here the
    two agree, but with several classes the root would be the sum of several
    queues, none of which it bounds. An interface with no child qdisc (no
    shaping) reports its root qdisc's qlen.
    """
    by_if: dict[int, list[Qdisc]] = defaultdict(list)
    for q in qdiscs:
        by_if[q.ifindex].append(q)
    device_tx = device_tx or {}
    out = {}
    for index, name in names.items():
        tree = by_if.get(index, [])
        root = next((q for q in tree if q.parent == TC_H_ROOT), None)
        children = [q for q in tree if q.parent != TC_H_ROOT]
        # A leaf: a child qdisc no other qdisc hangs under (major handle numbers).
        inner = {q.parent >> 16 for q in children}
        leaves = [q for q in children if q.handle >> 16 not in inner]
        backlog = sum(q.qlen for q in leaves) if leaves else (root.qlen if root else 0)
        if root is not None and counts_tx(root):
            tx_bytes, tx_packets = root.bytes, root.packets
        else:
            tx_bytes, tx_packets = device_tx.get(index, (0, 0))
        out[name] = PortCounters(tx_bytes, tx_packets, root.drops if root else 0, backlog)
    return out


class _RtnlNode:
    """The rtnetlink socket of one switch namespace and its interface names."""

    def __init__(self, ns_pid: int):
        self.nl = nl.DumpSocket(ns_pid, nl.NETLINK_ROUTE)
        try:
            self.names = self._names()
            # Interfaces whose root qdisc does not count what they send: only
            # for them (none with our shaping) are the device counters read.
            self.uncounted = set(self.names) - {q.ifindex for q in self._qdiscs()
                                                if q.parent == TC_H_ROOT and counts_tx(q)}
        except BaseException:
            self.nl.close()
            raise

    def _names(self) -> dict[int, str]:
        """ifindex -> name of every interface but loopback (read once: a
        switch's interfaces do not change while it runs)."""
        names = {}
        for kind, body in self.nl.dump(RTM_GETLINK, _IFINFOMSG.pack(socket.AF_UNSPEC, 0, 0, 0, 0)):
            if kind == RTM_NEWLINK:
                index, name, flags = parse_link(body)
                if not flags & IFF_LOOPBACK:
                    names[index] = name
        return names

    def _qdiscs(self) -> list[Qdisc]:
        return [parse_qdisc(body) for kind, body in
                self.nl.dump(RTM_GETQDISC, _TCMSG.pack(socket.AF_UNSPEC, 0, 0, 0, 0))
                if kind == RTM_NEWQDISC]

    def _device_tx(self) -> dict[int, tuple[int, int]]:
        tx = {}
        for kind, body in self.nl.dump(RTM_GETSTATS,
                                       _IF_STATS_MSG.pack(socket.AF_UNSPEC, 0, 1 << (IFLA_STATS_LINK_64 - 1))):
            parsed = parse_link_stats(body) if kind == RTM_NEWSTATS else None
            if parsed:
                tx[parsed[0]] = parsed[1:]
        return tx

    def read(self) -> dict[str, PortCounters]:
        """One qdisc dump (plus the devices' counters if some root qdisc
        counts nothing)."""
        qdiscs = self._qdiscs()
        return port_counters(self.names, qdiscs, self._device_tx() if self.uncounted else None)

    def close(self) -> None:
        self.nl.close()


class PortSample(NamedTuple):
    t: float              # when this node was read, seconds since the start
    node: str
    intf: str
    tx_bytes: int         # cumulative, what the port sent (frames with their Ethernet header)
    tx_packets: int       # cumulative
    drops: int            # cumulative, packets the interface's egress qdiscs dropped
    backlog_pkts: int     # packets in the egress queue at that moment


class PortUtil(NamedTuple):
    t: float              # end of the interval
    node: str
    intf: str
    fraction: float       # bytes sent in the interval / (interval * link rate)


def utilisation(samples: Iterable[PortSample], bw_mbps: float) -> list[PortUtil]:
    """Per port and interval: bytes transmitted * 8 / measured interval / rate.

    The interval is the time between the two reads of that port (not the
    nominal sampling interval), so a late sample does not look like a burst.
    tx_bytes counts each frame as HTB's rate does (skb->len: Ethernet header
    included, no preamble or FCS), so 1.0 is exactly the shaped rate.
    """
    rate_bytes_s = bw_mbps * 1e6 / 8
    last: dict[tuple[str, str], PortSample] = {}
    out = []
    for s in samples:
        prev = last.get((s.node, s.intf))
        if prev is not None and s.t > prev.t:
            out.append(PortUtil(s.t, s.node, s.intf,
                                (s.tx_bytes - prev.tx_bytes) / (s.t - prev.t) / rate_bytes_s))
        last[(s.node, s.intf)] = s
    return out


class PortMonitor(Sampler):
    """Every interface of every switch namespace, each interval: tx bytes and
    packets, egress drops and queue backlog. `ports` maps a switch name to
    the PID of a process in its namespace (Fabric.pid(switch)); `bw_mbps` is
    the link rate utilisation is measured against (summary() needs it)."""

    thread_name = "port-monitor"

    def __init__(self, ports: dict[str, int], interval_s: float = 1.0, bw_mbps: float | None = None):
        self._init_sampler(interval_s)
        self.ports = dict(ports)
        self.bw_mbps = bw_mbps
        self.samples: list[PortSample] = []
        self._nodes: dict[str, _RtnlNode] = {}

    def open(self) -> None:
        """One netlink socket per namespace: on the openflow fabric all the
        switches share one, and each interface belongs to the switch its
        name starts with (`<switch>-eth<port>`)."""
        try:
            by_pid: dict[int, _RtnlNode] = {}
            for node, pid in self.ports.items():
                if node not in self._nodes:
                    if pid not in by_pid:
                        by_pid[pid] = _RtnlNode(pid)
                    self._nodes[node] = by_pid[pid]
        except BaseException:
            self.close()
            raise

    def close(self) -> None:
        nodes, self._nodes = self._nodes, {}
        for n in {id(n): n for n in nodes.values()}.values():
            n.close()

    def _reset(self) -> None:
        self.samples = []

    def _owners(self) -> list[tuple[_RtnlNode, list[str]]]:
        """Each namespace's socket and the switches it holds."""
        shared: dict[int, tuple[_RtnlNode, list[str]]] = {}
        for node, rt in self._nodes.items():
            shared.setdefault(id(rt), (rt, []))[1].append(node)
        return list(shared.values())

    @staticmethod
    def _owner(intf: str, nodes: list[str]) -> str | None:
        if len(nodes) == 1:
            return nodes[0]
        node, sep, _ = intf.rpartition("-eth")   # not the bridges' own taps
        return node if sep and node in nodes else None

    def read(self, node: str) -> dict[str, PortCounters]:
        """The counters of one switch now (sockets must be open: call it
        between open() and close() when the monitor is not running)."""
        rt = self._nodes[node]
        nodes = [n for n, other in self._nodes.items() if other is rt]
        return {i: c for i, c in rt.read().items() if self._owner(i, nodes) == node}

    def _sample(self) -> None:
        for rt, nodes in self._owners():
            t = self.now()   # per namespace: the kernel reads the counters at the request
            for intf, c in rt.read().items():
                node = self._owner(intf, nodes)
                if node is not None:
                    self.samples.append(PortSample(t, node, intf, *c))

    # -- results -----------------------------------------------------------
    def utilisation(self, bw_mbps: float | None = None) -> list[PortUtil]:
        """Per port and interval utilisation (a fraction of the link rate)."""
        bw = bw_mbps or self.bw_mbps
        if not bw:
            raise ValueError("utilisation needs the link rate (bw_mbps)")
        return utilisation(self.samples, bw)

    def mean_utilisation(self, bw_mbps: float | None = None) -> dict[tuple[str, str], float]:
        """(node, intf) -> mean utilisation between the first and last sample."""
        per_port: dict[tuple[str, str], list[float]] = defaultdict(list)
        for u in self.utilisation(bw_mbps):
            per_port[(u.node, u.intf)].append(u.fraction)
        return {k: statistics.fmean(v) for k, v in per_port.items()}

    def summary(self, from_s: float = 0.0) -> dict:
        """Utilisation, backlog and drops over the samples taken at or after
        `from_s` (e.g. the end of a warm-up)."""
        samples = [s for s in self.samples if s.t >= from_s]
        util = [u.fraction for u in utilisation(samples, self.bw_mbps)] if self.bw_mbps else []
        backlog = [s.backlog_pkts for s in samples]
        first: dict[tuple[str, str], PortSample] = {}
        last: dict[tuple[str, str], PortSample] = {}
        for s in samples:
            first.setdefault((s.node, s.intf), s)
            last[(s.node, s.intf)] = s
        return {
            "ports": len(last),
            "util_mean_pct": round(100 * statistics.fmean(util), 3) if util else None,
            "util_max_pct": round(100 * max(util), 3) if util else None,
            "backlog_mean_pkts": round(statistics.fmean(backlog), 3) if backlog else None,
            "backlog_max_pkts": max(backlog) if backlog else None,
            "drops": sum(last[k].drops - first[k].drops for k in last),
        }

    def write_csv(self, path: Path) -> None:
        write_rows(path, ["t_s", *PortSample._fields[1:]], ([round(s.t, 3), *s[1:]] for s in self.samples))
