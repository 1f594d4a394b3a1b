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
"""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ClientStart:
    """When the harness started the clients (time.monotonic()), and the
    machine's CPU while it did (% of all cores, from /proc/stat)."""
    first_s: float
    last_s: float
    cpu_busy_pct: float | None


def startup_record(start: ClientStart, connections: dict[tuple, object], flow_keys: list[tuple],
                   subflows: int, cpu_samples: list, monitor_t0: float) -> dict:
    """The run's `startup` object.

    `connections`: the path manager's client-side records keyed like
    `flow_keys` (src ip, client port, dst ip, server port); `cpu_samples`:
    monitor.CpuSample list whose `t` counts from `monitor_t0`."""
    def since(t: float | None) -> float | None:
        return None if t is None else round(t - start.first_s, 3)

    record = {
        "clients": len(flow_keys),
        "clients_started_s": round(start.last_s - start.first_s, 3),
        "cpu_while_starting_clients_pct": start.cpu_busy_pct,
        "established": None, "first_established_s": None, "last_established_s": None,
        "last_subflow_s": None, "complete_s": None, "cpu_until_complete_pct": None,
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
    if complete and seen:
        done_at = max(max(established), max(joined, default=start.first_s))
        record["complete_s"] = since(done_at)
        # The samples that cover the start-up: up to the first one taken after it.
        covering = []
        for s in cpu_samples:
            covering.append(s.busy_pct)
            if monitor_t0 + s.t >= done_at:
                break
        if covering:
            record["cpu_until_complete_pct"] = round(sum(covering) / len(covering), 1)
    return record
