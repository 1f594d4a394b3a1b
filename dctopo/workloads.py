"""Traffic matrices: who sends a long-lived flow to whom.

Every matrix is a pure function of (hosts, seed): the same seed gives the same
flows, so one mapping serves every subflow count of a sweep. The sweep writes
the mapping to `results/<topology>/<workload>/matrix.json` and reuses it when a
single subflow count is rerun later.

  one_to_one      a permutation: every host sends one flow and receives one,
                  never to itself (the paper's "permutation" matrix).
  one_to_several  every host serves CLIENTS_PER_SERVER distinct clients and is
                  itself a client of as many servers (2013 reproduction).
  all_to_all      every ordered pair of distinct hosts.

Two more matrices take a parameter and the hosts' racks (`dhft`, the dual-homed
FatTree; paper Section 5):

  locality        a permutation in which a fraction `locality` of the flows
                  stay in their sender's rack: rack-local senders form
                  derangements within their racks, spread as evenly as the
                  racks allow, and the others send outside their rack.
  random          `connections` flows per host on average (below 1, some hosts
                  stay idle), each to a host drawn uniformly from the others
                  (so receivers may collide).

And two for the 4:1 oversubscribed FatTree (paper §4.3.3, Fig. 7-8):

  permutation     `connections` per host as stacked permutations: floor(C)
                  derangements, then a random share C - floor(C) of the hosts
                  sending along one more (no host receives more than it sends
                  plus one).
  random_locality every host sends one flow; a fraction `locality` of the
                  senders, drawn at random, to a random other host of its
                  rack, the rest to a random other host anywhere.

`optimal_mbps` is each flow's share of its host links on a non-blocking
fabric: the link rate divided by the larger of the sender's fan-out and the
receiver's fan-in. For these regular matrices that is exactly the max-min
fair rate, so "% of optimal" is comparable across workloads.
"""
from __future__ import annotations

import json
import random
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from base.files import atomic_write_text

CLIENTS_PER_SERVER = 4


@dataclass(frozen=True)
class Flow:
    src: str
    dst: str


@dataclass(frozen=True)
class TrafficMatrix:
    workload: str
    seed: int
    flows: tuple[Flow, ...]
    param: float | None = None     # locality fraction or connections per host

    def local_fraction(self, racks: dict[str, str]) -> float:
        """The share of flows whose two ends are in the same rack."""
        return sum(racks[f.src] == racks[f.dst] for f in self.flows) / len(self.flows)

    def share(self, flow: Flow) -> float:
        """The fraction of a host link this flow gets when the fabric is perfect."""
        fan_out = Counter(f.src for f in self.flows)
        fan_in = Counter(f.dst for f in self.flows)
        return 1.0 / max(fan_out[flow.src], fan_in[flow.dst])

    def pairs(self) -> list[tuple[str, str]]:
        """(source, destination) of every flow, in order."""
        return [(f.src, f.dst) for f in self.flows]

    def to_record(self) -> dict:
        rec = {"workload": self.workload, "seed": self.seed,
               "flows": [list(pair) for pair in self.pairs()]}
        if self.param is not None:
            rec["param"] = self.param
        return rec

    @classmethod
    def from_record(cls, rec: dict) -> "TrafficMatrix":
        return cls(rec["workload"], int(rec["seed"]),
                   tuple(Flow(s, d) for s, d in rec["flows"]), rec.get("param"))


def one_to_one(hosts: list[str], rng: random.Random) -> list[Flow]:
    """A uniformly random derangement: shuffle until no host maps to itself
    (e ~ 2.7 tries on average)."""
    while True:
        targets = list(hosts)
        rng.shuffle(targets)
        if all(s != d for s, d in zip(hosts, targets)):
            return [Flow(s, d) for s, d in zip(hosts, targets)]


def one_to_several(hosts: list[str], rng: random.Random,
                   clients: int = CLIENTS_PER_SERVER) -> list[Flow]:
    """Put the hosts on a random circle; each serves the next `clients` hosts."""
    if len(hosts) <= clients:
        raise ValueError(f"one_to_several needs more than {clients} hosts")
    ring = list(hosts)
    rng.shuffle(ring)
    n = len(ring)
    return [Flow(ring[(i + j) % n], ring[i]) for i in range(n) for j in range(1, clients + 1)]


def all_to_all(hosts: list[str], rng: random.Random) -> list[Flow]:
    return [Flow(s, d) for s in hosts for d in hosts if s != d]


def derangement(hosts: list[str], rng: random.Random, allowed=lambda s, d: s != d,
                tries: int = 100000) -> list[Flow]:
    """A uniformly random permutation of `hosts` in which every (sender,
    receiver) pair is `allowed`, by rejection."""
    for _ in range(tries):
        targets = list(hosts)
        rng.shuffle(targets)
        if all(allowed(s, d) for s, d in zip(hosts, targets)):
            return [Flow(s, d) for s, d in zip(hosts, targets)]
    raise ValueError(f"no permutation of {len(hosts)} hosts meets the constraint")


def permutation_locality(hosts: list[str], racks: dict[str, str], rng: random.Random,
                         locality: float) -> list[Flow]:
    """A permutation with round(locality * hosts) rack-local flows (or one
    fewer where a rack cannot hold a lone local flow: a host never sends to
    itself). Local senders are added to racks in turns, two to a rack at
    first, so they spread evenly; the rest send outside their rack."""
    if not 0.0 <= locality <= 1.0:
        raise ValueError(f"locality {locality}: must be within 0..1")
    members: dict[str, list[str]] = {}
    for h in sorted(hosts):
        members.setdefault(racks[h], []).append(h)
    order = list(members)
    rng.shuffle(order)
    for r in order:
        rng.shuffle(members[r])
    local = dict.fromkeys(order, 0)
    wanted = round(locality * len(hosts))
    grew = True
    while wanted > 0 and grew:
        grew = False
        for r in order:
            step = 2 if local[r] == 0 else 1
            if step <= wanted and local[r] + step <= len(members[r]):
                local[r] += step
                wanted -= step
                grew = True
    flows = [f for r in order for f in derangement(members[r][:local[r]], rng)]
    outside = [h for r in order for h in members[r][local[r]:]]
    if outside and 2 * max(len(members[r]) - local[r] for r in order) > len(outside):
        raise ValueError(f"locality {locality:g}: the {len(outside)} hosts left cannot all "
                         f"send outside their rack")
    if outside:
        flows += derangement(outside, rng, lambda s, d: racks[s] != racks[d])
    return sorted(flows, key=lambda f: f.src)


def random_load(hosts: list[str], rng: random.Random, connections: float) -> list[Flow]:
    """round(connections * hosts) flows, each to a destination drawn
    uniformly from the other hosts, independently (a destination may repeat).
    Every host opens floor(connections) of them and randomly chosen hosts one
    more each, so a load below 1 leaves some hosts idle (the paper's light
    loads)."""
    if connections <= 0:
        raise ValueError(f"connections {connections}: must be positive")
    hosts = sorted(hosts)
    whole = int(connections)
    extra = set(rng.sample(hosts, round((connections - whole) * len(hosts))))
    return [Flow(s, rng.choice([d for d in hosts if d != s]))
            for s in hosts for _ in range(whole + (s in extra))]


def permutation_load(hosts: list[str], rng: random.Random, connections: float) -> list[Flow]:
    """round(connections * hosts) flows as stacked derangements (module
    docstring): every host sends floor(connections) or one more."""
    if connections <= 0:
        raise ValueError(f"connections {connections}: must be positive")
    hosts = sorted(hosts)
    whole = int(connections)
    flows = [f for _ in range(whole) for f in derangement(hosts, rng)]
    extra = set(rng.sample(hosts, round((connections - whole) * len(hosts))))
    flows += [f for f in derangement(hosts, rng) if f.src in extra]
    return sorted(flows, key=lambda f: f.src)


def random_locality(hosts: list[str], racks: dict[str, str], rng: random.Random,
                    locality: float) -> list[Flow]:
    """One flow per host; round(locality * hosts) random senders pick a
    random other host of their rack, the others any other host."""
    if not 0.0 <= locality <= 1.0:
        raise ValueError(f"locality {locality}: must be within 0..1")
    hosts = sorted(hosts)
    if any(sum(racks[o] == racks[h] for o in hosts) < 2 for h in hosts):
        raise ValueError("a rack-local flow needs two hosts in every rack")
    local = set(rng.sample(hosts, round(locality * len(hosts))))
    return [Flow(s, rng.choice([d for d in hosts if d != s and (s not in local
                                                                or racks[d] == racks[s])]))
            for s in hosts]


def make_rack_matrix(workload: str, hosts: list[str], racks: dict[str, str], param: float,
                     seed: int) -> TrafficMatrix:
    """A matrix with a parameter (locality, random_locality, random,
    permutation; module docstring); a pure function of its arguments."""
    rng = random.Random(f"{workload}:{param:g}:{seed}")
    if workload == "locality":
        flows = permutation_locality(sorted(hosts), racks, rng, param)
    elif workload == "random_locality":
        flows = random_locality(sorted(hosts), racks, rng, param)
    elif workload == "random":
        flows = random_load(sorted(hosts), rng, param)
    elif workload == "permutation":
        flows = permutation_load(sorted(hosts), rng, param)
    else:
        raise ValueError(f"unknown workload {workload!r}")
    return TrafficMatrix(workload, seed, tuple(flows), param)


MATRICES = {"one_to_one": one_to_one, "one_to_several": one_to_several, "all_to_all": all_to_all}


def poisson_starts(rate_per_s: float, duration_s: float, rng: random.Random) -> list[float]:
    """Start times (s) of a Poisson process of `rate_per_s` arrivals a second
    within [0, duration_s): exponential gaps of mean 1/rate, as the paper's
    short flows arrive (Fig. 12: one file every 200 ms on average per host)."""
    if rate_per_s <= 0 or duration_s <= 0:
        raise ValueError("rate and duration must be positive")
    starts, t = [], rng.expovariate(rate_per_s)
    while t < duration_s:
        starts.append(t)
        t += rng.expovariate(rate_per_s)
    return starts


def flow_count(workload: str, n_hosts: int) -> int:
    """How many flows a matrix has, without drawing it (for input checks)."""
    return {"one_to_one": n_hosts,
            "one_to_several": n_hosts * CLIENTS_PER_SERVER,
            "all_to_all": n_hosts * (n_hosts - 1)}[workload]


def make_matrix(workload: str, hosts: list[str], seed: int) -> TrafficMatrix:
    if workload not in MATRICES:
        raise ValueError(f"unknown workload {workload!r}")
    rng = random.Random(f"{workload}:{seed}")
    return TrafficMatrix(workload, seed, tuple(MATRICES[workload](sorted(hosts), rng)))


def load_or_make(path: Path, workload: str, hosts: list[str], seed: int) -> TrafficMatrix:
    """Reuse the mapping saved for this workload and seed, or draw and save it."""
    if path.exists():
        try:
            saved = TrafficMatrix.from_record(json.loads(path.read_text()))
        except (ValueError, KeyError, TypeError):
            saved = None
        if (saved and saved.workload == workload and saved.seed == seed
                and {h for f in saved.flows for h in (f.src, f.dst)} <= set(hosts)):
            return saved
    matrix = make_matrix(workload, hosts, seed)
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_text(path, json.dumps(matrix.to_record(), indent=1))
    return matrix
