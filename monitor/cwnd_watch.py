"""Every moment any TCP socket of the machine has a congestion window above
a threshold, whatever its congestion control: the kernel's tcp_probe
tracepoint (one event per segment received on an established socket, with
its snd_cwnd and ssthresh), filtered in the kernel so that only the huge
windows reach us. Used to ask whether the kernel's own Reno gets the
corrupted windows our BPF algorithms repair (kernel/bpf/README.md), which
sampling with sock_diag can miss between two samples.

The events go to a tracefs instance of our own (a ring buffer apart from
the machine's), removed on stop(); tracefs is mounted on a folder of ours
for the watch when it is not mounted already, and unmounted after. The
files are written and read by hand: tracefs is a file interface, and no
library the harness installs wraps it."""
from __future__ import annotations

import os
import re
import tempfile
from pathlib import Path

from base.procs import CommandError, run

TRACEFS_MOUNTS = (Path("/sys/kernel/tracing"), Path("/sys/kernel/debug/tracing"))
EVENT = Path("events/tcp/tcp_probe")
# 2^20 packets: the cap of kernel/bpf/mptcp_cc.bpf.c (W_CAP); no real window comes near it.
HUGE_WINDOW = 1 << 20
FIELD = re.compile(r"(\w+)=(\S+)")


class WatchError(RuntimeError):
    pass


def mounted_tracefs() -> Path | None:
    for path in TRACEFS_MOUNTS:
        if (path / "instances").is_dir():
            return path
    return None


class HugeWindowWatch:
    """start(), run the traffic, stop() -> the events: one dict per
    segment received while the socket's window was above `threshold`
    (src, dest, snd_cwnd, ssthresh, ... as tcp_probe prints them)."""

    def __init__(self, threshold: int = HUGE_WINDOW):
        self.threshold = threshold
        self.root: Path | None = None
        self.our_mount: Path | None = None
        self.instance: Path | None = None

    def start(self) -> None:
        self.root = mounted_tracefs()
        if self.root is None:
            self.our_mount = Path(tempfile.mkdtemp(prefix="mptcp-dc-tracefs-"))
            try:
                run(["mount", "-t", "tracefs", "nodev", str(self.our_mount)], timeout=10)
            except CommandError as exc:
                os.rmdir(self.our_mount)
                self.our_mount = None
                raise WatchError(f"cannot mount tracefs: {exc}") from None
            self.root = self.our_mount
        self.instance = self.root / "instances" / f"mptcp-dc-harness-{os.getpid()}"
        try:
            self.instance.mkdir()
            event = self.instance / EVENT
            if not event.is_dir():
                raise WatchError("this kernel has no tcp:tcp_probe tracepoint")
            (event / "filter").write_text(f"snd_cwnd > {self.threshold}\n")
            (event / "enable").write_text("1\n")
        except (OSError, WatchError) as exc:
            self.stop()
            raise WatchError(f"tcp_probe watch: {exc}") from None

    def stop(self) -> list[dict]:
        """Stop watching, remove the instance (and our mount) and return
        what was seen."""
        events: list[dict] = []
        if self.instance is not None and self.instance.is_dir():
            try:
                (self.instance / EVENT / "enable").write_text("0\n")
                events = [parse_line(line) for line in (self.instance / "trace").read_text().splitlines()
                          if "tcp_probe:" in line]
            except OSError:
                pass
            try:
                self.instance.rmdir()
            except OSError:
                pass
        self.instance = None
        if self.our_mount is not None:
            try:
                run(["umount", str(self.our_mount)], timeout=10)
                os.rmdir(self.our_mount)
            except (CommandError, OSError):
                pass
            self.our_mount = None
        return events


def parse_line(line: str) -> dict:
    """One line of the trace file: the event's key=value fields, and the
    timestamp (seconds since boot) before the event's name."""
    head, _, body = line.partition("tcp_probe:")
    fields: dict = dict(FIELD.findall(body))
    for key in ("snd_cwnd", "ssthresh", "snd_wnd", "srtt", "rcv_wnd", "data_len"):
        if key in fields:
            try:
                fields[key] = int(fields[key], 0)
            except ValueError:
                pass
    stamp = head.strip().rstrip(":").split()
    try:
        fields["t_s"] = float(stamp[-1])
    except (IndexError, ValueError):
        pass
    return fields
