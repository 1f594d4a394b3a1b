"""What every topology is: a Mininet Topo whose hosts have addressed
interfaces and whose switches have router ids (DCTopo), the records it
describes itself with, and the shortest-path next hops both fabrics forward
by. The package's docstring (dctopo/__init__.py) gives the names and
addresses of each topology."""
from __future__ import annotations

from collections import deque
from dataclasses import dataclass

from mininet.topo import Topo

from base.links import LinkParams


def intf_name(node: str, port: int) -> str:
    """The interface name of `node`'s `port` (Mininet's convention)."""
    return f"{node}-eth{port}"


@dataclass(frozen=True)
class Interface:
    """One end of a link, as the fabric needs it."""
    node: str
    port: int
    name: str
    peer: str
    peer_port: int
    ip: str | None       # "10.0.0.2/32" or None for an unnumbered port
    link: LinkParams | None = None   # this link's own shaping; None: the fabric's


@dataclass(frozen=True)
class Route:
    """A route a topology with its own routing (BCube) asks a node for:
    `dest` (a host address) leaves on `port`, to `via` (None: dest itself is
    on that link), in routing table `table` (None: the main table)."""
    dest: str
    port: int
    via: str | None = None
    table: int | None = None


@dataclass(frozen=True)
class SourceRule:
    """Packets from `prefix` are routed by `table` (rule priority `priority`);
    with `iif` "lo", only those the node sends itself."""
    prefix: str
    table: int
    priority: int
    iif: str | None = None

    def line(self) -> str:
        """The rule as an `ip -batch` line."""
        iif = f" iif {self.iif}" if self.iif else ""
        return f"rule add from {self.prefix}{iif} table {self.table} priority {self.priority}"


class DCTopo(Topo):
    """A Topo whose hosts have addressed interfaces and whose switches have
    router ids: enough for both the kernel-routing and OpenFlow fabrics.

    Hosts do not forward and switches route along shortest paths between
    switches (`next_hops`), unless the topology says otherwise: one whose
    hosts relay (BCube) sets `hosts_forward` and gives every node's routes
    itself (`host_routes`, `source_rules`, `switch_routes`)."""

    hosts_forward = False

    def host_routes(self, host: str) -> list[Route]:
        return []

    def source_rules(self, host: str) -> list[SourceRule]:
        return []

    def switch_routes(self, switch: str) -> list[Route] | None:
        """None: the shortest-path routes of `next_hops`."""
        return None

    def switch_rules(self, switch: str) -> list[SourceRule]:
        """Rules by source address on a switch that routes itself (BCube's detours)."""
        return []

    def interfaces(self, node: str) -> list[Interface]:
        """Every interface of `node`, by port number."""
        found = []
        for _, _, info in self.links(withInfo=True):
            for end, other in ((1, 2), (2, 1)):
                if info[f"node{end}"] == node:
                    port = info[f"port{end}"]
                    found.append(Interface(
                        node=node, port=port, name=intf_name(node, port),
                        peer=info[f"node{other}"], peer_port=info[f"port{other}"],
                        ip=info.get(f"params{end}", {}).get("ip"), link=info.get("link")))
        return sorted(found, key=lambda i: i.port)

    def port_map(self) -> dict[str, list[Interface]]:
        """node -> its interfaces by port, for computations that look up many:
        `interfaces()` scans every link on each call."""
        return {node: self.interfaces(node) for node in self.nodes()}

    def next_hops_to(self, dst: Interface, ports: dict[str, list[Interface]] | None = None
                     ) -> dict[str, list[Interface]]:
        """switch -> its interfaces on shortest paths to host interface `dst`:
        on dst's own switch the one facing it, elsewhere those leading one
        switch closer. Breadth-first over switches only (hosts never forward);
        a switch that cannot reach dst without crossing a host is absent.
        Both fabrics forward by this: kernel ECMP routes, OpenFlow groups."""
        ports = ports or self.port_map()
        dist = {dst.peer: 0}
        queue = deque([dst.peer])
        while queue:
            node = queue.popleft()
            for intf in ports[node]:
                if self.isSwitch(intf.peer) and intf.peer not in dist:
                    dist[intf.peer] = dist[node] + 1
                    queue.append(intf.peer)
        return {sw: ([i for i in ports[sw] if i.peer == dst.node and i.peer_port == dst.port] if d == 0
                     else [i for i in ports[sw] if dist.get(i.peer) == d - 1])
                for sw, d in dist.items()}

    def next_hops(self) -> dict[str, dict[str, list[Interface]]]:
        """switch -> host address -> the switch's interfaces on shortest
        paths to it (`next_hops_to` for every addressed host interface)."""
        ports = self.port_map()
        table: dict[str, dict[str, list[Interface]]] = {s: {} for s in self.switches()}
        for host in self.hosts():
            for dst in ports[host]:
                if dst.ip:
                    for sw, hops in self.next_hops_to(dst, ports).items():
                        table[sw][dst.ip.split("/")[0]] = hops
        return table

    def _cores(self, k: int) -> list[str]:
        """The (k/2)^2 core switches of a k-ary fat tree."""
        half = k // 2
        return [self.addSwitch(f"c{j}", role="core", dpid=dpid(3, 0, j),
                               router_id=f"10.{k}.{j // half + 1}.{j % half + 1}")
                for j in range(half * half)]

    def _aggs(self, pod: int, count: int, first_router: int) -> list[str]:
        """A pod's aggregation switches; router ids 10.<pod>.<first_router + a>.1
        (above the pod's edge switches' own)."""
        return [self.addSwitch(f"a{pod}_{a}", role="agg", pod=pod, dpid=dpid(2, pod, a),
                               router_id=f"10.{pod}.{first_router + a}.1")
                for a in range(count)]

    def host_addresses(self, host: str) -> list[str]:
        """Addresses (without prefix length) of a host's interfaces, by port."""
        return [i.ip.split("/")[0] for i in self.interfaces(host) if i.ip]

    def role(self, node: str) -> str:
        return self.nodeInfo(node)["role"]

    def racks(self) -> dict[str, str]:
        """host -> its rack (hosts under the same edge switch or pair)."""
        return {h: self.nodeInfo(h).get("rack", h) for h in self.hosts()}

    def switch_ports(self) -> int:
        """Switch ports the topology uses: its cost, as the paper counts it."""
        return sum(len(self.interfaces(s)) for s in self.switches())

    def path_links(self, src: str, dst: str) -> int:
        """Links on a shortest path between two nodes (host to host across
        a FatTree's core: 6). Breadth-first over the topology's links."""
        if src == dst:
            return 0
        neighbours: dict[str, set[str]] = {}
        for a, b in self.links():
            neighbours.setdefault(a, set()).add(b)
            neighbours.setdefault(b, set()).add(a)
        seen, frontier = {src: 0}, deque([src])
        while frontier:
            node = frontier.popleft()
            for nxt in neighbours.get(node, ()):
                if nxt not in seen:
                    seen[nxt] = seen[node] + 1
                    if nxt == dst:
                        return seen[nxt]
                    frontier.append(nxt)
        raise ValueError(f"no path between {src} and {dst}")


def dpid(tier: int, pod: int, index: int) -> str:
    """A 16-hex-digit OpenFlow datapath id that encodes tier, pod and index."""
    return f"{tier:04x}{pod:06x}{index:06x}"
