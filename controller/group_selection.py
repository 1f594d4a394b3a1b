"""Open vSwitch's group selection method property, which the proactive
mode's select groups carry so that each switch hashes the 5-tuple with a
basis of its own (os-ken has no class for it; OpenFlow 1.5 group mods carry
it as Open vSwitch's NTR extension)."""
from __future__ import annotations

import struct

# Open vSwitch's group selection method property (include/openflow/netronome-ext.h):
# experimenter property, NTR vendor id, type 1; then 4 pad bytes, the method
# name (16 bytes), a 64-bit parameter (the hash basis) and the fields hashed,
# each an OXM entry whose value is a mask.
NTR_VENDOR_ID, NTRT_SELECTION_METHOD = 0x0000154D, 1
OFPGPT_EXPERIMENTER = 0xFFFF


def _oxm(field: int, length: int) -> int:
    return (0x8000 << 16) | (field << 9) | length


# ip_proto, ipv4_src, ipv4_dst, tcp_src, tcp_dst, udp_src, udp_dst: Open
# vSwitch hashes the fields whose prerequisites a packet meets, so ICMP is
# hashed on addresses and protocol only.
HASH_FIELDS = (_oxm(10, 1), _oxm(11, 4), _oxm(12, 4), _oxm(13, 2), _oxm(14, 2),
               _oxm(15, 2), _oxm(16, 2))


class SelectionMethod:
    """The group property, serialized by hand (os-ken has no class for it)."""

    def __init__(self, method: str, param: int, fields=HASH_FIELDS):
        self.method, self.param, self.fields = method, param, fields

    def serialize(self) -> bytes:
        body = struct.pack("!II4x16sQ", NTR_VENDOR_ID, NTRT_SELECTION_METHOD,
                           self.method.encode(), self.param)
        # Each field as an OXM entry whose value is the mask hashed: all ones.
        body += b"".join(struct.pack("!I", f) + b"\xff" * (f & 0xFF) for f in self.fields)
        length = 4 + len(body)
        return struct.pack("!HH", OFPGPT_EXPERIMENTER, length) + body + bytes(-length % 8)
