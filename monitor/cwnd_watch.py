"""The kernel's TCP tracepoints, read through a tracefs instance of our
own (a ring buffer apart from the machine's), removed on stop(); tracefs is
mounted on a folder of ours for the watch when it is not mounted already,
and unmounted after. Used to find the cause of the corrupted windows our
BPF algorithms repair (kernel/bpf/README.md):

* HugeWindowWatch: every moment any TCP socket of the machine has a
  congestion window above a threshold, whatever its congestion control:
  tcp_probe (one event per segment received on an established socket, with
  its snd_cwnd and ssthresh), filtered in the kernel so that only the huge
  windows reach us. It asks whether the kernel's own Reno gets them, which
  sampling with sock_diag can miss between two samples.
* StateChangeWatch: every call of tcp_set_ca_state() (tcp_cong_state_set),
  each of which calls the congestion control's set_state; set against the
  number of times a BPF set_state program ran, it shows calls in which the
  program did not run.

The files are written and read by hand: tracefs is a file interface, and no
library the harness installs wraps it."""
from __future__ import annotations

import itertools
import os
import re
import tempfile
from pathlib import Path

from base.procs import CommandError, run

TRACEFS_MOUNTS = (Path("/sys/kernel/tracing"), Path("/sys/kernel/debug/tracing"))
PROBE_EVENT = Path("events/tcp/tcp_probe")
STATE_EVENT = Path("events/tcp/tcp_cong_state_set")
# 2^20 packets: the cap of kernel/bpf/mptcp_cc.bpf.c (W_CAP); no real window comes near it.
HUGE_WINDOW = 1 << 20
FIELD = re.compile(r"(\w+)=(\S+)")
# How tracefs prints every event: "<task>-<pid> [<cpu>] <flags> <seconds>: <event>: <fields>".
EVENT_LINE = re.compile(r"\s(\d+\.\d+): (\w+): (.*)$")
_serial = itertools.count()      # instance names: several watches may run at once
INT_FIELDS = ("snd_cwnd", "ssthresh", "snd_wnd", "srtt", "rcv_wnd", "data_len", "cong_state")


class WatchError(RuntimeError):
    pass


def mounted_tracefs() -> Path | None:
    for path in TRACEFS_MOUNTS:
        if (path / "instances").is_dir():
            return path
    return None


class TraceWatch:
    """start(), run the traffic, stop() -> the events (one dict per event,
    see parse_line) of the tracepoints `events` ({event folder: filter or
    None}), time-stamped on CLOCK_MONOTONIC (the trace clock "mono"), so
    that they can be set against time.monotonic() samples taken meanwhile."""

    def __init__(self, events: dict[Path, str | None], buffer_kb: int = 8192):
        self.events = events
        self.buffer_kb = buffer_kb
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
        self.instance = self.root / "instances" / f"mptcp-dc-harness-{os.getpid()}-{next(_serial)}"
        try:
            self.instance.mkdir()
            (self.instance / "trace_clock").write_text("mono\n")
            (self.instance / "buffer_size_kb").write_text(f"{self.buffer_kb}\n")
            for event, where in self.events.items():
                folder = self.instance / event
                if not folder.is_dir():
                    raise WatchError(f"this kernel has no tcp:{event.name} tracepoint")
                if where:
                    (folder / "filter").write_text(where + "\n")
                (folder / "enable").write_text("1\n")
        except (OSError, WatchError) as exc:
            self.stop()
            raise WatchError(f"trace watch: {exc}") from None

    def stop(self) -> list[dict]:
        """Stop watching, remove the instance (and our mount) and return
        what was seen."""
        events: list[dict] = []
        if self.instance is not None and self.instance.is_dir():
            names = {event.name for event in self.events}
            try:
                for event in self.events:
                    (self.instance / event / "enable").write_text("0\n")
                parsed = map(parse_line, (self.instance / "trace").read_text().splitlines())
                events = [e for e in parsed if e.get("event") in names]
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


class HugeWindowWatch(TraceWatch):
    """tcp_probe events of sockets whose window is above `threshold`
    (src, dest, snd_cwnd, ssthresh, ... as tcp_probe prints them)."""

    def __init__(self, threshold: int = HUGE_WINDOW):
        self.threshold = threshold
        super().__init__({PROBE_EVENT: f"snd_cwnd > {threshold}"})


class StateChangeWatch(TraceWatch):
    """tcp_cong_state_set events: every tcp_set_ca_state() call (saddr,
    daddr, sport, dport, cong_state, t_s)."""

    def __init__(self):
        super().__init__({STATE_EVENT: None})


def parse_line(line: str) -> dict:
    """One line of the trace file: the event's name (`event`), its key=value
    fields, and the timestamp before the name (`t_s`, seconds on the
    instance's clock, CLOCK_MONOTONIC); {} for a line that is no event."""
    match = EVENT_LINE.search(line)
    if match is None:
        return {}
    stamp, event, body = match.groups()
    fields: dict = dict(FIELD.findall(body))
    for key in INT_FIELDS:
        if key in fields:
            try:
                fields[key] = int(fields[key], 0)
            except ValueError:
                pass
    fields["event"], fields["t_s"] = event, float(stamp)
    return fields
