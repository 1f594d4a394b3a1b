"""The wire format of the kernel's "mptcp_pm" generic netlink family, as the
userspace path manager (mptcp_pm.py) speaks it: the constants, checked
against include/uapi/linux/mptcp_pm.h, uapi/linux/mptcp.h, netlink.h and
genetlink.h, and the few encoders it needs. Spelled out with `struct`: the
handful of attributes involved is clearer than a wrapper."""
from __future__ import annotations

import ipaddress
import socket
import struct
import sys
from typing import NamedTuple

from kernel import netlink as nl

# --- netlink / generic netlink (include/uapi/linux/netlink.h, genetlink.h) ---
NETLINK_ADD_MEMBERSHIP = 1
NETLINK_CAP_ACK = 10          # errors echo only the header of our request
NETLINK_EXT_ACK = 11          # ... plus the kernel's text message (extack)


GENL_ID_CTRL = 0x10
CTRL_CMD_GETFAMILY = 3
CTRL_ATTR_FAMILY_ID = 1
CTRL_ATTR_FAMILY_NAME = 2
CTRL_ATTR_MCAST_GROUPS = 7
CTRL_ATTR_MCAST_GRP_NAME = 1
CTRL_ATTR_MCAST_GRP_ID = 2

GENLMSGHDR = struct.Struct("=BBH")   # cmd, version, reserved

# --- MPTCP PM family (include/uapi/linux/mptcp_pm.h, uapi/linux/mptcp.h) ---
MPTCP_PM_NAME = "mptcp_pm"
MPTCP_PM_VER = 1
MPTCP_PM_EV_GRP_NAME = "mptcp_pm_events"

MPTCP_PM_CMD_SUBFLOW_CREATE = 10

# Command attributes.
MPTCP_PM_ATTR_ADDR = 1            # nested MPTCP_PM_ADDR_ATTR_*: local address
MPTCP_PM_ATTR_TOKEN = 4           # u32, host order
MPTCP_PM_ATTR_ADDR_REMOTE = 6     # nested MPTCP_PM_ADDR_ATTR_*: remote address

# Address attributes (nested in the two above).
MPTCP_PM_ADDR_ATTR_FAMILY = 1     # u16
MPTCP_PM_ADDR_ATTR_ID = 2         # u8
MPTCP_PM_ADDR_ATTR_ADDR4 = 3      # 4 bytes, network order (nla_get_in_addr)
MPTCP_PM_ADDR_ATTR_ADDR6 = 4      # 16 bytes, network order
MPTCP_PM_ADDR_ATTR_PORT = 5       # u16 in HOST order: the kernel does htons(nla_get_u16())

# Event types (the genl "cmd" of a multicast message).
MPTCP_EVENT_CREATED = 1
MPTCP_EVENT_ESTABLISHED = 2
MPTCP_EVENT_CLOSED = 3
MPTCP_EVENT_SUB_ESTABLISHED = 10
MPTCP_EVENT_SUB_CLOSED = 11

# Event attributes.
MPTCP_ATTR_TOKEN = 1              # u32, host order
MPTCP_ATTR_FAMILY = 2             # u16
MPTCP_ATTR_SADDR4 = 5             # 4 bytes, network order
MPTCP_ATTR_SADDR6 = 6
MPTCP_ATTR_DADDR4 = 7
MPTCP_ATTR_DADDR6 = 8
MPTCP_ATTR_SPORT = 9              # u16, BIG-endian (nla_put_be16), unlike ADDR_ATTR_PORT
MPTCP_ATTR_DPORT = 10             # u16, big-endian
MPTCP_ATTR_FLAGS = 13             # u16, MPTCP_PM_EV_FLAG_* (newer kernels)
MPTCP_ATTR_SERVER_SIDE = 18       # u8; deprecated for FLAGS (6.18 sends it only as 1)
MPTCP_PM_EV_FLAG_SERVER_SIDE = 1 << 1


def genl_msg(family: int, cmd: int, version: int, flags: int, seq: int, attrs: bytes) -> bytes:
    return nl.message(family, flags, seq, GENLMSGHDR.pack(cmd, version, 0) + attrs)


def uint(payload: bytes) -> int:
    """Host-order unsigned integer of whatever width the kernel put."""
    return int.from_bytes(payload, sys.byteorder)


def addr_attrs(ip: ipaddress.IPv4Address | ipaddress.IPv6Address, port: int,
                addr_id: int | None) -> list[bytes]:
    fam = socket.AF_INET if ip.version == 4 else socket.AF_INET6
    kind = MPTCP_PM_ADDR_ATTR_ADDR4 if ip.version == 4 else MPTCP_PM_ADDR_ATTR_ADDR6
    attrs = [nl.attr(MPTCP_PM_ADDR_ATTR_FAMILY, struct.pack("=H", fam)),
             nl.attr(kind, ip.packed)]
    if addr_id is not None:
        attrs.append(nl.attr(MPTCP_PM_ADDR_ATTR_ID, struct.pack("=B", addr_id)))
    if port:
        attrs.append(nl.attr(MPTCP_PM_ADDR_ATTR_PORT, struct.pack("=H", port)))
    return attrs


class EventEndpoints(NamedTuple):
    """What an MPTCP event says of its connection's initial subflow ("" and
    0 where the event leaves a field out)."""
    saddr: str
    sport: int
    daddr: str
    dport: int
    server_side: bool


def event_endpoints(attrs: dict[int, bytes]) -> EventEndpoints:
    saddr = daddr = ""
    for kind, fam in ((MPTCP_ATTR_SADDR4, socket.AF_INET), (MPTCP_ATTR_SADDR6, socket.AF_INET6)):
        if kind in attrs:
            saddr = socket.inet_ntop(fam, attrs[kind])
    for kind, fam in ((MPTCP_ATTR_DADDR4, socket.AF_INET), (MPTCP_ATTR_DADDR6, socket.AF_INET6)):
        if kind in attrs:
            daddr = socket.inet_ntop(fam, attrs[kind])
    sport = struct.unpack("!H", attrs[MPTCP_ATTR_SPORT][:2])[0] if MPTCP_ATTR_SPORT in attrs else 0
    dport = struct.unpack("!H", attrs[MPTCP_ATTR_DPORT][:2])[0] if MPTCP_ATTR_DPORT in attrs else 0
    # Older kernels send only SERVER_SIDE (u8, possibly 0); newer ones also
    # set MPTCP_PM_EV_FLAG_SERVER_SIDE in FLAGS. Either one means server.
    server = bool(attrs.get(MPTCP_ATTR_SERVER_SIDE, b"\0")[0])
    if MPTCP_ATTR_FLAGS in attrs:
        server |= bool(uint(attrs[MPTCP_ATTR_FLAGS]) & MPTCP_PM_EV_FLAG_SERVER_SIDE)
    return EventEndpoints(saddr, sport, daddr, dport, server)


def family_request(seq: int) -> bytes:
    """CTRL_CMD_GETFAMILY for "mptcp_pm"."""
    name = nl.attr(CTRL_ATTR_FAMILY_NAME, MPTCP_PM_NAME.encode() + b"\0")
    return genl_msg(GENL_ID_CTRL, CTRL_CMD_GETFAMILY, 1, nl.NLM_F_REQUEST, seq, name)


def family_reply(payload: bytes) -> tuple[int, int] | None:
    """(family id, events group id) from the controller's reply; None if the
    family has no events group."""
    attrs = nl.parse_attrs(payload[GENLMSGHDR.size:])
    family = struct.unpack("=H", attrs[CTRL_ATTR_FAMILY_ID][:2])[0]
    for grp in nl.parse_attrs(attrs.get(CTRL_ATTR_MCAST_GROUPS, b"")).values():
        g = nl.parse_attrs(grp)
        if g.get(CTRL_ATTR_MCAST_GRP_NAME, b"").rstrip(b"\0").decode() == MPTCP_PM_EV_GRP_NAME:
            return family, struct.unpack("=I", g[CTRL_ATTR_MCAST_GRP_ID][:4])[0]
    return None


def subflow_create(family: int, seq: int, token: int,
                   local: tuple[ipaddress.IPv4Address | ipaddress.IPv6Address, int],
                   remote: tuple[ipaddress.IPv4Address | ipaddress.IPv6Address, int]) -> bytes:
    """MPTCP_PM_CMD_SUBFLOW_CREATE for connection `token`, acked: from
    `local` (address, address id; no port, so an ephemeral one) to `remote`
    (address, the server's port)."""
    attrs = b"".join((
        nl.attr(MPTCP_PM_ATTR_TOKEN, struct.pack("=I", token)),
        nl.nested(MPTCP_PM_ATTR_ADDR, *addr_attrs(local[0], 0, local[1])),
        nl.nested(MPTCP_PM_ATTR_ADDR_REMOTE, *addr_attrs(remote[0], remote[1], None)),
    ))
    return genl_msg(family, MPTCP_PM_CMD_SUBFLOW_CREATE, MPTCP_PM_VER,
                    nl.NLM_F_REQUEST | nl.NLM_F_ACK, seq, attrs)
