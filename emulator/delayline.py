"""Link delay, jitter and random loss on kernels without sch_netem.

Where sch_netem exists, emulator/links.py uses it. Where it does not (the
development machines' 6.18 kernel has no sch_netem), every impaired interface hands what it *receives* to a
userspace delay line through a netfilter queue:

    iptables -t raw -A PREROUTING -i IF -j NFQUEUE --queue-num Q

and this process, holding one nfnetlink_queue socket bound to each queue,
decides each packet's fate: dropped at once with probability `loss`,
otherwise released `delay` (+ jitter) after it arrived.

* Ingress, not egress: a packet held on the sending side still belongs to its
  socket, and TCP Small Queues would then throttle the sender to a few
  packets per delay (netem orphans packets for that reason; NFQUEUE cannot).
  A packet arriving at an interface belongs to no local socket. The link's
  rate and queue stay on the sending side's egress (HTB + pfifo), so a link is
  what a wire is: queue, serialisation, then propagation delay.
* Release by batch verdict: packet ids grow in arrival order and release
  times never decrease (jitter is drawn per packet but never lets a packet
  overtake the one before it, as netem behaves with a rate set), so one
  NFQNL_MSG_VERDICT_BATCH "accept every id up to N" releases everything due.
  Only the packet's metadata is copied to us (NFQNL_COPY_META).
* The queues have no fail-open or bypass: if this process dies, the link
  carries nothing, which a run sees and flags, instead of silently losing
  its delay.

Run by the fabric as `python -m emulator.delayline SPEC STATS`: SPEC is a JSON
list of `QueueSpec`s; "ready" is printed once every queue is bound; on
SIGTERM the statistics (packets, losses, how late releases were) go to STATS.
"""
from __future__ import annotations

import dataclasses
import json
import os
import random
import select
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import time
from collections import deque
from dataclasses import dataclass
from pathlib import Path

from base.procs import wait_readable
from kernel import netlink as nl

# include/uapi/linux/netfilter/nfnetlink.h, nfnetlink_queue.h
NFNL_SUBSYS_QUEUE = 3
NFQNL_MSG_PACKET, NFQNL_MSG_VERDICT, NFQNL_MSG_CONFIG, NFQNL_MSG_VERDICT_BATCH = 0, 1, 2, 3
NFQA_PACKET_HDR = 1
NFQA_VERDICT_HDR = 2
NFQA_CFG_CMD, NFQA_CFG_PARAMS, NFQA_CFG_QUEUE_MAXLEN = 1, 2, 3
NFQNL_CFG_CMD_BIND = 1
NFQNL_COPY_META = 1
NF_DROP, NF_ACCEPT = 0, 1
NFGENMSG = struct.Struct("!BBH")          # family, version, queue number (big-endian)
PACKET_ID = struct.Struct("!I")           # first field of nfqnl_msg_packet_hdr
VERDICT_HDR = struct.Struct("!II")        # verdict, packet id

# Packets a queue may hold before the kernel drops arrivals (the default is
# 1024): 100 Mb/s with 100 ms of delay is about 830 MTU packets in flight.
QUEUE_MAXLEN = 65536
RCVBUF_BYTES = 16 << 20
IDLE_WAIT_S = 0.5
REPORT_S = 1.0       # how often the statistics file is rewritten
SPIN_S = 30.0        # keep polling this long after the last packet (see serve())


@dataclass(frozen=True)
class QueueSpec:
    """One impaired interface: where its queue lives and what it does."""
    ns_pid: int
    queue: int
    intf: str
    delay_ms: float
    jitter_ms: float = 0.0
    loss_pct: float = 0.0
    seed: int = 0


# Lateness thresholds counted per queue: a packet released more than this many
# ms after its due time. On a VM whose vCPUs the host deschedules ("steal"),
# a sleeping process can wake tens of ms late; runs record how often it did.
LATE_MS = (1, 5, 10, 20)


@dataclass
class QueueStats:
    """Counters of one queue since the delay line started (cumulative, so a
    run takes the difference of two snapshots)."""
    intf: str
    packets: int = 0
    dropped: int = 0            # by our random loss
    released: int = 0
    late_ms_max: float = 0.0    # how long after its due time a packet left
    late_ms_sum: float = 0.0
    late_over: dict = dataclasses.field(default_factory=lambda: {str(t): 0 for t in LATE_MS})
    max_held: int = 0

    def count_release(self, late_ms: float) -> None:
        self.released += 1
        self.late_ms_sum += late_ms
        self.late_ms_max = max(self.late_ms_max, late_ms)
        for t in LATE_MS:
            if late_ms > t:
                self.late_over[str(t)] += 1

    def summary(self) -> dict:
        out = dataclasses.asdict(self)
        out["late_ms_mean"] = round(self.late_ms_sum / self.released, 3) if self.released else 0.0
        out["late_ms_max"] = round(self.late_ms_max, 3)
        out["loss_pct"] = round(100.0 * self.dropped / self.packets, 3) if self.packets else 0.0
        return out


class DelayQueue:
    """One bound netfilter queue: packets held, in order, with their due times."""

    def __init__(self, spec: QueueSpec):
        self.spec = spec
        self.rng = random.Random(f"{spec.seed}:{spec.intf}")
        self.delay_s = spec.delay_ms / 1000.0
        self.jitter_s = spec.jitter_ms / 1000.0
        self.loss = spec.loss_pct / 100.0
        self.held: deque[tuple[float, int]] = deque()    # (due, packet id)
        self.last_due = 0.0
        self.stats = QueueStats(spec.intf)
        self.sock = nl.socket_in_netns(spec.ns_pid, nl.NETLINK_NETFILTER)
        self.sock.setsockopt(socket.SOL_SOCKET, nl.SO_RCVBUFFORCE, RCVBUF_BYTES)
        # A burst larger than the socket buffer loses messages, not packets:
        # the next batch verdict releases the unseen ids with the seen ones.
        self.sock.setsockopt(nl.SOL_NETLINK, nl.NETLINK_NO_ENOBUFS, 1)
        self.sock.bind((0, 0))
        self._configure()
        self.sock.setblocking(False)

    def fileno(self) -> int:
        return self.sock.fileno()

    def _send(self, msg_type: int, attrs: bytes, flags: int = nl.NLM_F_REQUEST) -> None:
        body = NFGENMSG.pack(socket.AF_UNSPEC, 0, self.spec.queue) + attrs
        self.sock.send(nl.message((NFNL_SUBSYS_QUEUE << 8) | msg_type, flags, 0, body))

    def _configure(self) -> None:
        """Bind the queue, copy metadata only, raise its length; each step acked."""
        steps = [
            nl.attr(NFQA_CFG_CMD, struct.pack("!BxH", NFQNL_CFG_CMD_BIND, socket.AF_INET)),
            nl.attr(NFQA_CFG_PARAMS, struct.pack("!IB", 0, NFQNL_COPY_META)),
            nl.attr(NFQA_CFG_QUEUE_MAXLEN, struct.pack("!I", QUEUE_MAXLEN)),
        ]
        self.sock.settimeout(2.0)
        for attrs in steps:
            self._send(NFQNL_MSG_CONFIG, attrs, nl.NLM_F_REQUEST | nl.NLM_F_ACK)
            for kind, flags, _seq, payload in nl.split_messages(self.sock.recv(65536)):
                if kind == nl.NLMSG_ERROR:
                    err, _, text = nl.parse_error(flags, payload)
                    if err:
                        raise OSError(err, f"queue {self.spec.queue} on {self.spec.intf}: {text or err}")

    def receive(self, now: float) -> None:
        """Take every queued packet notification: drop the lost, schedule the rest."""
        while True:
            try:
                buf = self.sock.recv(1 << 20)
            except BlockingIOError:
                return
            for kind, _flags, _seq, payload in nl.split_messages(buf):
                if kind & 0xFF != NFQNL_MSG_PACKET or kind >> 8 != NFNL_SUBSYS_QUEUE:
                    continue
                hdr = nl.parse_attrs(payload[NFGENMSG.size:]).get(NFQA_PACKET_HDR)
                if hdr is None:
                    continue
                self._arrived(PACKET_ID.unpack_from(hdr)[0], now)

    def _arrived(self, packet_id: int, now: float) -> None:
        self.stats.packets += 1
        if self.loss and self.rng.random() < self.loss:
            self.stats.dropped += 1
            self._send(NFQNL_MSG_VERDICT, nl.attr(NFQA_VERDICT_HDR, VERDICT_HDR.pack(NF_DROP, packet_id)))
            return
        due = now + self.delay_s
        if self.jitter_s:
            due += self.rng.uniform(-self.jitter_s, self.jitter_s)
        due = max(due, self.last_due)   # never overtake the packet before
        self.last_due = due
        self.held.append((due, packet_id))
        self.stats.max_held = max(self.stats.max_held, len(self.held))

    def release_due(self, now: float) -> None:
        """One batch verdict for every held packet whose time has come."""
        last_id = None
        while self.held and self.held[0][0] <= now:
            due, last_id = self.held.popleft()
            self.stats.count_release((now - due) * 1000.0)
        if last_id is not None:
            self._send(NFQNL_MSG_VERDICT_BATCH,
                       nl.attr(NFQA_VERDICT_HDR, VERDICT_HDR.pack(NF_ACCEPT, last_id)))

    def next_due(self) -> float | None:
        return self.held[0][0] if self.held else None


def serve(queues: list[DelayQueue], stop, report=None) -> None:
    """Receive and release until stop() is true; call report() about every
    REPORT_S seconds.

    While packets are held, or arrived in the last SPIN_S seconds, the loop
    polls without sleeping. On a VM, a sleeping process is woken by a vCPU
    the host must first schedule again: measured here, select() with a 10 ms
    timeout returned 13 to 50 ms late at the 99th percentile, against 0.04 ms
    for a loop that never sleeps. A delay line that slept would add that to
    the links' delay. The price is one busy core while traffic flows.
    """
    by_fd = {q.fileno(): q for q in queues}
    fds = list(by_fd)
    next_report = last_activity = time.monotonic()
    while not stop():
        now = time.monotonic()
        if report and now >= next_report:
            report()
            next_report = now + REPORT_S
        if any(q.held for q in queues) or now - last_activity < SPIN_S:
            wait = 0.0
        else:
            wait = min(IDLE_WAIT_S, max(0.0, next_report - now))
        readable, _, _ = select.select(fds, [], [], wait)
        now = time.monotonic()
        if readable:
            last_activity = now
            for fd in readable:
                by_fd[fd].receive(now)
        for q in queues:
            q.release_due(now)


def main(argv: list[str]) -> int:
    spec_path, stats_path = Path(argv[0]), Path(argv[1])
    specs = [QueueSpec(**s) for s in json.loads(spec_path.read_text())]
    stopping = False

    def on_term(_sig, _frame):
        nonlocal stopping
        stopping = True

    signal.signal(signal.SIGTERM, on_term)
    # The harness stops us by PID with SIGTERM once it has cleaned up.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    # Ahead of the traffic generators, so a busy machine delays packets less
    # than it delays the senders.
    os.setpriority(os.PRIO_PROCESS, 0, -10)
    queues = [DelayQueue(s) for s in specs]
    print("ready", flush=True)

    def report() -> None:
        write_stats(stats_path, queues)

    try:
        serve(queues, lambda: stopping, report)
    finally:
        report()
    return 0


def write_stats(path: Path, queues: list[DelayQueue]) -> None:
    """Replace the statistics file in one step, so a reader never sees half."""
    partial = path.with_suffix(".partial")
    partial.write_text(json.dumps([q.stats.summary() for q in queues], indent=1) + "\n")
    os.replace(partial, path)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))


# -- the harness side ----------------------------------------------------------

class DelayLineError(RuntimeError):
    pass


class DelayLine:
    """The delay line process of one fabric: started with its queues, stopped
    by PID, its statistics read back when it stops."""

    READY_TIMEOUT_S = 10.0

    def __init__(self, specs: list[QueueSpec], procs):
        """`procs`: the base.procs.ProcessTracker that owns the process."""
        self.specs = specs
        self.procs = procs
        self.proc = None
        self.stats: list[dict] = []
        self._dir = Path(tempfile.mkdtemp(prefix="mptcp-delayline-"))

    def start(self) -> None:
        spec = self._dir / "spec.json"
        spec.write_text(json.dumps([dataclasses.asdict(s) for s in self.specs]))
        repo = Path(__file__).resolve().parent.parent
        self.proc = self.procs.spawn(
            "delay line", [sys.executable, "-P", "-m", "emulator.delayline", str(spec),
                           str(self._dir / "stats.json")],
            stdout=subprocess.PIPE, stderr=(self._dir / "stderr").open("w"),
            env={**os.environ, "PYTHONPATH": str(repo)})
        ready = wait_readable(self.proc.stdout.fileno(), self.READY_TIMEOUT_S)
        line = self.proc.stdout.readline() if ready else b""
        if line.strip() != b"ready":
            self.stop()
            raise DelayLineError(f"the delay line did not start: {self.error() or 'no ready line'}")

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def error(self) -> str:
        try:
            lines = (self._dir / "stderr").read_text().strip().splitlines()
        except OSError:
            return ""
        return lines[-1] if lines else ""

    def kernel_counters(self) -> dict[str, dict[str, int]]:
        """Per interface, the kernel's own counts for its queue: packets the
        queue was full for, and notifications our socket could not take."""
        out = {}
        for s in self.specs:
            try:
                rows = Path(f"/proc/{s.ns_pid}/net/netfilter/nfnetlink_queue").read_text().splitlines()
            except OSError:
                continue
            for row in rows:
                f = row.split()
                if len(f) >= 7 and int(f[0]) == s.queue:
                    out[s.intf] = {"queue_dropped": int(f[5]), "user_dropped": int(f[6])}
        return out

    def snapshot(self) -> list[dict]:
        """The statistics as last written (about once a second)."""
        try:
            return json.loads((self._dir / "stats.json").read_text())
        except (OSError, ValueError):
            return []

    def stop(self) -> list[dict]:
        """End the process (SIGTERM, so it writes its statistics) and return them."""
        if self.proc is not None:
            counters = self.kernel_counters()
            self.procs.stop([self.proc], grace=3.0)
            self.proc.stdout.close()
            self.proc = None
            self.stats = self.snapshot()
            for s in self.stats:
                s.update(counters.get(s["intf"], {}))
        shutil.rmtree(self._dir, ignore_errors=True)
        return self.stats


def stats_delta(before: list[dict], after: list[dict]) -> dict:
    """What the delay line did between two snapshots, over all its queues:
    packets, random losses, and packets released more than 1/5/10/20 ms late."""
    def total(snap, key):
        return sum(q[key] for q in snap)

    def late(snap, t):
        return sum(q["late_over"][t] for q in snap)
    packets = total(after, "packets") - total(before, "packets")
    released = total(after, "released") - total(before, "released")
    out = {"packets": packets, "lost": total(after, "dropped") - total(before, "dropped"),
           "released": released,
           "late_over_ms": {t: late(after, t) - late(before, t) for t in map(str, LATE_MS)}}
    out["late_over_10ms_pct"] = round(100.0 * out["late_over_ms"]["10"] / released, 3) if released else 0.0
    return out
