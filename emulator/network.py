"""A topology built on a fabric with every host ready for TCP and MPTCP runs.

What every experiment needs around its network, in one place: the fabric,
the processes it starts, the userspace path manager attached to every host,
the traffic driver, and the congestion control: set as every host's default,
and, for the coupled algorithms (LIA, OLIA, EWTCP), registered in the kernel
for as long as the network exists. Teardown removes exactly that, in an order
that frees everything: processes, path manager sockets, namespaces, then the
algorithms the namespaces used.
"""
from __future__ import annotations

import logging
import time
from pathlib import Path

from dctopo import DCTopo, intf_name
from base import noderegistry
from base.lifecycle import Started
from base.links import LinkParams
from emulator.fabrics.common import Fabric
from emulator.fabrics import FABRICS
from base.procs import ProcessTracker, run
from base.signals import deferred
from emulator.traffic.common import reset_connections
from emulator.traffic.drivers import DRIVERS
from emulator.traffic.transfers import TransferDriver
from kernel import transport
from kernel.coupled_cc import CoupledCC
from kernel.mptcp_pm import UserspacePM


# How often a host's sockets are reset and looked at again before giving up:
# `ss -K` can time out on a machine still busy with the run's last packets.
ABORT_ATTEMPTS = 3
SS_TIMEOUT_S = 5
# wait_quiet(): counters unchanged this long mean the links are idle.
QUIET_S, QUIET_TIMEOUT_S = 0.5, 10.0

log = logging.getLogger(__name__)


def _reset_tcp_sockets(ns_pid: int) -> list[str]:
    """Reset the TCP sockets of one namespace; return those still open."""
    remaining: list[str] = []
    for _ in range(ABORT_ATTEMPTS):
        transport.reset_connections(ns_pid, timeout_s=SS_TIMEOUT_S)   # if ss timed out: the next try
        try:
            remaining = transport.tcp_sockets_open(ns_pid)
        except OSError:         # the namespace's last process is already gone
            return []
        if not remaining:
            break
    return remaining


class Network(Started):
    def __init__(self, topo: DCTopo, link: LinkParams, cc: str, seed: int = 0,
                 fabric: str = "l3", log_dir: Path | None = None, driver: str = "iperf3",
                 fabric_options: dict | None = None, host_settings: dict[str, str] | None = None,
                 share: tuple | None = None, register_cc: bool = True):
        """`fabric_options`: keyword arguments for the fabric's class (e.g.
        the openflow controller's `schedule_interval_s`); `host_settings`:
        sysctls set in every host besides the harness's own (an alternative
        a user chose, e.g. net.ipv4.tcp_notsent_lowat). `share`: (servers,
        where, server) to build only that server's share (Fabric.spread; a
        worker, emulator/worker.py); `register_cc`: False where another
        worker on the same kernel registers the coupled algorithms."""
        self.host_settings = dict(host_settings or {})
        self.topo = topo
        self.fabric: Fabric = FABRICS[fabric](topo, link, seed=seed, log_dir=log_dir,
                                              **(fabric_options or {}))
        self.cc = cc
        self.procs = ProcessTracker()
        self.pm = UserspacePM()
        self.driver = DRIVERS[driver](self.fabric, self.procs)
        self.transfers = TransferDriver(self.fabric, self.procs)     # starts nothing until run
        self.coupled_cc = CoupledCC(cc if register_cc else "")
        self.registry: Path | None = None       # where `run_mptcp.sh exec` finds the nodes
        if share is not None:
            self.fabric.spread(*share)


    def start(self) -> None:
        try:
            self.coupled_cc.start()
            self.fabric.start()
            for host in self.local_hosts():
                self.sysctl(host, {**transport.host_sysctls(self.cc), **self.host_settings})
                self.pm.attach(host, self.fabric.pid(host))
            self.pm.start()
            self.registry = noderegistry.publish(self.described())
        except BaseException:
            self.close()
            raise

    def described(self) -> dict:
        """The nodes built here, for base/noderegistry.py: where each runs,
        the hosts' addresses, the links by their interfaces."""
        hosts = self.local_hosts()
        nodes = {name: node.pid for name, node in self.fabric.nodes.items()}
        links = [[a, intf_name(a, info["port1"]), b, intf_name(b, info["port2"])]
                 for a, b, info in self.topo.links(withInfo=True) if a in nodes or b in nodes]
        return {"fabric": self.fabric.name, "nodes": nodes, "hosts": hosts,
                "switches": [n for n in nodes if n not in set(hosts)],
                "addresses": {h: self.topo.host_addresses(h) for h in hosts}, "links": links}

    def close(self) -> None:
        """Remove what was created. Ctrl-C, SIGTERM or SIGHUP meanwhile waits
        until that is done and then takes effect: a teardown cut short would
        leave namespaces and processes behind, and one that swallowed the
        signal would let the sweep go on (seen: a Ctrl-C between two runs
        was lost)."""
        with deferred():
            noderegistry.withdraw(self.registry)
            self.registry = None
            # Reset while the processes still hold their connections, before
            # SIGTERM closes them (transport.reset_connections says why). With
            # none running (a run's driver stops its own) there is nothing
            # to reset, and `ss` in every host would cost each close time.
            if self.procs.running():
                reset_connections(self.fabric, self.local_hosts())
            self.procs.stop_all()
            self.pm.close()
            self.abort_connections()
            self.fabric.stop()
            self.coupled_cc.stop()      # after the namespaces that use the algorithms

    def abort_connections(self) -> dict[str, list[str]]:
        """Reset every TCP socket left in the hosts (`ss -K`), and check that
        none is left. Their processes are gone, but orphaned sockets would go
        on retransmitting to peers that no longer exist for up to a minute or
        two, keeping their namespace and their congestion control (a coupled
        algorithm would stay in the kernel, unregistered, that long or, if
        the namespace went first, for good: docs/cleanup.md).

        Returns host -> the sockets still open there after ABORT_ATTEMPTS
        tries (empty: none), also said in one line on stderr."""
        left: dict[str, list[str]] = {}
        for host in self.local_hosts():
            if host in self.fabric.nodes:
                remaining = _reset_tcp_sockets(self.fabric.pid(host))
                if remaining:
                    left[host] = remaining
        if left:
            log.warning("warning: TCP sockets outlived %d tries of `ss -K` in %d host(s) (%s); "
                        "the kernel may keep them and their congestion control after the "
                        "namespaces go", ABORT_ATTEMPTS, len(left),
                        "; ".join(f"{h}: {', '.join(s)}" for h, s in sorted(left.items())[:3]))
        return left

    def arm(self, flows, subflows: int) -> None:
        """Forget the previous run's connections and have each of these flows'
        (FlowEndpoints) data connections opened with `subflows` subflows (1: none added)."""
        self.pm.reset()
        self.pm.forget_expansions()
        if subflows > 1:
            for f in flows:
                self.pm.expand(f.src, (f.src_ip, f.client_port), (f.dst_ip, f.server_port), subflows)

    def host_sysctls(self) -> dict[str, str]:
        """The recorded sysctls (kernel/transport.RECORDED_SYSCTLS) of the first host."""
        return transport.read_sysctls(self.fabric.pid(self.local_hosts()[0]))

    def environment(self) -> dict:
        """What a run's record adds about where the network ran (nothing: here)."""
        return {}

    def local_hosts(self) -> list[str]:
        """The hosts built by this process (all but on a worker)."""
        here = set(self.fabric.built_here())
        return [h for h in self.fabric.hosts() if h in here]

    def kernel_counters(self) -> dict[str, int]:
        """MPTCP MIB counters summed over the hosts, and the machine's ARP
        table counters (kernel/transport.read_arp_table_stats), which only
        the root namespace shows (not a test's server namespace, tests/test_cluster.py)."""
        total: dict[str, int] = {}
        for host in self.local_hosts():
            for k, v in transport.read_netstat(self.fabric.pid(host), ("MPTcpExt",)).items():
                total[k] = total.get(k, 0) + v
        return {**total, **(transport.read_arp_table_stats() if transport.ARP_STATS.exists() else {})}

    def monitors(self, interval_s: float):
        """Every monitor of a run over this network (monitor/bundle.py)."""
        from monitor import Monitors
        return Monitors.for_fabric(self.fabric, self.pm, interval_s=interval_s)

    def sysctl(self, host: str, values: dict[str, str]) -> None:
        run(["sysctl", "-q", "-w", *(f"{k}={v}" for k, v in values.items())], timeout=10,
            ns_pid=self.fabric.pid(host))

    def set_cc(self, host: str, cc: str) -> None:
        """Another default congestion control for one host (e.g. a Reno
        competitor next to an LIA connection)."""
        self.sysctl(host, {"net.ipv4.tcp_congestion_control": cc})

    def health_problems(self) -> dict[str, str]:
        """Run flag -> what went wrong, for parts the runs depend on that have
        died since the network was built: the fabric's (its delay line, its
        controller), the coupled congestion control's loader (then the
        subflows fell back to the kernel's default)."""
        problems = self.fabric.health_problems()
        if not self.coupled_cc.alive():
            problems["cc_unregistered"] = f"the loader of {self.coupled_cc.cc} exited"
        return problems

    def health_flags(self) -> list[str]:
        return list(self.health_problems())

    def delay_line_snapshot(self) -> list[dict]:
        """The delay line's counters per queue ([] where no link has one)."""
        line = self.fabric.delay_line
        return line.snapshot() if line is not None else []

    def wait_quiet(self, read_counters, quiet_s: float = QUIET_S,
                   timeout_s: float = QUIET_TIMEOUT_S) -> bool:
        """Wait until `read_counters()` (e.g. a host's interface byte counts)
        stays the same for `quiet_s`: until the previous run's packets, still
        queued or still sent by a closed connection's buffers, are through,
        so that the next run does not count them. False if it never did."""
        deadline = time.monotonic() + timeout_s
        last = read_counters()
        while time.monotonic() < deadline:
            time.sleep(quiet_s)
            now = read_counters()
            if now == last:
                return True
            last = now
        return False
