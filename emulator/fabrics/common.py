"""Building a topology into real network namespaces, and tearing it down.

`Fabric` is the contract every fabric implements (kernel routing now, Open
vSwitch + OpenFlow later): `start()` builds the network described by a
`dctopo` topology, `stop()` removes exactly what `start()` created, and
`pid(node)` names the namespace in which to run things on a node.

Nodes are Mininet `Node`s (a shell in fresh namespaces, started by mnexec).
Links are veth pairs created directly inside the two nodes' namespaces, so
nothing of ours ever appears in the root namespace: when a node's processes
end its namespace and its interfaces go with it.

Configuration is batched: one `ip -batch` for all veth pairs and one shell
script per node (sysctls, addresses, routes, qdiscs), instead of Mininet's
several shell round trips per interface: FatTree(8) has 208 nodes and 384
links' worth of interfaces to set up.
"""
from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path

from mininet.node import Node

from dctopo import DCTopo, Interface, Route, intf_name
from emulator import links
from emulator.tunnels import Server, tunnel_mtu, vxlan_end
from base.links import LinkParams
from emulator.delayline import DelayLine, QueueSpec
from base.platform import netem_available
from base.procs import CommandError, ProcessTracker, run

NODE_SCRIPT_TIMEOUT = 60


class NsNode(Node):
    """A Mininet node whose teardown is bounded in time and touches only its
    own processes (Mininet's may wait forever on the shell)."""

    def terminate(self) -> None:
        if self.shell and self.shell.poll() is None:
            try:
                os.killpg(self.shell.pid, signal.SIGHUP)
                self.shell.wait(timeout=3)
            except subprocess.TimeoutExpired:
                os.killpg(self.shell.pid, signal.SIGKILL)
                self.shell.wait(timeout=3)
            except ProcessLookupError:
                pass
        if self.shell:
            self.stdin.close()
            os.close(self.slave)
            self.shell = None


class Fabric:
    """Nodes, links, host addresses and link shaping; subclasses add forwarding."""
    # How equal-cost paths are chosen, as recorded in run.json (`ecmp_hash`).
    ecmp_hash = ""

    name = "base"

    def __init__(self, topo: DCTopo, link: LinkParams, seed: int = 0,
                 delay_backend: str | None = None, log_dir: Path | None = None):
        """`link`: the shaping of every link that carries no LinkParams of its
        own. `delay_backend`: how delay and loss are made, "netem" or
        "nfqueue"; None picks netem where the kernel has it. `log_dir`: where
        the fabric's own processes (switches, controller) keep their logs."""
        self.topo = topo
        self.log_dir = log_dir
        self.link = link
        self.seed = seed
        if delay_backend is None:
            delay_backend = "netem" if netem_available() else "nfqueue"
        self.delay_backend = delay_backend
        self.nodes: dict[str, NsNode] = {}
        self.procs = ProcessTracker()
        self.delay_line: DelayLine | None = None
        self.delay_stats: list[dict] = []   # the delay line's, once stopped
        self.servers: dict[str, Server] = {}   # spread(): each server by name
        self.where: dict[str, str] = {}        # spread(): each node's server
        self.share: str | None = None          # spread(): the one server built here (None: all)
        self.mtu = 1500
        self.tunnel_ends: set[str] = set()     # interfaces that are VXLAN ends

    # -- the contract ------------------------------------------------------
    def start(self) -> None:
        try:
            self._create_nodes()
            self._create_datapath()
            for name in self.built_here():
                self._configure(name, self.node_script(name))
        except BaseException:
            self.stop()
            raise

    def _create_datapath(self) -> None:
        """What carries packets between the nodes: links and the delay line
        (the model fabric: its engine)."""
        self._create_links()
        self._start_delay_line()

    def stop(self) -> None:
        if self.delay_line is not None:
            self.delay_stats = self.delay_line.stop()
            self.delay_line = None
        self.procs.stop_all()
        for node in self.nodes.values():
            node.terminate()
        self.nodes.clear()

    def health_problems(self) -> dict[str, str]:
        """Run flag -> what went wrong, for parts of the fabric that failed
        since the last `prepare_run()` (empty: all well)."""
        return {} if self.delay_line_ok() else {"delay_line_failed": "the delay line exited"}

    def health_flags(self) -> list[str]:
        return list(self.health_problems())

    def check_alive(self) -> None:
        """Raises TrafficError where a part every packet needs has died (the
        model fabric's engine); the socket driver asks each second."""

    def prepare_run(self, say=print) -> None:
        """Called before every run: repair what a run can be repaired from
        (the openflow fabric restarts a dead or hung controller)."""

    def port_monitor(self, interval_s: float):
        """The sampler of every switch port's counters (monitor/ports.py)."""
        from monitor.ports import PortMonitor
        return PortMonitor({s: self.pid(s) for s in self.topo.switches()}, interval_s,
                           bw_mbps=self.link.bw_mbps)

    def run_counters(self) -> dict | None:
        """Before a run: what run_summary() subtracts (None: the fabric keeps none)."""
        return None

    def run_summary(self, before: dict | None) -> tuple[dict, list[str]]:
        """After a run: what the fabric itself did, for run.json, and flags."""
        return {}, []

    def link_of(self, intf: Interface) -> LinkParams:
        """The shaping of the link `intf` belongs to."""
        return intf.link or self.link

    def delay_line_ok(self) -> bool:
        """False if links need the delay line and it is no longer running."""
        return self.delay_line is None or self.delay_line.alive()

    def set_rate(self, node: str, port: int, bw_mbps: float) -> None:
        """Change the egress rate of one of `node`'s ports while the network runs."""
        run(["tc", *links.rate_change(intf_name(node, port), bw_mbps)], timeout=10,
            ns_pid=self.pid(node))

    def pid(self, node: str) -> int:
        return self.nodes[node].pid

    def hosts(self) -> list[str]:
        return self.topo.hosts(sort=True)

    def host_ip(self, host: str) -> str:
        """The host's first address (the one its flows use by default)."""
        return self.topo.host_addresses(host)[0]

    def spread(self, servers: list[Server], where: dict[str, str], share: str | None = None) -> None:
        """Build this network over several servers, before start(): `where`
        names each node's server, and a link between two servers is a tunnel
        (emulator/tunnels.py). Every link then carries the tunnel's MTU.
        `share`: build only that server's nodes and tunnel ends (a worker on
        that server, emulator/worker.py); None: every server's, from here."""
        self.servers = {s.name: s for s in servers}
        self.where = dict(where)
        self.share = share
        self.mtu = tunnel_mtu()

    def built_here(self) -> list[str]:
        """The nodes this process builds: all, or its server's share."""
        return [n for n in self.topo.nodes() if self.share is None or self.where[n] == self.share]

    @property
    def frame_bytes(self) -> int:
        """A full frame on this fabric's links: its MTU and the Ethernet header."""
        return self.mtu + 14

    # -- building ----------------------------------------------------------
    def _create_nodes(self) -> None:
        """One Mininet node (its own namespaces) per topology node."""
        for name in self.built_here():
            self.nodes[name] = NsNode(name, inNamespace=True)

    def mac(self, node: str, port: int) -> str | None:
        """The MAC address to give an interface; None: the kernel's random one."""
        return None

    def _create_links(self) -> None:
        """veth pairs, made from the root namespace; where a link crosses
        between servers, a VXLAN end made from each server's namespace."""
        lines, tunnels = [], {}
        mtu = f" mtu {self.mtu}" if self.mtu != 1500 else ""
        for vni, (src, dst, info) in enumerate(self.topo.links(withInfo=True), 1):
            ends = [(src, info["port1"]), (dst, info["port2"])]
            if not {src, dst} & self.nodes.keys():
                continue            # another server's link
            if self.where and self.where[src] != self.where[dst]:
                for (node, port), (peer, _) in zip(ends, ends[::-1]):
                    if node not in self.nodes:
                        continue    # that end is another server's
                    local, remote = self.servers[self.where[node]], self.servers[self.where[peer]]
                    tunnels.setdefault(local, []).extend(vxlan_end(
                        intf_name(node, port), vni, local, remote, self.pid(node), self.mtu,
                        self.mac(node, port)))
                    self.tunnel_ends.add(intf_name(node, port))
                continue
            texts = []
            for node, port in ends:
                mac = self.mac(node, port)
                texts.append(f"name {intf_name(node, port)}" + (f" address {mac}" if mac else "")
                             + f"{mtu} netns {self.pid(node)}")
            lines.append(f"link add {texts[0]} type veth peer {texts[1]}")
        if lines:
            run(["ip", "-batch", "-"], timeout=60, input="\n".join(lines) + "\n")
        for server, server_lines in tunnels.items():
            run(["ip", "-batch", "-"], timeout=60, ns_pid=server.ns_pid,
                input="\n".join(server_lines) + "\n")

    def _configure(self, name: str, script: list[str]) -> None:
        try:
            run(["sh", "-e", "-s"], timeout=NODE_SCRIPT_TIMEOUT, ns_pid=self.pid(name),
                input="\n".join(script) + "\n")
        except CommandError as exc:
            raise CommandError(f"configuring {name}: {exc}") from exc

    def node_script(self, name: str) -> list[str]:
        if self.topo.isSwitch(name):
            return self.switch_script(name)
        return self.host_script(name)

    def host_script(self, host: str) -> list[str]:
        """Addresses, a default route through the first interface's switch,
        shaping and offloads: the part every fabric shares.

        A host with several addressed interfaces also routes by source: what
        leaves from an interface's address leaves through that interface
        (table 100 + port), so a subflow bound to an address takes its path.
        """
        intfs = self.topo.interfaces(host)
        addressed = [i for i in intfs if i.ip]
        ip_lines, shell = ["link set lo up"], []
        for intf in intfs:
            ip_lines.append(f"link set {intf.name} up")
            if intf.ip:
                ip_lines.append(f"addr add {intf.ip} dev {intf.name}")
            shell += links.offload_commands(intf.name, self.link_of(intf))
        first = addressed[0]
        ip_lines.append(f"route add default {self.route_via(first)} src {first.ip.split('/')[0]}")
        if len(addressed) > 1:
            for intf in addressed:
                table, src = 100 + intf.port, intf.ip.split("/")[0]
                ip_lines += [f"rule add from {src} table {table} priority {1000 + intf.port}",
                             f"route add default {self.route_via(intf)} src {src} table {table}"]
        sysctls = common_sysctls()
        if self.topo.hosts_forward:
            # The topology routes its hosts itself (BCube: they relay).
            sysctls["net.ipv4.ip_forward"] = "1"
            ip_lines += [r.line() for r in self.topo.source_rules(host)]
            ip_lines += [route_line(host, r) for r in self.topo.host_routes(host)]
        return [*_sysctl(sysctls), *_batch("ip", ip_lines),
                *self.link_script(host), *shell]

    def route_via(self, intf: Interface) -> str:
        """Where a host's default route on `intf` points: through the
        gateway's address on that link (routed fabrics)."""
        return f"via {self.gateway(intf)} dev {intf.name} onlink"

    def gateway(self, intf: Interface) -> str:
        """The next hop address a host uses on `intf`."""
        raise NotImplementedError

    def switch_script(self, switch: str) -> list[str]:
        raise NotImplementedError

    def link_script(self, node: str) -> list[str]:
        """Shaping of every interface of `node` (rate, queue, and delay and
        loss where a link has them), and the NFQUEUE rules that hand
        arrivals to the delay line when it makes the delay."""
        netem = self.delay_backend == "netem"
        host = not self.topo.isSwitch(node)
        intfs = self.topo.interfaces(node)
        tc = [line for intf in intfs for line in links.tc_batch(
            intf.name, self.link_of(intf), netem=netem, host=host, frame_bytes=self.frame_bytes)]
        queued = [(s.intf, s.queue) for s in self.delay_line.specs
                  if s.ns_pid == self.pid(node)] if self.delay_line else []
        # A VXLAN end merges arriving frames (GRO) into packets of up to 64 KB,
        # which a switch's queue in packets would then hold by the dozen.
        gro = [f"ethtool -K {i.name} gro off" for i in intfs if i.name in self.tunnel_ends]
        return [*_batch("tc", tc), *_batch("iptables-restore --noflush",
                                           links.nfqueue_rules(queued)), *gro]

    # -- delay and loss without netem ------------------------------------------
    def _queue_specs(self) -> list[QueueSpec]:
        """One delay-line queue per interface of an impaired link (both ends),
        numbered by port within its namespace."""
        if self.delay_backend != "nfqueue":
            return []
        specs = []
        for a, b, info in self.topo.links(withInfo=True):
            link = info.get("link") or self.link
            if not link.impaired:
                continue
            for node, port in ((a, info["port1"]), (b, info["port2"])):
                if node not in self.nodes:
                    continue
                specs.append(QueueSpec(ns_pid=self.pid(node), queue=port + 1,
                                       intf=intf_name(node, port), delay_ms=link.delay_ms,
                                       jitter_ms=link.jitter_ms, loss_pct=link.loss_pct,
                                       seed=self.seed))
        return specs

    def _start_delay_line(self) -> None:
        """Bind every queue before any rule sends packets to it."""
        specs = self._queue_specs()
        if specs:
            self.delay_line = DelayLine(specs, self.procs)
            self.delay_line.start()


def route_line(node: str, r: Route) -> str:
    """`ip -batch` line of a route a topology gives for `node`."""
    dev = intf_name(node, r.port)
    target = f"via {r.via} dev {dev} onlink" if r.via else f"dev {dev} scope link"
    return f"route replace {r.dest}/32 {target}" + (f" table {r.table}" if r.table is not None else "")


def common_sysctls() -> dict[str, str]:
    """Settings every node of ours gets, whatever its role."""
    return {
        # Namespaces start with IPv6 on: router solicitations and MLD reports
        # would add traffic we did not ask for.
        "net.ipv6.conf.all.disable_ipv6": "1",
        "net.ipv6.conf.default.disable_ipv6": "1",
        # Multipath forwarding is asymmetric by design; strict reverse-path
        # filtering would drop it.
        "net.ipv4.conf.all.rp_filter": "0",
        "net.ipv4.conf.default.rp_filter": "0",
    }


def _sysctl(values: dict[str, str]) -> list[str]:
    return ["sysctl -q -w " + " ".join(f"{k}={v}" for k, v in values.items())] if values else []


def _batch(tool: str, lines: list[str]) -> list[str]:
    """A heredoc feeding `ip -batch`, `tc -batch` or iptables-restore from
    the node script."""
    if not lines:
        return []
    command = tool if tool.startswith("iptables") else f"{tool} -batch -"
    return [f"{command} <<'EOF'", *lines, "EOF"]


def wait_until(predicate, timeout: float, interval: float = 0.05) -> bool:
    """Poll `predicate` until it is true or `timeout` seconds pass."""
    deadline = time.monotonic() + timeout
    while True:
        if predicate():
            return True
        if time.monotonic() >= deadline:
            return False
        time.sleep(interval)
