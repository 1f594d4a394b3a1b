"""The paths a controller provisions between two servers (van der Pol et
al., TNC 2013, in README's sources): given the switches' links,
k paths from the sender's switches to the receiver's, link-disjoint ones
first, then the ones that share least with those already chosen.

Standard library only: the provisioned experiment's config checks a
user's --paths with it before anything is installed, and dctopo.Provisioned
builds its network from the same data.

A link is full duplex, so sharing is counted per direction (an arc): two
paths crossing a cable in opposite directions do not compete for it.
"""
from __future__ import annotations

from collections import Counter, deque
from collections.abc import Iterable, Sequence

SwitchPath = tuple[str, ...]
Arc = tuple[str, str]

# The Amsterdam-Geneva testbed as dctopo.Provisioned builds it: h1 on
# switches a1 and a2, h2 on b1 and b2, a long link between a1-b1 and a2-b2,
# a local link between the two switches of each site.
TESTBED_SOURCES = ("a1", "a2")
TESTBED_DESTINATIONS = ("b1", "b2")
TESTBED_LONG_LINKS = (("a1", "b1"), ("a2", "b2"))
TESTBED_LOCAL_LINKS = (("a1", "a2"), ("b1", "b2"))
TESTBED_LINKS = TESTBED_LONG_LINKS + TESTBED_LOCAL_LINKS
# The testbed's four virtual interfaces per server, one path each.
TESTBED_PATH_COUNT = 4
# Its four paths as the paper describes them, by switch from the sender: two
# direct and link-disjoint, two crossing the local link a1-a2 onto the other
# long link. choose_paths on TESTBED_LINKS gives exactly these
# (tests/test_provisioned.py), so they are what the experiment computes.
TESTBED_PATHS = (("a1", "b1"), ("a2", "b2"), ("a1", "a2", "b2"), ("a2", "a1", "b1"))


def arcs(path: SwitchPath) -> list[Arc]:
    """The links a path crosses, each in its direction of travel."""
    return list(zip(path, path[1:]))


def path_problem(path: SwitchPath, links: Iterable[tuple[str, str]], sources: Sequence[str],
                 destinations: Sequence[str]) -> str | None:
    """Why `path` is not a path from a source switch to a destination switch
    over `links` without visiting a switch twice; None when it is one."""
    cables = {frozenset(link) for link in links}
    if len(path) < 2:
        return "a path needs at least two switches"
    if path[0] not in sources:
        return f"it starts on {path[0]}, not on one of {', '.join(sources)}"
    if path[-1] not in destinations:
        return f"it ends on {path[-1]}, not on one of {', '.join(destinations)}"
    if len(set(path)) < len(path):
        return "it visits a switch twice"
    missing = [f"{a}-{b}" for a, b in arcs(path) if frozenset((a, b)) not in cables]
    if missing:
        return f"no link {', '.join(missing)}"
    return None


def candidate_paths(links: Iterable[tuple[str, str]], sources: Sequence[str],
                    destinations: Sequence[str], slack: int = 2) -> list[SwitchPath]:
    """Every simple path from a source switch to a destination switch at
    most `slack` hops longer than the shortest one, sorted. The bound keeps
    the enumeration small: paths far longer than the shortest are not worth
    provisioning (and their number grows exponentially with it)."""
    neighbours: dict[str, set[str]] = {}
    for a, b in links:
        neighbours.setdefault(a, set()).add(b)
        neighbours.setdefault(b, set()).add(a)
    targets = set(destinations)
    shortest = _hops_to(neighbours, targets)
    reachable = [s for s in sources if s in shortest]
    if not reachable:
        return []
    limit = min(shortest[s] for s in reachable) + slack
    found: list[SwitchPath] = []

    def walk(path: list[str]) -> None:
        here = path[-1]
        if here in targets:
            found.append(tuple(path))
        for there in sorted(neighbours.get(here, ())):
            # Prune with the distance to the nearest destination: a walk that
            # cannot end within the limit is not followed.
            if there not in path and len(path) + shortest.get(there, limit + 1) <= limit:
                walk(path + [there])

    for source in reachable:
        walk([source])
    return sorted(found)


def _hops_to(neighbours: dict[str, set[str]], targets: set[str]) -> dict[str, int]:
    """Hops from every switch to its nearest target (breadth-first)."""
    dist = {t: 0 for t in targets if t in neighbours}
    queue = deque(dist)
    while queue:
        here = queue.popleft()
        for there in neighbours[here]:
            if there not in dist:
                dist[there] = dist[here] + 1
                queue.append(there)
    return dist


def choose_paths(links: Iterable[tuple[str, str]], sources: Sequence[str],
                 destinations: Sequence[str], k: int, slack: int = 2) -> tuple[SwitchPath, ...]:
    """k paths, chosen one at a time (greedy). Each next path is, in order of
    preference: the one whose links are least used by the paths already
    chosen (so while link-disjoint paths remain, those come first), then the
    shortest, then the one whose first and last switches carry fewest chosen
    paths (each server's interfaces spread over its switches), then the
    first by name. Greedy choice can miss a set of disjoint paths that only
    a global search (Suurballe's algorithm) finds; on the topologies here it
    finds as many as there are (tests/test_provisioned.py).

    Raises ValueError when fewer than k paths exist within the slack."""
    links = list(links)
    candidates = candidate_paths(links, sources, destinations, slack)
    if len(candidates) < k:
        raise ValueError(f"{k} paths asked for, and only {len(candidates)} exist from "
                         f"{'/'.join(sources)} to {'/'.join(destinations)} within {slack} hops "
                         "of the shortest")
    arc_use: Counter[Arc] = Counter()
    end_use: Counter[str] = Counter()
    chosen: list[SwitchPath] = []
    for _ in range(k):
        best = min((p for p in candidates if p not in chosen), key=lambda p: (
            sum(arc_use[a] for a in arcs(p)), len(p), end_use[p[0]] + end_use[p[-1]], p))
        chosen.append(best)
        arc_use.update(arcs(best))
        end_use.update((best[0], best[-1]))
    return tuple(chosen)


def link_disjoint(paths: Sequence[SwitchPath]) -> tuple[int, ...]:
    """The indices of the paths that, taken in order, share no link (in its
    direction) with a path taken before them: for choose_paths' output, the
    link-disjoint paths it found first."""
    taken: list[int] = []
    used: set[Arc] = set()
    for i, path in enumerate(paths):
        if not used & set(arcs(path)):
            taken.append(i)
            used.update(arcs(path))
    return tuple(taken)
