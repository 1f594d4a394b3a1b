"""The OpenFlow fabric (`--fabric openflow`): Open vSwitch switches driven by
our ECMP controller (controller/app.py, os-ken), as the original harness's
RipL-POX fabric was.

Layout: every host has its own namespace, as on the l3 fabric; all switches
live in one more namespace, with a private Open vSwitch (controller/ovs.py)
whose bridges own the switch ends of the veths, and the controller, which
listens on that namespace's loopback. Everything is started and stopped by
PID; the namespace takes the ports and the bridges' taps with it.

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

import json
import os
import pickle
import signal
import subprocess
import sys
import time
from pathlib import Path

from controller.addressing import datapath_ids, host_mac, ofport
from controller.ovs import OvsInstance, kernel_datapath_available
from dctopo import DCTopo, Interface
from harness.config import LinkParams
from harness.fabric import Fabric, NsNode, _batch, _sysctl, common_sysctls
from harness.procs import CommandError

CONTROLLER_PORT = 6653
READY_TIMEOUT_S = 60
# Open vSwitch probes an idle controller connection after this long and drops
# it after as long again without an answer (5 s is its minimum): too slow to
# catch a hang within a short run, hence the heartbeat below.
INACTIVITY_PROBE_MS = 5000
# The controller is hung when its event loop has handled no echo reply for
# this long (it asks every 0.5 s; controller/app.py).
HUNG_AFTER_S = 3.0
MODES = ("proactive", "reactive")
SWITCH_NAMESPACE = "ofswitches"


class OpenFlowFabric(Fabric):
    name = "openflow"

    def __init__(self, topo: DCTopo, link: LinkParams, seed: int = 0,
                 delay_backend: str | None = None, mode: str = "proactive",
                 idle_timeout_s: int = 30, log_dir: Path | None = None):
        super().__init__(topo, link, seed=seed, delay_backend=delay_backend, log_dir=log_dir)
        if mode not in MODES:
            raise ValueError(f"unknown controller mode {mode!r}: {', '.join(MODES)}")
        self.mode = mode
        self.idle_timeout_s = idle_timeout_s
        self.datapath = "system" if kernel_datapath_available() else "netdev"
        self.ovs: OvsInstance | None = None
        self.controller: subprocess.Popen | None = None
        self.controller_starts = 0
        self._controller_log = None

    # -- nodes and links ------------------------------------------------------
    def _create_nodes(self) -> None:
        switches = NsNode(SWITCH_NAMESPACE, inNamespace=True)
        for name in self.topo.nodes():
            self.nodes[name] = switches if self.topo.isSwitch(name) else NsNode(name, inNamespace=True)

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
            self.ovs = OvsInstance(self.procs, self.switch_pid(), label="of")
            self.ovs.start()
            self.ovs.vsctl(*self.bridge_commands())
            self.start_controller()
        except BaseException:
            self.stop()
            raise

    def stop(self) -> None:
        self.stop_controller()
        if self.ovs is not None:
            self.ovs.stop()
            if self.log_dir is not None:
                self.ovs.keep_logs(self.log_dir)
            self.ovs.remove_rundir()
            self.ovs = None
        super().stop()

    def switch_pid(self) -> int:
        return self.nodes[self.topo.switches()[0]].pid

    def bridge_commands(self) -> list[str]:
        """One ovs-vsctl transaction: every bridge, its ports at their
        OpenFlow numbers, and its controller connection."""
        # QoS type linux-noop: Open vSwitch leaves the ports' qdiscs alone.
        # Without it, adding a port replaces our HTB + pfifo with noqueue
        # and the switch ports are not shaped at all.
        args: list[str] = ["--", "--id=@noop", "create", "qos", "type=linux-noop"]
        for switch, dpid in sorted(datapath_ids(self.topo).items()):
            ctl = f"@ctl_{switch}"
            args += ["--", "add-br", switch,
                     "--", "set", "bridge", switch, f"datapath_type={self.datapath}",
                     "fail_mode=secure", "protocols=OpenFlow15",
                     f"other-config:datapath-id={dpid:016x}",
                     "other-config:disable-in-band=true",
                     f"controller={ctl}",
                     "--", f"--id={ctl}", "create", "controller",
                     f"target=\"tcp:127.0.0.1:{CONTROLLER_PORT}\"",
                     f"inactivity_probe={INACTIVITY_PROBE_MS}", "connection_mode=out-of-band"]
            for intf in self.topo.interfaces(switch):
                args += ["--", "add-port", switch, intf.name,
                         "--", "set", "interface", intf.name, f"ofport_request={ofport(intf.port)}",
                         "--", "set", "port", intf.name, "qos=@noop"]
        return args

    # -- the controller ---------------------------------------------------------
    def start_controller(self) -> None:
        """Start a controller and wait until it has configured every switch."""
        assert self.ovs is not None and self.ovs.rundir is not None
        rundir = self.ovs.rundir
        status = rundir / "controller.status.json"
        status.unlink(missing_ok=True)
        spec = rundir / "controller.spec"
        spec.write_bytes(pickle.dumps({"topo": self.topo, "mode": self.mode, "seed": self.seed,
                                       "idle_timeout_s": self.idle_timeout_s,
                                       "status": str(status)}))
        log_path = (self.log_dir or rundir) / "controller.log"
        log_path.parent.mkdir(parents=True, exist_ok=True)
        self._controller_log = open(log_path, "a")
        self.controller_starts += 1
        self._controller_log.write(f"--- controller start {self.controller_starts} ({self.mode})\n")
        self._controller_log.flush()
        self.controller = self.procs.spawn(
            "controller", [sys.executable, "-m", "controller", str(spec), str(CONTROLLER_PORT)],
            ns_pid=self.switch_pid(), stdout=self._controller_log, stderr=subprocess.STDOUT,
            env=_controller_env(), death_signal=signal.SIGTERM)
        want = set(self.topo.switches())
        deadline = time.monotonic() + READY_TIMEOUT_S
        while True:
            ready = set(self.controller_status().get("ready", []))
            if ready >= want:
                return
            if self.controller.poll() is not None:
                raise CommandError(f"the controller exited at start (status {self.controller.returncode}); "
                                   f"see {log_path}")
            if time.monotonic() > deadline:
                raise CommandError(f"the controller configured {len(ready)} of {len(want)} switches "
                                   f"in {READY_TIMEOUT_S} s; see {log_path}")
            time.sleep(0.1)

    def stop_controller(self) -> None:
        if self.controller is not None:
            self.procs.stop([self.controller], grace=3)
            self.controller = None
        if self._controller_log is not None:
            self._controller_log.close()
            self._controller_log = None

    def controller_status(self) -> dict:
        if self.ovs is None or self.ovs.rundir is None:
            return {}
        try:
            return json.loads((self.ovs.rundir / "controller.status.json").read_text())
        except (OSError, ValueError):
            return {}

    def disconnected_switches(self) -> list[str]:
        """Bridges whose controller connection Open vSwitch reports down (a
        dead controller at once, a hung one after its inactivity probes)."""
        out = self.ovs.vsctl("--format=json", "--columns=target,is_connected,_uuid", "list", "controller")
        table = json.loads(out)
        down = {row[2][1] for row in table["data"] if row[1] is not True}
        if not down:
            return []
        bridges = json.loads(self.ovs.vsctl("--format=json", "--columns=name,controller", "list", "bridge"))
        return sorted(name for name, ctl in bridges["data"] if ctl[1] in down)

    def controller_problem(self) -> str | None:
        if self.controller is None or self.controller.poll() is not None:
            return "the controller exited"
        last_echo = self.controller_status().get("last_echo", 0.0)
        if time.time() - last_echo > HUNG_AFTER_S:
            return f"the controller handled no switch message for over {HUNG_AFTER_S:g} s (hung)"
        try:
            down = self.disconnected_switches()
        except CommandError as exc:
            return f"the switches cannot be asked ({exc})"
        if down:
            return f"{len(down)} switches lost their controller connection"
        return None

    def health_flags(self) -> list[str]:
        flags = super().health_flags()
        if self.ovs is None or not self.ovs.alive():
            flags.append("switch_failed")
        elif self.controller_problem():
            flags.append("controller_failed")
        return flags

    def prepare_run(self, say=print) -> None:
        """A dead or hung controller is replaced by a fresh one, which
        rebuilds every switch's tables, before the next run starts."""
        if self.ovs is None or not self.ovs.alive():
            return
        problem = self.controller_problem()
        if problem:
            say(f"  fabric: {problem}; starting a fresh controller")
            self.stop_controller()
            self.start_controller()


def _controller_env() -> dict[str, str]:
    """The controller imports our packages (controller, dctopo) by path."""
    root = str(Path(__file__).resolve().parent.parent)
    env = dict(os.environ)
    env["PYTHONPATH"] = root + (":" + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    return env


class ReactiveOpenFlowFabric(OpenFlowFabric):
    """`--fabric openflow-reactive`: RipL-POX's reactive mode, every new
    flow's first packet through the controller."""
    name = "openflow-reactive"

    def __init__(self, topo: DCTopo, link: LinkParams, seed: int = 0, **kwargs):
        super().__init__(topo, link, seed=seed, mode="reactive", **kwargs)
