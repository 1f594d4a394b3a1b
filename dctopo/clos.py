"""The Clos networks: FatTree(k) and its 4:1 oversubscribed form, VL2, the
dual-homed FatTree (DHFT) and its control, the perfect switch."""
from __future__ import annotations

import dataclasses

from base.links import LinkParams
from dctopo.base import DCTopo, dpid


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
                edge = self.addSwitch(f"e{p}_{e}", role="edge", pod=p, dpid=dpid(1, p, e),
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
        aggs = [self.addSwitch(f"a{a}", role="agg", dpid=dpid(2, 0, a), router_id=f"10.200.{a}.1")
                for a in range(d_i)]
        ints = [self.addSwitch(f"i{n}", role="core", dpid=dpid(3, 0, n), router_id=f"10.201.{n}.1")
                for n in range(down)]
        for t in range(d_a * d_i // 4):
            tor = self.addSwitch(f"t{t}", role="edge", dpid=dpid(1, 0, t), router_id=f"10.{t}.0.1")
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
                                        dpid=dpid(1, p, 2 * r + x),
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
        switch = self.addSwitch("s0", role="switch", dpid=dpid(1, 0, 0), router_id="10.255.0.1")
        for port, host in enumerate(like.hosts(sort=True)):
            info = like.nodeInfo(host)
            self.addHost(host, role="host", pod=info["pod"], rack=info["rack"])
            self.addLink(host, switch, port1=0, port2=port,
                         params1={"ip": f"{like.host_addresses(host)[0]}/32"})
