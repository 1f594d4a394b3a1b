"""The controller's wire formats and the names it shares with the fabric,
without root: the select group's selection-method property as Open vSwitch
parses it, host MACs, datapath ids, and which fabric a run gets by default."""
from __future__ import annotations

import struct

from controller.addressing import datapath_ids, host_mac, ofport
from controller.app import HASH_FIELDS, NTR_VENDOR_ID, SelectionMethod
from dctopo import FatTree, TwoPaths


def test_selection_method_property_layout():
    """type, length, vendor, exp type, 4 pad bytes, 16-byte name, 64-bit
    basis, then each field as an OXM entry with an all-ones value (Open
    vSwitch reads a value there and rejects the property without it), the
    whole padded to 8 bytes, the length not counting the padding."""
    raw = SelectionMethod("hash", 0x1234_5678_9ABC_DEF0).serialize()
    kind, length, vendor, exp_type = struct.unpack_from("!HHII", raw)
    assert (kind, vendor, exp_type) == (0xFFFF, NTR_VENDOR_ID, 1)
    assert len(raw) % 8 == 0 and length <= len(raw) < length + 8
    assert raw[16:32].rstrip(b"\0") == b"hash"
    assert struct.unpack_from("!Q", raw, 32)[0] == 0x1234_5678_9ABC_DEF0
    fields, offset = [], 40
    while offset < length:
        header = struct.unpack_from("!I", raw, offset)[0]
        size = header & 0xFF
        assert raw[offset + 4: offset + 4 + size] == b"\xff" * size
        fields.append(header)
        offset += 4 + size
    assert offset == length and tuple(fields) == HASH_FIELDS
    # ip_proto, ipv4_src/dst, tcp and udp ports: OXM_OF_* 10..16
    assert [(f >> 9) & 0x7F for f in fields] == list(range(10, 17))


def test_host_macs_encode_addresses_and_are_local_unicast():
    assert host_mac("10.2.1.3/32") == "02:00:0a:02:01:03"
    macs = {host_mac(a) for h in FatTree(k=4).hosts() for a in FatTree(k=4).host_addresses(h)}
    assert len(macs) == 16
    assert all(int(m.split(":")[0], 16) & 0b11 == 0b10 for m in macs)


def test_datapath_ids_are_unique_and_from_the_topology():
    ft = FatTree(k=4)
    ids = datapath_ids(ft)
    assert len(set(ids.values())) == len(ft.switches()) == 20
    assert ids["e1_0"] == int(ft.nodeInfo("e1_0")["dpid"], 16)
    assert len(set(datapath_ids(TwoPaths()).values())) == len(TwoPaths().switches())
    assert ofport(0) == 1


def test_openflow_preflight_names_what_is_missing(monkeypatch):
    import shutil

    import pytest

    from kernel import preflight
    real = shutil.which
    monkeypatch.setattr(preflight.shutil, "which",
                        lambda name: None if name == "ovs-vswitchd" else real(name))
    with pytest.raises(preflight.PreflightError, match="ovs-vswitchd.*openvswitch-switch"):
        preflight.check_openflow()
