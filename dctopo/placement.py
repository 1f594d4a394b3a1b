"""Where each node of a network runs when one network is spread over several
servers (`--servers A,B,...`), and which links then cross between servers.

A Clos network is placed by pods: a pod's hosts, edge and aggregation
switches on one server, so that every host link and every link inside a pod
stays on one machine; the core switches are shared out in turn. Only links
from aggregation to core switches cross, and each becomes a tunnel between
two servers. Standard library only: `--plan` shows a placement before
anything is installed.
"""
from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass

from base.errors import ConfigError, clipped

MAX_SERVERS = 64
# An ssh destination as a user types it: [user@]host, a name or an address.
SERVER_NAME = re.compile(r"[A-Za-z0-9_.@:\[\]-]{1,255}")


def parse_servers(text: str) -> tuple[str, ...]:
    """--servers: a comma list of two or more different ssh destinations."""
    names = tuple(p.strip() for p in text.split(","))
    for name in names:
        if not SERVER_NAME.fullmatch(name):
            raise ConfigError(f"--servers {clipped(name)!r}: a server is an ssh destination, [user@]host, "
                              "of letters, digits and . _ - : @ [ ] (at most 255)")
    if len(set(names)) != len(names):
        twice = next(n for n, c in Counter(names).items() if c > 1)
        raise ConfigError(f"--servers: {twice} is named twice")
    if not 2 <= len(names) <= MAX_SERVERS:
        raise ConfigError(f"--servers: give 2..{MAX_SERVERS} servers ({len(names)} given); "
                          "without --servers the network runs on this machine")
    return names


@dataclass(frozen=True)
class Placement:
    servers: tuple[str, ...]
    where: dict[str, str]                   # node -> server
    links: tuple[tuple[str, str], ...]      # every link of the network

    def nodes_on(self, server: str) -> list[str]:
        return [n for n, s in self.where.items() if s == server]

    def crossing(self) -> list[tuple[str, str]]:
        """The links whose two ends run on different servers: the tunnels."""
        return [(a, b) for a, b in self.links if self.where[a] != self.where[b]]

    def tunnels_between(self) -> Counter:
        """How many links cross between each pair of servers."""
        return Counter(tuple(sorted((self.where[a], self.where[b]))) for a, b in self.crossing())


def place_by_pod(shape, servers: tuple[str, ...]) -> Placement:
    """A FatTree (a dctopo.fattree_shape.FatTreeShape) over `servers`: pods
    in contiguous blocks, a block per server; core switches likewise."""
    k, n = shape.k, len(servers)
    if n > k:
        raise ConfigError(f"--servers: {n} servers for FatTree({k})'s {k} pods; a network "
                          f"placed by pods uses at most {k} servers")
    cores = [s for s in shape.switches() if s.startswith("c")]
    where = {}
    for node in shape.hosts() + shape.switches():
        if node.startswith("c"):
            where[node] = servers[cores.index(node) * n // len(cores)]
        else:
            pod = int(node[1:].split("_")[0])
            where[node] = servers[pod * n // k]
    return Placement(tuple(servers), where, tuple(shape.links()))


def plan_lines(placement: Placement) -> list[str]:
    """What `--plan` says of a placement: each server's share, and the links that cross."""
    lines = [f"servers: {len(placement.servers)}, placed by pods (a pod's hosts and switches on "
             "one server, core switches shared out in turn)"]
    for server in placement.servers:
        nodes = placement.nodes_on(server)
        hosts = sum(n.startswith("h") for n in nodes)
        pods = sorted({int(n[1:].split("_")[0]) for n in nodes if n[0] in "hea"})
        cores = sum(n.startswith("c") for n in nodes)
        pod_text = f"pod {pods[0]}" if len(pods) == 1 else f"pods {pods[0]}-{pods[-1]}"
        lines.append(f"  {server}: {pod_text}, {hosts} hosts, {len(nodes) - hosts} switches "
                     f"({cores} core)")
    crossing = placement.crossing()
    lines.append(f"links between servers: {len(crossing)} of {len(placement.links)}, each a "
                 "tunnel shaped like a local link")
    for (a, b), count in sorted(placement.tunnels_between().items()):
        lines.append(f"  {a} - {b}: {count}")
    return lines
