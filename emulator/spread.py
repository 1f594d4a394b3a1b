"""A network spread over several servers, as a sweep uses a Network.

The coordinator builds nothing itself. Each server's worker (emulator/worker.py,
over ssh: emulator/cluster.py) builds its share with its hosts' settings and
path manager, and answers for them: the path manager's arming and
connections, the MPTCP counters, the CPU, resets. The traffic is the socket
driver's, with one flowgen receiver and sender per server for the flows of
that server's hosts, started over its ssh connection. The coordinator keeps
the topology's names and addresses (an unbuilt Fabric) and where each node
runs (SpreadFabric). Monitors other than the CPU (switch ports, RTT) are not
run over servers.
"""
from __future__ import annotations

import dataclasses
import shlex
import time
import socket
import subprocess
import threading

from base.lifecycle import Started
from base.procs import ProcessTracker
from base.signals import deferred
from base.ssh import SshError
from dctopo import DCTopo
from dctopo.placement import Placement
from base.links import LinkParams
from emulator.cluster import Cluster, Remote, tunnel_flags
from emulator.fabrics import FABRICS
from emulator.traffic.common import FlowEndpoints
from emulator.traffic.socket_driver import JsonLinesChild, SocketDriver
from emulator.tunnels import Server
from emulator.worker import CHECKOUT
from kernel.mptcp_pm import Connection
from monitor import CpuMonitor, Monitors
from monitor.cpu import CpuSample


def remote_of(destination: str) -> Remote:
    """A --servers entry: its tunnels use the address its host name resolves to here."""
    host = destination.rsplit("@", 1)[-1].strip("[]")
    try:
        address = socket.getaddrinfo(host, None, socket.AF_INET)[0][4][0]
    except OSError as exc:
        raise SshError(f"{destination}: its address is not known here ({exc.strerror or exc})") from None
    return Remote(destination, destination, address)


class SpreadFabric:
    """The coordinator's view of a fabric its workers built: the topology's
    hosts, addresses and links as the unbuilt `fabric` has them; each
    node's server and its PID there."""

    def __init__(self, fabric):
        self.fabric = fabric
        self.located: dict[str, tuple[str, int]] = {}     # node -> (server, PID); filled by start
        self.delay_line = None

    def __getattr__(self, name):
        return getattr(self.fabric, name)

    def pid(self, node: str) -> int:
        return self.located[node][1]

    def server(self, node: str) -> str:
        return self.located[node][0]

    def prepare_run(self, say=print) -> None:
        """Nothing: only the l3 fabric runs over servers."""


class ServersCpu(CpuMonitor):
    """Every server's CPU, sampled by its worker. Servers that share a
    kernel are one machine, counted once; the run's samples are the busiest
    machine's (it decides whether the run can be trusted)."""

    def __init__(self, net: "SpreadNetwork", interval_s: float):
        super().__init__(interval_s)
        self.net = net
        self.by_machine: dict[str, float | None] = {}

    def start(self, t0: float | None = None) -> None:
        self.net.ask("cpu_start", interval_s=self.interval_s)

    def stop(self) -> None:
        if self.by_machine:
            return
        answers = self.net.ask("cpu_stop")
        machines = {}
        for servers in self.net.cluster.kernels().values():
            samples = [CpuSample(**s) for s in answers[servers[0]]["samples"]]
            machines[" ".join(servers)] = samples
            self.samples = samples
            self.by_machine[" ".join(servers)] = self.mean_pct()
        busiest = max(self.by_machine, key=lambda m: self.by_machine[m] or 0.0)
        self.samples = machines[busiest]


class SpreadDriver(SocketDriver):
    """The socket driver with a receiver and a sender on every server."""

    def __init__(self, fabric: SpreadFabric, procs: ProcessTracker, cluster: Cluster):
        super().__init__(fabric, procs)
        self.cluster = cluster

    def children(self, role, flows, host_of, logdir):
        by_server: dict[str, list[FlowEndpoints]] = {}
        for f in flows:
            by_server.setdefault(self.fabric.server(host_of(f)), []).append(f)
        command = ["sh", "-c", f"cd {shlex.quote(str(CHECKOUT))} && PYTHONPATH=. "
                               f"exec .venv/bin/python -P -m emulator.traffic.flowgen {role}"]
        children = []
        for server, part in by_server.items():
            ssh = self.cluster.share(server).ssh

            def spawn(label, _argv, ssh=ssh, **popen) -> subprocess.Popen:
                return ssh.spawn(self.procs, label, command, **popen)
            child = JsonLinesChild(self.procs, role, logdir / f"flowgen-{role}-{server}.log", spawn=spawn)
            child.role += f" on {server}"       # its errors name the server
            children.append((child, part))
        return children

    def check_network(self) -> None:
        """A server lost during the traffic ends the run now, naming it."""
        for server, why in self.cluster.problems().items():
            raise SshError(f"{server}: {why}")

    def reset_hosts(self, hosts: list[str]) -> None:
        try:
            self.cluster.ask("reset", hosts=hosts)
        except SshError:    # a server is gone: its worker's teardown resets its hosts
            pass


class NoRepairLog:
    """Window repairs are counted in each server's kernel: not collected here."""

    def window_repairs(self):
        return None

    def repair_log(self, since: int = 0):
        return None


class SpreadNetwork(Started):
    """`topo` over `remotes`, placed by `placement`: what a sweep needs of a Network."""

    def __init__(self, topo: DCTopo, link: LinkParams, cc: str, seed: int, fabric: str,
                 placement: Placement, remotes: list[Remote], ssh_options: tuple[str, ...] = (),
                 host_settings: dict[str, str] | None = None, say=print, guard=None):
        """`guard(kernels)`, called once the workers have said who they are and
        before anything is built: the servers of each kernel as (name, identity)."""
        self.topo, self.placement = topo, placement
        self.guard = guard
        self.spec = {"topology": type(topo).__name__, "k": topo.k, "fabric": fabric, "seed": seed,
                     "link": dataclasses.asdict(link), "cc": cc,
                     "host_settings": dict(host_settings or {})}
        unbuilt = FABRICS[fabric](topo, link, seed=seed)
        unbuilt.spread([Server(r.name, r.address) for r in remotes], placement.where)
        self.fabric = SpreadFabric(unbuilt)
        self.cluster = Cluster(remotes, ssh_options, say=say)
        self.asking = threading.Lock()
        self.procs = ProcessTracker()
        self.pm = RemotePM(self)
        self.driver = SpreadDriver(self.fabric, self.procs, self.cluster)
        self.coupled_cc = NoRepairLog()
        self.probes: dict[str, dict] = {}

    def start(self) -> None:
        try:
            self.cluster.start()
            if self.guard:
                self.guard([[(n, self.cluster.share(n).identity) for n in names]
                            for names in self.cluster.kernels().values()])
            self.fabric.located.update(self.cluster.build(self.spec, self.placement.where))
            self.probes = self.cluster.probe()
        except BaseException:
            self.close()
            raise

    def close(self) -> None:
        with deferred():
            self.procs.stop_all()
            self.cluster.close()

    def ask(self, kind: str, **body) -> dict[str, dict]:
        """Every worker's answer; one question at a time (the CPU monitor's and the run's)."""
        with self.asking:
            return self.cluster.ask(kind, **body)

    # -- what a sweep asks of its network ------------------------------------
    def arm(self, flows: list[FlowEndpoints], subflows: int) -> None:
        self.ask("arm", subflows=subflows, flows=[
            [f.src, f.src_ip, f.client_port, f.dst_ip, f.server_port] for f in flows])

    def kernel_counters(self) -> dict[str, int]:
        """The hosts' MPTCP counters summed over servers; a machine's ARP
        counters once per kernel."""
        answers, total = self.ask("counters"), {}
        once = {servers[0] for servers in self.cluster.kernels().values()}
        for server, counters in answers.items():
            for k, v in counters.items():
                if k.startswith("MPTcp") or server in once:
                    total[k] = total.get(k, 0) + v
        return total

    def monitors(self, interval_s: float) -> Monitors:
        return Monitors(interval_s, cpu=ServersCpu(self, interval_s))

    def health_problems(self) -> dict[str, str]:
        lost = self.cluster.problems()
        if lost:
            return {"server_lost": "; ".join(f"{s}: {why}" for s, why in lost.items())}
        problems = {}
        for answer in self.ask("health").values():
            problems.update(answer)
        return problems

    def host_sysctls(self) -> dict[str, str]:
        return self.ask("sysctls")[self.fabric.server(self.fabric.hosts()[0])]

    def environment(self) -> dict:
        """What a run's record says of the servers: who they are, where each
        node ran, the tunnels' round trips and what they flag."""
        return {"servers": {
            "identities": {s.remote.name: s.identity for s in self.cluster.shares},
            "kernels": self.cluster.kernels(),
            "placement": self.placement.where,
            "crossing_links": len(self.placement.crossing()),
            "tunnel_round_trips": self.probes,
            "tunnel_flags": tunnel_flags(self.probes, self.fabric.link.bw_mbps,
                                         self.fabric.frame_bytes)}}


class RemotePM:
    """The workers' path managers, read as one."""

    def __init__(self, net: SpreadNetwork):
        self.net = net

    def connections(self) -> list[Connection]:
        """Every worker's records, their times moved onto this machine's
        clock (each server's monotonic clock is its own)."""
        out = []
        for answer in self.net.ask("connections").values():
            shift = time.monotonic() - answer["now"]
            for c in answer["all"]:
                for key in ("established_at", "last_subflow_at"):
                    if c[key] is not None:
                        c[key] += shift
                out.append(Connection(**c))
        return out
