"""Small multipath networks: WiFi + 3G between a sender and a receiver, two
hosts over n switches (NSwitch), and two disjoint bottlenecks with cross
traffic on one (TwoPaths)."""
from __future__ import annotations

from base.links import ACCESS, CELL, WIFI, LinkParams
from base.provisioning import (TESTBED_DESTINATIONS, TESTBED_LINKS, TESTBED_LOCAL_LINKS, TESTBED_LONG_LINKS,
                               TESTBED_PATH_COUNT, TESTBED_SOURCES, choose_paths, path_problem)
from dctopo.base import DCTopo, Interface, dpid


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
        _two_hosts_over_switches(self, self.paths, access)

    def path_addresses(self, path: str) -> tuple[str, str]:
        """(sender address, receiver address) of a path, "wifi" or "3g"."""
        net = list(self.paths).index(path) + 1
        return f"10.{net}.0.2", f"10.{net}.1.2"


# BCube's routing tables on hosts, one per starting level, and their rules'
# priorities (before the per-interface rules every multi-homed host has,
# 1000 + port, which would send a packet out on its source's own level).


class NSwitch(DCTopo):
    """Two hosts joined through n switches, one interface on each per host
    (the N-switch 2-host topology of the CS244 MPTCP setup, used by the
    distributed-transfer study, CS536 '13 in README's sources):

        h1-eth{i} 10.{i+1}.0.2 -- s{i+1} -- h2-eth{i} 10.{i+1}.1.2    i = 0..n-1

    Path i is an access link (fast) and `link`, towards h2; a connection
    between path i's addresses takes it, and MPTCP's extra subflows take
    the next paths by their addresses."""

    def build(self, n: int = 2, link: LinkParams = LinkParams(), access: LinkParams = ACCESS):
        self.paths = {f"s{i + 1}": link for i in range(n)}
        _two_hosts_over_switches(self, self.paths, access)

    def path_addresses(self, path: int) -> tuple[str, str]:
        """(h1's address, h2's address) on path `path` (0-based)."""
        return f"10.{path + 1}.0.2", f"10.{path + 1}.1.2"


def _two_hosts_over_switches(topo: DCTopo, paths: dict[str, LinkParams], access: LinkParams) -> None:
    """h1 and h2, and for each path a switch between them: h1's access link,
    then the path's own link towards h2, each path in a /24 of its own."""
    h1 = topo.addHost("h1", role="host")
    h2 = topo.addHost("h2", role="host")
    for port, (name, link) in enumerate(paths.items()):
        net = port + 1
        sw = topo.addSwitch(f"s{net}", role=name, dpid=dpid(1, 0, net), router_id=f"10.{net}.0.1")
        topo.addLink(h1, sw, port1=port, port2=0, params1={"ip": f"10.{net}.0.2/32"}, link=access)
        topo.addLink(sw, h2, port1=1, port2=port, params2={"ip": f"10.{net}.1.2/32"}, link=link)


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
            a = self.addSwitch(f"a{path}", role="edge", dpid=dpid(1, 0, net), router_id=f"10.{net}.0.1")
            b = self.addSwitch(f"b{path}", role="edge", dpid=dpid(1, 1, net), router_id=f"10.{net}.1.1")
            self.addLink(h1, a, port1=path, port2=0, params1={"ip": f"10.{net}.0.2/32"}, link=access)
            self.addLink(b, h2, port1=0, port2=path, params2={"ip": f"10.{net}.1.2/32"}, link=access)
            self.addLink(a, b, port1=1, port2=1, link=bottleneck)
            if path == cross_path:
                self.addLink(x1, a, port1=0, port2=2, params1={"ip": f"10.{net}.0.3/32"}, link=access)
                self.addLink(b, x2, port1=2, port2=0, params2={"ip": f"10.{net}.1.3/32"}, link=access)

    def path_addresses(self, path: int) -> tuple[str, str]:
        """(h1's address, h2's address) on a path."""
        return f"10.{path + 1}.0.2", f"10.{path + 1}.1.2"


class Provisioned(DCTopo):
    """Two servers, two switches each, two long links between the switch
    pairs, and the paths a controller provisions over them (van der Pol et
    al., TNC 2013: the Amsterdam-Geneva OpenFlow testbed):

        h1 -- a1 ==long 0 (a1-b1)== b1 -- h2
              |                      |
            local                  local
              |                      |
        h1 -- a2 ==long 1 (a2-b2)== b2 -- h2

    Each path i has an address pair of its own, as each of the testbed's
    four virtual interfaces had its own subnet: h1-eth{i} 10.{i+1}.0.2 on
    the path's first switch and h2-eth{i} 10.{i+1}.1.2 on its last. The
    switches forward by destination address along the path that owns it,
    not by shortest path (`next_hops_to`), so both fabrics install exactly
    the provisioned paths: kernel routes on the l3 fabric, the controller's
    flow entries on the openflow fabric. Host links are `access` (fast: the
    hosts' interfaces never limit), the long links `long`, the local links
    `local`.

    `paths` are the switches of each path from h1's side; None: the four
    that base.provisioning.choose_paths computes from the links, as the
    testbed's controller computed its paths (link-disjoint ones first),
    which are the testbed's own (TESTBED_PATHS).
    """

    def build(self, long: LinkParams = LinkParams(delay_ms=20.0), local: LinkParams | None = None,
              access: LinkParams = ACCESS, paths: tuple[tuple[str, ...], ...] | None = None):
        local = local or LinkParams(bw_mbps=long.bw_mbps, queue_pkts=long.queue_pkts)
        self.long, self.local = long, local
        self.paths_computed = paths is None
        self.paths = (choose_paths(TESTBED_LINKS, TESTBED_SOURCES, TESTBED_DESTINATIONS, TESTBED_PATH_COUNT)
                      if paths is None else tuple(tuple(p) for p in paths))
        ports = {}      # switch -> next free port
        for n, sw in enumerate(("a1", "a2", "b1", "b2")):
            self.addSwitch(sw, role="edge", dpid=dpid(1, 0, n + 1), router_id=f"10.100.0.{n + 1}")
            ports[sw] = 0

        def link(a: str, b: str, params: LinkParams, **ends) -> None:
            pa = ends.pop("port1", None)
            pb = ends.pop("port2", None)
            if pa is None:
                pa, ports[a] = ports[a], ports[a] + 1
            if pb is None:
                pb, ports[b] = ports[b], ports[b] + 1
            self.addLink(a, b, port1=pa, port2=pb, link=params, **ends)

        h1 = self.addHost("h1", role="host")
        h2 = self.addHost("h2", role="host")
        for a, b in TESTBED_LONG_LINKS:
            link(a, b, long)
        for a, b in TESTBED_LOCAL_LINKS:
            link(a, b, local)
        for i, path in enumerate(self.paths):
            problem = path_problem(path, TESTBED_LINKS, TESTBED_SOURCES, TESTBED_DESTINATIONS)
            if problem:
                raise ValueError(f"path {i + 1} {'-'.join(path)}: {problem}")
            link(h1, path[0], access, port1=i, params1={"ip": f"10.{i + 1}.0.2/32"})
            link(path[-1], h2, access, port2=i, params2={"ip": f"10.{i + 1}.1.2/32"})

    def path_addresses(self, path: int) -> tuple[str, str]:
        """(h1's address, h2's address) on path `path` (0-based)."""
        return f"10.{path + 1}.0.2", f"10.{path + 1}.1.2"

    def path_links(self, path: int) -> list[tuple[str, str]]:
        """The switch-to-switch links path `path` crosses, from h1's side."""
        hops = self.paths[path]
        return list(zip(hops, hops[1:]))

    def next_hops_to(self, dst: Interface, ports: dict[str, list[Interface]] | None = None
                     ) -> dict[str, list[Interface]]:
        """switch -> its one interface toward host interface `dst` along the
        path that owns dst's address (reversed toward h1): provisioned
        forwarding, not shortest paths; switches off that path are absent."""
        ports = ports or self.port_map()
        hops = self.paths[dst.port] if dst.node == "h2" else self.paths[dst.port][::-1]
        table = {}
        for here, there in zip(hops, hops[1:]):
            table[here] = [i for i in ports[here] if i.peer == there]
        table[hops[-1]] = [i for i in ports[hops[-1]] if i.peer == dst.node and i.peer_port == dst.port]
        return table
