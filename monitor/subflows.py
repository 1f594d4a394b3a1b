"""Subflows established per watched connection, from the userspace path
manager's records (no socket of its own) -> subflows.csv."""
from __future__ import annotations

from pathlib import Path
from typing import Iterable, NamedTuple

from monitor.rtt import Watched
from monitor.sampler import Sampler, write_rows


# --- subflows: the path manager's records --------------------------------------------------

class SubflowSample(NamedTuple):
    t: float
    saddr: str
    sport: int
    daddr: str
    dport: int
    subflows: int         # established so far (initial + every SUB_ESTABLISHED event)


class SubflowMonitor(Sampler):
    """Subflows established per watched connection over time, from a
    kernel.mptcp_pm.UserspacePM's records (which follow the kernel's events):
    nothing but a copy of that list per interval."""

    thread_name = "subflow-monitor"

    def __init__(self, pm, interval_s: float = 1.0):
        self._init_sampler(interval_s)
        self.pm = pm
        self.samples: list[SubflowSample] = []
        self._keys: set[tuple[str, int, str, int]] = set()

    def watch(self, flows: Iterable) -> None:
        self._keys = {(w.src_ip, w.client_port, w.dst_ip, w.server_port) for w in map(Watched.of, flows)}

    def _reset(self) -> None:
        self.samples = []

    def _sample(self) -> None:
        t = self.now()
        for c in self.pm.connections():
            if not c.server_side and (c.saddr, c.sport, c.daddr, c.dport) in self._keys:
                self.samples.append(SubflowSample(t, c.saddr, c.sport, c.daddr, c.dport,
                                                  c.subflows_established))

    def summary(self, from_s: float = 0.0) -> dict:
        """The last count of each watched connection (`from_s` is accepted
        for symmetry: the final counts do not depend on it)."""
        final: dict[tuple, int] = {}
        for s in self.samples:
            final[s[1:5]] = s.subflows
        return {
            "subflow_connections": len(final),
            "subflows_final_min": min(final.values()) if final else None,
            "subflows_final_max": max(final.values()) if final else None,
        }

    def write_csv(self, path: Path) -> None:
        write_rows(path, ["t_s", *SubflowSample._fields[1:]], ([round(s.t, 3), *s[1:]] for s in self.samples))
