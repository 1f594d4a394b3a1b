"""A userspace MPTCP path manager that gives each chosen connection N subflows
between the same address pair (what the out-of-tree kernel called "ndiffports").

The namespaces must run the userspace path manager (`net.mptcp.pm_type=1`);
setting that is the caller's job. This module then talks generic netlink to
the "mptcp_pm" family in every namespace it is attached to:

* it joins the "mptcp_pm_events" multicast group. Besides delivering events,
  this satisfies the kernel's contract for the *server* side: with the
  userspace PM a join is accepted only while the group has a listener
  (`mptcp_userspace_pm_active()`), so attach every namespace, even one that
  only ever serves. (netlink tracks group listeners per protocol, not per
  namespace, so in practice any subscriber on the host satisfies the check;
  the module does not rely on that.)
* when a client-side connection registered with `expand()` reports
  MPTCP_EVENT_ESTABLISHED, it issues N-1 MPTCP_PM_CMD_SUBFLOW_CREATE, each
  from the connection's own local address (id 0, port 0 = ephemeral) to the
  server's same address and port. ESTABLISHED (not CREATED) is the trigger
  because the kernel refuses to open subflows before the MPTCP connection is
  fully established (ENOTCONN). A client reaches that state once its first
  data has been exchanged with the server; one that never sends or receives
  anything is not expanded (its creates fail with ENOTCONN, recorded);
* it keeps one `Connection` record per token it hears about, counting
  established and closed subflows and failed SUBFLOW_CREATE acks.

The wire format (constants, encoders, decoders) is mptcp_pm_wire.py's.

Typical use::

    pm = UserspacePM()
    for host in hosts:
        pm.attach(host.name, host.pid)
    pm.start()
    pm.expand("h1", ("10.0.0.1", 5001), ("10.0.0.2", 5201), subflows=4)
    ...  # start the server in h2 and the client in h1, bound to port 5001
    print(pm.connections())
    pm.close()
"""
from __future__ import annotations

import dataclasses
import errno
import ipaddress
import logging
import os
import select
import socket
import threading
import time
from dataclasses import dataclass, field

from kernel import netlink as nl
from kernel.mptcp_pm_wire import (GENLMSGHDR, GENL_ID_CTRL, MPTCP_ATTR_TOKEN, MPTCP_EVENT_CLOSED,
                                  MPTCP_EVENT_CREATED, MPTCP_EVENT_ESTABLISHED,
                                  MPTCP_EVENT_SUB_CLOSED, MPTCP_EVENT_SUB_ESTABLISHED,
                                  MPTCP_PM_EV_GRP_NAME, MPTCP_PM_NAME, NETLINK_ADD_MEMBERSHIP,
                                  NETLINK_CAP_ACK, NETLINK_EXT_ACK, event_endpoints, family_reply,
                                  family_request, subflow_create, uint)
from kernel.netlink import NLMSG_ERROR, SO_RCVBUFFORCE, SOL_NETLINK

__all__ = ["Connection", "UserspacePM", "MAX_SUBFLOWS"]

log = logging.getLogger(__name__)

# The in-kernel PM caps its subflow limits at 8 (MPTCP_PM_ADDR_MAX); the userspace
# PM enforces no cap itself, so the same bound is applied here.
MAX_SUBFLOWS = 8


_POLL_S = 0.1            # how often the daemon thread looks at its stop flag
_ATTACH_TIMEOUT_S = 2.0  # bound on the synchronous family lookup in attach()
_RCVBUF = 4 << 20        # events arrive in bursts when many connections start at once


@dataclass
class Connection:
    """What the path manager has seen of one MPTCP connection (one token).

    Addresses and ports are those of the initial subflow, from this
    namespace's point of view (saddr is local). `subflows_established`
    counts the initial subflow plus every MPTCP_EVENT_SUB_ESTABLISHED.
    A connection first heard of after reset() (e.g. only its SUB_CLOSED or
    CLOSED) gets a record without addresses.
    """
    ns: str
    token: int
    saddr: str = ""
    sport: int = 0
    daddr: str = ""
    dport: int = 0
    server_side: bool = False
    subflows_established: int = 1
    subflows_closed: int = 0
    create_errors: list[str] = field(default_factory=list)
    closed: bool = False
    creates_sent: int = 0     # SUBFLOW_CREATE commands issued for this connection
    # time.monotonic() when this path manager handled the connection's
    # ESTABLISHED and its latest SUB_ESTABLISHED: when the harness learnt of
    # them, which on a busy machine can be later than the kernel's moment.
    established_at: float | None = None
    last_subflow_at: float | None = None


class _NsSocket:
    """One generic netlink socket living in one network namespace."""

    def __init__(self, name: str, sock: socket.socket):
        self.name = name
        self.sock = sock
        self.family_id = 0
        self.events_group = 0
        self.seq = 0
        # seq of an unacknowledged SUBFLOW_CREATE -> token it was sent for
        self.pending: dict[int, int] = {}

    def fileno(self) -> int:
        return self.sock.fileno()

    def next_seq(self) -> int:
        self.seq = (self.seq + 1) & 0xFFFFFFFF or 1
        return self.seq



class UserspacePM:
    """Userspace MPTCP path manager over several network namespaces.

    attach() every namespace, start() the event thread, register connections
    with expand() *before* their clients connect, read connections().
    All methods may be called from any thread; one daemon thread reads the
    sockets and sends the SUBFLOW_CREATE commands.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._sockets: dict[str, _NsSocket] = {}
        self._generation = 0   # bumped whenever _sockets changes
        # (ns, local ip, local port, remote ip, remote port) -> extra subflow paths
        self._expansions: dict[tuple, list] = {}
        self._records: dict[tuple[str, int], Connection] = {}
        self._thread: threading.Thread | None = None
        self._stop = threading.Event()
        self._closed = False
        self.lost_events = 0   # times a socket overran (ENOBUFS): events were dropped

    # -- setup --

    def attach(self, name: str, ns_pid: int) -> None:
        """Open a generic netlink socket in the network namespace of process
        `ns_pid`, resolve the mptcp_pm family and its events group, and join it.
        `name` identifies the namespace in expand() and in the records."""
        with self._lock:
            if self._closed:
                raise RuntimeError("UserspacePM is closed")
            if name in self._sockets:
                raise ValueError(f"namespace {name!r} is already attached")
        sock = nl.socket_in_netns(ns_pid)
        try:
            ns = _NsSocket(name, sock)
            sock.bind((0, 0))
            sock.setsockopt(SOL_NETLINK, NETLINK_CAP_ACK, 1)
            sock.setsockopt(SOL_NETLINK, NETLINK_EXT_ACK, 1)
            try:  # as root, beyond net.core.rmem_max
                sock.setsockopt(socket.SOL_SOCKET, SO_RCVBUFFORCE, _RCVBUF)
            except OSError:
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, _RCVBUF)
            sock.settimeout(_ATTACH_TIMEOUT_S)
            ns.family_id, ns.events_group = self._resolve_family(ns)
            # Also the userspace PM's condition for accepting MP_JOINs (see the module doc).
            sock.setsockopt(SOL_NETLINK, NETLINK_ADD_MEMBERSHIP, ns.events_group)
            sock.setblocking(False)
        except BaseException:
            sock.close()
            raise
        with self._lock:
            if self._closed or name in self._sockets:
                sock.close()
                raise RuntimeError(f"namespace {name!r}: attached concurrently or closed")
            self._sockets[name] = ns
            self._generation += 1

    @staticmethod
    def _resolve_family(ns: _NsSocket) -> tuple[int, int]:
        """CTRL_CMD_GETFAMILY "mptcp_pm" -> (family id, events group id)."""
        seq = ns.next_seq()
        ns.sock.send(family_request(seq))
        while True:  # bounded by the socket timeout
            buf = ns.sock.recv(65536)
            for kind, flags, mseq, payload in nl.split_messages(buf):
                if mseq != seq:
                    continue
                if kind == NLMSG_ERROR:
                    err, _, text = nl.parse_error(flags, payload)
                    raise OSError(err, f"{ns.name}: family {MPTCP_PM_NAME!r}: "
                                       f"{os.strerror(err)} {text}".rstrip())
                if kind == GENL_ID_CTRL:
                    found = family_reply(payload)
                    if found is None:
                        raise OSError(errno.ENOENT, f"{ns.name}: no {MPTCP_PM_EV_GRP_NAME!r} group")
                    return found

    def start(self) -> None:
        """Start the daemon thread serving every attached socket (idempotent)."""
        with self._lock:
            if self._closed:
                raise RuntimeError("UserspacePM is closed")
            if self._thread is not None:
                return
            self._thread = threading.Thread(target=self._run, name="mptcp-userspace-pm", daemon=True)
            self._thread.start()

    def close(self) -> None:
        """Stop the thread and close every socket. Idempotent. Closing the
        sockets also makes the namespaces stop accepting MP_JOINs."""
        with self._lock:
            self._closed = True
            thread, self._thread = self._thread, None
        self._stop.set()
        if thread is not None:
            thread.join(timeout=5 * _POLL_S + 1.0)
        with self._lock:
            sockets, self._sockets = self._sockets, {}
            self._generation += 1
        for ns in sockets.values():
            ns.sock.close()

    def __enter__(self) -> "UserspacePM":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # -- policy --

    def expand(self, name: str, local: tuple[str, int], remote: tuple[str, int], subflows: int,
               paths: list[tuple[str, str]] | None = None) -> None:
        """Give the client connection local -> remote in namespace `name`
        `subflows` subflows in total: on its ESTABLISHED event, open
        subflows-1 more, each from a local address (ephemeral port) to a
        remote address at the server's port: by default local's and remote's
        own, or else the (local address, remote address) pairs of `paths`,
        one per extra subflow (address-based subflows, as over WiFi and 3G).
        A local port of 0 matches any local port. Register before the client
        connects; the registration stays until forget_expansions()."""
        if not 1 <= subflows <= MAX_SUBFLOWS:
            raise ValueError(f"subflows={subflows}: must be within 1..{MAX_SUBFLOWS}")
        if paths is None:
            paths = [(local[0], remote[0])] * (subflows - 1)
        if len(paths) != subflows - 1:
            raise ValueError(f"{len(paths)} paths given for {subflows - 1} extra subflows")
        key = (name, ipaddress.ip_address(local[0]), int(local[1]),
               ipaddress.ip_address(remote[0]), int(remote[1]))
        with self._lock:
            self._expansions[key] = [(ipaddress.ip_address(a), ipaddress.ip_address(b))
                                     for a, b in paths]

    def forget_expansions(self) -> None:
        """Drop every expand() registration (connections already expanded keep their subflows)."""
        with self._lock:
            self._expansions.clear()

    # -- records --

    def connections(self) -> list[Connection]:
        """Copies of the records of every token seen since the last reset()."""
        with self._lock:
            return [dataclasses.replace(c, create_errors=list(c.create_errors))
                    for c in self._records.values()]

    def reset(self) -> None:
        """Forget all records (and outstanding acks); registrations stay."""
        with self._lock:
            self._records.clear()
            for ns in self._sockets.values():
                ns.pending.clear()

    # -- the event thread --

    def _run(self) -> None:
        # poll(), not select(): a large topology has more than FD_SETSIZE (1024) sockets.
        poller, by_fd, seen = select.poll(), {}, -1
        while not self._stop.is_set():
            with self._lock:
                if self._generation != seen:  # attach() added a socket: re-register all
                    seen = self._generation
                    by_fd = {ns.fileno(): ns for ns in self._sockets.values()}
                    poller = select.poll()
                    for fd in by_fd:
                        poller.register(fd, select.POLLIN)
            if not by_fd:
                self._stop.wait(_POLL_S)
                continue
            for fd, _mask in poller.poll(_POLL_S * 1000):
                ns = by_fd[fd]
                try:
                    self._drain(ns)
                except Exception:  # keep serving the other namespaces
                    log.exception("%s: failed to handle netlink messages", ns.name)

    def _drain(self, ns: _NsSocket) -> None:
        while True:
            try:
                buf = ns.sock.recv(65536)
            except BlockingIOError:
                return
            except OSError as exc:
                if exc.errno == errno.ENOBUFS:  # the kernel dropped multicast messages
                    with self._lock:
                        self.lost_events += 1
                    log.warning("%s: event socket overran, events lost", ns.name)
                    continue
                raise
            for kind, flags, seq, payload in nl.split_messages(buf):
                if kind == NLMSG_ERROR:
                    self._on_ack(ns, flags, payload)
                elif kind == ns.family_id and len(payload) >= GENLMSGHDR.size:
                    cmd = payload[0]
                    self._on_event(ns, cmd, nl.parse_attrs(payload[GENLMSGHDR.size:]))

    def _on_ack(self, ns: _NsSocket, flags: int, payload: bytes) -> None:
        err, seq, text = nl.parse_error(flags, payload)
        with self._lock:
            token = ns.pending.pop(seq, None)
            if token is None or err == 0:
                return
            rec = self._records.get((ns.name, token))
            if rec is not None:
                rec.create_errors.append(f"{errno.errorcode.get(err, err)}: {text or os.strerror(err)}")

    def _record(self, ns: str, token: int) -> Connection:
        """The record of (ns, token), created on first sight. Caller holds the lock."""
        rec = self._records.get((ns, token))
        if rec is None:
            rec = self._records[(ns, token)] = Connection(ns=ns, token=token)
        return rec

    def _on_event(self, ns: _NsSocket, event: int, attrs: dict[int, bytes]) -> None:
        if MPTCP_ATTR_TOKEN not in attrs:
            return  # listener events carry no token
        token = uint(attrs[MPTCP_ATTR_TOKEN])
        creates: list[tuple[bytes, int]] = []
        now = time.monotonic()
        with self._lock:
            if event in (MPTCP_EVENT_CREATED, MPTCP_EVENT_ESTABLISHED):
                rec = self._record(ns.name, token)
                self._fill_addresses(rec, attrs)
                if event == MPTCP_EVENT_ESTABLISHED:
                    rec.established_at = now
                    if not rec.server_side:
                        creates = self._plan_expansion(ns, rec)
            elif event == MPTCP_EVENT_SUB_ESTABLISHED:
                rec = self._record(ns.name, token)
                rec.subflows_established += 1
                rec.last_subflow_at = now
            elif event == MPTCP_EVENT_SUB_CLOSED:
                self._record(ns.name, token).subflows_closed += 1
            elif event == MPTCP_EVENT_CLOSED:
                self._record(ns.name, token).closed = True
        for msg, seq in creates:
            try:
                ns.sock.send(msg)
            except OSError as exc:
                with self._lock:
                    ns.pending.pop(seq, None)
                    self._record(ns.name, token).create_errors.append(f"send: {exc}")

    @staticmethod
    def _fill_addresses(rec: Connection, attrs: dict[int, bytes]) -> None:
        ends = event_endpoints(attrs)
        rec.saddr, rec.sport = ends.saddr or rec.saddr, ends.sport or rec.sport
        rec.daddr, rec.dport = ends.daddr or rec.daddr, ends.dport or rec.dport
        rec.server_side = rec.server_side or ends.server_side

    def _plan_expansion(self, ns: _NsSocket, rec: Connection) -> list[tuple[bytes, int]]:
        """SUBFLOW_CREATE messages for a newly established client connection,
        registered as pending acks. Caller holds the lock."""
        if rec.creates_sent or not rec.saddr or not rec.daddr:
            return []
        local, remote = ipaddress.ip_address(rec.saddr), ipaddress.ip_address(rec.daddr)
        paths = (self._expansions.get((ns.name, local, rec.sport, remote, rec.dport))
                 or self._expansions.get((ns.name, local, 0, remote, rec.dport)))
        if not paths:
            return []
        msgs, ids = [], {local: 0}
        for path_local, path_remote in paths:
            # Address id 0 is the initial subflow's local address; another
            # local address needs an id of its own within the connection.
            local_id = ids.setdefault(path_local, len(ids))
            seq = ns.next_seq()
            ns.pending[seq] = rec.token
            msgs.append((subflow_create(ns.family_id, seq, rec.token, (path_local, local_id),
                                        (path_remote, rec.dport)), seq))
        rec.creates_sent = len(msgs)
        return msgs
