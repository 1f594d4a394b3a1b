"""What every experiment of long flows reads the same way: the kernel's
MPTCP counters over all hosts, the path manager's connections per flow, the
flags that make a run of long flows untrustworthy, and what the controller's
first fit did during a run (the FatTree sweep's and the scheduling
experiment's)."""
from __future__ import annotations

import time

from emulator.fabrics.common import Fabric
from emulator.traffic.common import FlowEndpoints, FlowOutcome
from kernel import transport
from kernel.mptcp_pm import Connection, UserspacePM
from monitor import CpuMonitor

PAYLOAD_PER_FRAME = 1448 / 1514   # TCP payload with timestamps in a full Ethernet frame


def kernel_counters(fabric: Fabric) -> dict[str, int]:
    """MPTCP MIB counters summed over every host namespace, and the
    machine's ARP table counters (kernel/transport.read_arp_table_stats):
    a full table refuses neighbours, and connections fail."""
    total: dict[str, int] = {}
    for host in fabric.hosts():
        for k, v in transport.read_netstat(fabric.pid(host), ("MPTcpExt",)).items():
            total[k] = total.get(k, 0) + v
    return {**total, **transport.read_arp_table_stats()}


def flow_key(f: FlowEndpoints) -> tuple:
    return (f.src_ip, f.client_port, f.dst_ip, f.server_port)


def client_connections(pm: UserspacePM) -> dict[tuple, Connection]:
    """The path manager's client-side data connections, keyed like flow_key."""
    return {(c.saddr, c.sport, c.daddr, c.dport): c for c in pm.connections() if not c.server_side}


def all_subflows_up(pm: UserspacePM, flows: list[FlowEndpoints], subflows: int) -> bool:
    """Whether every flow's data connection has all its subflows (for plain
    TCP, connected is all there is)."""
    if subflows == 1:
        return True
    conns = client_connections(pm)
    return all(conns.get(flow_key(f)) is not None and conns[flow_key(f)].subflows_established >= subflows
               for f in flows)


def subflows_ready(pm: UserspacePM, flows: list[FlowEndpoints], subflows: int):
    """For a driver's `ready`: a driver that opens the connections before
    data flows (the socket driver) releases the data once this says every
    flow has its subflows."""
    return lambda: all_subflows_up(pm, flows, subflows)


def closed_connections(pm: UserspacePM, timeout_s: float = 2.0) -> list[Connection]:
    """pm.connections() once every one has reported MPTCP_EVENT_CLOSED (their
    subflow counts are final then), or as they are at the timeout: for
    transfers, whose connections close before their records are read."""
    deadline = time.monotonic() + timeout_s
    while True:
        conns = pm.connections()
        if all(c.closed for c in conns) or time.monotonic() >= deadline:
            return conns
        time.sleep(0.01)


def subflows_by_flow(pm: UserspacePM) -> dict[tuple, int]:
    """Subflows the kernel reported per client-side data connection, keyed
    by (src ip, client port, dst ip, server port)."""
    return {key: c.subflows_established for key, c in client_connections(pm).items()}


def run_flags(subflows: int, flows: list[dict], outcomes: list[FlowOutcome], cpu: CpuMonitor,
              counters: dict[str, int]) -> list[str]:
    """Why a run of long flows cannot be trusted, from its flow records
    (goodput_mbps, subflows_established), its iperf3 outcomes, the CPU and
    the MPTCP counters' change over the run; empty if it can."""
    flags = []
    if any(o.error and not o.timed_out for o in outcomes):
        flags.append("handshake_failed")
    if any(o.timed_out for o in outcomes):
        flags.append("timed_out")
    if any(fl["goodput_mbps"] <= 0 for fl in flows):
        flags.append("zero_goodput_flow")
    if subflows > 1 and any(fl["subflows_established"] < subflows for fl in flows):
        flags.append("subflows_missing")
    if subflows == 1 and counters.get("MPTcpExtMPCapableSYNTX", 0):
        flags.append("unexpected_mptcp")
    if cpu.saturated():
        flags.append("cpu_saturated")
    if counters.get("ArpTableFulls", 0) > 0:
        flags.append("neighbour_table_full")
    return flags


def first_fit_record(fabric, interval_s: float, since: float, until: float) -> dict:
    """What the controller's first fit did during a run (its schedule log):
    rounds, flows moved, the longest decision, and the most flows it kept
    counts of at once (quiet flows are forgotten: controller/flowcounts.py)."""
    rounds = [r for r in fabric.schedule_rounds() if since <= r["time"] <= until]
    return {"interval_s": interval_s, "rounds": len(rounds),
            "moves": sum(len(r["moves"]) for r in rounds),
            "decision_s_max": max((r["decision_s"] for r in rounds), default=None),
            "flows_tracked_max": max((r.get("tracked", 0) for r in rounds), default=None)}
