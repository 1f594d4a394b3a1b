"""Which path each subflow takes, as the routers' kernels choose it, and how
many distinct paths independent uniform choices would have given.

The l3 fabric (emulator/fabrics/l3.py) hashes source and destination
address, protocol and ports with a seed per router. A subflow's path is
read by asking each router on the way, in its own namespace, the question
its forwarding answers for the subflow's packets:

    ip route get <dst> from <src> iif <port it arrives on> ipproto tcp sport <sp> dport <dp>

(an input route lookup of a packet built with those headers, multipath hash
included), and following the answer's `dev` to the next router. All the
questions for one router in one round go to one `ip -force -batch -`, so a
FatTree(8) MPTCP-8 run (1024 subflows, five hops) costs a few hundred
short processes, once per run.

Random reference: n subflows, each drawing one of c equal paths uniformly
and independently, cover D distinct paths with
P(D = d) = c!/(c-d)! S(n, d) / c^n (S: Stirling numbers of the second kind)
and E[D] = c (1 - (1 - 1/c)^n), computed here in exact fractions.
"""
from __future__ import annotations

import re
from fractions import Fraction
from functools import lru_cache

from base.procs import CommandError, run

ROUTE_TIMEOUT_S = 20
MAX_HOPS = 8
_HOST_NAME = re.compile(r"^h(\d+)_(\d+)_(\d+)$")


# --- the arithmetic of random choices -------------------------------------------------

@lru_cache(maxsize=None)
def stirling2(n: int, k: int) -> int:
    """Ways to split n labelled draws into k non-empty groups."""
    if n == k:
        return 1
    if k == 0 or k > n:
        return 0
    return k * stirling2(n - 1, k) + stirling2(n - 1, k - 1)


def distinct_distribution(choices: int, draws: int) -> list[Fraction]:
    """P(D = d) for d = 0..draws: D distinct values among `draws`
    independent uniform picks from `choices`."""
    if choices < 1 or draws < 0:
        raise ValueError(f"choices={choices}, draws={draws}")
    out = []
    for d in range(draws + 1):
        falling = 1
        for i in range(d):
            falling *= choices - i
        out.append(Fraction(falling * stirling2(draws, d), choices ** draws))
    return out


def expected_distinct(choices: int, draws: int) -> Fraction:
    """E[D] = c (1 - (1 - 1/c)^n), exactly."""
    return choices * (1 - Fraction(choices - 1, choices) ** draws)


def mid_rank(observed: int, choices: int, draws: int) -> Fraction:
    """P(D < observed) + P(D = observed) / 2 under random choices: about
    uniform on [0, 1] over connections if their paths are random; a mean
    below 1/2 means fewer distinct paths than random gives."""
    dist = distinct_distribution(choices, draws)
    below = sum(dist[:min(observed, len(dist))], Fraction(0))
    at = dist[observed] if 0 <= observed < len(dist) else Fraction(0)
    return below + at / 2


# --- FatTree geometry ---------------------------------------------------------------

def path_choices(src: str, dst: str, k: int) -> tuple[int, str]:
    """(equal-cost paths between two FatTree hosts, the tier that names
    them): (k/2)^2 cores between pods, k/2 aggregation switches within a
    pod, 1 under one edge switch."""
    a, b = _HOST_NAME.match(src), _HOST_NAME.match(dst)
    if a is None or b is None:
        raise ValueError(f"not FatTree host names: {src}, {dst}")
    if a.group(1) != b.group(1):
        return (k // 2) ** 2, "core"
    if a.group(2) != b.group(2):
        return k // 2, "agg"
    return 1, "edge"


# --- asking the routers -----------------------------------------------------------------

def parse_route_get(text: str) -> list[str | None]:
    """`ip route get` answers (one or many, from -batch) -> the output
    device of each, in order. An answer is a line that does not start with
    blank space ("<dst> from <src> [via <gw>] dev <dev> ..."); its
    continuation lines ("    cache iif ...") start with blanks."""
    out = []
    for line in text.splitlines():
        if not line.strip() or line[:1].isspace():
            continue
        words = line.split()
        out.append(words[words.index("dev") + 1] if "dev" in words[:-1] else None)
    return out


def route_question(saddr: str, sport: int, daddr: str, dport: int, iif: str) -> str:
    return f"route get {daddr} from {saddr} iif {iif} ipproto tcp sport {sport} dport {dport}"


class PathWalker:
    """Hop-by-hop paths of TCP 5-tuples through a running fabric."""

    def __init__(self, fabric, timeout_s: float = ROUTE_TIMEOUT_S):
        self.fabric = fabric
        self.topo = fabric.topo
        self.ports = self.topo.port_map()
        self.timeout_s = timeout_s
        self.processes = 0
        self.errors: list[str] = []

    def _ask(self, router: str, questions: list[str]) -> list[str | None]:
        """Each question's output device at `router`; None where it failed."""
        self.processes += 1
        try:
            done = run(["ip", "-force", "-batch", "-"], self.timeout_s, ns_pid=self.fabric.pid(router),
                       input="\n".join(questions) + "\n", check=False)
            answers = parse_route_get(done.stdout)
        except CommandError as exc:
            self.errors.append(f"{router}: {exc}")
            return [None] * len(questions)
        if len(answers) == len(questions):
            return answers
        # An answer missing (a failed question prints nothing on stdout):
        # ask one at a time, so that none is attributed to another.
        out = []
        for q in questions:
            self.processes += 1
            try:
                one = run(["ip", *q.split()], self.timeout_s, ns_pid=self.fabric.pid(router), check=False)
                got = parse_route_get(one.stdout)
            except CommandError as exc:
                self.errors.append(f"{router}: {exc}")
                got = []
            out.append(got[0] if got else None)
            if not got:
                self.errors.append(f"{router}: no answer to {q!r}")
        return out

    def walk(self, tuples: list[tuple[str, str, int, str, int]]) -> dict[tuple, list[str]]:
        """(src host, saddr, sport, daddr, dport) -> the nodes its packets
        cross after the host, up to the receiving host ([] where the first
        hop is unknown; the list stops where a router gave no answer)."""
        paths: dict[tuple, list[str]] = {}
        pending = {}     # 4-tuple -> (router, the interface it arrives on)
        for src, saddr, sport, daddr, dport in tuples:
            key = (saddr, sport, daddr, dport)
            first = next((i for i in self.ports[src] if i.ip and i.ip.split("/")[0] == saddr), None)
            if first is None:
                paths[key] = []
                continue
            paths[key] = [first.peer]
            pending[key] = (first.peer, _intf(first.peer, first.peer_port))
        for _ in range(MAX_HOPS):
            if not pending:
                break
            by_router: dict[str, list[tuple]] = {}
            for key, (router, iif) in pending.items():
                by_router.setdefault(router, []).append((key, iif))
            pending = {}
            for router, asks in sorted(by_router.items()):
                answers = self._ask(router, [route_question(*key, iif) for key, iif in asks])
                by_name = {i.name: i for i in self.ports[router]}
                for (key, _iif), dev in zip(asks, answers):
                    out = by_name.get(dev)
                    if out is None:
                        continue
                    paths[key].append(out.peer)
                    if self.topo.isSwitch(out.peer):
                        pending[key] = (out.peer, _intf(out.peer, out.peer_port))
        return paths


def _intf(node: str, port: int) -> str:
    return f"{node}-eth{port}"


def top_node(path: list[str], topo) -> str | None:
    """The highest-tier switch on a path (core, else aggregation, else
    edge): on a FatTree it names the path."""
    for role in ("core", "agg", "edge"):
        for node in path:
            if topo.isSwitch(node) and topo.role(node) == role:
                return node
    return None


def connection_paths(subflow_paths: list[list[str]], src: str, dst: str, k: int, topo) -> dict:
    """One connection's placement: distinct top-tier switches its subflows
    cross, against independent uniform choices over the same paths."""
    choices, tier = path_choices(src, dst, k)
    tops = [top_node(p, topo) for p in subflow_paths]
    known = [t for t, p in zip(tops, subflow_paths) if t is not None and reaches(p, dst)]
    n = len(known)
    distinct = len(set(known))
    expected = expected_distinct(choices, n) if n else None
    below = (float(sum((q for d, q in enumerate(distinct_distribution(choices, n)) if d < expected),
                       Fraction(0))) if n else None)
    return {
        "tier": tier, "choices": choices, "subflows_walked": n, "distinct": distinct,
        "tops": tops,
        "expected_distinct": float(expected) if n else None,
        "p_below_expected": below,       # P(D < E[D]) for random choices
        "mid_rank": float(mid_rank(distinct, choices, n)) if n else None,
        "complete": n == len(subflow_paths),
    }


def reaches(path: list[str], dst: str) -> bool:
    return bool(path) and path[-1] == dst
