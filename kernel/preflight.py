"""Checks that must pass before anything is started (exit status 2 if not)."""
from __future__ import annotations

import os
import shutil
from pathlib import Path

from base.errors import ConfigError

# Binaries a run needs, and the Debian package that ships each one.
BINARIES = {
    "mnexec": "mininet",
    "iperf3": "iperf3",
    "mptcpize": "mptcpd",
    "ip": "iproute2",
    "tc": "iproute2",
    "ethtool": "ethtool",
    "sysctl": "procps",
}


class PreflightError(ConfigError):
    pass


def check_root() -> None:
    if os.geteuid() != 0:
        raise PreflightError("must be run as root (it builds network namespaces): try sudo")


def check_binaries(names=BINARIES) -> None:
    missing = [f"{b} (Debian package {names[b]})" for b in names if shutil.which(b) is None]
    if missing:
        raise PreflightError("missing binaries: " + ", ".join(missing))


def check_mptcp(proc: Path = Path("/proc/sys/net/mptcp")) -> None:
    """Upstream MPTCP (5.6+) exposes net.mptcp.*; the userspace path manager
    (pm_type) arrived in 5.19."""
    if not (proc / "enabled").exists():
        raise PreflightError("this kernel has no MPTCP (no /proc/sys/net/mptcp): "
                             "a kernel with CONFIG_MPTCP=y is needed")
    if not (proc / "pm_type").exists():
        raise PreflightError("this kernel's MPTCP has no userspace path manager "
                             "(net.mptcp.pm_type): Linux 5.19 or later is needed")


def check_congestion_control(cc: str,
                             available: Path = Path("/proc/sys/net/ipv4/tcp_available_congestion_control")
                             ) -> None:
    names = available.read_text().split()
    if cc not in names:
        raise PreflightError(f"congestion control {cc!r} is not available in this kernel "
                             f"(available: {' '.join(names)})")


# What link delay and loss need where the kernel has no netem (emulator/links.py says how).
DELAY_BINARIES = {"iptables-restore": "iptables"}
OPENFLOW_BINARIES = {t: "openvswitch-switch" for t in
                     ("ovsdb-tool", "ovsdb-server", "ovs-vswitchd", "ovs-vsctl", "ovs-ofctl")}


def check_openflow() -> None:
    """What the openflow fabrics start: Open vSwitch and the os-ken controller."""
    check_binaries(OPENFLOW_BINARIES)
    import importlib.util
    if importlib.util.find_spec("os_ken") is None:
        raise PreflightError("missing Python package os-ken (run ./bootstrap.sh)")


def check_all(cc: str, delay: bool = False, fabric: str = "l3") -> None:
    """`delay`: the run's links have delay or loss."""
    check_root()
    check_mptcp()
    check_binaries()
    if fabric.startswith("openflow"):
        check_openflow()
    if delay:
        from base.platform import netem_available
        if not netem_available():
            check_binaries(DELAY_BINARIES)
    from kernel import coupled_cc
    if cc in coupled_cc.COUPLED:
        coupled_cc.check_built()
    else:
        check_congestion_control(cc)
