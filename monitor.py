"""Monitors that run beside the traffic.

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
are built and parsed with `struct`, like mptcp_pm.py does (pyroute2 0.9 would
wrap each socket in an asyncio loop and decode every attribute of every
message; the few fields needed here are clearer spelled out). Every monitor
counts the CPU time its thread (and its set-up) used, so the cost of
measuring is itself reported.

Times (`t`) are seconds since the monitors started (time.monotonic()).
"""
from __future__ import annotations

import csv
import math
import socket
import statistics
import struct
import threading
import time
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable, NamedTuple

from kernel import netlink as nl

# A run is "cpu_saturated" when every core is above SATURATED_PCT busy in more
# than SATURATED_SHARE of the samples: past that, the emulator, not the
# network, decides the results (the CS244 '13 reproduction).
SATURATED_PCT = 90.0
SATURATED_SHARE = 0.10

MAX_ERRORS_KEPT = 10   # a failing sampler keeps the first few messages, counts the rest


# --- the sampling thread ------------------------------------------------------

class _Sampler:
    """A daemon thread calling `_sample()` every `interval_s` seconds.

    start() opens what the monitor needs (sockets) and starts the thread;
    stop() joins it and closes them. A sample that raises is counted in
    `errors` (reported in the summary) and the next one is tried: a monitor
    must not end a run, and it must not fail unseen either.
    """

    thread_name = "monitor"

    def _init_sampler(self, interval_s: float) -> None:
        if not interval_s > 0:
            raise ValueError(f"interval_s={interval_s}: must be positive")
        self.interval_s = interval_s
        self.cpu_s = 0.0          # CPU time of the thread plus open(), seconds
        self.wall_s = 0.0         # from start() to stop()
        self.errors: list[str] = []
        self.error_count = 0
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._t0 = 0.0
        self._started = 0.0
        self._thread_cpu_s = 0.0

    # hooks for subclasses
    def open(self) -> None:
        """Acquire what sampling needs (e.g. sockets); start() calls it."""

    def close(self) -> None:
        """Release it; stop() calls it. Idempotent."""

    def _reset(self) -> None:
        """Forget the previous run's samples."""

    def _begin(self) -> None:
        """First thing the thread does (e.g. a reference reading)."""

    def _sample(self) -> None:
        raise NotImplementedError

    # lifecycle
    def start(self, t0: float | None = None) -> None:
        """Start sampling. `t0` (a time.monotonic() value) lets several
        monitors share one time origin."""
        if self._thread is not None:
            raise RuntimeError(f"{self.thread_name} is already running")
        self._reset()
        self.errors, self.error_count, self._thread_cpu_s = [], 0, 0.0
        c0 = time.thread_time()
        self.open()
        self.cpu_s = time.thread_time() - c0      # set-up counts as cost too
        self._t0 = time.monotonic() if t0 is None else t0
        self._started = time.monotonic()
        self._stop.clear()
        self._thread = threading.Thread(target=self._loop, name=self.thread_name, daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        try:
            if self._thread:
                self._thread.join(timeout=5)
                self.wall_s = time.monotonic() - self._started
                self.cpu_s += self._thread_cpu_s
                self._thread = None
        finally:
            self.close()

    def now(self) -> float:
        """Seconds since the time origin."""
        return time.monotonic() - self._t0

    def _loop(self) -> None:
        c0 = time.thread_time()
        try:
            try:
                self._begin()
            except Exception as exc:
                self._error(exc)
            n = 1
            while not self._stop.wait(max(0.0, self._t0 + n * self.interval_s - time.monotonic())):
                try:
                    self._sample()
                except Exception as exc:
                    self._error(exc)
                # The next slot after now: a late sample skips slots rather
                # than bunching the following ones together.
                n = max(n + 1, math.floor(self.now() / self.interval_s) + 1)
        finally:
            self._thread_cpu_s = time.thread_time() - c0

    def _error(self, exc: Exception) -> None:
        self.error_count += 1
        if len(self.errors) < MAX_ERRORS_KEPT:
            self.errors.append(f"t={self.now():.1f}: {type(exc).__name__}: {exc}")


# --- CPU ------------------------------------------------------------------------

@dataclass
class CpuSample:
    t: float                  # seconds since the monitor started
    cores_busy_pct: list[float]
    user_pct: float           # machine-wide shares of all cores' time
    system_pct: float
    softirq_pct: float

    @property
    def busy_pct(self) -> float:
        return sum(self.cores_busy_pct) / len(self.cores_busy_pct)


def read_proc_stat(path: str = "/proc/stat") -> dict[str, list[int]]:
    """Jiffy counters of every `cpuN` line (and the `cpu` total)."""
    counters = {}
    with open(path) as f:
        for line in f:
            if not line.startswith("cpu"):
                break
            name, *values = line.split()
            counters[name] = [int(v) for v in values]
    return counters


class CpuTimes(NamedTuple):
    """Jiffies one `cpu` line of /proc/stat advanced between two snapshots.
    Only the first 8 fields: guest time is already counted in user."""
    user: int
    nice: int
    system: int
    idle: int
    iowait: int
    irq: int
    softirq: int
    steal: int

    @classmethod
    def between(cls, before: list[int], after: list[int]) -> "CpuTimes":
        return cls(*(a - b for a, b in zip(after[:8], before[:8])))

    @property
    def total(self) -> int:
        return sum(self)

    @property
    def busy(self) -> int:
        """All but idle and iowait (steal included: the core was not ours to idle)."""
        return self.total - self.idle - self.iowait

    def pct(self, jiffies: int) -> float:
        """`jiffies` as a percent of all the time that passed."""
        return 100.0 * jiffies / (self.total or 1)


def _busy_share(before: list[int], after: list[int]) -> tuple[float, float, float, float]:
    """(busy, user, system, softirq) percent between two counter snapshots."""
    d = CpuTimes.between(before, after)
    return d.pct(d.busy), d.pct(d.user + d.nice), d.pct(d.system + d.irq), d.pct(d.softirq)


@dataclass
class CpuMonitor(_Sampler):
    """The whole machine's CPU: one /proc/stat read per interval."""
    interval_s: float = 1.0
    samples: list[CpuSample] = field(default_factory=list)

    thread_name = "cpu-monitor"

    def __post_init__(self):
        self._init_sampler(self.interval_s)
        self._prev: dict[str, list[int]] = {}

    def _reset(self) -> None:
        self.samples = []

    def _begin(self) -> None:
        self._prev = read_proc_stat()

    def _sample(self) -> None:
        cur, prev = read_proc_stat(), self._prev
        cores = sorted(n for n in cur if n != "cpu")
        _, user, system, softirq = _busy_share(prev["cpu"], cur["cpu"])
        self.samples.append(CpuSample(
            t=round(self.now(), 3),
            cores_busy_pct=[round(_busy_share(prev[c], cur[c])[0], 1) for c in cores],
            user_pct=round(user, 1), system_pct=round(system, 1), softirq_pct=round(softirq, 1)))
        self._prev = cur

    # -- summaries ---------------------------------------------------------
    def mean_pct(self) -> float | None:
        if not self.samples:
            return None
        return round(sum(s.busy_pct for s in self.samples) / len(self.samples), 1)

    def saturated(self) -> bool:
        if not self.samples:
            return False
        hot = sum(1 for s in self.samples if min(s.cores_busy_pct) > SATURATED_PCT)
        return hot > SATURATED_SHARE * len(self.samples)

    def write_csv(self, path: Path) -> None:
        with open(path, "w", newline="") as f:
            w = csv.writer(f)
            n = len(self.samples[0].cores_busy_pct) if self.samples else 0
            w.writerow(["t_s", "busy_pct", "user_pct", "system_pct", "softirq_pct",
                        *(f"cpu{i}_busy_pct" for i in range(n))])
            for s in self.samples:
                w.writerow([s.t, round(s.busy_pct, 1), s.user_pct, s.system_pct, s.softirq_pct,
                            *s.cores_busy_pct])


# --- netlink plumbing -------------------------------------------------------------

NETLINK_ROUTE = 0
NETLINK_SOCK_DIAG = 4
NLM_F_REQUEST = 0x01
NLM_F_DUMP = 0x300            # NLM_F_ROOT | NLM_F_MATCH
NLMSG_ERROR = 2
NLMSG_DONE = 3
_NLMSGHDR = struct.Struct("=IHHII")   # len, type, flags, seq, portid
_DUMP_TIMEOUT_S = 2.0
_RECV_BYTES = 1 << 16         # above the kernel's 32 KiB dump chunks
REQUESTS_PER_SEND = 32        # sock_diag replies are ~0.5 KB (a few KB of buffer each)


class _Netlink:
    """One netlink socket created inside a namespace, for dumps and batches
    of single requests.

    Used by one thread at a time (the sampler's, or the caller's when the
    monitor is not running)."""

    def __init__(self, ns_pid: int, protocol: int):
        self.sock = nl.socket_in_netns(ns_pid, protocol)
        try:
            self.sock.bind((0, 0))
            self.sock.settimeout(_DUMP_TIMEOUT_S)
        except BaseException:
            self.sock.close()
            raise
        self.seq = 0

    def _next_seq(self) -> int:
        self.seq = (self.seq + 1) & 0xFFFFFFFF or 1
        return self.seq

    def dump(self, msg_type: int, payload: bytes) -> list[tuple[int, bytes]]:
        """Send a dump request; return (type, payload) of every reply message."""
        seq = self._next_seq()
        self.sock.send(_NLMSGHDR.pack(_NLMSGHDR.size + len(payload), msg_type,
                                      NLM_F_REQUEST | NLM_F_DUMP, seq, 0) + payload)
        replies = []
        while True:
            for kind, flags, mseq, body in nl.split_messages(self.sock.recv(_RECV_BYTES)):
                if mseq != seq:
                    continue  # the tail of an earlier exchange that timed out
                if kind == NLMSG_DONE:
                    return replies
                if kind == NLMSG_ERROR:
                    err, _, text = nl.parse_error(flags, body)
                    if err:
                        raise OSError(err, f"netlink dump {msg_type}: {text}".rstrip(": "))
                    continue
                replies.append((kind, body))

    def requests(self, msg_type: int, payloads: list[bytes]) -> list[bytes | int]:
        """One non-dump request per payload; return, in order, each one's
        reply payload or, for a request that failed, its errno.

        Requests go REQUESTS_PER_SEND to a datagram (the kernel handles each
        message of a datagram in turn): one system call instead of one per
        request, and few enough replies at a time to fit the receive buffer
        (a reply that does not fit is dropped)."""
        out: list[bytes | int] = []
        for i in range(0, len(payloads), REQUESTS_PER_SEND):
            out += self._request_batch(msg_type, payloads[i:i + REQUESTS_PER_SEND])
        return out

    def _request_batch(self, msg_type: int, payloads: list[bytes]) -> list[bytes | int]:
        seqs = [self._next_seq() for _ in payloads]
        self.sock.send(b"".join(
            _NLMSGHDR.pack(_NLMSGHDR.size + len(p), msg_type, NLM_F_REQUEST, seq, 0) + p
            for seq, p in zip(seqs, payloads)))
        index = {seq: i for i, seq in enumerate(seqs)}
        replies: list[bytes | int | None] = [None] * len(payloads)
        pending = len(payloads)
        while pending:
            for kind, flags, seq, body in nl.split_messages(self.sock.recv(_RECV_BYTES)):
                i = index.get(seq)
                if i is None or replies[i] is not None:
                    continue  # an earlier exchange's late reply
                if kind == NLMSG_ERROR:
                    err, _, _ = nl.parse_error(flags, body)
                    if not err:
                        continue  # an ack, which was not asked for
                    replies[i] = err
                else:
                    replies[i] = body
                pending -= 1
        return replies

    def close(self) -> None:
        self.sock.close()


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
NLA_TYPE_MASK = 0x3FFF

_NLA = struct.Struct("=HH")               # len, type
_IFINFOMSG = struct.Struct("=BxHiII")     # family, type, index, flags, change
_IF_STATS_MSG = struct.Struct("=BxxxII")  # family, ifindex, filter_mask
_TCMSG = struct.Struct("=BxxxiIII")       # family, ifindex, handle, parent, info
_STATS64_TX = struct.Struct("=QQQQ")      # rx_packets tx_packets rx_bytes tx_bytes
_GNET_BASIC = struct.Struct("=QI")
_GNET_QUEUE = struct.Struct("=IIIII")
_U32 = struct.Struct("=I")
_U64 = struct.Struct("=Q")


def _attr_at(buf: bytes, start: int, end: int, kind: int) -> tuple[int, int] | None:
    """(start, end) of the payload of the first attribute `kind` among the
    attributes in buf[start:end]. Offsets, not slices: the samplers parse
    thousands of messages a second and only need a few fields of each."""
    while start + 4 <= end:
        length, k = _NLA.unpack_from(buf, start)
        if length < 4:
            return None
        if k & NLA_TYPE_MASK == kind:
            return start + 4, min(start + length, end)
        start += (length + 3) & ~3
    return None


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
    at = _attr_at(body, _IFINFOMSG.size, len(body), IFLA_IFNAME)
    name = body[at[0]:at[1]].rstrip(b"\0").decode() if at else ""
    return index, name, flags


def parse_link_stats(body: bytes) -> tuple[int, int, int] | None:
    """RTM_NEWSTATS payload -> (ifindex, tx_bytes, tx_packets), or None
    without 64-bit link stats."""
    _fam, index, _mask = _IF_STATS_MSG.unpack_from(body)
    at = _attr_at(body, _IF_STATS_MSG.size, len(body), IFLA_STATS_LINK_64)
    if at is None or at[1] - at[0] < _STATS64_TX.size:
        return None
    _rxp, tx_packets, _rxb, tx_bytes = _STATS64_TX.unpack_from(body, at[0])
    return index, tx_bytes, tx_packets


def parse_qdisc(body: bytes) -> Qdisc:
    """RTM_NEWQDISC payload -> its kind, place in the tree, counters and backlog."""
    _fam, index, handle, parent, _info = _TCMSG.unpack_from(body)
    end = len(body)
    at = _attr_at(body, _TCMSG.size, end, TCA_KIND)
    kind = body[at[0]:at[1]].rstrip(b"\0").decode() if at else ""
    qlen = drops = nbytes = packets = 0
    stats = _attr_at(body, _TCMSG.size, end, TCA_STATS2)
    if stats:
        at = _attr_at(body, *stats, TCA_STATS_QUEUE)
        if at and at[1] - at[0] >= _GNET_QUEUE.size:
            qlen, _backlog_bytes, drops, _requeues, _overlimits = _GNET_QUEUE.unpack_from(body, at[0])
        at = _attr_at(body, *stats, TCA_STATS_BASIC)
        if at and at[1] - at[0] >= _GNET_BASIC.size:
            nbytes, packets = _GNET_BASIC.unpack_from(body, at[0])
        at = _attr_at(body, *stats, TCA_STATS_PKT64)
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
        self.nl = _Netlink(ns_pid, NETLINK_ROUTE)
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


class PortMonitor(_Sampler):
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
            "util_mean_pct": _round(100 * statistics.fmean(util)) if util else None,
            "util_max_pct": _round(100 * max(util)) if util else None,
            "backlog_mean_pkts": _round(statistics.fmean(backlog)) if backlog else None,
            "backlog_max_pkts": max(backlog) if backlog else None,
            "drops": sum(last[k].drops - first[k].drops for k in last),
        }

    def write_csv(self, path: Path) -> None:
        with open(path, "w", newline="") as f:
            w = csv.writer(f)
            w.writerow(["t_s", *PortSample._fields[1:]])
            for s in self.samples:
                w.writerow([round(s.t, 3), *s[1:]])


# --- RTT: sock_diag ------------------------------------------------------------------

SOCK_DIAG_BY_FAMILY = 20
INET_DIAG_INFO = 2            # struct tcp_info
INET_DIAG_ULP_INFO = 19       # nested: the ULP's name and its own info
INET_ULP_INFO_MPTCP = 3       # nested MPTCP_SUBFLOW_ATTR_*
MPTCP_SUBFLOW_ATTR_TOKEN_LOC = 2   # u32: the local token of the subflow's MPTCP connection
TCP_ESTABLISHED = 1
INET_DIAG_NOCOOKIE = 0xFFFFFFFF   # an exact lookup by address and port, no cookie check

# inet_diag_req_v2: family, protocol, ext, pad, states, then an inet_diag_sockid
# (zeros: every socket) of 48 bytes.
_DIAG_REQ = struct.Struct("=BBBxI48x")
# inet_diag_msg: family state timer retrans, sockid {sport dport (big-endian)
# src[16] dst[16] if cookie[2]}, expires rqueue wqueue uid inode.
_DIAG_MSG = struct.Struct("=BBBB2s2s16s16sI8sIIIII")
# struct tcp_info up to tcpi_snd_cwnd: tcpi_rtt (smoothed RTT, us) is at
# offset 68 and tcpi_snd_cwnd (segments) at 80 (include/uapi/linux/tcp.h).
_TCPI_RTT_OFF, _TCPI_CWND_OFF = 68, 80


class DiagSocket(NamedTuple):
    saddr: str
    sport: int
    daddr: str
    dport: int
    token: int | None     # local MPTCP token of the connection (None: not an MPTCP subflow)
    rtt_us: int           # tcpi_rtt: smoothed RTT
    cwnd: int             # tcpi_snd_cwnd, segments
    state: int = TCP_ESTABLISHED

    @property
    def key(self) -> tuple[str, int, str, int]:
        return self.saddr, self.sport, self.daddr, self.dport


def diag_request(states: int = 1 << TCP_ESTABLISHED) -> bytes:
    """Every IPv4 TCP socket in `states`, with tcp_info (and the ULP info
    it brings along for a caller with CAP_NET_ADMIN)."""
    return _DIAG_REQ.pack(socket.AF_INET, socket.IPPROTO_TCP, 1 << (INET_DIAG_INFO - 1), states)


def diag_lookup(saddr: str, sport: int, daddr: str, dport: int) -> bytes:
    """A request for the one IPv4 TCP socket saddr:sport -> daddr:dport
    (local -> remote): a hash lookup in the kernel, where a dump walks the
    whole established-socket table, which every namespace shares."""
    return (struct.pack("=BBBxI", socket.AF_INET, socket.IPPROTO_TCP, 1 << (INET_DIAG_INFO - 1), 0)
            + struct.pack("!HH", sport, dport)
            + socket.inet_aton(saddr) + bytes(12) + socket.inet_aton(daddr) + bytes(12)
            + struct.pack("=III", 0, INET_DIAG_NOCOOKIE, INET_DIAG_NOCOOKIE))


def parse_diag(body: bytes) -> DiagSocket | None:
    """SOCK_DIAG_BY_FAMILY reply -> the socket, or None if it is not IPv4 or
    carries no tcp_info."""
    (family, state, _timer, _retrans, sport, dport, src, dst,
     _if, _cookie, _expires, _rq, _wq, _uid, _inode) = _DIAG_MSG.unpack_from(body)
    if family != socket.AF_INET:
        return None
    end = len(body)
    info = _attr_at(body, _DIAG_MSG.size, end, INET_DIAG_INFO)
    if info is None or info[1] - info[0] < _TCPI_CWND_OFF + 4:
        return None
    (rtt_us,) = _U32.unpack_from(body, info[0] + _TCPI_RTT_OFF)
    (cwnd,) = _U32.unpack_from(body, info[0] + _TCPI_CWND_OFF)
    token = None
    at = _attr_at(body, _DIAG_MSG.size, end, INET_DIAG_ULP_INFO)
    if at:
        at = _attr_at(body, *at, INET_ULP_INFO_MPTCP)
    if at:
        at = _attr_at(body, *at, MPTCP_SUBFLOW_ATTR_TOKEN_LOC)
    if at and at[1] - at[0] >= 4:
        (token,) = _U32.unpack_from(body, at[0])
    return DiagSocket(socket.inet_ntop(socket.AF_INET, src[:4]), int.from_bytes(sport, "big"),
                      socket.inet_ntop(socket.AF_INET, dst[:4]), int.from_bytes(dport, "big"),
                      token, rtt_us, cwnd, state)


class Watched(NamedTuple):
    """A connection to watch, as the sender sees it. Any object with these
    attributes (e.g. harness.traffic.FlowEndpoints) can be given to watch()."""
    src: str
    dst: str
    src_ip: str
    client_port: int
    dst_ip: str
    server_port: int

    @classmethod
    def of(cls, flow) -> "Watched":
        return cls(flow.src, flow.dst, flow.src_ip, int(flow.client_port),
                   flow.dst_ip, int(flow.server_port))


def watched_subflows(flow: Watched, sockets: list[DiagSocket],
                     token: int | None = None) -> tuple[list[DiagSocket], int | None]:
    """The TCP subflows of `flow`'s data connection among a host's sockets,
    and the MPTCP token that identifies it.

    The data connection's first subflow is the socket bound to the flow's
    client port (iperf3's control connection goes to the same server
    address and port, from an ephemeral port: matching the destination alone
    would take it too). The extra subflows have ephemeral ports as well, but
    carry the first subflow's MPTCP token. `token` is the one learnt from an
    earlier sample, in case the first subflow has closed since. A socket
    without a token is plain TCP: the connection is that socket alone.
    """
    first = next((s for s in sockets if s.sport == flow.client_port and s.saddr == flow.src_ip
                  and s.dport == flow.server_port and s.daddr == flow.dst_ip), None)
    if first is not None and first.token is not None:
        token = first.token
    if token is None:
        return ([first] if first is not None else []), None
    return [s for s in sockets if s.token == token], token


class RttSample(NamedTuple):
    t: float
    src: str
    dst: str
    client_port: int
    subflow_local_port: int
    rtt_ms: float         # tcpi_rtt: the kernel's smoothed RTT of the subflow
    cwnd: int             # segments


class RttMonitor(_Sampler):
    """Smoothed RTT and cwnd of every subflow of the watched connections,
    read with sock_diag in each sending host's namespace. `hosts` maps a host
    name to the PID of a process in its namespace; watch() names the
    connections (call it before start(), once per run).

    Finding the subflows takes a dump of the host's sockets, and a sock_diag
    dump walks the kernel's whole established-socket hash table, which all
    namespaces share (262144 buckets here: ~0.3 ms per dump, whatever the
    namespace holds). So a host is dumped only to discover its watched
    subflows: at the first sample, after a subflow has gone, while fewer
    subflows than expected are known during the first REDISCOVER_S seconds,
    and every REDISCOVER_S seconds after that if the expected count is
    unknown or not reached. Otherwise each known subflow is read by an exact
    lookup (a hash lookup by address and port), all of a host's in one
    datagram.
    """

    thread_name = "rtt-monitor"
    REDISCOVER_S = 5.0

    def __init__(self, hosts: dict[str, int], interval_s: float = 1.0):
        self._init_sampler(interval_s)
        self.hosts = dict(hosts)
        self.samples: list[RttSample] = []
        self.dumps = 0            # full dumps done since start(): discovery cost
        self._by_src: dict[str, list[Watched]] = {}
        self._expected: int | None = None
        self._socks: dict[str, _Netlink] = {}
        self._reset()

    def watch(self, flows: Iterable, subflows: int | None = None) -> None:
        """Watch these connections (FlowEndpoints or Watched), replacing the
        last set. `subflows`: how many each should have (1: plain TCP), if
        known; it spares dumps once they are all found."""
        by_src: dict[str, list[Watched]] = defaultdict(list)
        for f in flows:
            w = Watched.of(f)
            if w.src not in self.hosts:
                raise ValueError(f"{w.src} is not one of the monitored hosts")
            by_src[w.src].append(w)
        self._by_src, self._expected = dict(by_src), subflows

    def open(self) -> None:
        # Only senders are sampled: their sockets' RTT is what their
        # congestion control acts on.
        try:
            for host in self._by_src:
                if host not in self._socks:
                    self._socks[host] = _Netlink(self.hosts[host], NETLINK_SOCK_DIAG)
        except BaseException:
            self.close()
            raise

    def close(self) -> None:
        socks, self._socks = self._socks, {}
        for s in socks.values():
            s.close()

    def _reset(self) -> None:
        self.samples = []
        self.dumps = 0
        self._tokens: dict[Watched, int] = {}
        self._known: dict[Watched, dict[int, tuple[str, int, str, int]]] = {}  # local port -> 4-tuple
        self._last_dump: dict[str, float] = {}
        self._lost: set[str] = set()   # hosts where a known subflow was not found

    def sockets(self, host: str) -> list[DiagSocket]:
        """The host's established IPv4 TCP sockets now, by a full dump
        (sockets must be open)."""
        self.dumps += 1
        return [s for kind, body in self._socks[host].dump(SOCK_DIAG_BY_FAMILY, diag_request())
                if kind == SOCK_DIAG_BY_FAMILY and (s := parse_diag(body)) is not None]

    def _sample(self) -> None:
        for host, flows in self._by_src.items():
            t = self.now()
            if self._dump_due(host, flows, t):
                self._discover(host, flows, t)
            else:
                self._look_up(host, flows, t)

    def _dump_due(self, host: str, flows: list[Watched], t: float) -> bool:
        last = self._last_dump.get(host)
        if last is None or host in self._lost:
            return True
        if self._expected is None:
            return t - last >= self.REDISCOVER_S
        missing = any(len(self._known.get(f, ())) < self._expected for f in flows)
        return missing and (t < self.REDISCOVER_S or t - last >= self.REDISCOVER_S)

    def _discover(self, host: str, flows: list[Watched], t: float) -> None:
        sockets = self.sockets(host)
        self._last_dump[host] = t
        self._lost.discard(host)
        for f in flows:
            subflows, token = watched_subflows(f, sockets, self._tokens.get(f))
            if token is not None:
                self._tokens[f] = token
            self._known[f] = {s.sport: s.key for s in subflows}
            self._keep(t, f, subflows)

    def _look_up(self, host: str, flows: list[Watched], t: float) -> None:
        wanted = [(f, key) for f in flows for key in self._known.get(f, {}).values()]
        replies = self._socks[host].requests(SOCK_DIAG_BY_FAMILY, [diag_lookup(*k) for _, k in wanted])
        for (f, key), reply in zip(wanted, replies):
            s = parse_diag(reply) if isinstance(reply, bytes) else None
            # Gone (ENOENT), no longer established, or (port reuse) not ours any more.
            if s is None or s.state != TCP_ESTABLISHED or s.token != self._tokens.get(f):
                del self._known[f][key[1]]
                self._lost.add(host)
                continue
            self._keep(t, f, [s])

    def _keep(self, t: float, f: Watched, subflows: list[DiagSocket]) -> None:
        self.samples.extend(RttSample(t, f.src, f.dst, f.client_port, s.sport, s.rtt_us / 1000, s.cwnd)
                            for s in subflows if s.rtt_us)   # 0: no RTT measured yet

    def summary(self, from_s: float = 0.0) -> dict:
        """Pooled over every watched subflow's samples taken at or after `from_s`."""
        samples = [s for s in self.samples if s.t >= from_s]
        rtts = [s.rtt_ms for s in samples]
        return {
            "rtt_samples": len(rtts),
            "rtt_subflows": len({(s.src, s.client_port, s.subflow_local_port) for s in samples}),
            "rtt_mean_ms": _round(statistics.fmean(rtts)) if rtts else None,
            "rtt_sd_ms": _round(statistics.pstdev(rtts)) if len(rtts) > 1 else None,
            "rtt_max_ms": _round(max(rtts)) if rtts else None,
        }

    def write_csv(self, path: Path) -> None:
        with open(path, "w", newline="") as f:
            w = csv.writer(f)
            w.writerow(["t_s", *RttSample._fields[1:]])
            for s in self.samples:
                w.writerow([round(s.t, 3), *s[1:5], round(s.rtt_ms, 3), s.cwnd])


# --- subflows: the path manager's records --------------------------------------------------

class SubflowSample(NamedTuple):
    t: float
    saddr: str
    sport: int
    daddr: str
    dport: int
    subflows: int         # established so far (initial + every SUB_ESTABLISHED event)


class SubflowMonitor(_Sampler):
    """Subflows established per watched connection over time, from a
    kernel.mptcp_pm.UserspacePM's records (which follow the kernel's events):
    nothing but a copy of that list per interval."""

    thread_name = "subflow-monitor"

    def __init__(self, pm, interval_s: float = 1.0):
        self._init_sampler(interval_s)
        self.pm = pm
        self.samples: list[SubflowSample] = []
        self._keys: set[tuple[str, int, str, int]] = set()

    def watch(self, flows: Iterable) -> None:
        self._keys = {(w.src_ip, w.client_port, w.dst_ip, w.server_port) for w in map(Watched.of, flows)}

    def _reset(self) -> None:
        self.samples = []

    def _sample(self) -> None:
        t = self.now()
        for c in self.pm.connections():
            if not c.server_side and (c.saddr, c.sport, c.daddr, c.dport) in self._keys:
                self.samples.append(SubflowSample(t, c.saddr, c.sport, c.daddr, c.dport,
                                                  c.subflows_established))

    def summary(self, from_s: float = 0.0) -> dict:
        """The last count of each watched connection (`from_s` is accepted
        for symmetry: the final counts do not depend on it)."""
        final: dict[tuple, int] = {}
        for s in self.samples:
            final[s[1:5]] = s.subflows
        return {
            "subflow_connections": len(final),
            "subflows_final_min": min(final.values()) if final else None,
            "subflows_final_max": max(final.values()) if final else None,
        }

    def write_csv(self, path: Path) -> None:
        with open(path, "w", newline="") as f:
            w = csv.writer(f)
            w.writerow(["t_s", *SubflowSample._fields[1:]])
            for s in self.samples:
                w.writerow([round(s.t, 3), *s[1:]])


# --- the bundle ---------------------------------------------------------------------------

class Monitors:
    """The monitors of one run, started and stopped together on one time origin.

    Typical use (per run)::

        mon = Monitors.for_fabric(fabric, pm, interval_s=1.0)
        mon.watch(flows, subflows=rc.subflows)   # FlowEndpoints of the run
        try:
            driver.run(flows, ..., on_started=mon.start)
        finally:
            mon.stop()                        # also closes every socket
        mon.write(run_dir)                    # cpu.csv ports.csv rtt.csv subflows.csv
        record["monitors"] = mon.summary()

    A Monitors object may be started again for the next run (after watch()).
    """

    FILES = {"cpu": "cpu.csv", "ports": "ports.csv", "rtt": "rtt.csv", "subflows": "subflows.csv"}

    def __init__(self, interval_s: float = 1.0, *, cpu: CpuMonitor | None = None,
                 ports: PortMonitor | None = None, rtt: RttMonitor | None = None,
                 subflows: SubflowMonitor | None = None):
        self.interval_s = interval_s
        self.cpu, self.ports, self.rtt, self.subflows = cpu, ports, rtt, subflows
        for m in self.members().values():
            m.interval_s = interval_s
        self.wall_s = 0.0
        self._started: float | None = None
        self._last_t0: float | None = None

    @classmethod
    def for_fabric(cls, fabric, pm=None, interval_s: float = 1.0, cpu: bool = True) -> "Monitors":
        """All monitors over a started Fabric: ports of every switch, RTT in
        every host, subflows from the path manager `pm` (if given)."""
        switches = fabric.topo.switches()
        return cls(interval_s,
                   cpu=CpuMonitor(interval_s) if cpu else None,
                   ports=PortMonitor({s: fabric.pid(s) for s in switches}, interval_s,
                                     bw_mbps=fabric.link.bw_mbps),
                   rtt=RttMonitor({h: fabric.pid(h) for h in fabric.hosts()}, interval_s),
                   subflows=SubflowMonitor(pm, interval_s) if pm is not None else None)

    def members(self) -> dict[str, _Sampler]:
        return {k: m for k, m in (("cpu", self.cpu), ("ports", self.ports), ("rtt", self.rtt),
                                  ("subflows", self.subflows)) if m is not None}

    def watch(self, flows: Iterable, subflows: int | None = None) -> None:
        """The run's connections (FlowEndpoints), and how many subflows each
        should have if known (the run's subflow count: it spares the RTT
        monitor's socket dumps once they are all found)."""
        flows = list(flows)
        if self.rtt is not None:
            self.rtt.watch(flows, subflows)
        if self.subflows is not None:
            self.subflows.watch(flows)

    def start(self) -> None:
        t0 = time.monotonic()
        started = []
        try:
            for m in self.members().values():
                m.start(t0)
                started.append(m)
        except BaseException:
            for m in started:
                m.stop()
            raise
        self._started = self._last_t0 = t0

    @property
    def started_at(self) -> float | None:
        """time.monotonic() at the last start(), kept after stop(): every
        monitor's `t` counts from it."""
        return self._last_t0

    def stop(self) -> None:
        """Stop every monitor and close its sockets (safe to call twice)."""
        try:
            for m in self.members().values():
                m.stop()
        finally:
            if self._started is not None:
                self.wall_s = time.monotonic() - self._started
                self._started = None

    def __enter__(self) -> "Monitors":
        self.start()
        return self

    def __exit__(self, *exc) -> None:
        self.stop()

    def write(self, run_dir: Path) -> list[Path]:
        """One CSV per monitor into run_dir; returns the paths written."""
        written = []
        for name, m in self.members().items():
            path = Path(run_dir) / self.FILES[name]
            m.write_csv(path)
            written.append(path)
        return written

    def summary(self, from_s: float = 0.0) -> dict:
        """A small flat dict for run.json. Statistics use the samples taken
        at or after `from_s` seconds (pass the run's warm-up to leave slow
        start out); the CSVs keep every sample."""
        out: dict = {"interval_s": self.interval_s, "from_s": from_s}
        for m in (self.ports, self.rtt, self.subflows):
            if m is not None:
                out.update(m.summary(from_s))
        out.update(self.cost())
        return out

    def cost(self) -> dict:
        """CPU the monitors themselves used: seconds, and percent of one core
        over the time they ran; per monitor too."""
        members = self.members()
        cpu_s = sum(m.cpu_s for m in members.values())
        errors = [e for m in members.values() for e in m.errors]
        return {
            "monitor_cpu_s": round(cpu_s, 4),
            "monitor_cpu_pct": round(100 * cpu_s / self.wall_s, 3) if self.wall_s > 0 else None,
            "monitor_cpu_s_by": {k: round(m.cpu_s, 4) for k, m in members.items()},
            "monitor_errors": sum(m.error_count for m in members.values()),
            **({"monitor_error_messages": errors[:MAX_ERRORS_KEPT]} if errors else {}),
        }


def _round(x: float, digits: int = 3) -> float:
    return round(x, digits)
