"""kernel/mptcp_pm_wire.py without root: what the path manager sends decodes
back to what it meant, and events decode as the kernel encodes them
(ports big-endian in events, host order in commands)."""
import ipaddress
import socket
import struct

from kernel import netlink as nl
from kernel import mptcp_pm_wire as w


def test_subflow_create_carries_token_local_id_and_the_servers_port():
    msg = w.subflow_create(0x1d, 7, 0xCAFE, (ipaddress.ip_address("10.0.0.2"), 3),
                           (ipaddress.ip_address("10.2.0.2"), 5201))
    [(kind, flags, seq, payload)] = list(nl.split_messages(msg))
    assert (kind, seq) == (0x1d, 7) and flags & nl.NLM_F_ACK and flags & nl.NLM_F_REQUEST
    cmd, version, _ = w.GENLMSGHDR.unpack_from(payload)
    assert (cmd, version) == (w.MPTCP_PM_CMD_SUBFLOW_CREATE, w.MPTCP_PM_VER)
    attrs = nl.parse_attrs(payload[w.GENLMSGHDR.size:])
    assert w.uint(attrs[w.MPTCP_PM_ATTR_TOKEN]) == 0xCAFE
    local = nl.parse_attrs(attrs[w.MPTCP_PM_ATTR_ADDR])
    remote = nl.parse_attrs(attrs[w.MPTCP_PM_ATTR_ADDR_REMOTE])
    assert local[w.MPTCP_PM_ADDR_ATTR_ADDR4] == socket.inet_aton("10.0.0.2")
    assert w.uint(local[w.MPTCP_PM_ADDR_ATTR_ID]) == 3 and w.MPTCP_PM_ADDR_ATTR_PORT not in local
    assert w.uint(remote[w.MPTCP_PM_ADDR_ATTR_PORT]) == 5201     # host order, as the kernel reads it
    assert w.MPTCP_PM_ADDR_ATTR_ID not in remote


def test_event_endpoints_read_big_endian_ports_and_either_server_marker():
    attrs = {w.MPTCP_ATTR_SADDR4: socket.inet_aton("10.0.0.2"), w.MPTCP_ATTR_DADDR4: socket.inet_aton("10.2.0.2"),
             w.MPTCP_ATTR_SPORT: struct.pack("!H", 40000), w.MPTCP_ATTR_DPORT: struct.pack("!H", 5201)}
    assert w.event_endpoints(attrs) == ("10.0.0.2", 40000, "10.2.0.2", 5201, False)
    assert w.event_endpoints({**attrs, w.MPTCP_ATTR_SERVER_SIDE: b"\1"}).server_side
    flags = struct.pack("=H", w.MPTCP_PM_EV_FLAG_SERVER_SIDE)
    assert w.event_endpoints({**attrs, w.MPTCP_ATTR_SERVER_SIDE: b"\0", w.MPTCP_ATTR_FLAGS: flags}).server_side
    assert w.event_endpoints({}) == ("", 0, "", 0, False)


def test_family_reply_finds_the_events_group_or_says_none():
    def reply(groups):
        grp = b"".join(nl.nested(i + 1, nl.attr(w.CTRL_ATTR_MCAST_GRP_NAME, name.encode() + b"\0"),
                                 nl.attr(w.CTRL_ATTR_MCAST_GRP_ID, struct.pack("=I", gid)))
                       for i, (name, gid) in enumerate(groups))
        return (w.GENLMSGHDR.pack(1, 2, 0) + nl.attr(w.CTRL_ATTR_FAMILY_ID, struct.pack("=H", 0x1d))
                + nl.nested(w.CTRL_ATTR_MCAST_GROUPS, grp))
    assert w.family_reply(reply([("other", 3), (w.MPTCP_PM_EV_GRP_NAME, 9)])) == (0x1d, 9)
    assert w.family_reply(reply([("other", 3)])) is None
    req = w.family_request(5)
    [(kind, _, seq, payload)] = list(nl.split_messages(req))
    assert (kind, seq) == (w.GENL_ID_CTRL, 5)
    name = nl.parse_attrs(payload[w.GENLMSGHDR.size:])[w.CTRL_ATTR_FAMILY_NAME]
    assert name == w.MPTCP_PM_NAME.encode() + b"\0"
