"""The controller's wire formats and the names it shares with the fabric,
without root: the select group's selection-method property as Open vSwitch
parses it, host MACs, datapath ids, and which fabric a run gets by default."""
from __future__ import annotations

import struct

from controller.addressing import datapath_ids, host_mac, ofport
from controller.group_selection import HASH_FIELDS, NTR_VENDOR_ID, SelectionMethod
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


class FakeDatapath:
    """What the handlers use of an os-ken Datapath: `id`, which os-ken's own
    features handler sets in its own thread (None until then), the OpenFlow
    1.5 modules, and send_msg (kept here, nothing is serialized)."""

    def __init__(self):
        from os_ken.ofproto import ofproto_v1_5, ofproto_v1_5_parser
        self.id = None
        self.ofproto, self.ofproto_parser = ofproto_v1_5, ofproto_v1_5_parser
        self.sent = []

    def send_msg(self, msg) -> None:
        self.sent.append(msg)


def test_a_switch_is_configured_before_os_ken_has_set_its_datapath_id(tmp_path):
    """The features reply reaches our handler while os-ken's has not yet set
    dp.id (their threads race): the switch is still configured from the
    reply's own datapath_id, and its barrier reply counts it as ready."""
    import json
    import logging
    from types import SimpleNamespace

    from controller.app import EcmpController
    topo = FatTree(k=4)
    app = EcmpController.__new__(EcmpController)      # handlers only: no app manager, no threads
    app.logger = logging.getLogger("test_controller_app")
    status = tmp_path / "status.json"
    app._setup({"topo": topo, "mode": "proactive", "seed": 0, "idle_timeout_s": 30,
                "status": str(status)})
    dp = FakeDatapath()
    app.switch_features(SimpleNamespace(msg=SimpleNamespace(datapath=dp,
                                                            datapath_id=datapath_ids(topo)["a1_0"])))
    assert dp.sent, "the switch was not configured"
    kinds = [type(m).__name__ for m in dp.sent]
    assert kinds[-1] == "OFPBarrierRequest" and kinds.count("OFPGroupMod") >= 2, kinds
    assert dp.id is None                              # os-ken's handler still has not run
    app.barrier_reply(SimpleNamespace(msg=SimpleNamespace(datapath=dp)))
    assert app.ready == {"a1_0"}
    assert json.loads(status.read_text())["ready"] == ["a1_0"]


def test_a_start_timeout_quotes_the_log_of_that_start(tmp_path):
    from emulator.fabrics.openflow_controller import _log_excerpt
    log = tmp_path / "controller.log"
    log.write_text("--- controller start 1 (proactive)\nunknown datapath 7\n"
                   "--- controller start 2 (proactive)\ne0_0 (0000000000000001) connected, proactive\n"
                   "a3_0: OpenFlow error type 1 code 2: 00\nsomething else\n")
    assert _log_excerpt(log, ["a3_0"]) == "; the log says: a3_0: OpenFlow error type 1 code 2: 00"
    assert _log_excerpt(log, ["c1"]).startswith("; the log says: a3_0")     # "rror" matches
    log.write_text("--- controller start 1 (proactive)\ne0_0 connected\n")
    assert _log_excerpt(log, ["a3_0"]) == "; the log names none of them"
    assert _log_excerpt(tmp_path / "missing.log", ["a3_0"]) == ""
