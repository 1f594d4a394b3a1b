"""What every traffic driver shares: a run's flows and their ports, what a
flow's receiver got, and the driver interface (`TrafficDriver`). The drivers
themselves: iperf_driver.py (an iperf3 pair per flow) and socket_driver.py
(our own sender and receiver for all flows); drivers.py names them.

Every flow's client binds a known port so the path manager can tell its
data connection from any other: only the data connection is given extra
subflows. Each run takes its client ports from the next block of
CLIENT_PORT_BLOCK ports: a port of the previous run may still sit in
TIME_WAIT.
"""
from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

from base.procs import ProcessTracker
from emulator.fabrics.common import Fabric, wait_until
from kernel import transport
from kernel.transport import listening_ports
from dctopo.workloads import Flow

SERVER_PORT_BASE = 5201
CLIENT_PORT_BASE = 40000      # above kernel/transport.py's ephemeral range
CLIENT_PORT_BLOCK = 1000      # most flows one host may send in a run
CLIENT_PORT_BLOCKS = 25       # a block comes back after 25 runs, > 60 s of TIME_WAIT
LISTEN_TIMEOUT_S = 10
# How long after the planned end a client may take to report before it is
# killed and its flow marked as timed out; at slow links, longer
# (TrafficDriver.finish_grace_s).
FINISH_GRACE_S = 20
# A report crosses up to this many full queues each way (FatTree's longest
# path), and may meet a lost segment and its retransmission timeouts.
REPORT_HOPS, REPORT_ROUND_TRIPS = 6, 4


class TrafficError(RuntimeError):
    pass


def reset_connections(fabric: Fabric, hosts) -> None:
    """Reset the connected TCP sockets of `hosts` (kernel/transport.py's
    reset_connections): what a driver does when its run is interrupted
    (Ctrl-C, an error), before it stops the run's processes."""
    for host in sorted(set(hosts)):
        if host in fabric.nodes:
            transport.reset_connections(fabric.pid(host))


@dataclass
class FlowEndpoints:
    index: int
    src: str
    dst: str
    src_ip: str
    dst_ip: str
    client_port: int
    server_port: int


@dataclass
class FlowOutcome:
    endpoints: FlowEndpoints
    goodput_mbps: float        # after the warm-up
    seconds: float             # seconds counted (after the warm-up)
    error: str | None          # iperf3's own error, or ours (timeout, no result)
    timed_out: bool
    whole_mbps: float = 0.0    # over the whole transfer, warm-up included
    first_data_s: float | None = None   # start of the first interval in which data arrived
    per_second_mbps: list[float] | None = None   # every interval from the start, warm-up included

    def counted_per_second_mbps(self, warmup_s: float) -> list[float]:
        """The per-second goodputs after the warm-up: interval i covers
        second i from the start (both drivers count one-second intervals)."""
        return [x for i, x in enumerate(self.per_second_mbps or []) if i >= warmup_s - 0.05]


class TrafficDriver:
    """What every driver of long flows shares: how a run's flows get their
    ports. A driver's run() sends every flow for warmup_s + time_s seconds
    and returns one FlowOutcome per flow, measured at the receiver."""
    name = ""
    # Whether a flow's client sends from the moment it starts (iperf3), so a
    # slow start of the clients staggers the flows; else data starts on all
    # flows at once when run() releases them.
    clients_send_at_start = False

    def __init__(self, fabric: Fabric, procs: ProcessTracker):
        self.fabric = fabric
        self.procs = procs
        self._next_block = 0

    def finish_grace_s(self) -> float:
        """FINISH_GRACE_S, or a few round trips through full queues where
        those take longer (at 0.5 Mb/s a 100-packet queue takes 2.4 s to
        drain)."""
        link = self.fabric.link
        drain_s = link.queue_pkts * 1514 * 8 / (link.bw_mbps * 1e6)
        return max(FINISH_GRACE_S, REPORT_ROUND_TRIPS * 2 * REPORT_HOPS * drain_s)

    def endpoints(self, flows: list[Flow]) -> list[FlowEndpoints]:
        """Ports for the next run: a distinct server port per flow on its
        receiver, a distinct client port per flow from a fresh block."""
        base = CLIENT_PORT_BASE + (self._next_block % CLIENT_PORT_BLOCKS) * CLIENT_PORT_BLOCK
        self._next_block += 1
        served, sent = defaultdict(int), defaultdict(int)
        out = []
        for i, f in enumerate(flows):
            if sent[f.src] >= CLIENT_PORT_BLOCK:
                raise TrafficError(f"{f.src} sends more than {CLIENT_PORT_BLOCK} flows")
            out.append(FlowEndpoints(i, f.src, f.dst, self.fabric.host_ip(f.src),
                                     self.fabric.host_ip(f.dst),
                                     base + sent[f.src], SERVER_PORT_BASE + served[f.dst]))
            sent[f.src] += 1
            served[f.dst] += 1
        return out

    def _wait_listening(self, flows: list[FlowEndpoints]) -> None:
        wanted = defaultdict(set)
        for f in flows:
            wanted[f.dst].add(f.server_port)

        def all_listening() -> bool:
            return all(ports <= listening_ports(self.fabric.pid(h)) for h, ports in wanted.items())

        if not wait_until(all_listening, LISTEN_TIMEOUT_S):
            raise TrafficError(f"{self.name} servers not listening after {LISTEN_TIMEOUT_S} s")
