"""Smoothed RTT and cwnd of every TCP subflow of the watched connections,
over one sock_diag socket per host namespace -> rtt.csv."""
from __future__ import annotations

import socket
import statistics
import struct
from collections import defaultdict
from pathlib import Path
from typing import Iterable, NamedTuple

from kernel import netlink as nl
from monitor.sampler import Sampler, write_rows


# --- RTT: sock_diag ------------------------------------------------------------------

SOCK_DIAG_BY_FAMILY = 20
_U32 = struct.Struct("=I")
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
    info = nl.attr_at(body, _DIAG_MSG.size, end, INET_DIAG_INFO)
    if info is None or info[1] - info[0] < _TCPI_CWND_OFF + 4:
        return None
    (rtt_us,) = _U32.unpack_from(body, info[0] + _TCPI_RTT_OFF)
    (cwnd,) = _U32.unpack_from(body, info[0] + _TCPI_CWND_OFF)
    token = None
    at = nl.attr_at(body, _DIAG_MSG.size, end, INET_DIAG_ULP_INFO)
    if at:
        at = nl.attr_at(body, *at, INET_ULP_INFO_MPTCP)
    if at:
        at = nl.attr_at(body, *at, MPTCP_SUBFLOW_ATTR_TOKEN_LOC)
    if at and at[1] - at[0] >= 4:
        (token,) = _U32.unpack_from(body, at[0])
    return DiagSocket(socket.inet_ntop(socket.AF_INET, src[:4]), int.from_bytes(sport, "big"),
                      socket.inet_ntop(socket.AF_INET, dst[:4]), int.from_bytes(dport, "big"),
                      token, rtt_us, cwnd, state)


class Watched(NamedTuple):
    """A connection to watch, as the sender sees it. Any object with these
    attributes (e.g. emulator.traffic.common.FlowEndpoints) can be given to watch()."""
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


class RttMonitor(Sampler):
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
        self._socks: dict[str, nl.DumpSocket] = {}
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
        senders = {host: self.hosts[host] for host in self._by_src}
        nl.open_dump_sockets(self._socks, senders, nl.NETLINK_SOCK_DIAG)

    def close(self) -> None:
        nl.close_dump_sockets(self._socks)

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
            "rtt_mean_ms": round(statistics.fmean(rtts), 3) if rtts else None,
            "rtt_sd_ms": round(statistics.pstdev(rtts), 3) if len(rtts) > 1 else None,
            "rtt_max_ms": round(max(rtts), 3) if rtts else None,
        }

    def write_csv(self, path: Path) -> None:
        write_rows(path, ["t_s", *RttSample._fields[1:]],
                   ([round(s.t, 3), *s[1:5], round(s.rtt_ms, 3), s.cwnd] for s in self.samples))
