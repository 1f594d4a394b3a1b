"""The coordinator's side of one network spread over several servers.

Each server runs a worker (emulator/worker.py) from the same checkout,
started over that server's one multiplexed ssh connection (base/ssh.py).
The worker says who it is; a different commit is refused and a different
kernel noted. Each builds its share of the placement (dctopo/placement.py),
tunnels to the other servers included, and answers with its nodes' PIDs. A
thread pings every worker every HEARTBEAT_S, so a worker whose coordinator
is gone, or whose ssh connection no longer carries packets, removes its
share by itself. `probe()` measures every pair's round trip, which
`tunnel_flags` holds against a frame's time on the links. `close()` asks
every worker to stop and waits for it.
Every error is one line naming its server (SshError).
"""
from __future__ import annotations

import json
import shlex
import subprocess
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from base.lifecycle import Started
from base.procs import ProcessTracker
from base.ssh import SshError, SshServer
from emulator.worker import CHECKOUT, HEARTBEAT_S, PING_INTERVAL_S, Lines, identity

HELLO_TIMEOUT_S = 60        # ssh, Python and the harness's imports on a busy server
BUILD_TIMEOUT_S = 300       # FatTree(8)'s share of one server takes seconds
STOP_TIMEOUT_S = 60         # the teardown of a share
ASK_TIMEOUT_S = 60          # a question during runs (counters, connections, resets)


PROBE_PINGS = 50
# A tunnel is flagged where its one-way delay or its jitter reaches this
# share of a full frame's time on the link: it then shapes what TCP sees.
TUNNEL_SHARE_OF_FRAME = 0.5


def tunnel_flags(probes: dict[str, dict], bw_mbps: float, frame_bytes: int) -> dict[str, str]:
    """Run flags (flag -> why) for tunnels that add delay, jitter or loss
    comparable to what the links themselves make."""
    frame_ms = frame_bytes * 8 / (bw_mbps * 1000)
    bound = TUNNEL_SHARE_OF_FRAME * frame_ms
    slow = [f"{pair}: {p['avg_ms'] / 2:.3f} ms one way, jitter {p['mdev_ms']:.3f} ms"
            for pair, p in probes.items() if p["avg_ms"] is not None
            and max(p["avg_ms"] / 2, p["mdev_ms"]) >= bound]
    lossy = [f"{pair}: {p['loss_pct']:g} % lost" for pair, p in probes.items() if p["loss_pct"] > 0]
    flags = {}
    if slow:
        flags["tunnel_delay"] = (f"against {frame_ms:.3f} ms a frame at {bw_mbps:g} Mb/s: "
                                 + "; ".join(slow))
    if lossy:
        flags["tunnel_loss"] = "; ".join(lossy)
    return flags


@dataclass(frozen=True)
class Remote:
    """A server as the coordinator reaches it: its name in the placement,
    its ssh destination, and the address its tunnels use."""
    name: str
    destination: str
    address: str


@dataclass
class Share:
    remote: Remote
    ssh: SshServer
    proc: subprocess.Popen | None = None
    identity: dict = field(default_factory=dict)
    pids: dict[str, int] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)
    lines: Lines | None = None      # the worker's output
    registers_cc: bool = False      # the one worker of its kernel that registers the algorithms

    def error(self, why: str) -> SshError:
        return SshError(f"{self.remote.destination}: {why}")

    def send(self, kind: str, **body) -> None:
        with self.lock:
            try:
                self.proc.stdin.write((json.dumps({kind: body}) + "\n").encode())
                self.proc.stdin.flush()
            except (OSError, ValueError):   # its worker or connection is gone
                try:
                    self.proc.wait(timeout=5)   # for ended_why's exit status
                except subprocess.TimeoutExpired:
                    pass
                raise self.error(self.ended_why()) from None

    def receive(self, timeout_s: float) -> dict:
        """The worker's next message; SshError if it ends or is silent."""
        line = self.lines.next(timeout_s)
        if line is None:
            raise self.error(f"no answer from its worker within {timeout_s:g} s")
        if not line:
            raise self.error(self.ended_why())
        message = json.loads(line)
        if "error" in message:
            raise self.error(message["error"]["why"])
        return message

    def ask(self, kind: str, timeout_s: float = ASK_TIMEOUT_S, **body) -> dict:
        """The body of the worker's answer to one message."""
        self.send(kind, **body)
        [answer] = self.receive(timeout_s).values()
        return answer

    def ended_why(self) -> str:
        """Why the worker or its connection ended, in a few words."""
        if self.ssh.closed():
            return "the ssh connection was lost"
        code = self.proc.poll()
        if code is None:
            return "still running"
        # ssh exits 255 when the remote command was killed by a signal.
        return f"its worker ended ({'killed' if code == 255 else f'exit status {code}'})"


class Cluster(Started):
    """Workers on `remotes`, one share each; a context manager."""

    def __init__(self, remotes: list[Remote], ssh_options: tuple[str, ...] = (),
                 checkout: Path = CHECKOUT, say=print):
        self.shares = [Share(r, SshServer(r.destination, ssh_options)) for r in remotes]
        self.checkout = checkout
        self.say = say
        self.tracker = ProcessTracker()
        self._stop_pinging = threading.Event()
        self._pinger = threading.Thread(target=self._ping, daemon=True)


    def start(self) -> None:
        """Every worker started and checked; on any failure, all closed again."""
        try:
            self._start()
        except BaseException:
            self.close()
            raise

    def _start(self) -> None:
        here = identity()
        command = ["sh", "-c", f"cd {shlex.quote(str(self.checkout))} && "
                               "exec .venv/bin/python -m emulator.worker"]
        for share in self.shares:
            share.ssh.open(self.tracker)
            share.proc = share.ssh.spawn(self.tracker, f"worker {share.remote.name}", command,
                                         stdin=subprocess.PIPE, stdout=subprocess.PIPE)
            share.lines = Lines(share.proc.stdout.fileno())
            share.identity = share.receive(HELLO_TIMEOUT_S)["hello"]
            if share.identity["commit"] != here["commit"]:
                raise share.error(f"its checkout is at {share.identity['commit'][:12]}, this one "
                                  f"at {here['commit'][:12]}: check out the same commit on every server")
            if share.identity["kernel"] != here["kernel"]:
                self.say(f"note: {share.remote.destination} runs kernel {share.identity['kernel']}, "
                         f"this machine {here['kernel']}")
        self._pinger.start()

    def build(self, spec: dict, where: dict[str, str]) -> dict[str, tuple[str, int]]:
        """Every share of `spec` (worker.build's, less the placement) built;
        each node -> (its server, its PID there)."""
        servers = [{"name": s.remote.name, "address": s.remote.address} for s in self.shares]
        # Registering a congestion control is kernel-wide: once per kernel.
        kernels = {}
        for share in self.shares:
            share.registers_cc = kernels.setdefault(share.identity["boot"], share) is share
        for share in self.shares:
            share.send("build", **spec, servers=servers, where=where, share=share.remote.name,
                       register_cc=share.registers_cc)
        located = {}
        for share in self.shares:
            share.pids = share.receive(BUILD_TIMEOUT_S)["built"]["pids"]
            located.update({node: (share.remote.name, pid) for node, pid in share.pids.items()})
        return located

    def probe(self, count: int = PROBE_PINGS) -> dict[str, dict]:
        """"A -> B": the round trip from server A to B's address (the
        tunnels' underlay), as worker.probe measures it, for every pair."""
        for share in self.shares:
            share.send("probe", count=count, addresses=[o.remote.address for o in self.shares
                                                        if o is not share])
        probes = {}
        for share in self.shares:
            by_address = share.receive(count * PING_INTERVAL_S + 30)["probed"]
            probes.update({f"{share.remote.name} -> {o.remote.name}": by_address[o.remote.address]
                           for o in self.shares if o is not share})
        return probes

    def ask(self, kind: str, timeout_s: float = ASK_TIMEOUT_S, **body) -> dict[str, dict]:
        """Every worker's answer to one message, by server name."""
        for share in self.shares:
            share.send(kind, **body)
        return {share.remote.name: [*share.receive(timeout_s).values()][0] for share in self.shares}

    def share(self, name: str) -> Share:
        [share] = [s for s in self.shares if s.remote.name == name]
        return share

    def kernels(self) -> dict[str, list[str]]:
        """Boot id -> the servers that share that kernel (one machine)."""
        out: dict[str, list[str]] = {}
        for share in self.shares:
            out.setdefault(share.identity["boot"], []).append(share.remote.name)
        return out

    def problems(self) -> dict[str, str]:
        """Server -> why, for every worker that is no longer running."""
        return {s.remote.destination: s.ended_why() for s in self.shares
                if s.proc is not None and s.proc.poll() is not None}

    def _ping(self) -> None:
        while not self._stop_pinging.wait(HEARTBEAT_S):
            for share in self.shares:
                try:
                    share.send("ping")
                except SshError:   # ended: problems() says so
                    pass

    def close(self) -> None:
        """Stop every worker (each removes its share), then the connections.
        The workers that registered the algorithms go last: the others'
        namespaces hold them until they are gone."""
        self._stop_pinging.set()
        for last in (False, True):
            live = [s for s in self.shares if s.proc is not None and s.proc.poll() is None
                    and s.registers_cc == last]
            for share in live:
                try:
                    share.send("stop")
                except SshError:
                    pass
            self.tracker.wait([s.proc for s in live], time.monotonic() + STOP_TIMEOUT_S)
        self.tracker.stop([s.proc for s in self.shares if s.proc is not None])
        for share in self.shares:
            share.ssh.close(self.tracker)
