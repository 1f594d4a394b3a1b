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

import signal
from pathlib import Path

from dctopo import DCTopo
from base.links import LinkParams
from emulator.fabrics.common import Fabric
from emulator.fabrics import FABRICS
from base.procs import ProcessTracker, run
from emulator.traffic.drivers import DRIVERS
from emulator.traffic.transfers import TransferDriver
from kernel import transport
from kernel.coupled_cc import CoupledCC
from kernel.mptcp_pm import UserspacePM


class Network:
    def __init__(self, topo: DCTopo, link: LinkParams, cc: str, seed: int = 0,
                 fabric: str = "l3", log_dir: Path | None = None, driver: str = "iperf3"):
        self.topo = topo
        self.fabric: Fabric = FABRICS[fabric](topo, link, seed=seed, log_dir=log_dir)
        self.cc = cc
        self.procs = ProcessTracker()
        self.pm = UserspacePM()
        self.driver = DRIVERS[driver](self.fabric, self.procs)
        self.transfers = TransferDriver(self.fabric, self.procs)     # starts nothing until run
        self.coupled_cc = CoupledCC(cc)

    def __enter__(self) -> "Network":
        self.start()
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def start(self) -> None:
        try:
            self.coupled_cc.start()
            self.fabric.start()
            for host in self.fabric.hosts():
                self.sysctl(host, transport.host_sysctls(self.cc))
                self.pm.attach(host, self.fabric.pid(host))
            self.pm.start()
        except BaseException:
            self.close()
            raise

    def close(self) -> None:
        """Remove what was created; a second Ctrl-C waits until that is done."""
        previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
        try:
            self.procs.stop_all()
            self.pm.close()
            self.abort_connections()
            self.fabric.stop()
            self.coupled_cc.stop()      # after the namespaces that use the algorithms
        finally:
            signal.signal(signal.SIGINT, previous)

    def abort_connections(self) -> None:
        """Reset every TCP socket left in the hosts (`ss -K`). Their processes
        are gone, but orphaned sockets would go on retransmitting to peers
        that no longer exist for up to a minute or two, keeping their
        namespace and their congestion control (a coupled algorithm would
        stay in the kernel that long after being unregistered)."""
        for host in self.fabric.hosts():
            if host in self.fabric.nodes:
                run(["ss", "-K", "-t", "-a"], timeout=5, ns_pid=self.fabric.pid(host), check=False)

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
