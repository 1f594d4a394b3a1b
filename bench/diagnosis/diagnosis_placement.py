"""Path placement removed as a cause (bench/diagnosis/k8_diagnosis.py --spread-paths):
every connection's extra subflows leave from source ports chosen so that
its subflows cross as many different top-tier switches as there are
(cores between pods, aggregation switches within one), spread evenly, where
the ECMP hash would have drawn them at random.

The choice is made from the routers' own answers (diagnosis_paths.
PathWalker): for every connection, CANDIDATES source ports are walked
before the traffic starts, and the ports taken greedily, each time one
whose path's top switch the connection's subflows use least so far (the
initial subflow, from the flow's fixed client port, counts first). The
path manager then opens each extra subflow bound to its chosen port
(MPTCP_PM_CMD_SUBFLOW_CREATE with the local address's port set; the
harness's own path manager leaves it 0, ephemeral).

Candidate ports lie below the servers' ports (5201 up) and the ephemeral
range (kernel/transport.py, 10000 up): nothing else in a host binds them.
"""
from __future__ import annotations

import ipaddress
import struct

from kernel import netlink as nl
from kernel.mptcp_pm import UserspacePM
from kernel.mptcp_pm_wire import (MPTCP_PM_ATTR_ADDR, MPTCP_PM_ATTR_ADDR_REMOTE, MPTCP_PM_ATTR_TOKEN,
                                  MPTCP_PM_CMD_SUBFLOW_CREATE, MPTCP_PM_VER, addr_attrs, genl_msg)

import diagnosis_paths as dp

PORT_BASE = 2000
CANDIDATES = 64


def subflow_create_from(family: int, seq: int, token: int, local: str, local_id: int, port: int,
                        remote: str, remote_port: int) -> bytes:
    """MPTCP_PM_CMD_SUBFLOW_CREATE from local:port (id local_id) to remote."""
    attrs = b"".join((
        nl.attr(MPTCP_PM_ATTR_TOKEN, struct.pack("=I", token)),
        nl.nested(MPTCP_PM_ATTR_ADDR, *addr_attrs(ipaddress.ip_address(local), port, local_id)),
        nl.nested(MPTCP_PM_ATTR_ADDR_REMOTE, *addr_attrs(ipaddress.ip_address(remote), remote_port, None)),
    ))
    return genl_msg(family, MPTCP_PM_CMD_SUBFLOW_CREATE, MPTCP_PM_VER, nl.NLM_F_REQUEST | nl.NLM_F_ACK,
                    seq, attrs)


class PlacedPM(UserspacePM):
    """The harness's path manager, but a connection registered in `ports`
    ((namespace, local ip, local port, remote ip, remote port) -> a source
    port per extra subflow) has its subflows opened from those ports."""

    def __init__(self) -> None:
        super().__init__()
        self.ports: dict[tuple, list[int]] = {}

    def _plan_expansion(self, ns, rec):
        planned = super()._plan_expansion(ns, rec)
        ports = self.ports.get((ns.name, rec.saddr, rec.sport, rec.daddr, rec.dport))
        if not ports or len(ports) != len(planned):
            return planned
        # Each bound (address, port) is a local endpoint of its own to the
        # kernel: an address id of its own too (1.., 0 is the initial one's).
        return [(subflow_create_from(ns.family_id, seq, rec.token, rec.saddr, n + 1, port,
                                     rec.daddr, rec.dport), seq)
                for n, ((_msg, seq), port) in enumerate(zip(planned, ports))]


def choose(tops: list[str | None], initial: str | None, extra: int) -> list[int]:
    """Indices into `tops` (the top switch each candidate port's path
    crosses) for `extra` subflows: each time the candidate whose top is
    used least so far, the initial subflow's counted first."""
    used: dict[str, int] = {}
    if initial is not None:
        used[initial] = 1
    for t in tops:
        if t is not None:
            used.setdefault(t, 0)
    picked: list[int] = []
    for _ in range(extra):
        best = None
        for i, t in enumerate(tops):
            if t is None or i in picked:
                continue
            if best is None or used[t] < used[tops[best]]:
                best = i
        if best is None:
            break
        picked.append(best)
        used[tops[best]] += 1
    return picked


def spread_ports(fabric, flows, subflows: int, k: int, walker: dp.PathWalker | None = None) -> dict:
    """Per flow (FlowEndpoints), the source ports of its subflows-1 extra
    subflows, spread over top-tier switches; and what the choice expects:
    {"ports": {(ns, src_ip, client_port, dst_ip, server_port): [ports]},
     "distinct": {flow index: distinct top switches planned}}."""
    walker = walker or dp.PathWalker(fabric)
    tuples = []
    for f in flows:
        tuples.append((f.src, f.src_ip, f.client_port, f.dst_ip, f.server_port))
        tuples += [(f.src, f.src_ip, PORT_BASE + j, f.dst_ip, f.server_port) for j in range(CANDIDATES)]
    paths = walker.walk(tuples)
    roles = fabric.topo
    out, planned = {}, {}
    for f in flows:
        def top(port):
            path = paths.get((f.src_ip, port, f.dst_ip, f.server_port), [])
            return dp.top_node(path, roles) if dp.reaches(path, f.dst) else None
        tops = [top(PORT_BASE + j) for j in range(CANDIDATES)]
        initial = top(f.client_port)
        picked = choose(tops, initial, subflows - 1)
        if len(picked) == subflows - 1:
            out[(f.src, f.src_ip, f.client_port, f.dst_ip, f.server_port)] = [PORT_BASE + i for i in picked]
            planned[f.index] = len({initial, *(tops[i] for i in picked)} - {None})
    return {"ports": out, "distinct": planned, "processes": walker.processes, "errors": walker.errors}
