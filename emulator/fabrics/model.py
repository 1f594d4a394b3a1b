"""The modelled fabric (`--fabric model`): the hosts real, the switches a model.

Each host is a namespace as on the other fabrics, with the kernel's MPTCP,
the path manager and the traffic drivers; its interface is a TAP whose file
descriptor one process holds, the engine (engine/, C). The engine reads
every frame a host sends and runs it through a model of the switches: every
switch port a drop-tail FIFO served at its link's rate (Ethernet frame
bytes, as HTB counts them), the links' delay, jitter and loss, and ECMP by a
hash of the 5-tuple with a seed per switch over the same shortest paths as
the l3 fabric. It writes the frame to the destination's TAP at the time the
model says it arrives. No switch namespaces, veth pairs or qdiscs on the
path; docs/fabrics.md says what is and is not modelled, and what it costs.

A host's own egress (`host_nic`):
  * "htb": shaped by the kernel as on l3 (HTB and a FIFO on the TAP), so
    TCP Small Queues keep a sender's backlog in its socket as they do there;
    the model then serialises the frame once more at the host's port.
  * "model": modelled by the engine as a FIFO of the TAP's txqueuelen. A TAP
    orphans what it sends, so TCP Small Queues no longer hold data back and
    bursts reach this queue; its drops are counted apart.
"""
from __future__ import annotations

import functools
import json
import os
import shutil
import socket
import subprocess
import tempfile
import time
from pathlib import Path

from emulator.fabrics.common import _batch
from emulator.fabrics.l3 import L3Fabric
from emulator import links
from monitor.ports import PortCounters, PortMonitor, PortSample
from base.procs import CommandError, wait_readable

ENGINE = Path(__file__).resolve().parents[2] / "engine" / "build" / "fabric-engine"
READY_TIMEOUT_S = 30.0
CONTROL_TIMEOUT_S = 30.0     # an engine far behind answers late, but answers
HOST_TXQUEUELEN = 1000     # the TAP's ring, and the modelled NIC's FIFO ("model")
HOST_NICS = ("htb", "model")
ACK_MODES = ("data", "lane", "sim")
ENGINE_OPTIONS = {"writers": 0, "slack-us": 0, "spin-us": 0, "noise-us": 0, "boost": 0, "cpu": 0}
# Frames the engine can hold at once: its queues' sum, within these bounds.
POOL_MIN, POOL_MAX = 16384, 131072


class EngineError(RuntimeError):
    pass


class ModelFabric(L3Fabric):
    name = "model"

    def __init__(self, *args, host_nic: str = "htb", acks: str | None = None, random_drop: bool = False,
                 **kwargs):
        """`host_nic`: who shapes a host's egress (module docstring); `acks`:
        how pure ACKs cross the switches, "data" (in the data queues), "lane"
        (a FIFO of their own, as --ack-lane) or "sim" (no queue: the paper's
        simulator); None: "lane" with --ack-lane, else "data". `random_drop`:
        the simulator's drop of 1 in 10 arrivals at a switch queue's last 3 packets."""
        super().__init__(*args, **kwargs)
        if host_nic not in HOST_NICS or (acks is not None and acks not in ACK_MODES):
            raise ValueError(f"host_nic {host_nic!r} or acks {acks!r}")
        self.host_nic = host_nic
        self.acks = acks or ("lane" if self.link.ack_lane else "data")
        self.random_drop = random_drop
        # How the engine waits and writes (engine/engine.c's options), chosen
        # by measurement (docs/fabrics.md, "The model fabric"); a bench may set them.
        self.engine_options = dict(ENGINE_OPTIONS)
        self.engine: subprocess.Popen | None = None
        self.engine_stats: dict = {}           # the engine's last counters, once stopped
        self._dir: Path | None = None
        self._engine_error = ""

    @property
    def ecmp_hash(self) -> str:
        return "5-tuple, a seed per switch (the engine's hash)"

    # -- the contract ------------------------------------------------------
    def built_here(self) -> list[str]:
        return [n for n in super().built_here() if not self.topo.isSwitch(n)]

    def start(self) -> None:
        if self.topo.hosts_forward or self.servers:
            raise EngineError("the model fabric takes switched topologies on one machine only")
        if not ENGINE.exists():
            raise EngineError(f"{ENGINE} is missing: run ./bootstrap.sh (it builds engine/)")
        super().start()

    def _create_datapath(self) -> None:
        self._start_engine()

    def stop(self) -> None:
        """The engine first: its TAPs keep the hosts' namespaces alive."""
        if self.engine is not None:
            self.procs.stop([self.engine], grace=3.0)
            self.engine.stdout.close()
            self.engine = None
            try:
                self.engine_stats = json.loads((self._dir / "stats.json").read_text())
            except (OSError, ValueError):
                self.engine_stats = {}
        super().stop()
        if self._dir is not None:
            shutil.rmtree(self._dir, ignore_errors=True)
            self._dir = None

    def health_problems(self) -> dict[str, str]:
        problems = super().health_problems()
        if self.engine is not None and self.engine.poll() is not None:
            problems["engine_failed"] = f"the fabric engine exited ({self.engine_error() or 'no message'})"
        return problems

    def check_alive(self) -> None:
        from emulator.traffic.common import TrafficError    # here: traffic imports the fabrics
        if self.engine is not None and self.engine.poll() is not None:
            raise TrafficError(f"the fabric engine exited mid-run ({self.engine_error() or 'no message'}); "
                               "the runs before this one are kept")

    def prepare_run(self, say=print) -> None:
        self.check_alive()

    def set_rate(self, node: str, port: int, bw_mbps: float) -> None:
        answer = self.control(f"rate {node} {self._position(node, port)} {round(bw_mbps * 1e6)}")
        if answer.strip() != "ok":
            raise CommandError(f"the fabric engine refused a rate change: {answer.strip()}")

    def port_monitor(self, interval_s: float) -> PortMonitor:
        return EnginePortMonitor(self, interval_s, bw_mbps=self.link.bw_mbps)

    # -- hosts ---------------------------------------------------------------
    def host_script(self, host: str) -> list[str]:
        """The TAPs' fixed MACs first, then what every fabric gives a host."""
        lines = [f"link set {i.name} address {self.mac(host, i.port)} mtu {self.mtu} "
                 f"txqueuelen {HOST_TXQUEUELEN}" for i in self.topo.interfaces(host)]
        return [*_batch("ip", lines), *super().host_script(host)]

    def link_script(self, node: str) -> list[str]:
        return [*self.steering(node), *self.host_shaping(node)]

    def steering(self, node: str) -> list[str]:
        """With the engine on one CPU (its --cpu), each host's receive work
        on the others (RPS): a TAP write then hands the frame to another
        core's backlog instead of running the host's stack in the engine's
        call. Written in a mount namespace of its own, where sysfs shows this
        network namespace's devices."""
        cpu = int(self.engine_options.get("cpu", 0))
        others = ((1 << (os.cpu_count() or 1)) - 1) & ~(1 << (cpu - 1)) if cpu else 0
        if not others:
            return []
        writes = " && ".join(f"echo {others:x} > $d/class/net/{i.name}/queues/rx-0/rps_cpus"
                             for i in self.topo.interfaces(node))
        # A fresh mount point: another sysfs may already sit on /sys.
        return ["d=$(mktemp -d)", f"unshare -m --propagation private sh -c \"mount -t sysfs none $d && {writes}\"",
                'rmdir "$d"']

    def host_shaping(self, node: str) -> list[str]:
        if self.host_nic == "model":
            return []
        return _batch("tc", [line for intf in self.topo.interfaces(node) for line in links.tc_batch(
            intf.name, self.link_of(intf), host=True, frame_bytes=self.frame_bytes)])

    # -- the engine ------------------------------------------------------------
    @functools.cached_property
    def _positions(self) -> dict[tuple[str, int], int]:
        """(node, port number) -> the engine's global port index."""
        out, i = {}, 0
        for node in self._node_order:
            for intf in sorted(self.topo.interfaces(node), key=lambda x: x.port):
                out[(node, intf.port)] = i
                i += 1
        return out

    @functools.cached_property
    def _node_order(self) -> list[str]:
        return [*self.topo.hosts(sort=True), *sorted(self.topo.switches())]

    def _position(self, node: str, port: int) -> int:
        """A port's index within its node, as the engine numbers them."""
        ports = sorted(i.port for i in self.topo.interfaces(node))
        return ports.index(port)

    def spec_lines(self) -> list[str]:
        """The engine's spec (engine/spec.c says the format)."""
        pos = self._positions
        pool = 0
        nodes, ports, dests, routes = [], [], [], []
        for n, node in enumerate(self._node_order):
            intfs = sorted(self.topo.interfaces(node), key=lambda x: x.port)
            host = not self.topo.isSwitch(node)
            pid = self.pid(node) if host else 0
            seed = 0 if host else self.hash_seed(node)
            nodes.append(f"node {n} {'host' if host else 'switch'} {node} {pid} {seed} "
                         f"{pos[(node, intfs[0].port)] if intfs else len(ports)} {len(intfs)}")
            for intf in intfs:
                link = self.link_of(intf)
                if host:
                    limit, limit_bytes = (HOST_TXQUEUELEN if self.host_nic == "model"
                                          else 4 * HOST_TXQUEUELEN), 0
                else:
                    limit = link.queue_pkts
                    limit_bytes = link.queue_pkts * self.frame_bytes if link.queue_bytes else 0
                pool += limit + 1
                ports.append(f"port {pos[(node, intf.port)]} {pos[(intf.peer, intf.peer_port)]} "
                             f"{round(link.bw_mbps * 1e6)} {round(link.delay_ms * 1e6)} "
                             f"{round(link.jitter_ms * 1e6)} {round(link.loss_pct * 1e4)} "
                             f"{limit} {limit_bytes} {intf.name} {self.mac(node, intf.port)}")
                if host and intf.ip:
                    dests.append(f"dest {intf.ip.split('/')[0]} {pos[(node, intf.port)]}")
        hops = self.next_hops()
        for n, node in enumerate(self._node_order):
            if self.topo.isSwitch(node):
                for dest, intfs in sorted(hops[node].items()):
                    routes.append(f"route {n} {dest} "
                                  + " ".join(str(self._position(node, i.port)) for i in intfs))
        pool = min(POOL_MAX, max(POOL_MIN, pool))
        return ["fabric-engine-spec 1",
                f"model {len(self._node_order)} {len(pos)} {pool} {self.seed} {self.acks} {int(self.random_drop)}",
                *nodes, *ports, *dests, *routes, "end"]

    def _start_engine(self) -> None:
        self._dir = Path(tempfile.mkdtemp(prefix="mptcp-engine-"))
        spec = self._dir / "spec"
        spec.write_text("\n".join(self.spec_lines()) + "\n")
        self.engine = self.procs.spawn(
            "fabric engine", [str(ENGINE), *(a for k, v in self.engine_options.items() for a in (f"--{k}", str(v))),
                              str(spec), str(self._dir / "control"),
                              str(self._dir / "stats.json")],
            stdout=subprocess.PIPE, stderr=(self._dir / "stderr").open("w"))
        ready = wait_readable(self.engine.stdout.fileno(), READY_TIMEOUT_S)
        line = self.engine.stdout.readline() if ready else b""
        if line.strip() != b"ready":
            raise EngineError(f"the fabric engine did not start: {self.engine_error() or 'no ready line'}")

    def engine_error(self) -> str:
        try:
            lines = (self._dir / "stderr").read_text().strip().splitlines()
        except (OSError, TypeError):
            return ""
        return lines[-1] if lines else ""

    def control(self, command: str) -> str:
        """One command to the engine's control socket, its one-line answer."""
        if self._dir is None:
            raise EngineError("the fabric engine is not running")
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
            s.settimeout(CONTROL_TIMEOUT_S)
            try:
                s.connect(str(self._dir / "control"))
                s.sendall(command.encode() + b"\n")
                data = b""
                while not data.endswith(b"\n"):
                    chunk = s.recv(1 << 16)
                    if not chunk:
                        break
                    data += chunk
            except OSError as exc:
                raise EngineError(f"the fabric engine's control socket: {exc}") from exc
        return data.decode()

    def counters(self) -> dict:
        return json.loads(self.control("counters"))

    # -- per run -----------------------------------------------------------------
    def run_counters(self) -> dict | None:
        """Before a run: lateness from zero, and the counters to subtract."""
        self.control("reset")
        return {"engine": self.counters(), "taps": self.tap_drops(), "t": time.monotonic()}

    def run_summary(self, before: dict | None) -> tuple[dict, list[str]]:
        """What the engine did during a run, for run.json, and the run's flags."""
        after, taps, wall = self.counters(), self.tap_drops(), time.monotonic() - before["t"]
        b = before["engine"]
        host = {p["intf"] for p in after["ports"] if not self.topo.isSwitch(p["node"])}

        def total(snap, key, hosts):
            return sum(p[key] + p.get("lane_" + key, 0) for p in snap["ports"]
                       if (p["intf"] in host) == hosts)
        cpu = {k: round(after["cpu"][k] - b["cpu"][k], 3) for k in ("user_s", "system_s")}
        delivered = after["model"]["delivered"] - b["model"]["delivered"]
        gbit = (after["model"]["delivered_bytes"] - b["model"]["delivered_bytes"]) * 8 / 1e9
        core = (cpu["user_s"] + cpu["system_s"]) / wall if wall > 0 else 0.0
        summary = {
            "host_nic": self.host_nic, "acks": self.acks, "random_drop": self.random_drop,
            "engine_options": self.engine_options,
            "delivered": delivered,
            "switch_drops": total(after, "dropped", False) - total(b, "dropped", False),
            "host_nic_drops": total(after, "dropped", True) - total(b, "dropped", True),
            "tap_tx_dropped": sum(taps.values()) - sum(before["taps"].values()),
            "lateness_us": after["lateness"],
            "cpu_s": cpu, "core_pct": round(100 * core, 1),
            "us_per_frame": round(1e6 * (cpu["user_s"] + cpu["system_s"]) / delivered, 2) if delivered else None,
            "delivered_gbit": round(gbit, 4),
            "core_s_per_gbit": round((cpu["user_s"] + cpu["system_s"]) / gbit, 3) if gbit else None,
            "pool_exhausted": after["model"]["pool_exhausted"] - b["model"]["pool_exhausted"],
            "seconds": after["seconds"], "saturated_s": after["saturated_s"],
        }
        flags = []
        if summary["tap_tx_dropped"] or summary["pool_exhausted"]:
            flags.append("engine_dropped")      # frames lost outside the model's queues
        if core > ENGINE_SATURATED or max(after["saturated_s"]) > SATURATED_SHARE * max(1, after["seconds"]):
            flags.append("engine_saturated")
        if after["lateness"]["p99_us"] > self.late_bound_us():
            flags.append("engine_late")
        return summary, flags

    def late_bound_us(self) -> float:
        """The lateness a delivery may have: a full frame's time at the link
        rate, within which a late delivery cannot pass a queue slot. A bound
        from the settings until bench/engine_trust.py measures what the
        results bear (docs/fabrics.md)."""
        return self.frame_bytes * 8 / self.link.bw_mbps

    def tap_drops(self) -> dict[str, int]:
        """Each host TAP's tx_dropped: frames its ring had no room for."""
        out = {}
        for host in self.topo.hosts(sort=True):
            try:
                rows = Path(f"/proc/{self.pid(host)}/net/dev").read_text().splitlines()[2:]
            except (OSError, KeyError):
                continue
            for row in rows:
                name, _, fields = row.partition(":")
                if name.strip().startswith(host):
                    out[name.strip()] = int(fields.split()[11])
        return out


# The engine busier than this share of a core over a run, or one of its
# threads saturated (waiting for work under 5 % of a second, engine/writers.c)
# in more than this share of the run's seconds: its time ran late, whatever
# the lateness says (it cannot know of frames it has not read).
ENGINE_SATURATED = 0.9
SATURATED_SHARE = 0.1


class EnginePortMonitor(PortMonitor):
    """ports.csv's columns from the engine's model, exact at each read: every
    switch port's frames and bytes sent, drops and occupancy."""

    def __init__(self, fabric: ModelFabric, interval_s: float, bw_mbps: float | None = None):
        super().__init__({}, interval_s, bw_mbps)
        self.fabric = fabric

    def open(self) -> None:
        pass

    def close(self) -> None:
        pass

    def _read_all(self) -> dict[str, dict[str, PortCounters]]:
        out: dict[str, dict[str, PortCounters]] = {}
        for p in self.fabric.counters()["ports"]:
            if self.fabric.topo.isSwitch(p["node"]):
                out.setdefault(p["node"], {})[p["intf"]] = PortCounters(
                    p["out_bytes"] + p["lane_out_bytes"], p["out"] + p["lane_out"],
                    p["dropped"] + p["lane_dropped"], p["queued"] + p["lane_queued"])
        return out

    def read(self, node: str) -> dict[str, PortCounters]:
        return self._read_all().get(node, {})

    def _sample(self) -> None:
        t = self.now()
        for node, ports in self._read_all().items():
            for intf, c in ports.items():
                self.samples.append(PortSample(t, node, intf, *c))
