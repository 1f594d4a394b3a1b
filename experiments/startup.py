"""A run's start-up, for run.json: how long from the first client's start
until every connection had its data connection and all its subflows, and
what the machine's CPU was meanwhile.

The start of a large run is where two cores give out (FatTree(8) at 1 Mb/s:
both cores at 98-100 % for the first 17 s while 128 clients start and the
path manager asks for about 900 joins), so every run says how its start went.

Times come from the path manager's events (kernel.mptcp_pm.Connection:
established_at, last_subflow_at) as the harness handled them, so on a busy
machine they can be later than the kernel's own moment. Plain TCP runs have
no path-manager events: their connection times are None.

`phases` splits the start by marks (PhaseClock): reconfiguring the hosts for
the run, the harness's own bookkeeping (counters, monitors), starting the
servers until they listen, starting the clients; then connect_and_join, from
the last client's start until every subflow joined (from CPU samples).
"""
from __future__ import annotations

import os
import time

from monitor import CpuTimes, read_proc_stat

_CLOCK_TICKS = os.sysconf("SC_CLK_TCK")   # /proc/stat counts in these


class PhaseClock:
    """Wall time and machine CPU (core-seconds, from /proc/stat) between
    named marks: where the start of a run spends the machine. mark("a") ...
    mark("b") makes a phase "b" from the previous mark to this one."""

    def __init__(self) -> None:
        self._marks: list[tuple[str, float, list[int]]] = []

    def mark(self, name: str) -> None:
        self._marks.append((name, time.monotonic(), read_proc_stat()["cpu"]))

    def at(self, name: str) -> float:
        """time.monotonic() of the mark `name`."""
        return next(t for n, t, _ in self._marks if n == name)

    def phases(self) -> dict[str, dict]:
        out = {}
        for (_, t0, c0), (name, t1, c1) in zip(self._marks, self._marks[1:]):
            busy = CpuTimes.between(c0, c1).busy
            out[name] = {"wall_s": round(t1 - t0, 3), "cpu_core_s": round(busy / _CLOCK_TICKS, 2)}
        return out


def clients_started_late(startup: dict, warmup_s: float, clients_send_at_start: bool) -> bool:
    """Whether starting a run's clients took longer than its warm-up, with a
    driver whose clients send from the moment they start (iperf3): then the
    first flows counted seconds while the last had not begun, so the flows
    did not compete over the whole counted window. Seen at FatTree(8), 2.5
    Mb/s, MPTCP-6: 81 s to start 128 clients against a 20 s
    warm-up. The socket driver starts data on all flows at once after its
    connections are open, so its start never staggers them."""
    started = startup.get("clients_started_s")
    return clients_send_at_start and started is not None and started > warmup_s


def startup_record(clock: PhaseClock, connections: dict[tuple, object], flow_keys: list[tuple],
                   subflows: int, cpu_samples: list, monitor_t0: float) -> dict:
    """The run's `startup` object. `clock` was marked "start_servers" just
    before the first client started and "start_clients" once all had;
    `connections`: the path manager's client-side records keyed like
    `flow_keys` (src ip, client port, dst ip, server port); `cpu_samples`:
    monitor.CpuSample list whose `t` counts from `monitor_t0`."""
    first = clock.at("start_servers")

    def since(t: float | None) -> float | None:
        return None if t is None else round(t - first, 3)

    phases = clock.phases()
    record = {
        "clients": len(flow_keys),
        "clients_started_s": phases["start_clients"]["wall_s"],
        "established": None, "first_established_s": None, "last_established_s": None,
        "last_subflow_s": None, "complete_s": None, "cpu_until_complete_pct": None,
        "phases": phases,
    }
    if subflows <= 1:
        return record
    seen = [connections.get(k) for k in flow_keys]
    established = [c.established_at for c in seen if c is not None and c.established_at is not None]
    joined = [c.last_subflow_at for c in seen if c is not None and c.last_subflow_at is not None]
    record.update(established=len(established),
                  first_established_s=since(min(established, default=None)),
                  last_established_s=since(max(established, default=None)),
                  last_subflow_s=since(max(joined, default=None)))
    complete = all(c is not None and c.established_at is not None
                   and c.subflows_established >= subflows for c in seen)
    if not (complete and seen):
        return record
    done_at = max(max(established), max(joined, default=first))
    record["complete_s"] = since(done_at)
    if done_at <= clock.at("start_clients"):
        # All was up before the data was released (the socket driver): the
        # start_clients phase, measured between /proc/stat marks, covers it.
        ph = phases["start_clients"]
        cores = os.cpu_count() or 1
        if ph["wall_s"] > 0:
            record["cpu_until_complete_pct"] = round(
                100 * ph["cpu_core_s"] / (ph["wall_s"] * cores), 1)
        return record
    # The CPU samples that cover the start-up: up to the first one taken after it.
    covering = []
    for s in cpu_samples:
        covering.append(s)
        if monitor_t0 + s.t >= done_at:
            break
    if covering:
        pct = sum(s.busy_pct for s in covering) / len(covering)
        record["cpu_until_complete_pct"] = round(pct, 1)
        # From the samples, not /proc/stat marks: the moment is known only afterwards.
        cores = len(covering[0].cores_busy_pct)
        wall = max(0.0, done_at - clock.at("start_clients"))
        phases["connect_and_join"] = {"wall_s": round(wall, 3),
                                      "cpu_core_s": round(pct / 100 * cores * wall, 2)}
    return record
