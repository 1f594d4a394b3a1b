"""One server's share of a network spread over several servers.

    .venv/bin/python -m emulator.worker      (started over ssh: emulator/cluster.py)

It speaks JSON, a message per line. It first says `hello` (its checkout's
commit, kernel and boot, Python). Then it takes `build` (topology, fabric,
link, seed, congestion control, host sysctls, the servers, each node's
server and its own name) and builds its share as a Network
(emulator/network.py, `share=`): nodes, links, tunnel ends, the hosts'
settings and their path manager, answering `built` with its nodes' PIDs.
For runs (emulator/spread.py) it arms its hosts' path manager (`arm`),
reports their connections, MPTCP counters and health, samples the CPU
(`cpu_start`, `cpu_stop`) and resets their connections (`reset`); the
traffic's own processes are started over ssh beside it. `probe` measures
the round trip to the other servers; `stop` removes everything and ends
it; every line, `ping` included, shows that the coordinator is alive.

It removes what it built on `stop`, at the end of its input (the
coordinator or the ssh connection is gone), on SIGTERM, SIGHUP or SIGINT,
and when nothing came for HEARTBEAT_TIMEOUT_S: an ssh connection whose
packets are dropped ends nothing on this side by itself (sshd's default
keep-alive takes hours). SIGKILLed, it leaves nothing either: its node
shells lose their terminal and end, and their namespaces go with them.
"""
from __future__ import annotations

import dataclasses
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
from base.platform import calibration_file, harness_cache, machine
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


BOOT_ID = Path("/proc/sys/kernel/random/boot_id")


def identity() -> dict:
    """What a coordinator checks before it builds on a server. `boot`: the
    kernel's boot id, the same for servers that share one kernel;
    `calibration`: its cached one for the l3 fabric, the one that runs over
    servers (experiments/capacity), for the coordinator's guard."""
    try:
        calibration = json.loads((harness_cache() / calibration_file("l3")).read_text())
    except (OSError, ValueError):
        calibration = None
    return {"commit": checkout_commit(), "kernel": platform.release(),
            "boot": BOOT_ID.read_text().strip(), "python": platform.python_version(),
            "cpus": os.cpu_count() or 1, "machine": machine(), "calibration": calibration}


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
    """The Network of `spec`'s share, started."""
    from dctopo import FatTree
    from emulator.network import Network
    from emulator.tunnels import Server
    topologies = {"FatTree": FatTree}
    servers = [Server(s["name"], s["address"]) for s in spec["servers"]]
    net = Network(topologies[spec["topology"]](spec["k"]), LinkParams(**spec["link"]),
                  spec.get("cc", "reno"), seed=spec["seed"], fabric=spec["fabric"],
                  host_settings=spec.get("host_settings"), register_cc=spec.get("register_cc", False),
                  share=(servers, spec["where"], spec["share"]))
    net.start()
    return net


class Worker:
    def __init__(self, out=sys.stdout):
        self.out = out
        self.net = None
        self.cpu = None

    def say(self, kind: str, **body) -> None:
        self.out.write(json.dumps({kind: body}) + "\n")
        self.out.flush()

    def handle(self, message: dict) -> bool:
        """Act on one message; False when the worker is done."""
        try:
            for kind, body in message.items():
                if kind in ANSWERS:
                    answer, said = ANSWERS[kind](self, body)
                    self.say(answer, **said)
        except Exception as exc:     # the coordinator gets it in one line
            self.say("error", why=f"{type(exc).__name__}: {exc}".splitlines()[0])
            return False
        return "stop" not in message

    # -- the answers, each (kind, body) ----------------------------------------
    def probe(self, body: dict) -> tuple:
        return "probed", {a: probe(a, body["count"]) for a in body["addresses"]}

    def build(self, body: dict) -> tuple:
        started = time.monotonic()
        self.net = build(body)
        return "built", {"pids": {n: self.net.fabric.pid(n) for n in self.net.fabric.nodes},
                         "seconds": round(time.monotonic() - started, 2)}

    def arm(self, body: dict) -> tuple:
        """Forget the last run's connections; give each flow sent from here
        (src, src_ip, client_port, dst_ip, server_port) its subflows."""
        pm, here = self.net.pm, set(self.net.local_hosts())
        pm.reset()
        pm.forget_expansions()
        if body["subflows"] > 1:
            for src, src_ip, client_port, dst_ip, server_port in body["flows"]:
                if src in here:
                    pm.expand(src, (src_ip, client_port), (dst_ip, server_port), body["subflows"])
        return "armed", {}

    def connections(self, _body) -> tuple:
        return "connections", {"all": [dataclasses.asdict(c) for c in self.net.pm.connections()],
                               "now": time.monotonic()}

    def counters(self, _body) -> tuple:
        return "counters", self.net.kernel_counters()

    def health(self, _body) -> tuple:
        return "health", self.net.health_problems()

    def sysctls(self, _body) -> tuple:
        from kernel import transport
        return "sysctls", transport.read_sysctls(self.net.fabric.pid(self.net.local_hosts()[0]))

    def reset(self, body: dict) -> tuple:
        from emulator.traffic.common import reset_connections
        reset_connections(self.net.fabric, body["hosts"])     # only those built here
        return "reset", {}

    def cpu_start(self, body: dict) -> tuple:
        from monitor import CpuMonitor
        self.cpu = CpuMonitor(body["interval_s"])
        self.cpu.start()
        return "cpu_started", {}

    def cpu_stop(self, _body) -> tuple:
        self.cpu.stop()
        return "cpu", {"samples": [dataclasses.asdict(s) for s in self.cpu.samples]}

    def close(self) -> None:
        with deferred():
            if self.cpu is not None:
                self.cpu.stop()
            if self.net is not None:
                self.net.close()
                self.net = None


ANSWERS = {kind: getattr(Worker, kind) for kind in (
    "probe", "build", "arm", "connections", "counters", "health", "sysctls", "reset",
    "cpu_start", "cpu_stop")}


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
