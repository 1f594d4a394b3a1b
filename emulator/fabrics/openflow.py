"""The OpenFlow fabric (`--fabric openflow`): Open vSwitch switches driven by
our ECMP controller (controller/app.py, os-ken; its process:
emulator/fabrics/openflow_controller.py), as the original harness's
RipL-POX fabric was.

Layout: every host has its own namespace, as on the l3 fabric. The switches
live in one or more further namespaces, each with a private Open vSwitch
(controller/ovs.py) whose bridges own the switch ends of the veths there.
One controller, in the first switch namespace, serves them all over TCP: on
its loopback, and through a management veth to every other switch namespace
(169.254.i.1 to 169.254.i.2; os-ken cannot serve switches on a Unix socket). Everything is started and stopped by PID; a namespace
takes its ports and its bridges' taps with it.

Several switch daemons, on the userspace datapath: one ovs-vswitchd forwards
every packet of its bridges in its main thread, so one daemon is one core
(measured: 100 % of a core, MPTCP-8 at 51-59 % of optimal on FatTree(4)).
`switch_daemons` spreads the switches over that many daemons by pod (cores
by index), so that every core forwards.

Hosts are on one flat IPv4 network: a default route straight out of the
interface, ARP answered by the controller with the target's MAC (derived
from its address, controller/addressing.py). With the userspace datapath
(no `openvswitch` module, this platform) the hosts' TX checksum offload is
off: Open vSwitch reads frames with AF_PACKET and would forward a partial
checksum as it is, and the receiver would drop it.

Link shaping is the l3 fabric's (HTB + pfifo on each sending interface): on
a switch port it shapes what Open vSwitch transmits there.
"""
from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

from controller.addressing import datapath_ids, host_mac, ofport
from controller.ovs import OvsInstance, kernel_datapath_available
from dctopo import DCTopo, Interface
from base.links import LinkParams
from emulator.fabrics.common import Fabric, NsNode, _batch, _sysctl, common_sysctls
from emulator.fabrics.openflow_controller import CONTROLLER_PORT, ControllerProcess
from base.procs import run

# Open vSwitch probes an idle controller connection after this long and drops
# it after as long again without an answer (5 s is its minimum): too slow to
# catch a hang within a short run, hence the heartbeat below.
INACTIVITY_PROBE_MS = 5000
MODES = ("proactive", "reactive")
SWITCH_NAMESPACE = "ofswitches{}"


class OpenFlowFabric(ControllerProcess, Fabric):
    name = "openflow"
    ecmp_hash = "5-tuple, select groups with a hash basis per switch"

    def __init__(self, topo: DCTopo, link: LinkParams, seed: int = 0,
                 delay_backend: str | None = None, mode: str = "proactive",
                 idle_timeout_s: int = 30, log_dir: Path | None = None,
                 switch_daemons: int | None = None, schedule_interval_s: float | None = None):
        """`switch_daemons`: Open vSwitch instances to spread the switches
        over; None: one per CPU on the userspace datapath, one otherwise.
        `schedule_interval_s`: the controller runs Hedera's first fit that
        often (reactive mode only; controller/firstfit.py)."""
        super().__init__(topo, link, seed=seed, delay_backend=delay_backend, log_dir=log_dir)
        if topo.hosts_forward:
            raise ValueError(f"{type(topo).__name__}: its hosts relay between switches, which "
                             "only the l3 fabric routes")
        if mode not in MODES:
            raise ValueError(f"unknown controller mode {mode!r}: {', '.join(MODES)}")
        if schedule_interval_s is not None and (mode != "reactive" or not schedule_interval_s > 0):
            raise ValueError(f"first fit every {schedule_interval_s} s in {mode} mode: it needs "
                             "the reactive mode's per-flow entries and a positive interval")
        self.schedule_interval_s = schedule_interval_s
        if self.delay_backend == "nfqueue" and any(
                (info.get("link") or link).impaired for *_, info in topo.links(withInfo=True)):
            # The delay line takes what a namespace's IP stack receives; Open
            # vSwitch forwards between switch ports below it, and the switches
            # share namespaces, so their ports' queues would collide too.
            raise ValueError(f"{type(topo).__name__}: links with delay or loss need sch_netem on "
                             "the openflow fabric, and this kernel has none (the l3 fabric "
                             "delays them with its delay line)")
        self.mode = mode
        self.idle_timeout_s = idle_timeout_s
        self.datapath = "system" if kernel_datapath_available() else "netdev"
        if switch_daemons is None:
            switch_daemons = (os.cpu_count() or 1) if self.datapath == "netdev" else 1
        self.use_switch_daemons(switch_daemons)
        self.daemons: list[OvsInstance] = []
        self.workdir: Path | None = None      # controller spec, status and socket
        self._setup_controller()

    def use_switch_daemons(self, n: int) -> None:
        """Spread the switches over `n` Open vSwitch instances (before start)."""
        self.daemon_of = _spread(self.topo, n)
        self.switch_daemons = max(self.daemon_of.values(), default=0) + 1

    # -- nodes and links ------------------------------------------------------
    def _create_nodes(self) -> None:
        spaces = [NsNode(SWITCH_NAMESPACE.format(i), inNamespace=True)
                  for i in range(self.switch_daemons)]
        for name in self.topo.nodes():
            self.nodes[name] = (spaces[self.daemon_of[name]] if self.topo.isSwitch(name)
                                else NsNode(name, inNamespace=True))

    def mac(self, node: str, port: int) -> str | None:
        if self.topo.isSwitch(node):
            return None
        intf = next(i for i in self.topo.interfaces(node) if i.port == port)
        return host_mac(intf.ip) if intf.ip else None

    def route_via(self, intf: Interface) -> str:
        return f"dev {intf.name}"

    def host_script(self, host: str) -> list[str]:
        script = super().host_script(host)
        if self.datapath == "netdev":
            script += [f"ethtool -K {i.name} tx off" for i in self.topo.interfaces(host)]
        return script

    def switch_script(self, switch: str) -> list[str]:
        ip_lines = [f"link set {i.name} up" for i in self.topo.interfaces(switch)]
        return [*_sysctl(common_sysctls()), *_batch("ip", ["link set lo up", *ip_lines]),
                *self.link_script(switch)]

    # -- the contract ---------------------------------------------------------
    def start(self) -> None:
        super().start()
        try:
            self.workdir = Path(tempfile.mkdtemp(prefix="mptcp-ofctl-"))
            self._create_management_links()
            for i in range(self.switch_daemons):
                switches = sorted(s for s, d in self.daemon_of.items() if d == i)
                ovs = OvsInstance(self.procs, self.pid(switches[0]), self.workdir, label=f"switches{i}")
                self.daemons.append(ovs)
                ovs.start()
                ovs.vsctl(*self.bridge_commands(switches))
            self.start_controller()
        except BaseException:
            self.stop()
            raise

    def stop(self) -> None:
        self.stop_controller()
        for ovs in self.daemons:
            ovs.stop()
            if self.log_dir is not None:
                ovs.keep_logs(self.log_dir)
        self.daemons.clear()
        if self.workdir is not None:
            shutil.rmtree(self.workdir, ignore_errors=True)
            self.workdir = None
        super().stop()

    def namespace_pid(self, daemon: int) -> int:
        return self.pid(next(s for s, d in sorted(self.daemon_of.items()) if d == daemon))

    def _create_management_links(self) -> None:
        """A veth from the controller's namespace to every other switch
        namespace (inside our namespaces: it goes with them)."""
        first = self.namespace_pid(0)
        for i in range(1, self.switch_daemons):
            other = self.namespace_pid(i)
            run(["ip", "link", "add", "name", f"ofmgmt{i}", "netns", str(first), "type", "veth",
                 "peer", "name", f"ofmgmt{i}", "netns", str(other)], timeout=10)
            for pid, host in ((first, 1), (other, 2)):
                run(["ip", "addr", "add", f"169.254.{i}.{host}/24", "dev", f"ofmgmt{i}"], 10, ns_pid=pid)
                run(["ip", "link", "set", f"ofmgmt{i}", "up"], 10, ns_pid=pid)

    def controller_target(self, daemon: int) -> str:
        return f"tcp:127.0.0.1:{CONTROLLER_PORT}" if daemon == 0 else f"tcp:169.254.{daemon}.1:{CONTROLLER_PORT}"

    def daemon(self, switch: str) -> OvsInstance:
        """The Open vSwitch instance that holds `switch`'s bridge."""
        return self.daemons[self.daemon_of[switch]]

    def vswitchd_pids(self) -> list[int]:
        return [pid for ovs in self.daemons if (pid := ovs.vswitchd_pid()) is not None]

    def switches_alive(self) -> bool:
        return bool(self.daemons) and all(ovs.alive() for ovs in self.daemons)

    def bridge_commands(self, switches: list[str]) -> list[str]:
        """One ovs-vsctl transaction: these bridges, their ports at their
        OpenFlow numbers, and their controller connections."""
        # QoS type linux-noop: Open vSwitch leaves the ports' qdiscs alone.
        # Without it, adding a port replaces our HTB + pfifo with noqueue
        # and the switch ports are not shaped at all.
        args: list[str] = ["--", "--id=@noop", "create", "qos", "type=linux-noop"]
        dpids = datapath_ids(self.topo)
        for switch in switches:
            ctl = f"@ctl_{switch}"
            args += ["--", "add-br", switch,
                     "--", "set", "bridge", switch, f"datapath_type={self.datapath}",
                     "fail_mode=secure", "protocols=OpenFlow15",
                     f"other-config:datapath-id={dpids[switch]:016x}",
                     "other-config:disable-in-band=true",
                     f"controller={ctl}",
                     "--", f"--id={ctl}", "create", "controller",
                     f"target=\"{self.controller_target(self.daemon_of[switch])}\"",
                     f"inactivity_probe={INACTIVITY_PROBE_MS}", "connection_mode=out-of-band"]
            for intf in self.topo.interfaces(switch):
                args += ["--", "add-port", switch, intf.name,
                         "--", "set", "interface", intf.name, f"ofport_request={ofport(intf.port)}",
                         "--", "set", "port", intf.name, "qos=@noop"]
        return args

    # -- health -----------------------------------------------------------------
    def health_problems(self) -> dict[str, str]:
        problems = super().health_problems()
        if not self.switches_alive():
            problems["switch_failed"] = "an Open vSwitch daemon exited"
        elif problem := self.controller_problem():
            problems["controller_failed"] = problem
        return problems

    def prepare_run(self, say=print) -> None:
        """A dead or hung controller is replaced by a fresh one, which
        rebuilds every switch's tables, before the next run starts."""
        if not self.switches_alive():
            return
        problem = self.controller_problem()
        if problem:
            say(f"  fabric: {problem}; starting a fresh controller")
            self.stop_controller()
            self.start_controller()


def _spread(topo: DCTopo, daemons: int) -> dict[str, int]:
    """switch -> daemon index: pods split into `daemons` contiguous groups,
    core (pod-less) switches likewise by index, so each daemon forwards
    about an equal share of a FatTree's traffic."""
    daemons = max(1, daemons)
    switches = sorted(topo.switches())
    pods = sorted({topo.nodeInfo(s)["pod"] for s in switches if "pod" in topo.nodeInfo(s)})
    podless = [s for s in switches if "pod" not in topo.nodeInfo(s)]
    spread = {}
    for s in switches:
        info = topo.nodeInfo(s)
        if "pod" in info:
            spread[s] = pods.index(info["pod"]) * daemons // len(pods)
        else:
            spread[s] = podless.index(s) * daemons // len(podless)
    used = sorted(set(spread.values()))
    return {s: used.index(d) for s, d in spread.items()}     # no empty daemon


class ReactiveOpenFlowFabric(OpenFlowFabric):
    """`--fabric openflow-reactive`: RipL-POX's reactive mode, every new
    flow's first packet through the controller."""
    name = "openflow-reactive"

    def __init__(self, topo: DCTopo, link: LinkParams, seed: int = 0, **kwargs):
        super().__init__(topo, link, seed=seed, mode="reactive", **kwargs)
