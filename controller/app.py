"""The ECMP controller: an os-ken OpenFlow 1.5 application with RipL-POX's
behaviour, for the `openflow` fabric (emulator/fabrics/openflow.py).

Every flow takes one of all the shortest paths, picked by a seeded hash of
its 5-tuple (controller/ecmp_hash.py; ICMP by addresses and protocol). The
topology comes from the fabric (a pickled dctopo topology), never from
flooding, so host MACs, ports and paths are known before the first packet.

Modes:
  reactive    as RipL-POX: a flow's first packet comes to the controller,
              which picks path = hash(5-tuple) over all shortest paths,
              installs exact-match entries along it (idle timeout) from the
              last switch back, and sends the packet on at the switch that
              asked.
  proactive   every switch gets, per destination address, one entry to its
              single port down or to a select group over its ports up. The
              group hashes the 5-tuple with a basis of its own per switch
              (Open vSwitch's `hash` selection method; the same basis at
              every tier polarizes: every aggregation switch would send all
              of an edge uplink's flows to one core). New flows never wait.

With a schedule interval (reactive only), Hedera's Global First Fit runs
on top (controller/firstfit_rounds.py, deciding by controller/firstfit.py):
every interval the controller reads each flow's byte count at its first
switch, takes flows above a tenth of the link rate as large, estimates their
demands, and re-points a large flow's entries along the first of its
shortest paths with room for its demand. Each round goes to the schedule log
(one JSON line: when, how long it took, the flows measured, the moves made).

In both modes, ARP requests come to the controller, which answers with the
target's MAC: nothing is flooded, so there are no loops to break. Other
traffic with no entry is dropped.

OpenFlow 1.5 rather than 1.3 because a group's selection method is a group
property, which only 1.5 group mods carry (Open vSwitch's NTR extension).
"""
from __future__ import annotations

import json
import os
import pickle
import threading
import time

from os_ken import cfg
from os_ken.base import app_manager
from os_ken.controller import ofp_event
from os_ken.controller.handler import CONFIG_DISPATCHER, MAIN_DISPATCHER, set_ev_cls
from os_ken.lib import hub
from os_ken.lib.packet import arp, ethernet, ipv4, packet, tcp, udp
from os_ken.ofproto import ofproto_v1_5

from controller import paths
from controller.addressing import datapath_ids, host_mac, ofport
from controller.ecmp_hash import ecmp_index, switch_seed
from controller.firstfit_rounds import FirstFitRounds
from controller.flow_table import (ETH_ARP, ETH_IPV4, PRIO_ARP, PRIO_FLOW, PRIO_MISS, PRIO_ROUTE,
                                   send_flow_mod)
from controller.group_selection import SelectionMethod

CONF = cfg.CONF
CONF.register_cli_opts([
    cfg.StrOpt("ecmp-spec", default="", help="the fabric's pickled ControllerSpec"),
])

# Every HEARTBEAT_S the controller sends each switch an echo request; the
# replies are handled by the same event loop as packet-ins, so the newest
# reply's time, in the status file, shows the loop is alive (the fabric calls
# the controller hung when it is a few seconds old).
HEARTBEAT_S = 0.5


class EcmpController(FirstFitRounds, app_manager.OSKenApp):
    OFP_VERSIONS = [ofproto_v1_5.OFP_VERSION]

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        with open(CONF.ecmp_spec, "rb") as f:
            self._setup(pickle.load(f))
        self._write_status()
        hub.spawn(self._heartbeat)
        if self.scheduler is not None:
            hub.spawn(self._schedule)

    def _setup(self, spec: dict) -> None:
        """Everything the handlers use, from the fabric's spec (apart from
        os-ken's app manager and threads, so that tests can drive handlers)."""
        self.topo = spec["topo"]
        self.mode: str = spec["mode"]
        self.seed: int = spec["seed"]
        self.idle_timeout: int = spec["idle_timeout_s"]
        self.status_path: str = spec["status"]
        self.switch_of = {dpid: name for name, dpid in datapath_ids(self.topo).items()}
        # Each connection's switch, by its os-ken Datapath object: set from
        # the features reply itself. os-ken's own handler sets `dp.id` from
        # that reply too, but in its own thread, which can run after ours.
        self.switch_at: dict[object, str] = {}
        self.ports = paths.port_map(self.topo)
        self.macs = {a: host_mac(a) for h in self.topo.hosts() for a in self.topo.host_addresses(h)}
        self.out_ports = paths.out_ports(self.topo) if self.mode == "proactive" else {}
        self.datapaths: dict[str, object] = {}
        self.ready: set[str] = set()
        self.paths_cache: dict[tuple[str, str], list[paths.Path]] = {}
        self.counts = {"packet_in": 0, "arp_replies": 0, "flows_routed": 0, "unroutable": 0}
        self.last_echo = 0.0
        self._status_lock = threading.Lock()
        self._setup_first_fit(spec)

    # -- status for the harness -----------------------------------------------
    def _write_status(self) -> None:
        """The switches configured so far, and what the controller has done,
        for the fabric to wait on and to record (written atomically)."""
        # One writer at a time: the heartbeat and the event handlers run in
        # threads of their own (os-ken's native hub), and two writers of the
        # one temporary file could replace each other's, or fail.
        with self._status_lock:
            tmp = self.status_path + ".tmp"
            with open(tmp, "w") as f:
                json.dump({"pid": os.getpid(), "mode": self.mode, "ready": sorted(self.ready),
                           "time": time.time(), "last_echo": self.last_echo, **self.counts}, f)
            os.replace(tmp, self.status_path)

    def _heartbeat(self) -> None:
        while True:
            for dp in list(self.datapaths.values()):
                dp.send_msg(dp.ofproto_parser.OFPEchoRequest(dp, data=b"ecmp"))
            self._write_status()
            hub.sleep(HEARTBEAT_S)

    @set_ev_cls(ofp_event.EventOFPEchoReply, MAIN_DISPATCHER)
    def echo_reply(self, ev) -> None:
        self.last_echo = time.time()

    # -- switch set-up --------------------------------------------------------------
    @set_ev_cls(ofp_event.EventOFPSwitchFeatures, CONFIG_DISPATCHER)
    def switch_features(self, ev) -> None:
        dp = ev.msg.datapath
        # The reply's datapath_id, not dp.id: with os-ken's native threads our
        # handler can run before os-ken's sets dp.id, which then reads None.
        # Read that way, a switch was now and then never configured: "the
        # controller configured 19 of 20 switches in 60 s", Open vSwitch
        # reporting the missing one connected (a Debian 13 guest in CI).
        dpid = ev.msg.datapath_id
        switch = self.switch_of.get(dpid)
        if switch is None:
            self.logger.warning("unknown datapath %s", dpid)
            return
        self.switch_at[dp] = switch
        self.datapaths[switch] = dp
        ofp, parser = dp.ofproto, dp.ofproto_parser
        # Start from nothing: a fresh controller after a crash owns the tables.
        dp.send_msg(parser.OFPFlowMod(dp, command=ofp.OFPFC_DELETE, table_id=ofp.OFPTT_ALL,
                                      out_port=ofp.OFPP_ANY, out_group=ofp.OFPG_ANY))
        dp.send_msg(parser.OFPGroupMod(dp, command=ofp.OFPGC_DELETE, group_id=ofp.OFPG_ALL))
        to_controller = [parser.OFPActionOutput(ofp.OFPP_CONTROLLER, ofp.OFPCML_NO_BUFFER)]
        send_flow_mod(dp, PRIO_ARP, parser.OFPMatch(eth_type=ETH_ARP), to_controller)
        send_flow_mod(dp, PRIO_MISS, parser.OFPMatch(),
                      to_controller if self.mode == "reactive" else [])
        if self.mode == "proactive":
            self._install_routes(dp, switch)
        dp.send_msg(parser.OFPBarrierRequest(dp))
        self.logger.info("%s (%016x) connected, %s", switch, dpid, self.mode)

    # CONFIG_DISPATCHER too: os-ken hands the features reply to this app's
    # thread before its own handler asks for the port list, whose reply moves
    # the switch to MAIN. With native threads this app can send its barrier
    # first; the barrier's reply then arrives in CONFIG and, with MAIN alone,
    # was dropped, so the switch never counted as configured (suspected in a
    # CI run where 5 of 20 switches were configured in 60 s).
    @set_ev_cls(ofp_event.EventOFPBarrierReply, [CONFIG_DISPATCHER, MAIN_DISPATCHER])
    def barrier_reply(self, ev) -> None:
        switch = self.switch_at.get(ev.msg.datapath)
        with self._status_lock:
            if not switch or switch in self.ready:
                return
            self.ready.add(switch)
        self._write_status()

    def _install_routes(self, dp, switch: str) -> None:
        """Per destination address: its one port, or a select group hashing
        the 5-tuple over its ports (upward hops)."""
        ofp, parser = dp.ofproto, dp.ofproto_parser
        basis = switch_seed(self.seed, switch) & 0xFFFFFFFF
        for group_id, (dest, ports) in enumerate(sorted(self.out_ports[switch].items()), start=1):
            match = parser.OFPMatch(eth_type=ETH_IPV4, ipv4_dst=dest)
            if len(ports) == 1:
                [port] = ports
                send_flow_mod(dp, PRIO_ROUTE, match, [parser.OFPActionOutput(ofport(port))])
                continue
            buckets = [parser.OFPBucket(bucket_id=i, actions=[parser.OFPActionOutput(ofport(p))])
                       for i, p in enumerate(sorted(ports))]
            dp.send_msg(parser.OFPGroupMod(dp, command=ofp.OFPGC_ADD, type_=ofp.OFPGT_SELECT,
                                           group_id=group_id, buckets=buckets,
                                           properties=[SelectionMethod("hash", basis)]))
            send_flow_mod(dp, PRIO_ROUTE, match, [parser.OFPActionGroup(group_id)])

    @set_ev_cls(ofp_event.EventOFPErrorMsg, [CONFIG_DISPATCHER, MAIN_DISPATCHER])
    def error(self, ev) -> None:
        msg = ev.msg
        self.counts["switch_errors"] = self.counts.get("switch_errors", 0) + 1
        self.logger.error("%s: OpenFlow error type %d code %d: %s",
                          self.switch_at.get(msg.datapath), msg.type, msg.code, bytes(msg.data)[:64].hex())

    # -- packets sent to us ---------------------------------------------------------
    @set_ev_cls(ofp_event.EventOFPPacketIn, MAIN_DISPATCHER)
    def packet_in(self, ev) -> None:
        msg = ev.msg
        dp = msg.datapath
        switch = self.switch_at.get(dp)
        in_port = msg.match["in_port"]
        pkt = packet.Packet(msg.data)
        self.counts["packet_in"] += 1
        if switch is None:
            return
        request = pkt.get_protocol(arp.arp)
        if request is not None:
            self._answer_arp(dp, in_port, request)
            return
        ip = pkt.get_protocol(ipv4.ipv4)
        if ip is not None and self.mode == "reactive":
            self._route(dp, switch, in_port, ip, pkt, msg.data)

    def _answer_arp(self, dp, in_port: int, request) -> None:
        """Reply for any host address with that host's MAC."""
        if request.opcode != arp.ARP_REQUEST or request.dst_ip not in self.macs:
            return
        mac = self.macs[request.dst_ip]
        reply = packet.Packet()
        reply.add_protocol(ethernet.ethernet(dst=request.src_mac, src=mac, ethertype=ETH_ARP))
        reply.add_protocol(arp.arp(opcode=arp.ARP_REPLY, src_mac=mac, src_ip=request.dst_ip,
                                   dst_mac=request.src_mac, dst_ip=request.src_ip))
        reply.serialize()
        self._packet_out(dp, in_port, dp.ofproto.OFPP_IN_PORT, reply.data)
        self.counts["arp_replies"] += 1

    def _packet_out(self, dp, in_port: int, out_port: int, data: bytes) -> None:
        ofp, parser = dp.ofproto, dp.ofproto_parser
        dp.send_msg(parser.OFPPacketOut(dp, buffer_id=ofp.OFP_NO_BUFFER,
                                        match=parser.OFPMatch(in_port=in_port),
                                        actions=[parser.OFPActionOutput(out_port)], data=data))

    def _route(self, dp, switch: str, in_port: int, ip, pkt, data: bytes) -> None:
        """RipL-POX's reactive step: hash the 5-tuple onto one of all the
        shortest paths, install it from here to the destination, send on."""
        sport = dport = None
        l4 = pkt.get_protocol(tcp.tcp) or pkt.get_protocol(udp.udp)
        if l4 is not None:
            sport, dport = l4.src_port, l4.dst_port
        candidates = self._paths(ip.src, ip.dst)
        if not candidates:
            self.counts["unroutable"] += 1
            return
        path = candidates[ecmp_index(len(candidates), ip.src, ip.dst, ip.proto, sport, dport,
                                     seed=self.seed)]
        here = (switch, in_port - 1)
        if not any((hop[0], hop[1]) == here for hop in path):
            # The packet reached a switch off the hashed path (an entry upstream
            # expired and was re-made differently, or the path was cut): carry
            # on from here along the paths that pass through it.
            through = [p for p in candidates if any((h[0], h[1]) == here for h in p)]
            if not through:
                self.counts["unroutable"] += 1
                return
            path = through[ecmp_index(len(through), ip.src, ip.dst, ip.proto, sport, dport,
                                      seed=self.seed)]
        hops = path[next(i for i, h in enumerate(path) if (h[0], h[1]) == here):]
        key = (ip.src, ip.dst, ip.proto, sport, dport)
        self._install(key, hops)
        if hops == path and ip.proto == 6 and self.scheduler is not None:
            with self._flows_lock:
                self.flows.routed(key, path, time.monotonic())
        self._packet_out(dp, in_port, ofport(hops[0][2]), data)
        self.counts["flows_routed"] += 1
        if self.counts["flows_routed"] % 50 == 0:
            self._write_status()

    def _install(self, key: tuple, hops: paths.Path, first_modify: bool = False) -> None:
        """Exact-match entries for flow `key` (src, dst, proto, sport,
        dport) along `hops`, downstream first, so no switch forwards the flow
        to one without an entry. `first_modify`: the first switch already has
        the flow's entry; change its output in place (its counters stay)."""
        src, dst, proto, sport, dport = key
        fields = {"eth_type": ETH_IPV4, "ip_proto": proto, "ipv4_src": src, "ipv4_dst": dst}
        if sport is not None:
            kind = "tcp" if proto == 6 else "udp"
            fields.update({f"{kind}_src": sport, f"{kind}_dst": dport})
        for i, (sw, inp, outp) in reversed(list(enumerate(hops))):
            hop_dp = self.datapaths.get(sw)
            if hop_dp is None:
                continue
            parser = hop_dp.ofproto_parser
            modify = i == 0 and first_modify
            send_flow_mod(hop_dp, PRIO_FLOW, parser.OFPMatch(in_port=ofport(inp), **fields),
                          [parser.OFPActionOutput(ofport(outp))],
                          idle_timeout=0 if modify else self.idle_timeout, modify=modify)

    # -- paths -----------------------------------------------------------------------
    def _paths(self, src: str, dst: str) -> list[paths.Path]:
        key = (src, dst)
        if key not in self.paths_cache:
            try:
                self.paths_cache[key] = paths.address_paths(self.topo, src, dst)
            except ValueError:
                self.paths_cache[key] = []
        return self.paths_cache[key]
