"""Datacenter topologies as plain data (Mininet `Topo` subclasses).

A topology only describes: node names, roles, addresses and links with port
numbers. A fabric (see `harness/fabric_l3.py`) builds the network from it.

FatTree(k), after Al-Fares et al. (SIGCOMM 2008), k even:

  * k pods; each pod has k/2 edge and k/2 aggregation switches.
  * (k/2)^2 core switches; core j links to aggregation switch j // (k/2)
    of every pod.
  * k/2 hosts under every edge switch: k^3/4 hosts, 5k^2/4 switches.

Names and addresses (deterministic; p = pod, e = edge index, a = aggregation
index, i = host index, all from 0):

  =========  =================  =====================================
  node       name               address
  =========  =================  =====================================
  host       h{p}_{e}_{i}       10.p.e.(i+2)        on h..-eth0
  edge       e{p}_{e}           10.p.e.1            router id
  agg        a{p}_{a}           10.p.(k/2+a).1      router id
  core       c{j}               10.k.(j//(k/2)+1).(j%(k/2)+1)  router id
  =========  =================  =====================================

Interface names are `<node>-eth<port>`. Port numbers: a host's port 0 faces
its edge switch; an edge switch's ports 0..k/2-1 face its hosts and
k/2..k-1 its aggregation switches; an aggregation switch's ports 0..k/2-1
face the pod's edge switches and k/2..k-1 the core; core ports are the pods.

A host may carry several interfaces: each link's `params1`/`params2` holds the
address of the interface at that end (`{'ip': '10.0.0.2/32'}`), as Mininet
does, so a multi-homed host simply has several links with addresses. A link
may carry its own shaping, `addLink(..., link=LinkParams(...))` (rate, queue,
delay, loss); links without one get the fabric's.

WiFi3G: a sender and a receiver with one interface per path (see the class).
"""
from __future__ import annotations

from collections import deque
from dataclasses import dataclass

from mininet.topo import Topo

from harness.config import ACCESS, CELL, WIFI, LinkParams


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


class DCTopo(Topo):
    """A Topo whose hosts have addressed interfaces and whose switches have
    router ids: enough for both the kernel-routing and OpenFlow fabrics."""

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

    def host_addresses(self, host: str) -> list[str]:
        """Addresses (without prefix length) of a host's interfaces, by port."""
        return [i.ip.split("/")[0] for i in self.interfaces(host) if i.ip]

    def role(self, node: str) -> str:
        return self.nodeInfo(node)["role"]

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


class FatTree(DCTopo):
    """The k-ary FatTree of the paper (Section 4.1 and Fig. 2-3)."""

    def build(self, k: int = 4):
        if k < 2 or k % 2:
            raise ValueError(f"FatTree needs an even k, got {k}")
        self.k = k
        half = k // 2
        cores = [self.addSwitch(f"c{j}", role="core", dpid=_dpid(3, 0, j),
                                router_id=f"10.{k}.{j // half + 1}.{j % half + 1}")
                 for j in range(half * half)]
        for p in range(k):
            aggs = [self.addSwitch(f"a{p}_{a}", role="agg", pod=p, dpid=_dpid(2, p, a),
                                   router_id=f"10.{p}.{half + a}.1")
                    for a in range(half)]
            for e in range(half):
                edge = self.addSwitch(f"e{p}_{e}", role="edge", pod=p, dpid=_dpid(1, p, e),
                                      router_id=f"10.{p}.{e}.1")
                for i in range(half):
                    host = self.addHost(f"h{p}_{e}_{i}", role="host", pod=p)
                    self.addLink(host, edge, port1=0, port2=i,
                                 params1={"ip": f"10.{p}.{e}.{i + 2}/32"})
                for a, agg in enumerate(aggs):
                    self.addLink(edge, agg, port1=half + a, port2=e)
            for a, agg in enumerate(aggs):
                for c in range(half):
                    j = a * half + c
                    self.addLink(agg, cores[j], port1=half + c, port2=p)


class WiFi3G(DCTopo):
    """A multi-homed sender and receiver joined by a WiFi and a 3G path
    (seeds/002; Raiciu et al., NSDI 2012, Fig. 4):

        h1-eth0 10.1.0.2 -- s1 (wifi, 10.1.0.1) -- h2-eth0 10.1.1.2
        h1-eth1 10.2.0.2 -- s2 (3g,   10.2.0.1) -- h2-eth1 10.2.1.2

    h1 sends, h2 receives. Each path is an access link (fast, no delay)
    followed by the path's own link, which carries its rate, buffer, delay
    and loss: the buffer is the switch's queue towards h2, where the data
    waits, and the path's delay is that link's, in both directions. A
    connection between the wifi addresses uses the wifi path, one between the
    3G addresses the 3G path; an MPTCP connection opened on wifi adds a
    subflow between the 3G addresses.
    """

    def build(self, wifi: LinkParams = WIFI, cell: LinkParams = CELL, access: LinkParams = ACCESS):
        self.paths = {"wifi": wifi, "3g": cell}
        h1 = self.addHost("h1", role="host")
        h2 = self.addHost("h2", role="host")
        for port, (name, link) in enumerate(self.paths.items()):
            net = port + 1
            sw = self.addSwitch(f"s{net}", role=name, dpid=_dpid(1, 0, net),
                                router_id=f"10.{net}.0.1")
            self.addLink(h1, sw, port1=port, port2=0, params1={"ip": f"10.{net}.0.2/32"},
                         link=access)
            self.addLink(sw, h2, port1=1, port2=port, params2={"ip": f"10.{net}.1.2/32"},
                         link=link)

    def path_addresses(self, path: str) -> tuple[str, str]:
        """(sender address, receiver address) of a path, "wifi" or "3g"."""
        net = list(self.paths).index(path) + 1
        return f"10.{net}.0.2", f"10.{net}.1.2"


def _dpid(tier: int, pod: int, index: int) -> str:
    """A 16-hex-digit OpenFlow datapath id that encodes tier, pod and index."""
    return f"{tier:04x}{pod:06x}{index:06x}"


TOPOLOGIES = {"ft": FatTree, "wifi3g": WiFi3G}
