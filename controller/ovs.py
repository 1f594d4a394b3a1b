"""A private Open vSwitch instance: ovsdb-server and ovs-vswitchd of our own.

Nothing is shared with a system Open vSwitch: the database, sockets and log
files live in a run directory of ours (OVS_RUNDIR, OVS_DBDIR, OVS_LOGDIR
point there; several instances may share one, their files carry their
label), and both daemons run in the foreground inside one network namespace,
started and stopped by PID through the fabric's ProcessTracker. The switches'
ports are the veths in that namespace, so when the namespace goes its ports,
and the taps the userspace datapath makes for its bridges, go with it.

Datapath: `system` (the kernel module) where the `openvswitch` module exists,
`netdev` (userspace, ports read with AF_PACKET by ovs-vswitchd's main thread)
where it does not (the development machines' 6.18 kernel has no
`openvswitch` module).
"""
from __future__ import annotations

import os
import shutil
import subprocess
import time
from pathlib import Path

from base.platform import openvswitch_kernel_datapath
from base.procs import CommandError, ProcessTracker, run

SCHEMA = Path("/usr/share/openvswitch/vswitch.ovsschema")
START_TIMEOUT_S = 20
VSCTL_TIMEOUT_S = 60


def kernel_datapath_available() -> bool:
    """Whether the `openvswitch` kernel module is loaded or can be: the
    kernel datapath forwards in softirq on every core."""
    return openvswitch_kernel_datapath()


class OvsInstance:
    """ovsdb-server + ovs-vswitchd in the network namespace of `ns_pid`."""

    def __init__(self, procs: ProcessTracker, ns_pid: int, rundir: Path, label: str = "ovs"):
        """`rundir`: the caller's directory, removed by the caller. Open
        vSwitch connects to a Unix-socket controller only inside its run
        directory, so instances that share a controller share the directory."""
        self.procs = procs
        self.ns_pid = ns_pid
        self.label = label
        self.rundir = rundir
        self.daemons: list[subprocess.Popen] = []

    def path(self, name: str) -> Path:
        return self.rundir / f"{self.label}-{name}"

    @property
    def db(self) -> str:
        return f"unix:{self.path('db.sock')}"

    def env(self) -> dict[str, str]:
        d = str(self.rundir)
        return {**os.environ, "OVS_RUNDIR": d, "OVS_DBDIR": d, "OVS_LOGDIR": d,
                "OVS_SYSCONFDIR": d, "OVS_PKGDATADIR": "/usr/share/openvswitch"}

    def start(self) -> None:
        for tool in ("ovsdb-tool", "ovsdb-server", "ovs-vswitchd", "ovs-vsctl", "ovs-ofctl"):
            if shutil.which(tool) is None:
                raise CommandError(f"{tool} not found: install openvswitch-switch")
        run(["ovsdb-tool", "create", str(self.path("conf.db")), str(SCHEMA)], timeout=20)
        self.daemons.append(self.procs.spawn(f"{self.label} ovsdb-server", [
            "ovsdb-server", str(self.path("conf.db")), f"--remote=punix:{self.path('db.sock')}",
            f"--unixctl={self.path('ovsdb-server.ctl')}",
            f"--log-file={self.path('ovsdb-server.log')}", "--no-chdir"],
            ns_pid=self.ns_pid, env=self.env()))
        self._wait_for(self.path("db.sock"), "ovsdb-server")
        self.vsctl("--no-wait", "init")
        self.daemons.append(self.procs.spawn(f"{self.label} ovs-vswitchd", [
            "ovs-vswitchd", self.db, f"--unixctl={self.path('ovs-vswitchd.ctl')}",
            f"--log-file={self.path('ovs-vswitchd.log')}", "--no-chdir"],
            ns_pid=self.ns_pid, env=self.env()))
        self._wait_for(self.path("ovs-vswitchd.ctl"), "ovs-vswitchd")

    def _wait_for(self, path: Path, what: str) -> None:
        deadline = time.monotonic() + START_TIMEOUT_S
        while not path.exists():
            if any(p.poll() is not None for p in self.daemons):
                raise CommandError(f"{what} exited at start; see {self.rundir}")
            if time.monotonic() > deadline:
                raise CommandError(f"{what} did not start in {START_TIMEOUT_S} s")
            time.sleep(0.05)

    def alive(self) -> bool:
        return bool(self.daemons) and all(p.poll() is None for p in self.daemons)

    def vsctl(self, *args: str, timeout: float = VSCTL_TIMEOUT_S) -> str:
        return run(["ovs-vsctl", f"--db={self.db}", f"--timeout={int(timeout)}", *args],
                   timeout=timeout + 5, ns_pid=self.ns_pid).stdout

    def appctl(self, *args: str) -> str:
        return run(["ovs-appctl", f"--target={self.path('ovs-vswitchd.ctl')}", *args],
                   timeout=10).stdout

    def ofctl(self, bridge: str, *args: str, version: str = "OpenFlow15") -> str:
        """ovs-ofctl through the bridge's management socket (not the controller)."""
        return run(["ovs-ofctl", "-O", version, *args[:1], f"{self.rundir}/{bridge}.mgmt",
                    *args[1:]], timeout=20).stdout

    def vswitchd_pid(self) -> int | None:
        return self.daemons[1].pid if len(self.daemons) > 1 else None

    def stop(self) -> None:
        """ovs-vswitchd first (it removes its bridges' taps), then the database."""
        for proc in reversed(self.daemons):
            self.procs.stop([proc], grace=5)
        self.daemons.clear()

    def keep_logs(self, dest: Path) -> None:
        """Copy the daemons' logs into a results folder."""
        dest.mkdir(parents=True, exist_ok=True)
        for log in self.rundir.glob(f"{self.label}-*.log"):
            shutil.copy(log, dest / log.name)
