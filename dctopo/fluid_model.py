"""What a traffic matrix could get on a topology with no packets at all: a
flow-level (fluid) model of single-path TCP over ECMP and of multipath TCP
that pools every equal-cost path, each as the max-min fair allocation of the
links' capacity.

* TCP: each flow takes one shortest path, every switch on the way picking
  one of its equal-cost next hops at random (ECMP hashing, modelled as a
  fair coin per flow and hop); the result is the mean over `draws` such
  path choices.
* Pooled multipath: each flow may spread over all its shortest paths. On a
  FatTree the links a flow's paths cross at each hop form a set that other
  flows either share whole or do not touch (a rack's uplinks, a pod's core
  links, ...), so the flow meets one pooled resource per hop whose capacity
  is the set's sum. This is the limit MPTCP's coupled congestion control
  aims at with enough subflows (the paper, §2: "resource pooling"). Where
  two flows' sets overlap only in part (VL2, BCube) the pooling is not
  exact and `pooled_rates` refuses.

Max-min fairness is the fluid picture of competing long-lived flows that
each take an equal share of their bottleneck. Real TCP departs from it: a
flow crossing two congested links gets less than max-min gives it, so the
aggregate TCP reaches can exceed the model's. The model is therefore a
reference for the *shape* of a gain (where it is large, where it vanishes
and why), not a bound.

Capacities are in units of the topology's default link rate (1.0 per
link), so rates come out as a fraction of one host link. Why hand-written:
progressive filling is 20 lines, and neither the standard library nor the
libraries we install (numpy) has a max-min allocator.
"""
from __future__ import annotations

import random
import statistics
from collections.abc import Hashable, Sequence
from dataclasses import dataclass

from dctopo.base import DCTopo, Interface

Link = tuple[str, int]          # a directed link: (node, port) of the interface it leaves by


def max_min_rates(flows: Sequence[Sequence[Hashable]], capacity: dict[Hashable, float]) -> list[float]:
    """Max-min fair rates of `flows`, each the list of resources it uses,
    by progressive filling: raise every unfrozen flow's rate together until
    a resource fills, freeze the flows through it, repeat. A flow with no
    resource would grow without end and is refused."""
    if any(not resources for resources in flows):
        raise ValueError("a flow uses no resource: its max-min rate is unbounded")
    left = {r: float(capacity[r]) for f in flows for r in f}
    rates = [0.0] * len(flows)
    active = set(range(len(flows)))
    while active:
        users: dict[Hashable, int] = {}
        for i in active:
            for r in flows[i]:
                users[r] = users.get(r, 0) + 1
        step = min(left[r] / n for r, n in users.items())
        full = set()
        for r, n in users.items():
            left[r] -= step * n
            if left[r] <= 1e-9 * max(1.0, capacity[r]):
                full.add(r)
        for i in active:
            rates[i] += step
        active = {i for i in active if full.isdisjoint(flows[i])}
    return rates


@dataclass(frozen=True)
class FluidResult:
    """Aggregate rates of one matrix, in host-link units."""
    tcp: float          # mean over the ECMP draws
    pooled: float
    draws: int

    @property
    def gain(self) -> float:
        return self.pooled / self.tcp if self.tcp > 0 else float("nan")

    def to_record(self, link_mbps: float) -> dict:
        return {"tcp_mbps": round(self.tcp * link_mbps, 3), "pooled_mbps": round(self.pooled * link_mbps, 3),
                "gain": round(self.gain, 4), "ecmp_draws": self.draws}


class EcmpModel:
    """A single-homed topology's shortest paths as the fabric forwards by
    them (DCTopo.next_hops_to), with each directed link's capacity."""

    def __init__(self, topo: DCTopo, link_mbps: float):
        self.topo = topo
        self.ports = topo.port_map()
        self.capacity: dict[Link, float] = {}
        for node, interfaces in self.ports.items():
            for i in interfaces:
                rate = i.link.bw_mbps if i.link is not None else link_mbps
                self.capacity[(node, i.port)] = rate / link_mbps
        self.access: dict[str, Interface] = {}
        for host in topo.hosts():
            addressed = [i for i in self.ports[host] if i.ip]
            if len(addressed) != 1:
                raise ValueError(f"{host} has {len(addressed)} addressed interfaces: the fluid model "
                                 "takes single-homed hosts only")
            self.access[host] = addressed[0]
        self._hops: dict[str, dict[str, list[Interface]]] = {}

    def _next_hops(self, dst: str) -> dict[str, list[Interface]]:
        if dst not in self._hops:
            self._hops[dst] = self.topo.next_hops_to(self.access[dst], self.ports)
        return self._hops[dst]

    def random_path(self, src: str, dst: str, rng: random.Random) -> list[Link]:
        """One ECMP path from src to dst: the links it leaves by, in order."""
        first = self.access[src]
        hops = self._next_hops(dst)
        path, node = [(src, first.port)], first.peer
        while node != dst:
            out = rng.choice(hops[node])
            path.append((node, out.port))
            node = out.peer
        return path

    def hop_sets(self, src: str, dst: str) -> list[frozenset[Link]]:
        """Every link on some shortest path from src to dst, grouped by hop:
        the first set is the host's own link."""
        first = self.access[src]
        hops = self._next_hops(dst)
        sets, frontier = [frozenset({(src, first.port)})], {first.peer}
        while frontier != {dst}:
            links = {(node, out.port) for node in frontier for out in hops[node]}
            sets.append(frozenset(links))
            frontier = {out.peer for node in frontier for out in hops[node]}
        return sets

    def tcp_rates(self, pairs: Sequence[tuple[str, str]], rng: random.Random) -> list[float]:
        """Max-min rates with one random ECMP path per flow."""
        return max_min_rates([self.random_path(s, d, rng) for s, d in pairs], self.capacity)

    def pooled_rates(self, pairs: Sequence[tuple[str, str]]) -> list[float]:
        """Max-min rates with each flow pooling all its shortest paths (one
        resource per hop: the set of links, at their summed capacity)."""
        flows = [self.hop_sets(s, d) for s, d in pairs]
        pools = {s for f in flows for s in f}
        by_link: dict[Link, frozenset[Link]] = {}
        for pool in pools:
            for link in pool:
                other = by_link.setdefault(link, pool)
                if other != pool:
                    raise ValueError(f"link {link} lies in two different sets of equal-cost links: "
                                     "pooling is exact only where such sets never overlap in part (FatTree)")
        capacity = {pool: sum(self.capacity[link] for link in pool) for pool in pools}
        return max_min_rates(flows, capacity)

    def evaluate(self, pairs: Sequence[tuple[str, str]], draws: int, seed: int) -> FluidResult:
        """Aggregate TCP (mean over `draws` ECMP draws) and pooled rates of a matrix."""
        if draws < 1:
            raise ValueError("draws must be at least 1")
        pairs = [(s, d) for s, d in pairs if s != d]
        if not pairs:
            return FluidResult(0.0, 0.0, draws)
        rng = random.Random(f"fluid:{seed}")
        tcp = statistics.fmean(sum(self.tcp_rates(pairs, rng)) for _ in range(draws))
        return FluidResult(tcp, sum(self.pooled_rates(pairs)), draws)
