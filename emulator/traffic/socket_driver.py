"""Long flows from our own socket driver (emulator/traffic/flowgen.py): one receiver
and one sender process for all flows, every connection opened and given its
subflows on empty links, and data released for all flows at one instant.

The run's clock starts at that release (t0): warm-up and counted window are
measured from it, so the connection set-up and the joins are not inside the
warm-up as they are with iperf3. Goodput is what the receiver read, binned
per second since t0.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

from base.procs import ProcessTracker, wait_readable
from emulator.traffic.common import (LISTEN_TIMEOUT_S, FlowEndpoints, FlowOutcome,
                                      TrafficDriver, TrafficError, reset_connections)

REPO = Path(__file__).resolve().parents[2]
CONNECT_TIMEOUT_S = 10.0
# How long the connections may take to get all their subflows before data is
# released anyway (the run then records the missing ones).
READY_TIMEOUT_S = 30.0
# After the senders stop: time for what is still queued to arrive.
DRAIN_S = 10.0
# Data is released this long after the command is sent, so both processes
# have it before t0.
RELEASE_LEAD_S = 0.2


class JsonLinesChild:
    """A driver process of ours (flowgen, transfergen): JSON lines in and
    out, each read with a deadline."""

    def __init__(self, procs: ProcessTracker, role: str, log: Path,
                 module: str = "emulator.traffic.flowgen", spawn=None):
        """`spawn(label, argv, **popen)`: how it starts (emulator/spread.py:
        on another server); by default here, with `procs`."""
        # -P: the caller's working folder must not come first on the path.
        env = dict(os.environ, PYTHONPATH=str(REPO))
        name = module.rsplit(".", 1)[1]
        argv = [sys.executable, "-P", "-m", module] + ([role] if role else [])
        spawn = spawn or (lambda label, argv, **popen: procs.spawn(label, argv, env=env, **popen))
        with open(log, "wb") as err:
            self.proc = spawn(f"{name} {role}".strip(), argv, stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, stderr=err)
        self.role = f"{name} {role}".strip()
        self.log = log
        self._partial = b""

    def tell(self, command: dict) -> None:
        try:
            self.proc.stdin.write((json.dumps(command) + "\n").encode())
            self.proc.stdin.flush()
        except BrokenPipeError:
            raise TrafficError(f"{self.role} exited early: {self._log_tail()}") from None

    def hear(self, timeout: float) -> dict | None:
        """The next line it prints, or None if none comes within `timeout`."""
        deadline = time.monotonic() + timeout
        fd = self.proc.stdout.fileno()
        while b"\n" not in self._partial:
            left = deadline - time.monotonic()
            if left <= 0 or not wait_readable(fd, left):
                return None
            data = os.read(fd, 1 << 20)
            if not data:
                raise TrafficError(f"{self.role} exited: {self._log_tail()}")
            self._partial += data
        line, self._partial = self._partial.split(b"\n", 1)
        return json.loads(line)

    def _log_tail(self) -> str:
        try:
            lines = self.log.read_text(errors="replace").strip().splitlines()
        except OSError:
            lines = []
        return lines[-1] if lines else "no output"


RCVLOWAT_S = 0.01


class SocketDriver(TrafficDriver):
    name = "socket"
    released_at: float | None = None    # time.monotonic() of the last run's release

    def __init__(self, fabric, procs):
        super().__init__(fabric, procs)
        # Flow i of n starts i/n of this after the release (0: all at once).
        # For measuring whether the synchronised start matters
        # (bench/startup.py --spread); runs use 0.
        self.release_spread_s = 0.0

    def rcvlowat(self) -> int:
        """A receiver's SO_RCVLOWAT: what a link carries in RCVLOWAT_S, so
        that the receiving process wakes once per that much, not per segment
        or two (each wake-up is a cross-core interrupt here); the goodput is
        counted per second, so at most that much of a second moves to the next."""
        return max(1, int(self.fabric.link.bw_mbps * 1e6 / 8 * RCVLOWAT_S))

    def run(self, flows: list[FlowEndpoints], mptcp: bool, time_s: float,
            logdir: Path, on_started=None, warmup_s: float = 0.0,
            bind_servers: bool = True, on_starting=None, ready=None) -> list[FlowOutcome]:
        """Send every flow for warmup_s + time_s seconds, counted from the
        release. `on_starting` is called once the receivers listen, just
        before the first connection opens; `ready()`, polled once every
        connection is open, says whether all subflows are there (None: do
        not wait); `on_started` is called at the release."""
        total_s = warmup_s + time_s
        logdir.mkdir(parents=True, exist_ok=True)
        receivers, senders = [], []
        try:
            receivers = self.children("receive", flows, lambda f: f.dst, logdir)
            for child, part in receivers:
                child.tell({"mptcp": mptcp, "rcvlowat": self.rcvlowat(), "flows": [
                    {"index": f.index, "ns_pid": self.fabric.pid(f.dst), "port": f.server_port,
                     "ip": f.dst_ip if bind_servers else "0.0.0.0"} for f in part]})
            for child, _ in receivers:
                if child.hear(LISTEN_TIMEOUT_S) is None:
                    raise TrafficError(f"{child.role} not listening after {LISTEN_TIMEOUT_S} s")
            if on_starting:
                on_starting()
            senders = self.children("send", flows, lambda f: f.src, logdir)
            for child, part in senders:
                child.tell({"mptcp": mptcp, "connect_timeout_s": CONNECT_TIMEOUT_S, "flows": [
                    {"index": f.index, "ns_pid": self.fabric.pid(f.src), "src_ip": f.src_ip,
                     "client_port": f.client_port, "dst_ip": f.dst_ip, "server_port": f.server_port}
                    for f in part]})
            opened = [child.hear(CONNECT_TIMEOUT_S + LISTEN_TIMEOUT_S) for child, _ in senders]
            if None in opened:
                raise TrafficError("flowgen sender did not report its connections")
            ready_s = self._wait_ready(ready)
            # Every child counts from its own release, RELEASE_LEAD_S after
            # its line arrives: the lines leave here together (flowgen.py).
            self.released_at = time.monotonic() + RELEASE_LEAD_S
            for child, _ in receivers:
                child.tell({"t0_in": RELEASE_LEAD_S, "seconds": total_s})
            spread = self.release_spread_s
            for child, _ in senders:
                child.tell({"go_in": RELEASE_LEAD_S, "seconds": total_s,
                            "offsets": {str(f.index): spread * i / len(flows)
                                        for i, f in enumerate(flows)}})
            if on_started:
                on_started()
            deadline = time.monotonic() + RELEASE_LEAD_S + total_s + self.finish_grace_s()
            sent = [self._hear_watching(child, deadline) for child, _ in senders]
            received = [child.hear(DRAIN_S) for child, _ in receivers]
            for i, (child, _) in enumerate(receivers):
                if received[i] is None:
                    child.tell({"stop": True})
                    received[i] = child.hear(5.0)
        except BaseException:
            self.reset_hosts([h for f in flows for h in (f.src, f.dst)])
            raise
        finally:
            self.procs.stop([child.proc for child, _ in receivers + senders])
        record = {"opened": _merged(opened), "ready_wait_s": ready_s, "sent": _merged(sent),
                  "received": _merged(received), "warmup_s": warmup_s, "time_s": time_s}
        (logdir / "flowgen.json").write_text(json.dumps(record))
        return outcomes(flows, record)

    def children(self, role: str, flows: list[FlowEndpoints], host_of,
                 logdir: Path) -> list[tuple[JsonLinesChild, list[FlowEndpoints]]]:
        """The flowgen processes of one role, each with its flows (here: one
        for all; emulator/spread.py: one per server, for that server's hosts)."""
        return [(JsonLinesChild(self.procs, role, logdir / f"flowgen-{role}.log"), flows)]

    def check_network(self) -> None:
        """Raises if the network the flows run on is gone (emulator/spread.py:
        a server lost; the model fabric's engine dead); polled every second
        of the traffic."""
        self.fabric.check_alive()

    def _hear_watching(self, child: JsonLinesChild, deadline: float) -> dict | None:
        """The child's next line by `deadline`, checking the network each second."""
        while (line := child.hear(min(1.0, max(0.0, deadline - time.monotonic())))) is None:
            if time.monotonic() >= deadline:
                return None
            self.check_network()
        return line

    def reset_hosts(self, hosts: list[str]) -> None:
        """An interrupted run's connections reset (common.reset_connections)."""
        reset_connections(self.fabric, hosts)

    @staticmethod
    def _wait_ready(ready) -> float | None:
        if ready is None:
            return None
        start = time.monotonic()
        while not ready() and time.monotonic() - start < READY_TIMEOUT_S:
            time.sleep(0.05)
        return round(time.monotonic() - start, 3)


def _merged(reports: list[dict | None]) -> dict | None:
    """The children's reports of one kind as one ("flows" and "connected"
    joined, "failed" united); None if any child gave none."""
    if any(r is None for r in reports):
        return None
    merged: dict = {}
    for report in reports:
        for key, value in report.items():
            if isinstance(value, dict):
                merged.setdefault(key, {}).update(value)
            elif isinstance(value, list):
                merged.setdefault(key, []).extend(value)
            else:
                merged[key] = value
    return merged


def outcomes(flows: list[FlowEndpoints], record: dict) -> list[FlowOutcome]:
    """One FlowOutcome per flow from the sender's and receiver's reports."""
    warmup_s, total_s = record["warmup_s"], record["warmup_s"] + record["time_s"]
    failed = (record["opened"] or {}).get("failed", {})
    sent = {r["index"]: r for r in (record["sent"] or {}).get("flows", [])}
    received = {r["index"]: r for r in (record["received"] or {}).get("flows", [])}
    seconds = int(total_s + 0.05)
    out = []
    for f in flows:
        got = received.get(f.index)
        per_second = list((got or {}).get("per_second", []))[:seconds]
        per_second += [0] * (seconds - len(per_second))
        counted = [b for i, b in enumerate(per_second) if i >= warmup_s - 0.05]
        goodput = 8.0 * sum(counted) / len(counted) / 1e6 if counted else 0.0
        whole = 8.0 * sum(per_second) / seconds / 1e6 if seconds else 0.0
        timed_out = record["sent"] is None
        error = (failed.get(str(f.index)) or (sent.get(f.index) or {}).get("error")
                 or (got or {}).get("error"))
        if timed_out:
            error = error or "the sender did not finish in time"
        elif got is None:
            error = error or "no receiver-side result"
        elif not got["accepted"]:
            error = error or "the receiver never accepted the connection"
        out.append(FlowOutcome(f, round(goodput, 4), float(len(counted)), error, timed_out,
                               round(whole, 4), (got or {}).get("first_data_s"),
                               [round(8.0 * b / 1e6, 3) for b in per_second]))
    return out
