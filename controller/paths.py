"""All shortest paths through a DCTopo, as an OpenFlow controller needs them.

A path is a tuple of hops, one per switch, each `(switch, in_port, out_port)`:
exactly what a controller installs, one flow entry per switch. Paths run
between host interfaces: a multi-homed host (DHFT) sends from the interface
that owns the source address, so a path starts on that interface's switch.
Hosts never forward, so the search runs over switches only.

Enumeration walks from the source over the ports leading one hop closer to
the destination (DCTopo.next_hops_to, which the kernel-routing fabric uses
too): the work is proportional to the paths produced, not to all walks (no
blow-up at k=8).
"""
from __future__ import annotations

from collections import deque

from dctopo import DCTopo, Interface

Hop = tuple[str, int, int]        # (switch, in_port, out_port)
Path = tuple[Hop, ...]
Ports = dict[str, list[Interface]]


def port_map(topo: DCTopo) -> Ports:
    """node -> its interfaces, by port (DCTopo.port_map)."""
    return topo.port_map()


def host_interface(topo: DCTopo, address: str, ports: Ports | None = None) -> Interface:
    """The host interface that owns `address` (with or without a /len)."""
    ports = ports or port_map(topo)
    bare = address.split("/")[0]
    for host in topo.hosts():
        for intf in ports[host]:
            if intf.ip and intf.ip.split("/")[0] == bare:
                return intf
    raise ValueError(f"no host interface has address {address}")


def interface_paths(topo: DCTopo, src: Interface, dst: Interface,
                    ports: Ports | None = None) -> list[Path]:
    """Every shortest path from host interface `src` to host interface `dst`,
    sorted; empty when no path avoids the hosts (DHFT across planes)."""
    ports = ports or port_map(topo)
    toward = topo.next_hops_to(dst, ports)
    if src.peer not in toward:
        return []
    found: list[Path] = []

    def walk(switch: str, in_port: int, hops: Path) -> None:
        for out in toward[switch]:
            path = (*hops, (switch, in_port, out.port))
            if out.peer == dst.node:
                found.append(path)
            else:
                walk(out.peer, out.peer_port, path)

    walk(src.peer, src.peer_port, ())
    return sorted(found)


def address_paths(topo: DCTopo, src_ip: str, dst_ip: str) -> list[Path]:
    """Every shortest path between the interfaces owning two addresses."""
    ports = port_map(topo)
    return interface_paths(topo, host_interface(topo, src_ip, ports),
                           host_interface(topo, dst_ip, ports), ports)


def host_paths(topo: DCTopo, src: str, dst: str) -> list[Path]:
    """Every shortest path between two hosts, over all pairs of their
    addressed interfaces (a DHFT host pair: both planes' paths)."""
    ports = port_map(topo)
    candidates = [path for s in ports[src] if s.ip for d in ports[dst] if d.ip
                  for path in interface_paths(topo, s, d, ports)]
    shortest = min((len(p) for p in candidates), default=0)
    return sorted(p for p in candidates if len(p) == shortest)


def out_ports(topo: DCTopo) -> dict[str, dict[str, frozenset[int]]]:
    """switch -> destination host address -> its out ports on shortest paths:
    the buckets of a proactive select group. Keyed by address rather than by
    host because a flow matches on ipv4_dst, and a DHFT host has two."""
    return {sw: {addr: frozenset(i.port for i in hops) for addr, hops in dests.items()}
            for sw, dests in topo.next_hops().items()}


def levels(topo: DCTopo, ports: Ports | None = None) -> dict[str, int]:
    """node -> links to the nearest host: 0 host, 1 edge, 2 aggregation,
    3 core in a FatTree or DHFT. Derived from the wiring, not from role
    names, so it holds for any tree-like DCTopo."""
    ports = ports or port_map(topo)
    level = {h: 0 for h in topo.hosts()}
    queue = deque(level)
    while queue:
        node = queue.popleft()
        for intf in ports[node]:
            if intf.peer not in level:
                level[intf.peer] = level[node] + 1
                queue.append(intf.peer)
    return level


def points_up(topo: DCTopo, switch: str, port: int, level: dict[str, int] | None = None) -> bool:
    """Whether `switch`'s `port` leads toward the core (a higher level);
    False for a port down toward the hosts or across to a peer switch."""
    level = level or levels(topo)
    intf = next((i for i in topo.interfaces(switch) if i.port == port), None)
    if intf is None:
        raise ValueError(f"{switch} has no port {port}")
    return level[intf.peer] > level[switch]
