"""The kernel-routing fabric (`--fabric l3`): every switch is a Linux router.

Each switch forwards in its own namespace with one /32 route per host
address; where several neighbours lie on shortest paths to that host the route
is multipath, and the kernel picks a next hop by hashing each packet's
headers, as ECMP in a modern Clos fabric does.

Two settings make the hash spread (without them, tiers repeat each other's
choice and some uplinks stay idle: hash polarization):
  * `fib_multipath_hash_policy=3` with fields 0x37 (source and destination
    address, protocol, source and destination port) hashes the headers. The
    default policies reuse the flow hash the sending socket stored on the skb,
    which survives veth hops, so every tier would make the same choice.
  * a distinct `fib_multipath_hash_seed` per router, so that two tiers do not
    map the same 5-tuple to the same port index. Kernels before 6.11 have no
    such seed (Debian 12's 6.1): every namespace hashes with one boot-time
    key, so an edge router and the aggregation router above it would pick
    the same port index for a flow and half the cores would stay idle. There
    each tier hashes a different set of header fields instead (ports always
    among them): different input, independent choices. The sweep's seed then
    no longer changes the choices; `ecmp_hash` says which way was taken.

Links between routers are unnumbered: a router's id (dctopo) sits on its
loopback and neighbours reach it with `via <id> dev <port> onlink`.

Every interface has a fixed MAC, and every node is given its link peers'
addresses and MACs as permanent neighbour entries before the first packet:
nothing ARPs. Why: the kernel keeps one ARP table for all namespaces, and
its dynamic entries are capped machine-wide (net.ipv4.neigh.default.
gc_thresh3, 1024 by default). FatTree(8) 4:1 has 512 hosts and 1536
link ends; its TCP runs with the socket driver overflowed the table
("neighbor table overflow!" in the kernel log): at 1/4 connection per host
20 of 128 connections failed (EHOSTUNREACH, or not connected in 10 s).
Permanent entries are not counted against that cap, and they leave with
their namespaces. An address that is not a link peer's still resolves by
ARP.
"""
from __future__ import annotations

import functools
import hashlib

from base.platform import sysctl_exists
from dctopo import Interface
from emulator.fabrics.common import Fabric, _batch, _sysctl, common_sysctls, route_line

# addresses, protocol, ports (see ip-sysctl.rst, fib_multipath_hash_fields)
HASH_FIELDS_5TUPLE = "0x0037"
# Without per-router seeds: the fields each tier hashes (0x01 source address,
# 0x02 destination address, 0x04 protocol, 0x10/0x20 ports). IPv4 has no flow
# label (0x08), so leaving it out would change nothing.
HASH_FIELDS_BY_ROLE = {"edge": "0x0037", "agg": "0x0033", "core": "0x0031"}
HASH_FIELDS_OTHER = "0x0035"


class L3Fabric(Fabric):
    name = "l3"
    _next_hops: dict | None = None

    @functools.cached_property
    def seeded_hash(self) -> bool:
        """Whether routers can have a hash seed each (asked once per fabric)."""
        return sysctl_exists("net.ipv4.fib_multipath_hash_seed")

    @property
    def ecmp_hash(self) -> str:
        if self.seeded_hash:
            return "5-tuple, a seed per router (fib_multipath_hash_seed)"
        return ("5-tuple, other header fields per tier: this kernel has no "
                "fib_multipath_hash_seed (Linux 6.11 or later)")

    def hash_sysctls(self, switch: str) -> dict[str, str]:
        if self.seeded_hash:
            return {"net.ipv4.fib_multipath_hash_fields": HASH_FIELDS_5TUPLE,
                    "net.ipv4.fib_multipath_hash_seed": str(self.hash_seed(switch))}
        fields = HASH_FIELDS_BY_ROLE.get(self.topo.role(switch), HASH_FIELDS_OTHER)
        return {"net.ipv4.fib_multipath_hash_fields": fields}

    def gateway(self, intf: Interface) -> str:
        return self.topo.nodeInfo(intf.peer)["router_id"]

    @functools.cached_property
    def _ports(self) -> dict[str, list[Interface]]:
        return self.topo.port_map()

    @functools.cached_property
    def _node_index(self) -> dict[str, int]:
        return {name: i for i, name in enumerate(sorted(self.topo.nodes()))}

    def mac(self, node: str, port: int) -> str:
        """Locally administered (02:...), from the node's index and the port."""
        i = self._node_index[node]
        return f"02:00:{i >> 8 & 255:02x}:{i & 255:02x}:{port >> 8 & 255:02x}:{port & 255:02x}"

    def _peer_addresses(self, intf: Interface) -> list[str]:
        """What a node may send to through `intf` on-link: the peer
        router's id, or every address of the peer host (a host that relays,
        as in BCube, is reached on any of them)."""
        if self.topo.isSwitch(intf.peer):
            router_id = self.topo.nodeInfo(intf.peer).get("router_id")
            return [router_id] if router_id else []
        return [i.ip.split("/")[0] for i in self._ports[intf.peer] if i.ip]

    def neighbour_lines(self, node: str) -> list[str]:
        """`ip` lines: every link peer's addresses as permanent neighbours."""
        return [f"neigh replace {addr} lladdr {self.mac(intf.peer, intf.peer_port)} "
                f"dev {intf.name} nud permanent"
                for intf in self._ports[node] for addr in self._peer_addresses(intf)]

    def host_script(self, host: str) -> list[str]:
        return [*super().host_script(host), *_batch("ip", self.neighbour_lines(host))]

    def switch_script(self, switch: str) -> list[str]:
        sysctls = {
            **common_sysctls(),
            "net.ipv4.ip_forward": "1",
            "net.ipv4.fib_multipath_hash_policy": "3",
            **self.hash_sysctls(switch),
        }
        router_id = self.topo.nodeInfo(switch)["router_id"]
        ip_lines = ["link set lo up", f"addr add {router_id}/32 dev lo"]
        ip_lines += [f"link set {i.name} up" for i in self._ports[switch]]
        ip_lines += self.neighbour_lines(switch)
        ip_lines += self.route_lines(switch)
        return [*_sysctl(sysctls), *_batch("ip", ip_lines), *self.link_script(switch)]

    def hash_seed(self, switch: str) -> int:
        """A per-router seed, stable for a given sweep seed (u32, nonzero)."""
        digest = hashlib.sha256(f"{self.seed}:{switch}".encode()).digest()
        return int.from_bytes(digest[:4], "big") or 1

    def route_lines(self, switch: str) -> list[str]:
        own = self.topo.switch_routes(switch)
        if own is not None:                 # a topology that routes itself (BCube)
            return ([r.line() for r in self.topo.switch_rules(switch)]
                    + [route_line(switch, r) for r in own])
        lines = []
        for dest_ip, hops in sorted(self.next_hops()[switch].items()):
            lines.append(f"route replace {dest_ip}/32 " + " ".join(
                self._nexthop(intf, len(hops) > 1) for intf in hops))
        return lines

    def _nexthop(self, intf: Interface, multipath: bool) -> str:
        if not self.topo.isSwitch(intf.peer):
            # The host itself: on-link, the router ARPs for it.
            return f"dev {intf.name} scope link"
        prefix = "nexthop " if multipath else ""
        return f"{prefix}via {self.topo.nodeInfo(intf.peer)['router_id']} dev {intf.name} onlink"

    def next_hops(self) -> dict[str, dict[str, list[Interface]]]:
        """switch -> host address -> the switch's interfaces on shortest
        paths (DCTopo.next_hops), computed once per fabric."""
        if self._next_hops is None:
            self._next_hops = self.topo.next_hops()
        return self._next_hops

