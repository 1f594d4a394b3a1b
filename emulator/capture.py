"""Packet captures of chosen hosts during one run (`--pcap`): a tcpdump in
the host's namespace on each of its links' interfaces (not `-i any`, which
would see each packet twice, on the interface and on the ifb that shapes
what it receives), into RUN/pcap/INTERFACE.pcap (h0_0_0-eth0.pcap), with a
snap length that keeps every header and TCP option (MPTCP's MP_CAPABLE,
MP_JOIN, DSS: at most 40 bytes of options after 20 of IP, 20 of TCP and 14
of Ethernet) and a cap on each file's size, as a packet count: a capture
that reaches it stops, and the run says so. Each tcpdump is seen listening
before the run's traffic starts."""
from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

from base.procs import ProcessTracker, wait_readable
from dctopo import intf_name
from emulator.traffic.common import TrafficError

SNAP_BYTES = 192
CAP_MB = 200                    # per host and run
RECORD_BYTES = 16 + SNAP_BYTES  # pcap's per-packet header and the snapped bytes
CAP_PACKETS = CAP_MB * 1_000_000 // RECORD_BYTES
LISTEN_TIMEOUT_S = 10
STOP_GRACE_S = 5


class CaptureError(TrafficError):
    """tcpdump did not start: the experiment stops (exit status 1)."""


class Capture:
    def __init__(self, fabric, hosts: list[str], folder: Path):
        self.fabric, self.hosts = fabric, list(hosts)
        self.folder = Path(folder) / "pcap"
        self.procs = ProcessTracker()
        self.started: dict[str, subprocess.Popen] = {}     # by interface
        self.host_of: dict[str, str] = {}
        self.summary: dict[str, dict] = {}

    def __enter__(self) -> "Capture":
        self.folder.mkdir(parents=True, exist_ok=True)
        try:
            for host in self.hosts:
                for intf in interfaces(self.fabric.topo, host):
                    self.host_of[intf] = host
                    self.started[intf] = self.procs.spawn(
                        f"tcpdump {intf}",
                        ["tcpdump", "-i", intf, "-n", "-s", str(SNAP_BYTES), "-c", str(CAP_PACKETS),
                         "-Z", "root", "-w", str(self.folder / f"{intf}.pcap")],
                        ns_pid=self.fabric.pid(host), stderr=subprocess.PIPE)
            for host, proc in self.started.items():
                self._wait_listening(host, proc)
        except BaseException:
            self.procs.stop_all()
            raise
        return self

    def _wait_listening(self, host: str, proc: subprocess.Popen) -> None:
        """tcpdump says "listening on any" once its socket is open."""
        deadline = time.monotonic() + LISTEN_TIMEOUT_S
        seen = b""
        while time.monotonic() < deadline:      # os.read: a buffered readline would hide lines from poll
            if not wait_readable(proc.stderr.fileno(), deadline - time.monotonic()):
                break
            chunk = os.read(proc.stderr.fileno(), 4096)
            if not chunk:
                break
            seen += chunk
            if b"listening on" in seen:
                return
        raise CaptureError(f"tcpdump in {host} did not start listening within "
                           f"{LISTEN_TIMEOUT_S} s: {seen.decode(errors='replace').strip()[-200:]}")

    def __exit__(self, *exc) -> None:
        capped = {i for i, p in self.started.items() if p.poll() is not None}
        cpu = {i: _cpu_s(p.pid) for i, p in self.started.items()}
        self.procs.stop_all()       # SIGTERM: tcpdump writes what it holds and exits
        for intf, proc in self.started.items():
            tail = proc.stderr.read().decode(errors="replace") if proc.stderr else ""
            proc.stderr.close()
            path = self.folder / f"{intf}.pcap"
            self.summary[intf] = {
                "host": self.host_of[intf], "file": f"pcap/{intf}.pcap",
                "bytes": path.stat().st_size if path.exists() else 0,
                "packets": _captured(tail), "capped": intf in capped, "cpu_s": cpu[intf],
                "cap_packets": CAP_PACKETS, "snap_bytes": SNAP_BYTES}

    def capped(self) -> dict[str, str]:
        """interface -> a line for each capture that stopped at its cap."""
        return {h: f"{s['packets']} packets, {s['bytes'] / 1e6:.0f} MB (cap {CAP_MB} MB): "
                   "the run's later packets are not in it"
                for h, s in self.summary.items() if s["capped"]}


def interfaces(topo, host: str) -> list[str]:
    """The host's interfaces, one per link, by the topology's names."""
    return sorted(intf_name(node, info[port]) for a, b, info in topo.links(withInfo=True)
                  for node, port in ((a, "port1"), (b, "port2")) if node == host)


def _cpu_s(pid: int) -> float | None:
    """The CPU time a tcpdump has used so far (user and system), or None
    once it has exited (capped)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None
    return round((int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK"), 2)


def _captured(stderr: str) -> int | None:
    """tcpdump's closing "N packets captured"."""
    for line in stderr.splitlines():
        if line.endswith("packets captured"):
            return int(line.split()[0])
    return None
