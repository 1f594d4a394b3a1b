"""What bench/diagnosis/k8_diagnosis.py reads from the kernel about a socket, and how:
struct tcp_info of every TCP subflow and struct mptcp_info (with the
socket's memory) of every MPTCP socket, over sock_diag in a host's
namespace (no process started), and the same read from `ss -tinHM` text,
which the benchmark uses to cross-check its sock_diag decoding at run time
and the tests use against output captured from the real tool.

Records are dicts of the kernel's own fields in the kernel's units (times
in microseconds where tcp_info has them, except the *_ms fields, bytes,
segments). A field `ss` does not print (or this kernel does not fill) is
absent, never guessed.

Layouts (include/uapi/linux/tcp.h, mptcp.h, inet_diag.h, sock_diag.h, Linux
6.18; this machine's /usr/include is older and stops at tcpi_snd_wnd):
tcp_info is 248 bytes from 6.7 (tcpi_total_rto_time), 280 with 6.18's
AccECN counters; mptcp_info 96 bytes from 6.10.
"""
from __future__ import annotations

import re
import socket
import struct

from kernel import netlink as nl

SOCK_DIAG_BY_FAMILY = 20
IPPROTO_MPTCP = 262
INET_DIAG_INFO, INET_DIAG_SKMEMINFO, INET_DIAG_ULP_INFO = 2, 7, 19
INET_DIAG_REQ_PROTOCOL = 3      # u32 attribute: protocols above 255 (MPTCP)
INET_ULP_INFO_MPTCP = 3
SUBFLOW_ATTR_TOKEN_REM, SUBFLOW_ATTR_TOKEN_LOC, SUBFLOW_ATTR_FLAGS = 1, 2, 8
TCP_ESTABLISHED = 1
SSTHRESH_INFINITE = 0x7FFFFFFF  # TCP_INFINITE_SSTHRESH: never left slow start
CA_LOSS = 4                      # enum tcp_ca_state: RTO recovery

# name: (offset, struct format) in struct tcp_info
TCP_INFO = {
    "state": (0, "B"), "ca_state": (1, "B"), "retransmits": (2, "B"), "probes": (3, "B"),
    "backoff": (4, "B"), "rto_us": (8, "I"), "mss": (16, "I"), "rcv_mss": (20, "I"),
    "unacked": (24, "I"), "sacked": (28, "I"), "lost": (32, "I"), "retrans": (36, "I"),
    "last_data_sent_ms": (44, "I"), "last_data_recv_ms": (52, "I"), "last_ack_recv_ms": (56, "I"),
    "rcv_ssthresh": (64, "I"), "rtt_us": (68, "I"), "rttvar_us": (72, "I"),
    "ssthresh": (76, "I"), "cwnd": (80, "I"), "advmss": (84, "I"), "reordering": (88, "I"),
    "rcv_space": (96, "I"), "total_retrans": (100, "I"), "bytes_acked": (120, "Q"),
    "bytes_received": (128, "Q"), "segs_out": (136, "I"), "segs_in": (140, "I"),
    "notsent": (144, "I"), "min_rtt_us": (148, "I"), "data_segs_in": (152, "I"),
    "data_segs_out": (156, "I"), "busy_us": (168, "Q"), "rwnd_limited_us": (176, "Q"),
    "sndbuf_limited_us": (184, "Q"), "delivered": (192, "I"), "bytes_sent": (200, "Q"),
    "bytes_retrans": (208, "Q"), "dsack_dups": (216, "I"), "reord_seen": (220, "I"),
    "rcv_ooopack": (224, "I"), "snd_wnd": (228, "I"), "rcv_wnd": (232, "I"),
    "rehash": (236, "I"), "total_rto": (240, "H"), "total_rto_recoveries": (242, "H"),
    "total_rto_time_ms": (244, "I"),
}
MPTCP_INFO = {
    "subflows": (0, "B"), "flags": (8, "I"), "token": (12, "I"), "write_seq": (16, "Q"),
    "snd_una": (24, "Q"), "rcv_nxt": (32, "Q"), "retransmits": (44, "I"),
    "bytes_retrans": (48, "Q"), "bytes_sent": (56, "Q"), "bytes_received": (64, "Q"),
    "bytes_acked": (72, "Q"), "subflows_total": (80, "B"), "last_data_sent_ms": (84, "I"),
    "last_data_recv_ms": (88, "I"), "last_ack_recv_ms": (92, "I"),
}
SKMEMINFO = ("rmem_alloc", "rcvbuf", "wmem_alloc", "sndbuf", "fwd_alloc", "wmem_queued",
             "optmem", "backlog", "drops")
MPTCP_FALLBACK = 1               # MPTCP_INFO_FLAG_FALLBACK

_DIAG_REQ = struct.Struct("=BBBxI48x")   # inet_diag_req_v2, every socket (zero sockid)
_DIAG_MSG = struct.Struct("=BBBB2s2s16s16sI8sIIIII")


def _layout(fields: dict) -> list[tuple[str, struct.Struct, int]]:
    return [(name, struct.Struct("=" + fmt), off) for name, (off, fmt) in fields.items()]


_TCP_FIELDS, _MPTCP_FIELDS = _layout(TCP_INFO), _layout(MPTCP_INFO)


def tcp_request() -> bytes:
    """Every established IPv4 TCP socket with tcp_info (and, for root, the
    ULP info that names a subflow's MPTCP connection)."""
    return _DIAG_REQ.pack(socket.AF_INET, socket.IPPROTO_TCP, 1 << (INET_DIAG_INFO - 1),
                          1 << TCP_ESTABLISHED)


def mptcp_request() -> bytes:
    """Every established IPv4 MPTCP socket with mptcp_info and its memory."""
    ext = 1 << (INET_DIAG_INFO - 1) | 1 << (INET_DIAG_SKMEMINFO - 1)
    return (_DIAG_REQ.pack(socket.AF_INET, socket.IPPROTO_TCP, ext, 1 << TCP_ESTABLISHED)
            + nl.attr(INET_DIAG_REQ_PROTOCOL, struct.pack("=I", IPPROTO_MPTCP)))


def _header(body: bytes) -> dict | None:
    (family, state, _timer, _retrans, sport, dport, src, dst, _if, _cookie, _expires,
     rqueue, wqueue, _uid, _inode) = _DIAG_MSG.unpack_from(body)
    if family != socket.AF_INET:
        return None
    return {"saddr": socket.inet_ntop(socket.AF_INET, src[:4]), "sport": int.from_bytes(sport, "big"),
            "daddr": socket.inet_ntop(socket.AF_INET, dst[:4]), "dport": int.from_bytes(dport, "big"),
            "tcp_state": state, "rqueue": rqueue, "wqueue": wqueue}


def _fields(body: bytes, start: int, end: int, layout, into: dict) -> None:
    for name, st, off in layout:
        if off + st.size <= end - start:
            into[name] = st.unpack_from(body, start + off)[0]


def _diag_attr(body: bytes, kind: int) -> tuple[int, int] | None:
    """(start, end) of the reply's top-level attribute `kind`, if present."""
    return nl.attr_at(body, _DIAG_MSG.size, len(body), kind)


def _record(body: bytes, layout) -> dict | None:
    """The reply's header and its INET_DIAG_INFO struct's `layout` fields;
    None if not IPv4 or without that struct."""
    rec = _header(body)
    if rec is None:
        return None
    info = _diag_attr(body, INET_DIAG_INFO)
    if info is None:
        return None
    _fields(body, *info, layout, rec)
    return rec


def tcp_layout(names) -> list[tuple[str, struct.Struct, int]]:
    """The tcp_info fields `names` only (a sampler's faster parse)."""
    return [f for f in _TCP_FIELDS if f[0] in set(names)]


def parse_tcp_diag(body: bytes, layout=None) -> dict | None:
    """A sock_diag reply for a TCP socket -> its record (every TCP_INFO
    field, or those of `layout`); None if not IPv4 or without tcp_info.
    `token` (the local token of its MPTCP connection) only for an MPTCP
    subflow."""
    rec = _record(body, _TCP_FIELDS if layout is None else layout)
    if rec is None:
        return None
    ulp = _diag_attr(body, INET_DIAG_ULP_INFO)
    mptcp = nl.attr_at(body, *ulp, INET_ULP_INFO_MPTCP) if ulp else None
    if mptcp:
        for kind, name in ((SUBFLOW_ATTR_TOKEN_LOC, "token"), (SUBFLOW_ATTR_TOKEN_REM, "token_rem"),
                           (SUBFLOW_ATTR_FLAGS, "subflow_flags")):
            at = nl.attr_at(body, *mptcp, kind)
            if at and at[1] - at[0] >= 4:
                rec[name] = struct.unpack_from("=I", body, at[0])[0]
    return rec


def parse_mptcp_diag(body: bytes) -> dict | None:
    """A sock_diag reply for an MPTCP socket -> its record (mptcp_info and
    the socket's memory, SKMEMINFO's names)."""
    rec = _record(body, _MPTCP_FIELDS)
    if rec is None:
        return None
    mem = _diag_attr(body, INET_DIAG_SKMEMINFO)
    if mem:
        values = struct.unpack_from(f"={(mem[1] - mem[0]) // 4}I", body, mem[0])
        rec.update(zip(SKMEMINFO, values))
    return rec


def read_host(sock: nl.DumpSocket, layout=None) -> tuple[list[dict], list[dict]]:
    """(TCP sockets, MPTCP sockets) established in the socket's namespace
    now; `layout`: the tcp_info fields to decode (default all)."""
    tcp = [r for kind, body in sock.dump(SOCK_DIAG_BY_FAMILY, tcp_request())
           if kind == SOCK_DIAG_BY_FAMILY and (r := parse_tcp_diag(body, layout)) is not None]
    msk = [r for kind, body in sock.dump(SOCK_DIAG_BY_FAMILY, mptcp_request())
           if kind == SOCK_DIAG_BY_FAMILY and (r := parse_mptcp_diag(body)) is not None]
    return tcp, msk


# --- the same from `ss -tinHM` (iproute2 6.1's wording) ---------------------------

_ADDR = re.compile(r"^(tcp|mptcp)\s+(\S+)\s+(\d+)\s+(\d+)\s+(\S+):(\d+)\s+(\S+):(\d+)")
# ss token -> (record field, scale to the kernel's unit); times ss prints in ms
_SS_NUMBERS = {
    "rto": ("rto_us", 1000), "backoff": ("backoff", 1), "mss": ("mss", 1), "rcvmss": ("rcv_mss", 1),
    "advmss": ("advmss", 1), "cwnd": ("cwnd", 1), "ssthresh": ("ssthresh", 1),
    "bytes_sent": ("bytes_sent", 1), "bytes_retrans": ("bytes_retrans", 1),
    "bytes_acked": ("bytes_acked", 1), "bytes_received": ("bytes_received", 1),
    "segs_out": ("segs_out", 1), "segs_in": ("segs_in", 1), "data_segs_out": ("data_segs_out", 1),
    "data_segs_in": ("data_segs_in", 1), "lastsnd": ("last_data_sent_ms", 1),
    "lastrcv": ("last_data_recv_ms", 1), "lastack": ("last_ack_recv_ms", 1),
    "delivered": ("delivered", 1), "unacked": ("unacked", 1), "lost": ("lost", 1),
    "sacked": ("sacked", 1), "notsent": ("notsent", 1), "minrtt": ("min_rtt_us", 1000),
    "rcv_space": ("rcv_space", 1), "rcv_ssthresh": ("rcv_ssthresh", 1), "snd_wnd": ("snd_wnd", 1),
    "rcv_wnd": ("rcv_wnd", 1), "reordering": ("reordering", 1), "reord_seen": ("reord_seen", 1),
    "dsack_dups": ("dsack_dups", 1), "rcv_ooopack": ("rcv_ooopack", 1), "rehash": ("rehash", 1),
    "busy": ("busy_us", 1000), "rwnd_limited": ("rwnd_limited_us", 1000),
    "sndbuf_limited": ("sndbuf_limited_us", 1000), "subflows": ("subflows", 1),
}
_SS_HEX = {"write_seq", "snd_una", "rcv_nxt"}
_TOKEN = re.compile(r"token:([0-9a-f]+)\(id:\d+\)/([0-9a-f]+)\(id:\d+\)")


def _number(text: str) -> float:
    """'156ms(5.6%)', '2768ms', '0.016' -> the number before any unit."""
    value = text.split("(")[0]
    return float(value[:-2] if value.endswith("ms") else value)


def parse_ss(text: str) -> tuple[list[dict], list[dict]]:
    """`ss -tinHM` output -> (TCP socket records, MPTCP socket records) in
    parse_*_diag's fields and units, for the fields ss prints. ss leaves out
    what is zero (backoff, unacked, retransmissions), and ssthresh while the
    socket has never left slow start: such fields read 0 and
    SSTHRESH_INFINITE here, as tcp_info has them."""
    tcp, msk, rec = [], [], None
    for line in text.splitlines():
        m = _ADDR.match(line)
        if m:
            kind = m.group(1)
            rec = {"saddr": m.group(5), "sport": int(m.group(6)), "daddr": m.group(7),
                   "dport": int(m.group(8)), "rqueue": int(m.group(3)), "wqueue": int(m.group(4))}
            (tcp if kind == "tcp" else msk).append(rec)
            if kind == "tcp":
                rec.update(backoff=0, unacked=0, retrans=0, total_retrans=0, lost=0, sacked=0,
                           ssthresh=SSTHRESH_INFINITE, notsent=0)
            continue
        if rec is None or not line[:1].isspace():
            continue
        _ss_details(line, rec)
    return tcp, msk


def _ss_details(line: str, rec: dict) -> None:
    tok = _TOKEN.search(line)
    if tok:     # a subflow: the remote token, then the local one (its connection's)
        rec["token_rem"], rec["token"] = int(tok.group(1), 16), int(tok.group(2), 16)
        line = line[:tok.start()] + line[tok.end():]
    for word in line.split():
        name, sep, value = word.partition(":")
        if not sep:
            continue
        if name == "rtt":
            rtt, _, var = value.partition("/")
            rec["rtt_us"], rec["rttvar_us"] = round(float(rtt) * 1000), round(float(var) * 1000)
        elif name == "retrans":
            cur, _, total = value.partition("/")
            rec["retrans"], rec["total_retrans"] = int(cur), int(total)
        elif name == "token" and "(" not in value:       # an MPTCP socket's own token
            rec["token"] = int(value, 16)
        elif name in _SS_HEX:
            rec[name] = int(value, 16)
        elif name in _SS_NUMBERS:
            field, scale = _SS_NUMBERS[name]
            rec[field] = round(_number(value) * scale)


# Fields both ways of reading carry, to compare one with the other.
SHARED_TCP = ("cwnd", "ssthresh", "mss", "backoff", "unacked", "total_retrans", "bytes_acked",
              "bytes_sent", "bytes_received", "notsent", "delivered", "snd_wnd", "token")
SHARED_MPTCP = ("token", "subflows", "write_seq", "snd_una", "rcv_nxt")


def disagreements(diag: list[dict], ss: list[dict], fields) -> list[str]:
    """Where the same sockets, read both ways, differ ('' fields ignored):
    '<saddr>:<sport>-><daddr>:<dport> <field> diag X ss Y' per mismatch, and
    the sockets only one way saw."""
    key = lambda r: (r["saddr"], r["sport"], r["daddr"], r["dport"])  # noqa: E731
    by_ss = {key(r): r for r in ss}
    out = []
    for r in diag:
        other = by_ss.pop(key(r), None)
        name = "{}:{}->{}:{}".format(*key(r))
        if other is None:
            out.append(f"{name}: not in ss")
            continue
        out += [f"{name} {f}: diag {r[f]} ss {other[f]}" for f in fields
                if f in r and f in other and r[f] != other[f]]
    out += ["{}:{}->{}:{}: not in sock_diag".format(*k) for k in by_ss]
    return out
