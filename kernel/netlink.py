"""Netlink plumbing shared by everything that talks to the kernel directly:
the MPTCP path manager (generic netlink), the monitors (rtnetlink,
sock_diag) and the delay line (nfnetlink_queue).

Messages are encoded with `struct`: the handful of message and attribute
layouts involved is clearer spelled out than wrapped. Layouts are those of
include/uapi/linux/netlink.h.
"""
from __future__ import annotations

import ctypes
import os
import socket
import struct

NETLINK_ROUTE = 0
NETLINK_SOCK_DIAG = 4
NETLINK_NETFILTER = 12
NETLINK_GENERIC = 16
SOL_NETLINK = 270
NETLINK_NO_ENOBUFS = 5

NLM_F_REQUEST = 0x01
NLM_F_ACK = 0x04
NLM_F_DUMP = 0x300            # NLM_F_ROOT | NLM_F_MATCH
NLM_F_CAPPED = 0x100          # set on NLMSG_ERROR: original payload omitted
NLM_F_ACK_TLVS = 0x200        # set on NLMSG_ERROR: extack attributes follow
NLMSG_ERROR = 2
NLMSG_DONE = 3
NLMSGERR_ATTR_MSG = 1
NLA_F_NESTED = 0x8000
NLA_TYPE_MASK = 0x3FFF        # strips NLA_F_NESTED / NLA_F_NET_BYTEORDER

NLMSGHDR = struct.Struct("=IHHII")   # len, type, flags, seq, portid (host order)
NLATTR = struct.Struct("=HH")        # len, type

SO_RCVBUFFORCE = 33           # asm-generic/socket.h; not exported by Python's socket module

# setns(2) through libc: Python 3.11 has no os.setns.
CLONE_NEWNET = 0x40000000
_libc = ctypes.CDLL(None, use_errno=True)


def attr(kind: int, payload: bytes) -> bytes:
    raw = NLATTR.pack(NLATTR.size + len(payload), kind) + payload
    return raw + b"\0" * (-len(raw) % 4)


def nested(kind: int, *attrs: bytes) -> bytes:
    return attr(kind | NLA_F_NESTED, b"".join(attrs))


def message(kind: int, flags: int, seq: int, body: bytes) -> bytes:
    """One netlink message: header + body (the body's own header included)."""
    return NLMSGHDR.pack(NLMSGHDR.size + len(body), kind, flags, seq, 0) + body


def parse_attrs(data: bytes) -> dict[int, bytes]:
    """Flat attribute list -> {type: payload}; the last one of a type wins."""
    attrs: dict[int, bytes] = {}
    off = 0
    while off + NLATTR.size <= len(data):
        length, kind = NLATTR.unpack_from(data, off)
        if length < NLATTR.size:
            break
        attrs[kind & NLA_TYPE_MASK] = data[off + NLATTR.size: off + length]
        off += (length + 3) & ~3
    return attrs


def split_messages(buf: bytes):
    """Yield (type, flags, seq, payload) for each netlink message in a datagram."""
    off = 0
    while off + NLMSGHDR.size <= len(buf):
        length, kind, flags, seq, _pid = NLMSGHDR.unpack_from(buf, off)
        if length < NLMSGHDR.size or off + length > len(buf):
            break
        yield kind, flags, seq, buf[off + NLMSGHDR.size: off + length]
        off += (length + 3) & ~3


def parse_error(flags: int, payload: bytes) -> tuple[int, int, str]:
    """NLMSG_ERROR payload -> (errno, seq of the request, extack text)."""
    (err,) = struct.unpack_from("=i", payload, 0)
    orig_len, _t, _f, orig_seq, _p = NLMSGHDR.unpack_from(payload, 4)
    text = ""
    if flags & NLM_F_ACK_TLVS:
        # TLVs follow the echoed request: its header only if CAPPED, else all of it.
        tlv_off = 4 + (NLMSGHDR.size if flags & NLM_F_CAPPED else orig_len)
        msg = parse_attrs(payload[(tlv_off + 3) & ~3:]).get(NLMSGERR_ATTR_MSG)
        if msg:
            text = msg.rstrip(b"\0").decode(errors="replace")
    return -err, orig_seq, text


def _setns(fd: int) -> None:
    if _libc.setns(fd, CLONE_NEWNET) != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"setns: {os.strerror(err)}")


def made_in_netns(ns_pid: int, make):
    """make() run inside the network namespace of ns_pid, and its result: a
    socket made there stays there.

    setns() only moves the calling thread, so: enter, make, and go straight
    back.
    """
    target = os.open(f"/proc/{ns_pid}/ns/net", os.O_RDONLY | os.O_CLOEXEC)
    try:
        home = os.open("/proc/thread-self/ns/net", os.O_RDONLY | os.O_CLOEXEC)
        try:
            _setns(target)
            try:
                return make()
            finally:
                try:
                    _setns(home)
                except OSError as exc:
                    # Carrying on would run the caller in the wrong namespace.
                    raise RuntimeError(f"cannot return to the original network namespace: {exc}")
        finally:
            os.close(home)
    finally:
        os.close(target)


def socket_in_netns(ns_pid: int, protocol: int = NETLINK_GENERIC) -> socket.socket:
    """A netlink socket (NETLINK_GENERIC unless told otherwise) created in the
    network namespace of ns_pid."""
    return made_in_netns(ns_pid, lambda: socket.socket(
        socket.AF_NETLINK, socket.SOCK_RAW | socket.SOCK_CLOEXEC, protocol))


# --- dumps and batched requests (the monitors' rtnetlink and sock_diag) ---------

_DUMP_TIMEOUT_S = 2.0
_RECV_BYTES = 1 << 16         # above the kernel's 32 KiB dump chunks
REQUESTS_PER_SEND = 32        # sock_diag replies are ~0.5 KB (a few KB of buffer each)


class DumpSocket:
    """One netlink socket created inside a namespace, for dumps and batches
    of single requests.

    Used by one thread at a time (the sampler's, or the caller's when the
    monitor is not running)."""

    def __init__(self, ns_pid: int, protocol: int):
        self.sock = socket_in_netns(ns_pid, protocol)
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
        self.sock.send(NLMSGHDR.pack(NLMSGHDR.size + len(payload), msg_type,
                                      NLM_F_REQUEST | NLM_F_DUMP, seq, 0) + payload)
        replies = []
        while True:
            for kind, flags, mseq, body in split_messages(self.sock.recv(_RECV_BYTES)):
                if mseq != seq:
                    continue  # the tail of an earlier exchange that timed out
                if kind == NLMSG_DONE:
                    return replies
                if kind == NLMSG_ERROR:
                    err, _, text = parse_error(flags, body)
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
            NLMSGHDR.pack(NLMSGHDR.size + len(p), msg_type, NLM_F_REQUEST, seq, 0) + p
            for seq, p in zip(seqs, payloads)))
        index = {seq: i for i, seq in enumerate(seqs)}
        replies: list[bytes | int | None] = [None] * len(payloads)
        pending = len(payloads)
        while pending:
            for kind, flags, seq, body in split_messages(self.sock.recv(_RECV_BYTES)):
                i = index.get(seq)
                if i is None or replies[i] is not None:
                    continue  # an earlier exchange's late reply
                if kind == NLMSG_ERROR:
                    err, _, _ = parse_error(flags, body)
                    if not err:
                        continue  # an ack, which was not asked for
                    replies[i] = err
                else:
                    replies[i] = body
                pending -= 1
        return replies

    def close(self) -> None:
        self.sock.close()


def open_dump_sockets(socks: dict[str, DumpSocket], ns_pids: dict[str, int], protocol: int) -> None:
    """Give `socks` a DumpSocket for each namespace of `ns_pids` (name -> pid)
    it lacks; if one cannot be made, close them all and raise."""
    try:
        for name, pid in ns_pids.items():
            if name not in socks:
                socks[name] = DumpSocket(pid, protocol)
    except BaseException:
        close_dump_sockets(socks)
        raise


def close_dump_sockets(socks: dict[str, DumpSocket]) -> None:
    """Close every socket of `socks`, emptied first: none stays there closed."""
    closing = list(socks.values())
    socks.clear()
    for s in closing:
        s.close()


def attr_at(buf: bytes, start: int, end: int, kind: int) -> tuple[int, int] | None:
    """(start, end) of the payload of the first attribute `kind` among the
    attributes in buf[start:end]. Offsets, not slices: the monitors parse
    thousands of messages a second and only need a few fields of each."""
    while start + NLATTR.size <= end:
        length, k = NLATTR.unpack_from(buf, start)
        if length < NLATTR.size:
            return None
        if k & NLA_TYPE_MASK == kind:
            return start + NLATTR.size, min(start + length, end)
        start += (length + 3) & ~3
    return None
