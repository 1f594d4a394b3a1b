"""Datacenter topologies as plain data (Mininet `Topo` subclasses).

A topology only describes: node names, roles, addresses and links with port
numbers. A fabric (see `emulator/fabrics/l3.py`) builds the network from it.

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

DHFT(k), the dual-homed FatTree of the paper (Section 5), k divisible by 4:
the same aggregation and core switches as FatTree(k), but every edge switch
is replaced by a pair of edge switches (a "rack") and every host has one
interface on each of the two. The paper's construction, for k-port switches:

  * each rack's two edge switches have k/2 uplinks between them, k/4 each;
    each has hosts_per_rack downlinks, one per host; hosts_per_rack defaults
    to round(2k/3), the paper's 2k/3 (8 at k=12, 3 at k=4), so an edge
    switch has 11k/12 ports (rounded);
  * k/2 racks per pod: (k/2) * hosts_per_rack hosts per pod;
  * edge switch 2r (plane 0) of rack r uplinks to aggregation switches
    0..k/4-1, edge switch 2r+1 (plane 1) to k/4..k/2-1. Aggregation and core
    wiring is FatTree's, so the two planes never meet: a host's first
    interface reaches every other host's first interface through plane 0,
    its second interface the second interfaces through plane 1. A subflow
    keeps to the plane of the address it is bound to.

  =========  =================  =====================================
  node       name               address
  =========  =================  =====================================
  host       h{p}_{r}_{i}       10.p.(2r).(i+2)   on h..-eth0 (plane 0)
                                10.p.(2r+1).(i+2) on h..-eth1 (plane 1)
  edge       e{p}_{2r+x}        10.p.(2r+x).1     router id (plane x)
  agg        a{p}_{a}           10.p.(k+a).1      router id
  core       c{j}               as FatTree
  =========  =================  =====================================

  Switch ports, `switch_ports()`: FatTree(4) 80 for 16 hosts (5 per host),
  DHFT(4) 112 for 24 hosts (4.67 per host), DHFT(12) 2880 for 576 hosts (5
  per host, the paper's "same cost as a FatTree"). Between hosts in different
  pods a plane offers (k/4)(k/2) paths (2 at k=4), within a pod k/4, and
  within a rack one (the shared edge switch).

PerfectSwitch(k): the paper's control: DHFT(k)'s hosts (same names, racks
and first addresses), each with one interface on a single non-blocking
switch. The same traffic matrix runs on both.

VL2(d_a, d_i): the paper's other Clos network (§4.3.1), fewer and faster
links above the racks; FatTree(k, oversubscription=4): the 4:1
oversubscribed FatTree of §4.3.3 (both classes say how they are built).

WiFi3G: a sender and a receiver with one interface per path (see the class).

TwoPaths: a multi-homed sender and receiver joined by two disjoint
bottlenecks, and a single-homed pair whose traffic crosses one of them: the
shared-bottleneck and path-shifting tests of coupled congestion control.
"""
from __future__ import annotations

import dataclasses
from collections import deque
from dataclasses import dataclass

from mininet.topo import Topo

from base.links import ACCESS, CELL, WIFI, LinkParams


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
    """Packets from `prefix` are routed by `table` (rule priority `priority`)."""
    prefix: str
    table: int
    priority: int


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
        return [self.addSwitch(f"c{j}", role="core", dpid=_dpid(3, 0, j),
                               router_id=f"10.{k}.{j // half + 1}.{j % half + 1}")
                for j in range(half * half)]

    def _aggs(self, pod: int, count: int, first_router: int) -> list[str]:
        """A pod's aggregation switches; router ids 10.<pod>.<first_router + a>.1
        (above the pod's edge switches' own)."""
        return [self.addSwitch(f"a{pod}_{a}", role="agg", pod=pod, dpid=_dpid(2, pod, a),
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


class FatTree(DCTopo):
    """The k-ary FatTree of the paper (Section 4.1 and Fig. 2-3).

    `oversubscription` > 1 puts that many times k/2 hosts under each edge
    switch, whose k/2 uplinks stay at the link rate: the paper's 4:1 FatTree
    of §4.3.3 (Fig. 7-8, "for every four links from the hosts in the rack,
    one uplink is provided"; its 512 nodes are k=8 with 16 hosts per rack).
    Slowing the uplinks instead would keep the host count but let one lone
    flow fill only a quarter of its host link with TCP and more with MPTCP,
    a gain at light load the paper's network does not have."""

    def build(self, k: int = 4, oversubscription: int = 1):
        if k < 2 or k % 2:
            raise ValueError(f"FatTree needs an even k, got {k}")
        if oversubscription < 1 or k // 2 * oversubscription > 250:
            raise ValueError(f"oversubscription {oversubscription}: 1 .. {250 // (k // 2)} at k={k}")
        self.k = k
        self.oversubscription = oversubscription
        half = k // 2
        per_rack = half * oversubscription
        cores = self._cores(k)
        for p in range(k):
            aggs = self._aggs(p, half, first_router=half)
            for e in range(half):
                edge = self.addSwitch(f"e{p}_{e}", role="edge", pod=p, dpid=_dpid(1, p, e),
                                      router_id=f"10.{p}.{e}.1")
                for i in range(per_rack):
                    host = self.addHost(f"h{p}_{e}_{i}", role="host", pod=p, rack=f"{p}_{e}")
                    self.addLink(host, edge, port1=0, port2=i,
                                 params1={"ip": f"10.{p}.{e}.{i + 2}/32"})
                for a, agg in enumerate(aggs):
                    self.addLink(edge, agg, port1=per_rack + a, port2=e)
            for a, agg in enumerate(aggs):
                for c in range(half):
                    j = a * half + c
                    self.addLink(agg, cores[j], port1=half + c, port2=p)


class VL2(DCTopo):
    """VL2 (Greenberg et al., SIGCOMM 2009), as the paper uses it (§4.3.1,
    Fig. 4-5): a Clos network whose upper layers have `upper_factor` times
    fewer links at `upper_factor` times the rate.

      * d_i aggregation switches, d_a/2 intermediate switches; every
        aggregation switch links to every intermediate switch;
      * d_a*d_i/4 top-of-rack switches; ToR t links to the two aggregation
        switches of pair t // (d_a/2), on their down port t % (d_a/2);
      * hosts_per_tor hosts per ToR at `link`'s rate; ToR uplinks and
        aggregation-intermediate links at upper_factor times it (the paper:
        1 Gb/s hosts, 10 Gb/s above). With hosts_per_tor = 2 * upper_factor
        (20, VL2's own), a ToR's two uplinks carry what its hosts can send:
        full bisection.

    Valiant load balancing is modelled as ECMP: between ToRs under different
    aggregation pairs a flow has 2 x (d_a/2) x 2 equal-cost paths, one per
    (up aggregation switch, intermediate, down aggregation switch).

      =============  ============  ===========================
      node           name          address / router id
      =============  ============  ===========================
      host           h{t}_{i}      10.t.0.(i+2) on h..-eth0
      top of rack    t{t}          10.t.0.1
      aggregation    a{a}          10.200.a.1
      intermediate   i{n}          10.201.n.1
      =============  ============  ===========================

    Ports: a ToR's 0..hosts_per_tor-1 face its hosts, the next two its
    aggregation pair; an aggregation switch's 0..d_a/2-1 face ToRs, the
    rest the intermediates; an intermediate's port a faces aggregation a.
    """

    def build(self, d_a: int = 4, d_i: int = 4, hosts_per_tor: int = 20,
              link: LinkParams = LinkParams(), upper_factor: float = 10.0):
        if d_a < 2 or d_a % 2 or d_i < 2 or d_i % 2:
            raise ValueError(f"VL2 needs even d_a and d_i of at least 2, got {d_a}, {d_i}")
        if not 1 <= hosts_per_tor <= 250 or d_a * d_i // 4 > 200:
            raise ValueError(f"VL2: {d_a * d_i // 4} ToRs of {hosts_per_tor} hosts: the addressing "
                             "holds up to 200 ToRs of up to 250 hosts")
        self.d_a, self.d_i, self.hosts_per_tor = d_a, d_i, hosts_per_tor
        upper = dataclasses.replace(link, bw_mbps=link.bw_mbps * upper_factor)
        down = d_a // 2
        aggs = [self.addSwitch(f"a{a}", role="agg", dpid=_dpid(2, 0, a), router_id=f"10.200.{a}.1")
                for a in range(d_i)]
        ints = [self.addSwitch(f"i{n}", role="core", dpid=_dpid(3, 0, n), router_id=f"10.201.{n}.1")
                for n in range(down)]
        for t in range(d_a * d_i // 4):
            tor = self.addSwitch(f"t{t}", role="edge", dpid=_dpid(1, 0, t), router_id=f"10.{t}.0.1")
            for i in range(hosts_per_tor):
                host = self.addHost(f"h{t}_{i}", role="host", rack=f"{t}")
                self.addLink(host, tor, port1=0, port2=i, params1={"ip": f"10.{t}.0.{i + 2}/32"}, link=link)
            pair = t // down
            for x in (0, 1):
                self.addLink(tor, aggs[2 * pair + x], port1=hosts_per_tor + x, port2=t % down, link=upper)
        for a, agg in enumerate(aggs):
            for n, inter in enumerate(ints):
                self.addLink(agg, inter, port1=down + n, port2=a, link=upper)


def dhft_hosts_per_rack(k: int) -> int:
    """The paper's 2k/3 hosts per pair of edge switches, rounded."""
    return max(1, round(2 * k / 3))


class DHFT(DCTopo):
    """The dual-homed FatTree of the paper (Section 5, Fig. 14-16); the
    module docstring gives the construction."""

    def build(self, k: int = 4, hosts_per_rack: int | None = None):
        if k < 4 or k % 4:
            raise ValueError(f"DHFT needs k divisible by 4, got {k}")
        self.k = k
        self.hosts_per_rack = hpr = hosts_per_rack or dhft_hosts_per_rack(k)
        half, quarter = k // 2, k // 4
        cores = self._cores(k)
        for p in range(k):
            aggs = self._aggs(p, half, first_router=k)
            for r in range(half):
                edges = [self.addSwitch(f"e{p}_{2 * r + x}", role="edge", pod=p, plane=x,
                                        dpid=_dpid(1, p, 2 * r + x),
                                        router_id=f"10.{p}.{2 * r + x}.1")
                         for x in (0, 1)]
                for i in range(hpr):
                    host = self.addHost(f"h{p}_{r}_{i}", role="host", pod=p, rack=f"{p}_{r}")
                    for x, edge in enumerate(edges):
                        self.addLink(host, edge, port1=x, port2=i,
                                     params1={"ip": f"10.{p}.{2 * r + x}.{i + 2}/32"})
                for x, edge in enumerate(edges):
                    for u in range(quarter):
                        a = x * quarter + u
                        self.addLink(edge, aggs[a], port1=hpr + u, port2=r)
            for a, agg in enumerate(aggs):
                for c in range(half):
                    self.addLink(agg, cores[a * half + c], port1=half + c, port2=p)

    def plane_addresses(self, host: str) -> list[str]:
        """The host's address on plane 0 and on plane 1."""
        return self.host_addresses(host)


class PerfectSwitch(DCTopo):
    """DHFT(k)'s hosts, single-homed on one non-blocking switch: the upper
    bound of any single-homed topology (the paper's control)."""

    def build(self, k: int = 4, hosts_per_rack: int | None = None):
        self.k = k
        like = DHFT(k=k, hosts_per_rack=hosts_per_rack)
        self.hosts_per_rack = like.hosts_per_rack
        switch = self.addSwitch("s0", role="switch", dpid=_dpid(1, 0, 0), router_id="10.255.0.1")
        for port, host in enumerate(like.hosts(sort=True)):
            info = like.nodeInfo(host)
            self.addHost(host, role="host", pod=info["pod"], rack=info["rack"])
            self.addLink(host, switch, port1=0, port2=port,
                         params1={"ip": f"{like.host_addresses(host)[0]}/32"})


class WiFi3G(DCTopo):
    """A multi-homed sender and receiver joined by a WiFi and a 3G path
    (CS244 '14; Raiciu et al., NSDI 2012, Fig. 4):

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


# BCube's routing tables on hosts, one per starting level, and their rules'
# priorities (before the per-interface rules every multi-homed host has,
# 1000 + port, which would send a packet out on its source's own level).
BCUBE_TABLE = 200
BCUBE_RULE_PRIORITY = 500


class BCube(DCTopo):
    """BCube(n, k) (Guo et al., SIGCOMM 2009), as the paper uses it (§4.3.1,
    Fig. 4-5, and its many-to-one table): n^(k+1) hosts, each with k+1
    interfaces, one per level; at each level n^k switches of n ports. A
    host's name spells its digits base n, highest level first (h0_3 in
    BCube(4,1) has digit 0 at level 1 and 3 at level 0); the level-l switch
    s{l}_{rest} joins the n hosts that differ only in digit l, on the port
    given by that digit.

    Hosts relay: a path corrects one digit per level it crosses. Each source
    interface starts its own path (BCube's k+1 parallel paths): from the
    level-L interface the digits are corrected in the order L, L-1, ..., 0,
    k, ..., L+1, skipping digits already equal. `path_levels` gives that
    order; `relay_next_level` what a host on the way forwards on.

    Routing (kernel-routing fabric only): a packet's source address says
    which level its path started on, so every host routes by it (rule
    `from 10.(L+1).0.0/16` -> table BCUBE_TABLE + L, whose route to each
    other host's addresses leaves on the level `relay_next_level` gives, to
    that level's switch). A level-l switch sends each destination to the
    host on the port of the destination's digit l: the destination itself,
    or the relay that corrected digit l.

      ===========  ===========  =================================
      node         name         address
      ===========  ===========  =================================
      host         h{digits}    10.(l+1).(i // 256).(i % 256) on
                                h..-eth{l}, i its index, l = level
      switch       s{l}_{rest}  router id 10.(100+l).(j // 256).(j % 256 + 1)
      ===========  ===========  =================================
    """

    def build(self, n: int = 4, k: int = 1):
        if n < 2 or k < 0 or n ** (k + 1) > 4096:
            raise ValueError(f"BCube({n}, {k}): n >= 2, k >= 0, at most 4096 hosts")
        self.n, self.k = n, k
        self.levels = k + 1
        hosts = n ** (k + 1)
        self.names = [self.host_name(i) for i in range(hosts)]
        for i, name in enumerate(self.names):
            self.addHost(name, role="host", rack=self.switch_name(i, 0)[1:])
        for level in range(self.levels):
            for j in range(n ** k):
                members = [i for i in range(hosts) if self._rest(i, level) == j]
                sw = self.addSwitch(self.switch_name(members[0], level), role=f"level{level}",
                                    dpid=_dpid(1 + level, 0, j),
                                    router_id=f"10.{100 + level}.{j // 256}.{j % 256 + 1}")
                for i in members:
                    self.addLink(self.names[i], sw, port1=level, port2=self.digits(i)[level],
                                 params1={"ip": f"{self.address(i, level)}/32"})

    # -- digits and names ------------------------------------------------------
    def digits(self, i: int) -> list[int]:
        """Host i's digits base n, index = level (digits[0] is level 0)."""
        return [(i // self.n ** level) % self.n for level in range(self.levels)]

    def index(self, digits: list[int]) -> int:
        return sum(d * self.n ** level for level, d in enumerate(digits))

    def host_name(self, i: int) -> str:
        return "h" + "_".join(str(d) for d in reversed(self.digits(i)))

    def _rest(self, i: int, level: int) -> int:
        """Host i's digits without the one at `level`: which switch of that level."""
        d = self.digits(i)
        rest = d[:level] + d[level + 1:]
        return sum(x * self.n ** p for p, x in enumerate(rest))

    def switch_name(self, i: int, level: int) -> str:
        rest = [d for lv, d in enumerate(self.digits(i)) if lv != level]
        return f"s{level}_" + ("_".join(str(d) for d in reversed(rest)) or "0")

    def address(self, i: int, level: int) -> str:
        return f"10.{level + 1}.{i // 256}.{i % 256}"

    # -- paths -------------------------------------------------------------------
    def path_levels(self, src: int, dst: int, start: int) -> list[int]:
        """The levels a path from host src to host dst crosses, in order,
        when it leaves on src's level-`start` interface."""
        a, b = self.digits(src), self.digits(dst)
        order = [(start - s) % self.levels for s in range(self.levels)]
        return [level for level in order if a[level] != b[level]]

    def relay_next_level(self, here: int, dst: int, start: int) -> int | None:
        """On a path that started on level `start`, the level host `here`
        forwards towards dst on (None: here is dst). Every host on the path
        agrees with path_levels, since each correction leaves the later
        digits as they were."""
        levels = self.path_levels(here, dst, start)
        return levels[0] if levels else None

    # -- routing ---------------------------------------------------------------
    hosts_forward = True

    def source_rules(self, host: str) -> list[SourceRule]:
        return [SourceRule(f"10.{level + 1}.0.0/16", BCUBE_TABLE + level, BCUBE_RULE_PRIORITY + level)
                for level in range(self.levels)]

    def host_routes(self, host: str) -> list[Route]:
        i = self.names.index(host)
        routes = []
        for start in range(self.levels):
            for j in range(len(self.names)):
                if j == i:
                    continue
                level = self.relay_next_level(i, j, start)
                via = self.nodeInfo(self.switch_name(i, level))["router_id"]
                routes += [Route(self.address(j, lv), level, via, BCUBE_TABLE + start)
                           for lv in range(self.levels)]
        return routes

    def switch_routes(self, switch: str) -> list[Route]:
        level = int(switch[1:].split("_")[0])
        on_port = {intf.port: self.names.index(intf.peer) for intf in self.interfaces(switch)}
        routes = []
        for j in range(len(self.names)):
            port = self.digits(j)[level]
            relay = on_port[port]
            via = None if relay == j else self.address(relay, level)
            routes += [Route(self.address(j, lv), port, via) for lv in range(self.levels)]
        return routes

    def neighbours(self, i: int) -> list[int]:
        """Hosts sharing a switch with host i, every level (the paper's
        many-to-one: each host reads from these, 12 in BCube(4,3))."""
        out = []
        for level in range(self.levels):
            d = self.digits(i)
            for v in range(self.n):
                if v != d[level]:
                    out.append(self.index(d[:level] + [v] + d[level + 1:]))
        return out


class TwoPaths(DCTopo):
    """Two disjoint paths, each a bottleneck link between two switches:

        h1-eth0 10.1.0.2 -- a0 ==bottleneck 0== b0 -- h2-eth0 10.1.1.2
        h1-eth1 10.2.0.2 -- a1 ==bottleneck 1== b1 -- h2-eth1 10.2.1.2
        x1      10.{c+1}.0.3 -- a{c}        b{c} -- x2  10.{c+1}.1.3

    h1 and h2 have one interface on each path; x1 and x2 (cross traffic)
    sit on path `cross_path` only. Access links are `access`; the two links
    a_p-b_p are `bottleneck`, in both directions.
    """

    def build(self, bottleneck: LinkParams = LinkParams(), access: LinkParams = ACCESS,
              cross_path: int = 0):
        self.bottleneck = bottleneck
        h1 = self.addHost("h1", role="host")
        h2 = self.addHost("h2", role="host")
        x1 = self.addHost("x1", role="host")
        x2 = self.addHost("x2", role="host")
        for path in (0, 1):
            net = path + 1
            a = self.addSwitch(f"a{path}", role="edge", dpid=_dpid(1, 0, net), router_id=f"10.{net}.0.1")
            b = self.addSwitch(f"b{path}", role="edge", dpid=_dpid(1, 1, net), router_id=f"10.{net}.1.1")
            self.addLink(h1, a, port1=path, port2=0, params1={"ip": f"10.{net}.0.2/32"}, link=access)
            self.addLink(b, h2, port1=0, port2=path, params2={"ip": f"10.{net}.1.2/32"}, link=access)
            self.addLink(a, b, port1=1, port2=1, link=bottleneck)
            if path == cross_path:
                self.addLink(x1, a, port1=0, port2=2, params1={"ip": f"10.{net}.0.3/32"}, link=access)
                self.addLink(b, x2, port1=2, port2=0, params2={"ip": f"10.{net}.1.3/32"}, link=access)

    def path_addresses(self, path: int) -> tuple[str, str]:
        """(h1's address, h2's address) on a path."""
        return f"10.{path + 1}.0.2", f"10.{path + 1}.1.2"


def _dpid(tier: int, pod: int, index: int) -> str:
    """A 16-hex-digit OpenFlow datapath id that encodes tier, pod and index."""
    return f"{tier:04x}{pod:06x}{index:06x}"


TOPOLOGIES = {"ft": FatTree, "dhft": DHFT, "perfect": PerfectSwitch, "wifi3g": WiFi3G,
              "twopaths": TwoPaths, "vl2": VL2, "bcube": BCube}
