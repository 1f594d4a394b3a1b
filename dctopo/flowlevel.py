"""A flow-level model of the paper's Fig. 2 and Fig. 3 (Raiciu et al.,
SIGCOMM 2011, §4.1-4.2): long-lived TCP and MPTCP connections under a
permutation matrix on FatTree(k), up to k=32 (8192 hosts), each connection's
rate from an equilibrium of its congestion control, no packets.

The network. FatTree(k)'s 6 k^3/4 directed links are numbered from the
structure alone (no graph is built): with n = k^3/4 hosts, h = k/2,
host x = (pod*h + edge)*h + i, rack r = x // h, pod p = x // h^2,

    host x up            x                    host x down          n + x
    edge r -> agg a      2n + r*h + a         agg a -> edge r      3n + r*h + a
    agg (p,a) -> core c  4n + (p*h + a)*h + c core c -> agg (p,a)  5n + (p*h + a)*h + c

where core c of aggregation switch a is the FatTree's core a*h + c (dctopo/clos.py
links aggregation switch a of every pod to cores a*h .. a*h + h-1). A path is
six link indices (host, edge, agg, core, agg, edge): within a rack only the two
host links, within a pod four; unused slots hold a padding link of infinite
capacity. Every link has the host link's capacity 1, so rates are fractions
of a host link; a permutation's optimum is every host at 1 (100 %).

The traffic. `permutation(k, seed)` is dctopo/workloads.py's one_to_one (a
uniform derangement by rejection, seeded "one_to_one:<seed>", over the hosts'
names sorted): for the same k and seed, the very matrix the packet-level
sweep (`run_mptcp.sh <k>`, results/ft<k>/one_to_one/) runs. Routing is the
paper's "of the multiple shortest paths, one is chosen at random for each
subflow": each subflow draws its aggregation switch and its core uniformly
and independently (flow-hashed ECMP), so two subflows of one connection may
share a path. The draws are made once per (k, seed) for eight subflows and
MPTCP-m takes the first m of them (TCP the first): adding a subflow adds a
path and moves none, so the curves over m are not blurred by redrawing.

The equilibrium: MODELS.

  "lia" (the default): the paper's own kind of flow-level model, which
  "models TCP and MPTCP throughput as a function of loss rate, and uses an
  iterative approach to find the equilibrium". Every link has a loss rate
  p_l; a path's is q = sum of its links' (small-loss approximation of
  1 - prod(1 - p_l)). All round-trip times are taken equal, so with rates in
  host-link units and the constant sqrt(2)/(capacity x RTT) folded into p:
    TCP (Reno, one subflow):       x = q^-1/2
    MPTCP (LIA, RFC 6356):         X = q_min^-1/2 over the connection's
                                   subflows, split x_r = X (1/q_r) / sum(1/q)
  The LIA line is its fluid equilibrium with equal RTTs: LIA adds
  min(a/w_total, 1/w_r) per ack on subflow r with a = w_max/w_total, halves
  w_r on a loss, so w_r = 2 w_max / (q_r w_total^2) on every subflow, hence
  w_r proportional to 1/q_r and w_total = sqrt(2/q_min): as much as one TCP
  on the connection's least lossy path, most of it on the least lossy
  paths ("moves traffic from the more congested to the less congested
  paths", §4.3). The equilibrium sought is the limit of steep loss (drop
  tail): no link carries more than its capacity and only full links lose
  (p_l > 0 only where the load is the capacity). There it does not depend
  on the RTT or the link rate (they only scale p). It is found by iterating
  p_l <- p_l (load_l / capacity_l)^ETA from p = 1/6 everywhere until no link
  is over its capacity by more than TOLERANCE and the connections' rates
  have stopped moving; the rates are then scaled down by their paths'
  remaining overload, so the result is feasible. For single-path TCP this
  equilibrium is Kelly's optimum of sum(-1/x) (Reno's utility): a flow
  crossing two full links gets less than one crossing one.

  "maxmin": the max-min fair share per subflow, uncoupled (every subflow a
  flow of its own, as if the connection were m TCPs), by exact progressive
  filling. TCP is then plain max-min. This is the simplest flow-level model
  and the one the issue's numbers came from (MPTCP-8 about 88 % at 128
  hosts, 84 % at 1024, TCP 49 and 43 %); it is kept to compare with.

Why "lia" is the default: it is the model the paper describes (loss-driven
TCP and MPTCP response, iterated to equilibrium), with the congestion
control the paper's MPTCP runs (LIA; also this harness's default cc), and
it needs no parameter that the packet-level runs would have to match (the
steep-loss limit is scale-free). Max-min is neither what Reno converges to
(it favours flows crossing several full links) nor what LIA does (it
ignores coupling).

What both leave out. Timeouts, which the paper names as its flow-level
simulator's main limit: at high congestion a real flow crossing several
congested links loses whole windows and times out, so it gets less than
the model gives it and its competitors more (§4.2: the flow-level model
"slightly underestimates throughput in the single-path TCP and two-subflow
cases"). Also left out: slow start and any dynamics (the model is the
steady state, so no warm-up and no flow arrivals), queueing delay and
unequal RTTs (intra-rack paths are shorter), the 1 - p goodput factor
(zero in the steep-loss limit), receive windows and CPU limits (which cap
the packet-level runs), and the probing a real LIA subflow keeps up on a
congested path beyond its equilibrium share.

Everything is numpy, vectorised over subflows; no scipy, no graph. Cost:
one LIA iteration is a gather and a bincount over 6 x subflows entries
(k=32, 8 subflows: 393 216), and 3300-8100 iterations reach TOLERANCE;
max-min's progressive filling costs O(links) a round plus what it freezes.
k=32, m = 1..8, one seed: 77 s on one core for both models, lia 75 s of it
(`run_mptcp.sh flowlevel --k 32 --seeds 0`; each record keeps its seconds).
"""
from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from dctopo.workloads import make_matrix

MODELS = ("lia", "maxmin")
DEFAULT_MODEL = "lia"
MODEL_TEXT = {
    "lia": "loss-rate equilibrium, TCP Reno and MPTCP LIA (equal RTTs, steep loss)",
    "maxmin": "max-min fair share per subflow, uncoupled",
}
MAX_SUBFLOWS = 8            # the paper's (and the kernel's) most
PATH_LINKS = 6              # host -> edge -> agg -> core -> agg -> edge -> host
ETA = 0.5                   # the loss update's exponent
TOLERANCE = 1e-4            # largest overload (relative) at the equilibrium
MAX_ITERATIONS = 50_000
CHECK_EVERY = 50
START_LOSS = 1.0 / 6        # a TCP alone on a 6-link path then starts at 1
LOSS_FLOOR = 1e-12          # a link's loss never reaches 0 (a path's stays > 0)


@dataclass(frozen=True)
class FatTreeLinks:
    """FatTree(k)'s hosts and directed links as indices (module docstring)."""
    k: int

    def __post_init__(self):
        if not isinstance(self.k, int) or self.k < 2 or self.k % 2:
            raise ValueError(f"FatTree needs an even k of at least 2, got {self.k!r}")

    @property
    def half(self) -> int:
        return self.k // 2

    @property
    def hosts(self) -> int:
        return self.k ** 3 // 4

    @property
    def links(self) -> int:
        return 6 * self.hosts

    @property
    def pad(self) -> int:
        """The index of the padding link (infinite capacity) in unused slots."""
        return self.links

    def host_name(self, x: int) -> str:
        """dctopo/clos.py's name of host x: h<pod>_<edge>_<i>."""
        h = self.half
        return f"h{x // (h * h)}_{x // h % h}_{x % h}"

    def host_index(self, name: str) -> int:
        p, e, i = (int(v) for v in name[1:].split("_"))
        return (p * self.half + e) * self.half + i

    def capacity(self) -> np.ndarray:
        """Every link's capacity (host-link units), the padding link's (inf) last."""
        return np.append(np.ones(self.links), np.inf)

    def paths(self, src, dst, agg, core) -> np.ndarray:
        """The links of the path src -> dst through aggregation switch `agg`
        and core `core` (of that aggregation switch), shape (..., 6); the
        arguments broadcast. Within a pod `core` is unused, within a rack
        `agg` too."""
        n, h = self.hosts, self.half
        src, dst, agg, core = (np.asarray(a, dtype=np.int64) for a in np.broadcast_arrays(src, dst, agg, core))
        if ((src < 0) | (src >= n) | (dst < 0) | (dst >= n)).any() or (src == dst).any():
            raise ValueError("a path needs two distinct hosts of the FatTree")
        if ((agg < 0) | (agg >= h) | (core < 0) | (core >= h)).any():
            raise ValueError(f"agg and core are within 0..{h - 1}")
        rack_s, rack_d = src // h, dst // h
        pod_s, pod_d = src // (h * h), dst // (h * h)
        leaves_rack, leaves_pod = rack_s != rack_d, pod_s != pod_d
        out = np.empty(src.shape + (PATH_LINKS,), dtype=np.int64)
        out[..., 0] = src
        out[..., 1] = np.where(leaves_rack, 2 * n + rack_s * h + agg, self.pad)
        out[..., 2] = np.where(leaves_pod, 4 * n + (pod_s * h + agg) * h + core, self.pad)
        out[..., 3] = np.where(leaves_pod, 5 * n + (pod_d * h + agg) * h + core, self.pad)
        out[..., 4] = np.where(leaves_rack, 3 * n + rack_d * h + agg, self.pad)
        out[..., 5] = n + dst
        return out


def permutation(k: int, seed: int) -> np.ndarray:
    """dst[x]: the host that host x sends to, by dctopo/workloads.py's
    one_to_one with this seed over FatTree(k)'s host names (the
    packet-level sweep's own matrix)."""
    ft = FatTreeLinks(k)
    matrix = make_matrix("one_to_one", [ft.host_name(x) for x in range(ft.hosts)], seed)
    dst = np.empty(ft.hosts, dtype=np.int64)
    for f in matrix.flows:
        dst[ft.host_index(f.src)] = ft.host_index(f.dst)
    return dst


def draw_routes(k: int, seed: int, subflows: int = MAX_SUBFLOWS) -> tuple[np.ndarray, np.ndarray]:
    """(agg, core), each (hosts, subflows): every subflow's aggregation
    switch and core, uniform and independent (ECMP per subflow)."""
    ft = FatTreeLinks(k)
    rng = np.random.default_rng(np.random.SeedSequence([k, seed, 20110815]))
    agg = rng.integers(0, ft.half, size=(ft.hosts, subflows))
    core = rng.integers(0, ft.half, size=(ft.hosts, subflows))
    return agg, core


# -- max-min --------------------------------------------------------------------

def max_min(links: np.ndarray, capacity: np.ndarray, weights: np.ndarray | None = None,
            tol: float = 1e-9) -> np.ndarray:
    """Weighted max-min fair rates of flows, flow f using the links in row f
    of `links` (F x P link indices into `capacity`; an infinite capacity
    is never a bottleneck): progressive filling, every unfrozen flow at
    weight x level, the level rising until a link fills; the flows through
    it freeze. Links that fill within a relative `tol` of each other fill
    together. Vectorised: each round costs O(links) plus what it freezes."""
    links = np.asarray(links, dtype=np.int64)
    F, P = links.shape
    cap = np.asarray(capacity, dtype=float)
    L = cap.size
    w = np.ones(F) if weights is None else np.asarray(weights, dtype=float)
    if w.shape != (F,) or (w <= 0).any():
        raise ValueError("one positive weight per flow")
    if F and (links.min() < 0 or links.max() >= L):
        raise ValueError("a link index is outside the capacities")
    if F and np.isinf(cap[links]).all(axis=1).any():
        raise ValueError("a flow crosses no finite link: its max-min rate is unbounded")
    flat = links.ravel()
    wsum = np.bincount(flat, weights=np.repeat(w, P), minlength=L)
    count = np.bincount(flat, minlength=L)
    left = cap.copy()
    updated = np.zeros(L)                    # the level `left` was last brought to
    finish = np.full(L, np.inf)              # the level at which each link fills
    busy = (count > 0) & np.isfinite(cap)
    finish[busy] = left[busy] / wsum[busy]
    order = np.argsort(flat, kind="stable")  # link -> its entries, CSR
    starts = np.searchsorted(flat[order], np.arange(L + 1))
    active = np.ones(F, dtype=bool)
    rates = np.zeros(F)
    level = 0.0
    while True:
        lowest = finish.min()
        if lowest == np.inf:
            break
        level = max(level, lowest)
        full = np.flatnonzero(finish <= level * (1 + tol))
        s, e = starts[full], starts[full + 1]
        lens = e - s
        entries = order[np.repeat(s - np.cumsum(lens) + lens, lens) + np.arange(int(lens.sum()))]
        frozen = np.unique(entries // P)
        frozen = frozen[active[frozen]]
        rates[frozen] = w[frozen] * level
        active[frozen] = False
        gone = links[frozen].ravel()
        touched = np.unique(gone)
        left[touched] -= (level - updated[touched]) * wsum[touched]
        updated[touched] = level
        np.subtract.at(wsum, gone, np.repeat(w[frozen], P))
        np.subtract.at(count, gone, 1)
        finish[touched] = np.inf
        still = touched[(count[touched] > 0) & np.isfinite(cap[touched])]
        finish[still] = level + np.maximum(left[still], 0.0) / wsum[still]
        finish[full] = np.inf
    return rates


# -- the loss-rate equilibrium (TCP Reno, MPTCP LIA) ------------------------------

@dataclass(frozen=True)
class Equilibrium:
    rates: np.ndarray          # (connections, subflows), host-link units, feasible
    iterations: int
    overload: float            # the largest load / capacity - 1 before scaling down
    moved: float               # the largest change of a connection's rate over the last check


def lia_rates(paths: np.ndarray, capacity: np.ndarray, tolerance: float = TOLERANCE,
              max_iterations: int = MAX_ITERATIONS) -> Equilibrium:
    """The "lia" model's equilibrium (module docstring) of connections
    whose subflows take `paths` (connections x subflows x P link indices
    into `capacity`; the padding link, infinite, carries no loss). With one
    subflow a connection is TCP Reno: x = q^-1/2."""
    paths = np.asarray(paths, dtype=np.int64)
    if paths.ndim != 3:
        raise ValueError("paths: connections x subflows x links")
    N, m, P = paths.shape
    cap = np.asarray(capacity, dtype=float)
    finite = np.isfinite(cap)
    if np.isinf(cap[paths]).all(axis=2).any():
        raise ValueError("a subflow crosses no finite link: its rate is unbounded")
    flat = paths.ravel()
    loss = np.where(finite, START_LOSS, 0.0)
    used = np.bincount(flat, minlength=cap.size) > 0
    loss[~used] = 0.0
    last = None
    moved = np.inf
    for it in range(1, max_iterations + 1):
        x = _lia_response(loss[paths].sum(axis=2))
        load = np.bincount(flat, weights=np.repeat(x.ravel(), P), minlength=cap.size)
        ratio = np.where(finite & used, load / np.where(finite, cap, 1.0), 0.0)
        if it % CHECK_EVERY == 0:
            total = x.sum(axis=1)
            if last is not None:
                moved = float(np.abs(total - last).max())
            last = total
            if ratio.max() - 1 <= tolerance and moved <= tolerance / 10:
                break
        loss = np.where(finite & used, np.maximum(loss * ratio ** ETA, LOSS_FLOOR), 0.0)
    overload = float(ratio.max() - 1)
    scale = np.where(ratio > 1, 1 / np.maximum(ratio, 1e-300), 1.0)
    feasible = x * scale[paths].min(axis=2)
    return Equilibrium(feasible, it, overload, moved)


def _lia_response(q: np.ndarray) -> np.ndarray:
    """Subflow rates from subflow path losses q (connections x subflows):
    LIA's equilibrium with equal RTTs; TCP's q^-1/2 with one subflow."""
    if q.shape[1] == 1:
        return q ** -0.5
    inv = 1.0 / q
    return q.min(axis=1, keepdims=True) ** -0.5 * inv / inv.sum(axis=1, keepdims=True)


# -- one point ----------------------------------------------------------------

@dataclass(frozen=True)
class Point:
    """One (model, k, seed, subflows): every connection's rate."""
    model: str
    k: int
    seed: int
    subflows: int
    rates: np.ndarray          # per connection, host-link units, in host order
    seconds: float
    iterations: int            # progressive-filling "rounds" are not counted: 1 for maxmin
    overload: float

    @property
    def pcts(self) -> np.ndarray:
        return 100.0 * self.rates

    def summary(self) -> dict:
        """Mean, p10 (nearest rank, as the packet-level runs' summary) and
        min, % of optimal, and the sorted per-connection rates."""
        pcts = np.sort(self.pcts)
        return {"mean_pct": round(float(pcts.mean()), 3), "p10_pct": round(nearest_rank(pcts, 10), 3),
                "min_pct": round(float(pcts[0]), 3), "seconds": round(self.seconds, 3),
                "iterations": self.iterations, "overload": float(f"{self.overload:.3g}"),
                "rates_pct": [round(float(v), 2) for v in pcts]}


def nearest_rank(sorted_values: np.ndarray, pct: float) -> float:
    """experiments/fattree.py's percentile: p10 of 16 flows is the 2nd lowest."""
    rank = max(1, -(-len(sorted_values) * pct // 100))
    return float(sorted_values[int(rank) - 1])


class Instance:
    """FatTree(k), one seed's permutation and eight subflows' routes:
    every subflow count and model of that seed computed on them."""

    def __init__(self, k: int, seed: int):
        self.ft = FatTreeLinks(k)
        self.k, self.seed = k, seed
        self.dst = permutation(k, seed)
        self.agg, self.core = draw_routes(k, seed)
        self.capacity = self.ft.capacity()

    def paths(self, subflows: int) -> np.ndarray:
        """(hosts, subflows, 6): the first `subflows` routes of each connection."""
        if not 1 <= subflows <= MAX_SUBFLOWS:
            raise ValueError(f"subflows {subflows}: 1..{MAX_SUBFLOWS}")
        src = np.arange(self.ft.hosts)[:, None]
        return self.ft.paths(src, self.dst[:, None], self.agg[:, :subflows], self.core[:, :subflows])

    def point(self, model: str, subflows: int) -> Point:
        paths = self.paths(subflows)
        started = time.perf_counter()
        if model == "lia":
            eq = lia_rates(paths, self.capacity)
            rates, iterations, overload = eq.rates.sum(axis=1), eq.iterations, eq.overload
        elif model == "maxmin":
            sub = max_min(paths.reshape(-1, PATH_LINKS), self.capacity)
            rates, iterations, overload = sub.reshape(-1, subflows).sum(axis=1), 1, 0.0
        else:
            raise ValueError(f"unknown model {model!r}: one of {', '.join(MODELS)}")
        return Point(model, self.k, self.seed, subflows, rates, time.perf_counter() - started,
                     iterations, overload)
