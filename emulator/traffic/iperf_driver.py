"""The iperf3 driver: long-lived iperf3 flows, measured at the receiver.

One iperf3 server (one-off, `-1`) per flow on the receiving host and one client
on the sending host. MPTCP runs wrap both in `mptcpize run` (iperf3 3.12 has
no --mptcp); TCP runs (one subflow) use plain iperf3, so no MPTCP is involved.

Goodput comes from the server's JSON: bytes that arrived, over the seconds the
server measured (the sender's figures count bytes written into the
socket buffer, not bytes delivered). A run's flows send for warm-up + time
seconds and only the server's one-second intervals that start after the
warm-up are counted: slow start, subflow joins and queues filling up are not
what the paper's steady-state figures measure.

Every flow's client binds a known port (`--cport`) so the path manager can
tell its data connection from iperf3's control connection, which goes to the
same server port: only the data connection is given extra subflows. Each run
takes its client ports from the next block of CLIENT_PORT_BLOCK ports: a port
of the previous run may still sit in TIME_WAIT, and iperf3 binds its client
port without SO_REUSEADDR ("Address already in use").
"""
from __future__ import annotations

import json
import time
from pathlib import Path

from emulator.traffic.common import (FlowEndpoints, FlowOutcome, TrafficDriver,
                                      reset_connections)

CONNECT_TIMEOUT_MS = 5000


def connect_timeout_ms(floor_ms: int, warmup_s: float) -> int:
    """How long a client may take to connect: the warm-up, and at least
    `floor_ms`. A flow is counted only after its warm-up, so a connection
    made within it loses nothing; at low link rates a SYN can wait behind
    full queues for seconds (100 packets hold 1.2 s at 1 Mb/s, on each
    hop). FatTree(8) 4:1 at 1 Mb/s, 0.25 connections per host (128 TCP
    flows, 20 s warm-up): 27 connections failed with a 5 s timeout, none
    with 20 s (docs/experiments/oversub.md)."""
    return max(int(floor_ms), round(1000 * warmup_s))


def receiver_goodput(server: dict | None, warmup_s: float) -> tuple[float, float, float, float | None]:
    """(goodput after warm-up in Mb/s, seconds counted, whole-run Mb/s, first
    data second) from an iperf3 server's JSON. Intervals starting before the
    warm-up's end are left out (a small tolerance absorbs iperf3's timer
    jitter); with no interval after it, nothing is counted."""
    if not server:
        return 0.0, 0.0, 0.0, None
    counted_bytes = counted_s = 0.0
    first_data = None
    for iv in server.get("intervals") or []:
        s = iv.get("sum") or {}
        start, seconds, nbytes = float(s.get("start", 0)), float(s.get("seconds", 0)), s.get("bytes", 0)
        if first_data is None and nbytes > 0:
            first_data = start
        if start >= warmup_s - 0.05:
            counted_bytes += nbytes
            counted_s += seconds
    whole = ((server.get("end") or {}).get("sum_received")) or {}
    whole_s = float(whole.get("seconds") or 0.0)
    whole_mbps = 8.0 * whole.get("bytes", 0) / whole_s / 1e6 if whole_s > 0 else 0.0
    goodput = 8.0 * counted_bytes / counted_s / 1e6 if counted_s > 0 else 0.0
    return goodput, counted_s, whole_mbps, first_data


def receiver_samples(server: dict | None, warmup_s: float) -> list[float]:
    """Goodput in Mb/s of each of the server's intervals that start after
    the warm-up (the same intervals receiver_goodput() counts)."""
    out = []
    for iv in (server or {}).get("intervals") or []:
        s = iv.get("sum") or {}
        start, seconds = float(s.get("start", 0)), float(s.get("seconds", 0))
        if start >= warmup_s - 0.05 and seconds > 0:
            out.append(8.0 * s.get("bytes", 0) / seconds / 1e6)
    return out


class IperfDriver(TrafficDriver):
    """One iperf3 server and one client per flow, every client sending from
    the moment it starts."""
    name = "iperf3"
    clients_send_at_start = True
    # How long a client may take to connect before its flow counts as failed
    # (iperf3 --connect-timeout); an attribute so a test under full emulation,
    # where the reactive controller sets up a path slowly, can allow more.
    connect_timeout_ms = CONNECT_TIMEOUT_MS

    def run(self, flows: list[FlowEndpoints], mptcp: bool, time_s: float,
            logdir: Path, on_started=None, warmup_s: float = 0.0,
            bind_servers: bool = True, on_starting=None, ready=None) -> list[FlowOutcome]:
        """Send every flow for warmup_s + time_s seconds; `on_starting` is
        called once the servers listen, just before the first client starts,
        and `on_started` when the clients are started (monitors start there).
        `bind_servers=False` has each server listen on all of its host's
        addresses: subflows that join on another address need that.
        `ready` is not used: an iperf3 client cannot hold its data back."""
        total_s = warmup_s + time_s
        timeout_ms = connect_timeout_ms(self.connect_timeout_ms, warmup_s)
        logdir.mkdir(parents=True, exist_ok=True)
        wrap = ["mptcpize", "run"] if mptcp else []
        servers = [self.procs.spawn(
            f"iperf3 server {f.dst}:{f.server_port}",
            [*wrap, "iperf3", "-s", "-1", "-B", f.dst_ip if bind_servers else "0.0.0.0",
             "-p", str(f.server_port), "-J",
             "--logfile", str(logdir / f"{f.index:04d}-server.json")],
            ns_pid=self.fabric.pid(f.dst)) for f in flows]
        try:
            self._wait_listening(flows)
            if on_starting:
                on_starting()
            clients = [self.procs.spawn(
                f"iperf3 client {f.src}->{f.dst}",
                [*wrap, "iperf3", "-c", f.dst_ip, "-p", str(f.server_port),
                 "-B", f.src_ip, "--cport", str(f.client_port), "-t", f"{total_s:g}", "-J",
                 "--connect-timeout", str(timeout_ms),
                 "--logfile", str(logdir / f"{f.index:04d}-client.json")],
                ns_pid=self.fabric.pid(f.src)) for f in flows]
            if on_started:
                on_started()
            # A client connecting late still runs its whole time.
            late = self.procs.wait(clients, time.monotonic() + timeout_ms / 1000 + total_s + self.finish_grace_s())
            self.procs.stop(late)
            # A server exits once its client's test is over; give it a moment.
            self.procs.stop(self.procs.wait(servers, time.monotonic() + 5))
        except BaseException:
            # Interrupted: reset the flows while both ends hold them, before
            # SIGTERM (common.reset_connections).
            reset_connections(self.fabric, [h for f in flows for h in (f.src, f.dst)])
            raise
        finally:
            self.procs.stop(servers)
        late_ids = {id(p) for p in late}
        return [self._outcome(f, logdir, id(c) in late_ids, warmup_s)
                for f, c in zip(flows, clients)]

    @staticmethod
    def _outcome(f: FlowEndpoints, logdir: Path, timed_out: bool, warmup_s: float) -> FlowOutcome:
        server = read_json(logdir / f"{f.index:04d}-server.json")
        client = read_json(logdir / f"{f.index:04d}-client.json")
        error = (client or {}).get("error") or (server or {}).get("error")
        goodput, seconds, whole, first_data = receiver_goodput(server, warmup_s)
        if timed_out:
            error = error or "client did not finish in time"
        elif server is None:
            error = error or "no receiver-side result"
        return FlowOutcome(f, round(goodput, 4), round(seconds, 3), error, timed_out,
                           round(whole, 4), first_data,
                           [round(x, 3) for x in receiver_samples(server, 0.0)])


def read_json(path: Path) -> dict | None:
    """An iperf3 JSON log, or None if it is missing or not (yet) JSON."""
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None
