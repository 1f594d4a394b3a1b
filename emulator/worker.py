"""One server's share of a network spread over several servers.

    .venv/bin/python -m emulator.worker      (started over ssh: emulator/cluster.py)

It speaks JSON, a message per line. It first says `hello` (its checkout's
commit, kernel, Python). Then it takes `build` (topology, fabric, link,
seed, the servers, each node's server and its own name) and builds its
share with the fabric's own code (`Fabric.spread(..., share=)`), answering
`built` with its nodes' PIDs; `probe` measures the round trip to the other servers;
`stop` removes everything and ends it; every
line, `ping` included, shows that the coordinator is alive.

It removes what it built on `stop`, at the end of its input (the
coordinator or the ssh connection is gone), on SIGTERM, SIGHUP or SIGINT,
and when nothing came for HEARTBEAT_TIMEOUT_S: an ssh connection whose
packets are dropped ends nothing on this side by itself (sshd's default
keep-alive takes hours). SIGKILLed, it leaves nothing either: its node
shells lose their terminal and end, and their namespaces go with them.
"""
from __future__ import annotations

import json
import os
import platform
import re
import select
import signal
import subprocess
import sys
import time
from pathlib import Path

from base.links import LinkParams
from base.signals import deferred

HEARTBEAT_S = 5                  # how often the coordinator pings
HEARTBEAT_TIMEOUT_S = 20         # silence after which the worker stops
CHECKOUT = Path(__file__).resolve().parent.parent


def checkout_commit(folder: Path = CHECKOUT) -> str:
    """The checkout's commit, "+" if its tracked files differ from it."""
    def git(*args: str) -> str:
        done = subprocess.run(["git", "-C", str(folder), *args], capture_output=True, text=True,
                              timeout=10)
        return done.stdout.strip() if done.returncode == 0 else ""
    commit = git("rev-parse", "HEAD") or "unknown"
    return commit + ("+" if git("status", "--porcelain", "--untracked-files=no") else "")


def identity() -> dict:
    """What a coordinator checks before it builds on a server."""
    return {"commit": checkout_commit(), "kernel": platform.release(),
            "python": platform.python_version(), "cpus": os.cpu_count() or 1}


class Lines:
    """Messages, one per line, read from a file descriptor with a timeout.
    By hand, not with a buffered file's readline(): select() sees only the
    descriptor, so a second line already in a file's buffer would wait
    unseen for the next byte to arrive."""

    def __init__(self, fd: int):
        self.fd = fd
        self.buffer = b""

    def next(self, timeout_s: float) -> bytes | None:
        """The next line; None after `timeout_s` of silence; b"" at the end of input."""
        deadline = time.monotonic() + timeout_s
        while b"\n" not in self.buffer:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([self.fd], [], [], left)[0]:
                return None
            chunk = os.read(self.fd, 65536)
            if not chunk:
                return b""
            self.buffer += chunk
        line, self.buffer = self.buffer.split(b"\n", 1)
        return line


PING_INTERVAL_S = 0.02
RTT_LINE = re.compile(r"= ([\d.]+)/([\d.]+)/([\d.]+)/([\d.]+) ms")
LOSS = re.compile(r"([\d.]+)% packet loss")


def probe(address: str, count: int) -> dict:
    """Round trip to another server's address (the tunnels' underlay), by
    `ping`: mean and spread (ping's mdev) in ms, and the share lost."""
    done = subprocess.run(["ping", "-n", "-q", "-c", str(count), "-i", str(PING_INTERVAL_S),
                           "-W", "1", address], capture_output=True, text=True,
                          timeout=count * PING_INTERVAL_S + 10)
    rtt, loss = RTT_LINE.search(done.stdout), LOSS.search(done.stdout)
    return {"avg_ms": float(rtt.group(2)) if rtt else None,
            "mdev_ms": float(rtt.group(4)) if rtt else None,
            "loss_pct": float(loss.group(1)) if loss else 100.0}


def build(spec: dict):
    """The fabric of `spec`'s share, started."""
    from dctopo import FatTree
    from emulator.fabrics import FABRICS
    from emulator.tunnels import Server
    topologies = {"FatTree": FatTree}
    topo = topologies[spec["topology"]](spec["k"])
    fabric = FABRICS[spec["fabric"]](topo, LinkParams(**spec["link"]), seed=spec["seed"])
    servers = [Server(s["name"], s["address"]) for s in spec["servers"]]
    fabric.spread(servers, spec["where"], share=spec["share"])
    fabric.start()
    return fabric


class Worker:
    def __init__(self, out=sys.stdout):
        self.out = out
        self.fabric = None

    def say(self, kind: str, **body) -> None:
        self.out.write(json.dumps({kind: body}) + "\n")
        self.out.flush()

    def handle(self, message: dict) -> bool:
        """Act on one message; False when the worker is done."""
        if "probe" in message:
            self.say("probed", **{a: probe(a, message["probe"]["count"])
                                  for a in message["probe"]["addresses"]})
        if "build" in message:
            started = time.monotonic()
            try:
                self.fabric = build(message["build"])
            except Exception as exc:     # the coordinator gets it in one line
                self.say("error", why=f"{type(exc).__name__}: {exc}".splitlines()[0])
                return False
            self.say("built", pids={n: self.fabric.pid(n) for n in self.fabric.nodes},
                     seconds=round(time.monotonic() - started, 2))
        return "stop" not in message

    def close(self) -> None:
        with deferred():
            if self.fabric is not None:
                self.fabric.stop()
                self.fabric = None


def _interrupt(signum, _frame):
    raise KeyboardInterrupt


def serve(stdin=sys.stdin) -> str:
    """Read messages until stop, end of input or silence; say why it ended."""
    worker = Worker()
    for sig in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, _interrupt)
    why = "stopped"
    try:
        worker.say("hello", **identity(), pid=os.getpid())
        lines = Lines(stdin.fileno())
        while True:
            line = lines.next(HEARTBEAT_TIMEOUT_S)
            if line is None:
                why = f"nothing from the coordinator for {HEARTBEAT_TIMEOUT_S} s"
                break
            if not line:
                why = "the coordinator's connection closed"
                break
            if not worker.handle(json.loads(line)):
                break
    except KeyboardInterrupt:
        why = "signalled"
    except BrokenPipeError:
        why = "the coordinator's connection closed"
    finally:
        worker.close()
    return why


if __name__ == "__main__":
    try:
        print(f"worker: {serve()}", file=sys.stderr)
    except KeyboardInterrupt:     # a signal held back during the teardown
        print("worker: signalled", file=sys.stderr)
