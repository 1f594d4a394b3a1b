"""A user's own topology, `--topo FILE.py:NAME`: a Mininet Topo from a file
(the `mn --custom` convention: the file defines `topos = {'NAME': cls}` or the
class NAME), checked, then copied into a DCTopo with what the fabrics need.

Checked, each refusal one line (ConfigError): the file imports and has NAME;
node names are letters, digits and _; every interface name
(`<node>-eth<port>`) fits Linux's 15 characters; every host has one link, to
a switch (single-homed: its one address is its path's end); it is connected.

Given: host n (sorted) the address 10.0.<n // 250>.<n % 250 + 2>/32; switch
m the router id 10.255.<m // 250>.<m % 250 + 1> and a role by its distance
from the hosts (edge, agg, then core: kernels without a per-router ECMP
seed hash a different set of header fields per role, emulator/fabrics/l3.py);
a link given Mininet's TCLink arguments (bw in Mb/s, delay as '2ms' or
'500us', loss in %, max_queue_size in packets) its own LinkParams, the
others the sweep's. Needs Mininet (the user's file imports it)."""
from __future__ import annotations

import importlib.util
import os
import re
from collections import deque
from dataclasses import replace

from mininet.topo import Topo

from base.errors import ConfigError, clipped
from base.links import LinkParams
from dctopo.base import DCTopo, dpid, intf_name
from dctopo.custom_spec import split_spec

NAME = re.compile(r"[A-Za-z][A-Za-z0-9_]*")
IFNAMSIZ = 15
DELAY = re.compile(r"\s*([0-9]*\.?[0-9]+)\s*(us|ms|s)\s*")
MAX_NODES = 250 * 250


def load_user_topo(spec: str) -> Topo:
    """The user's Topo, built: its file imported, NAME found and called."""
    path, name = split_spec(spec)
    shown = clipped(spec)
    if not os.path.isfile(path):
        raise ConfigError(f"--topo {shown}: no such file")
    module_spec = importlib.util.spec_from_file_location(f"user_topo_{abs(hash(path))}", path)
    try:
        module = importlib.util.module_from_spec(module_spec)
        module_spec.loader.exec_module(module)
    except BaseException as exc:    # noqa: BLE001  whatever the user's file raises, even SystemExit
        raise ConfigError(f"--topo {shown}: the file does not import: "
                          f"{type(exc).__name__}: {clipped(str(exc).splitlines()[0] if str(exc) else '')}") from None
    topos = getattr(module, "topos", None)
    make = topos.get(name) if isinstance(topos, dict) else None
    if make is None:
        make = getattr(module, name, None)
    if make is None:
        known = sorted(topos) if isinstance(topos, dict) else []
        raise ConfigError(f"--topo {shown}: the file has no topology {clipped(name, 30)}"
                          + (f" (its topos: {clipped(', '.join(known))})" if known else ""))
    try:
        topo = make()
    except BaseException as exc:    # noqa: BLE001
        raise ConfigError(f"--topo {shown}: building it failed: {type(exc).__name__}: "
                          f"{clipped(str(exc).splitlines()[0] if str(exc) else '')}") from None
    if not isinstance(topo, Topo):
        raise ConfigError(f"--topo {shown}: {clipped(name, 30)} made a {type(topo).__name__}, not a Mininet Topo")
    return topo


def check(topo: Topo, shown: str) -> None:
    """The checks of the module docstring, each refusal one line."""
    hosts, switches = topo.hosts(), topo.switches()
    if len(hosts) < 2 or not switches:
        raise ConfigError(f"--topo {shown}: needs at least 2 hosts and a switch "
                          f"(has {len(hosts)} hosts, {len(switches)} switches)")
    if len(hosts) > MAX_NODES or len(switches) > MAX_NODES:
        raise ConfigError(f"--topo {shown}: at most {MAX_NODES} hosts and as many switches")
    for node in topo.nodes():
        if not NAME.fullmatch(str(node)):
            raise ConfigError(f"--topo {shown}: node name {clipped(repr(node), 30)}: "
                              "letters, digits and _ only, a letter first")
    links = topo.links(withInfo=True)
    for a, b, info in links:
        for node, port in ((a, info["port1"]), (b, info["port2"])):
            name = intf_name(node, port)
            if len(name) > IFNAMSIZ:
                raise ConfigError(f"--topo {shown}: interface name {clipped(name, 30)} has {len(name)} "
                                  f"characters; Linux allows {IFNAMSIZ} (shorten the node's name)")
    degree = {h: 0 for h in hosts}
    for a, b, _ in links:
        for node, other in ((a, b), (b, a)):
            if topo.isSwitch(node):
                continue
            degree[node] += 1
            if not topo.isSwitch(other):
                raise ConfigError(f"--topo {shown}: hosts {a} and {b} are linked directly; "
                                  "a host links to one switch")
    for h, n in degree.items():
        if n != 1:
            raise ConfigError(f"--topo {shown}: host {h} has {n} links; a custom topology's hosts are "
                              "single-homed (one link, to a switch)")
    neighbours: dict[str, set[str]] = {n: set() for n in topo.nodes()}
    for a, b in topo.links():
        neighbours[a].add(b)
        neighbours[b].add(a)
    start = sorted(hosts)[0]
    seen, queue = {start}, deque([start])
    while queue:
        for nxt in neighbours[queue.popleft()] - seen:
            seen.add(nxt)
            queue.append(nxt)
    if len(seen) < len(neighbours):
        cut = sorted(set(neighbours) - seen)
        raise ConfigError(f"--topo {shown}: not connected: {clipped(', '.join(cut), 40)} "
                          f"cannot be reached from {start}")


def delay_ms(value, shown: str) -> float:
    """Mininet's delay ('2ms', '500us', '0.1s') in ms."""
    m = DELAY.fullmatch(str(value)) if isinstance(value, str) else None
    if not m:
        raise ConfigError(f"--topo {shown}: delay {clipped(repr(value), 20)}: give it as Mininet does, "
                          "e.g. '2ms' or '500us'")
    return float(m.group(1)) * {"us": 1e-3, "ms": 1.0, "s": 1e3}[m.group(2)]


def link_params(info: dict, default: LinkParams, shown: str) -> LinkParams | None:
    """A link's own LinkParams from its TCLink arguments, None without any."""
    given = {}
    try:
        if info.get("bw") is not None:
            given["bw_mbps"] = float(info["bw"])
        if info.get("max_queue_size") is not None:
            given["queue_pkts"] = int(info["max_queue_size"])
        if info.get("loss") is not None:
            given["loss_pct"] = float(info["loss"])
    except (TypeError, ValueError):
        raise ConfigError(f"--topo {shown}: link {info['node1']}-{info['node2']}: bw, loss and "
                          "max_queue_size are numbers") from None
    if info.get("delay") is not None:
        given["delay_ms"] = delay_ms(info["delay"], shown)
    if not given:
        return None
    params = replace(default, **given)
    try:
        params.validate()
    except ConfigError as exc:
        raise ConfigError(f"--topo {shown}: link {info['node1']}-{info['node2']}: {exc}") from None
    return params


class CustomTopo(DCTopo):
    """A checked user Topo with addresses, router ids, roles and link
    parameters (the module docstring says which)."""

    def build(self, source: Topo, default: LinkParams = LinkParams(), shown: str = "", name: str = "custom"):
        self.name = name
        hosts = sorted(source.hosts())
        switches = sorted(source.switches())
        tier = switch_tiers(source)
        roles = {0: "edge", 1: "agg"}
        host_switch = {}
        for a, b in source.links():
            if not source.isSwitch(a):
                host_switch[a] = b
            elif not source.isSwitch(b):
                host_switch[b] = a
        for m, sw in enumerate(switches):
            self.addSwitch(sw, role=roles.get(tier[sw], "core"), dpid=dpid(1, 0, m),
                           router_id=f"10.255.{m // 250}.{m % 250 + 1}")
        address = {}
        for n, h in enumerate(hosts):
            self.addHost(h, role="host", rack=host_switch[h])
            address[h] = f"10.0.{n // 250}.{n % 250 + 2}/32"
        for a, b, info in source.links(withInfo=True):
            params = {}
            for end, node in ((1, a), (2, b)):
                if node in address:
                    params[f"params{end}"] = {"ip": address[node]}
            self.addLink(a, b, port1=info["port1"], port2=info["port2"],
                         link=link_params(info, default, shown), **params)


def switch_tiers(topo: Topo) -> dict[str, int]:
    """switch -> switches between it and the nearest host (0: a host's own)."""
    tier: dict[str, int] = {}
    queue = deque()
    for a, b in topo.links():
        for sw, other in ((a, b), (b, a)):
            if topo.isSwitch(sw) and not topo.isSwitch(other) and sw not in tier:
                tier[sw] = 0
                queue.append(sw)
    while queue:
        sw = queue.popleft()
        for a, b in topo.links():
            for x, y in ((a, b), (b, a)):
                if x == sw and topo.isSwitch(y) and y not in tier:
                    tier[y] = tier[sw] + 1
                    queue.append(y)
    return {sw: tier.get(sw, 0) for sw in topo.switches()}


def load(spec: str, default: LinkParams = LinkParams()) -> CustomTopo:
    """`--topo FILE.py:NAME`, loaded, checked and made a CustomTopo."""
    topo = load_user_topo(spec)
    shown = clipped(spec)
    check(topo, shown)
    return CustomTopo(source=topo, default=default, shown=shown, name=split_spec(spec)[1])
