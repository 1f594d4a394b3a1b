"""`Monitors`: the bundle a run uses: start(), stop(), write(), summary()."""
from __future__ import annotations

import time
from pathlib import Path
from typing import Iterable

from monitor.cpu import CpuMonitor
from monitor.ports import PortMonitor
from monitor.rtt import RttMonitor
from monitor.sampler import MAX_ERRORS_KEPT, Sampler
from monitor.subflows import SubflowMonitor


# --- the bundle ---------------------------------------------------------------------------

class Monitors:
    """The monitors of one run, started and stopped together on one time origin.

    Typical use (per run)::

        mon = Monitors.for_fabric(fabric, pm, interval_s=1.0)
        mon.watch(flows, subflows=rc.subflows)   # FlowEndpoints of the run
        try:
            driver.run(flows, ..., on_started=mon.start)
        finally:
            mon.stop()                        # also closes every socket
        mon.write(run_dir)                    # cpu.csv ports.csv rtt.csv subflows.csv
        record["monitors"] = mon.summary()

    A Monitors object may be started again for the next run (after watch()).
    """

    FILES = {"cpu": "cpu.csv", "ports": "ports.csv", "rtt": "rtt.csv", "subflows": "subflows.csv"}

    def __init__(self, interval_s: float = 1.0, *, cpu: CpuMonitor | None = None,
                 ports: PortMonitor | None = None, rtt: RttMonitor | None = None,
                 subflows: SubflowMonitor | None = None):
        self.interval_s = interval_s
        self.cpu, self.ports, self.rtt, self.subflows = cpu, ports, rtt, subflows
        for m in self.members().values():
            m.interval_s = interval_s
        self.wall_s = 0.0
        self._started: float | None = None
        self._last_t0: float | None = None

    @classmethod
    def for_fabric(cls, fabric, pm=None, interval_s: float = 1.0, cpu: bool = True) -> "Monitors":
        """All monitors over a started Fabric: ports of every switch, RTT in
        every host, subflows from the path manager `pm` (if given)."""
        return cls(interval_s,
                   cpu=CpuMonitor(interval_s) if cpu else None,
                   ports=fabric.port_monitor(interval_s),
                   rtt=RttMonitor({h: fabric.pid(h) for h in fabric.hosts()}, interval_s),
                   subflows=SubflowMonitor(pm, interval_s) if pm is not None else None)

    def members(self) -> dict[str, Sampler]:
        return {k: m for k, m in (("cpu", self.cpu), ("ports", self.ports), ("rtt", self.rtt),
                                  ("subflows", self.subflows)) if m is not None}

    def watch(self, flows: Iterable, subflows: int | None = None) -> None:
        """The run's connections (FlowEndpoints), and how many subflows each
        should have if known (the run's subflow count: it spares the RTT
        monitor's socket dumps once they are all found)."""
        flows = list(flows)
        if self.rtt is not None:
            self.rtt.watch(flows, subflows)
        if self.subflows is not None:
            self.subflows.watch(flows)

    def start(self) -> None:
        t0 = time.monotonic()
        started = []
        try:
            for m in self.members().values():
                m.start(t0)
                started.append(m)
        except BaseException:
            for m in started:
                m.stop()
            raise
        self._started = self._last_t0 = t0

    @property
    def started_at(self) -> float | None:
        """time.monotonic() at the last start(), kept after stop(): every
        monitor's `t` counts from it."""
        return self._last_t0

    def stop(self) -> None:
        """Stop every monitor and close its sockets (safe to call twice)."""
        try:
            for m in self.members().values():
                m.stop()
        finally:
            if self._started is not None:
                self.wall_s = time.monotonic() - self._started
                self._started = None

    def __enter__(self) -> "Monitors":
        self.start()
        return self

    def __exit__(self, *exc) -> None:
        self.stop()

    def write(self, run_dir: Path) -> list[Path]:
        """One CSV per monitor into run_dir; returns the paths written."""
        written = []
        for name, m in self.members().items():
            path = Path(run_dir) / self.FILES[name]
            m.write_csv(path)
            written.append(path)
        return written

    def summary(self, from_s: float = 0.0) -> dict:
        """A small flat dict for run.json. Statistics use the samples taken
        at or after `from_s` seconds (pass the run's warm-up to leave slow
        start out); the CSVs keep every sample."""
        out: dict = {"interval_s": self.interval_s, "from_s": from_s}
        for m in (self.ports, self.rtt, self.subflows):
            if m is not None:
                out.update(m.summary(from_s))
        out.update(self.cost())
        return out

    def cost(self) -> dict:
        """CPU the monitors themselves used: seconds, and percent of one core
        over the time they ran; per monitor too."""
        members = self.members()
        cpu_s = sum(m.cpu_s for m in members.values())
        errors = [e for m in members.values() for e in m.errors]
        return {
            "monitor_cpu_s": round(cpu_s, 4),
            "monitor_cpu_pct": round(100 * cpu_s / self.wall_s, 3) if self.wall_s > 0 else None,
            "monitor_cpu_s_by": {k: round(m.cpu_s, 4) for k, m in members.items()},
            "monitor_errors": sum(m.error_count for m in members.values()),
            **({"monitor_error_messages": errors[:MAX_ERRORS_KEPT]} if errors else {}),
        }

