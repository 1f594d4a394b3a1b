"""Transfers of a given size at given times (emulator/traffic/transfergen.py):
what short flows and file transfers are measured by, their completion time.

    driver = TransferDriver(fabric, procs)
    outcomes = driver.run([Transfer(0, "h1", "h2", "10.1.0.2", "10.1.1.2",
                                    20000, 5201, at_s=0.0, size=70_000)],
                          mptcp=False, logdir=folder)
    outcomes[0].completion_s

A transfer's completion time runs from the moment its connection is opened
to the moment the receiving side has its last byte, on the one monotonic
clock of the machine. For MPTCP, register each transfer's client port with
the path manager (kernel.mptcp_pm.UserspacePM.expand) before run().
"""
from __future__ import annotations

import json
import time
from dataclasses import dataclass
from pathlib import Path

from base.procs import ProcessTracker
from emulator.traffic.common import LISTEN_TIMEOUT_S, TrafficError, reset_connections
from emulator.traffic.socket_driver import JsonLinesChild
from emulator.traffic.transfergen import STOPPED  # noqa: F401  (a transfer's error when stop_s ended it)

# Both sides get the schedule this long before the first start.
RELEASE_LEAD_S = 0.2
# A transfer still running this long after its start is ended as "timed out".
TRANSFER_TIMEOUT_S = 60.0


@dataclass(frozen=True)
class Transfer:
    index: int
    src: str                # host names
    dst: str
    src_ip: str
    dst_ip: str
    client_port: int
    server_port: int
    at_s: float             # start, seconds after the release (at the earliest, if chained)
    size: int               # bytes
    after: int | None = None    # closed loop: start when this transfer (its index) ends


@dataclass(frozen=True)
class TransferOutcome:
    transfer: Transfer
    start_s: float | None           # seconds after the release
    connected_s: float | None
    first_byte_s: float | None      # the receiving side has the header
    last_byte_s: float | None       # ... and every byte
    acked_s: float | None           # the sender has the receiver's answer
    received: int
    subflows: int | None            # MPTCP_INFO at the answer: initial + joins opened (in progress too)
    error: str | None

    @property
    def started(self) -> bool:
        """False for a chained transfer the run's stop_s left unstarted."""
        return self.start_s is not None or self.error is not None

    @property
    def completion_s(self) -> float | None:
        """Connection opened to last byte received; None if it never completed."""
        if self.error or self.start_s is None or self.last_byte_s is None:
            return None
        return self.last_byte_s - self.start_s


class TransferDriver:
    def __init__(self, fabric, procs: ProcessTracker):
        self.fabric = fabric
        self.procs = procs
        self.cpu_s: float | None = None     # the driver process's CPU time in the last run()
        # (seconds after the release, bytes received by then) in the last run,
        # every sample_s seconds if asked for.
        self.received_samples: list[tuple[float, int]] = []

    def run(self, transfers: list[Transfer], mptcp: bool, logdir: Path,
            timeout_s: float = TRANSFER_TIMEOUT_S, cc: str | None = None,
            stop_s: float | None = None, sample_s: float | None = None) -> list[TransferOutcome]:
        """Run every transfer at its time; return when all have ended."""
        return self.start(transfers, mptcp, logdir, timeout_s, cc, stop_s, sample_s).finish()

    def start(self, transfers: list[Transfer], mptcp: bool, logdir: Path,
              timeout_s: float = TRANSFER_TIMEOUT_S, cc: str | None = None,
              stop_s: float | None = None, sample_s: float | None = None) -> "RunningTransfers":
        """Start the driver and release the schedule (times count from about
        RELEASE_LEAD_S from now); finish() waits for the outcomes. Meanwhile
        the caller may run other traffic in the same thread. `cc`: the
        congestion control of the sending sockets (TCP_CONGESTION), else the
        host's default. `stop_s`: the run ends then; transfers still running
        end with error STOPPED, chained ones (`after`) not yet started never
        start (closed loop until then). `sample_s`: how often to sample the
        bytes received (received_samples)."""
        if stop_s is None and any(t.after is not None for t in transfers):
            raise ValueError("chained transfers (after=) need a stop_s: a closed loop must end")
        logdir.mkdir(parents=True, exist_ok=True)
        # An MPTCP server listens on every address: a join arrives at the
        # address of the path it opens (a listener bound to one address
        # answers a join to another with a reset).
        servers = sorted({(t.dst, "0.0.0.0" if mptcp else t.dst_ip, t.server_port) for t in transfers})
        child = JsonLinesChild(self.procs, "", logdir / "transfergen.log",
                               module="emulator.traffic.transfergen")
        try:
            child.tell({"mptcp": mptcp, "timeout_s": timeout_s, "cc": cc, "stop_s": stop_s,
                        "sample_s": sample_s,
                        "servers": [{"ns_pid": self.fabric.pid(host), "ip": ip, "port": port}
                                    for host, ip, port in servers],
                        "transfers": [{"index": t.index, "ns_pid": self.fabric.pid(t.src),
                                       "src_ip": t.src_ip, "client_port": t.client_port,
                                       "dst_ip": t.dst_ip, "server_port": t.server_port,
                                       "at_s": t.at_s, "bytes": t.size, "after": t.after}
                                      for t in transfers]})
            if child.hear(LISTEN_TIMEOUT_S) is None:
                raise TrafficError(f"transfergen not listening after {LISTEN_TIMEOUT_S} s")
            released = time.monotonic() + RELEASE_LEAD_S
            child.tell({"t0": released})
        except BaseException:
            reset_connections(self.fabric, [h for t in transfers for h in (t.src, t.dst)])
            self.procs.stop([child.proc])
            raise
        last_start = max([t.at_s for t in transfers] + ([stop_s] if stop_s is not None else []),
                         default=0.0)
        return RunningTransfers(self, child, transfers, logdir,
                                released + last_start + timeout_s + 10.0)


class RunningTransfers:
    """A started TransferDriver run: finish() collects it."""

    def __init__(self, driver: TransferDriver, child: JsonLinesChild, transfers: list[Transfer],
                 logdir: Path, deadline: float):
        self.driver, self.child, self.transfers = driver, child, transfers
        self.logdir, self.deadline = logdir, deadline

    def finish(self) -> list[TransferOutcome]:
        """Wait for the driver's report (until every transfer has ended or
        timed out), stop it, and return one outcome per transfer."""
        try:
            report = self.child.hear(max(0.0, self.deadline - time.monotonic()))
            if report is None:
                raise TrafficError("transfergen did not report its transfers in time")
        except BaseException:
            reset_connections(self.driver.fabric, [h for t in self.transfers for h in (t.src, t.dst)])
            raise
        finally:
            self.driver.procs.stop([self.child.proc])
        (self.logdir / "transfers.json").write_text(json.dumps(report))
        self.driver.cpu_s = report.get("cpu_s")
        self.driver.received_samples = [(t, n) for t, n in report.get("received_samples", [])]
        by_index = {r["index"]: r for r in report["transfers"]}
        return [_outcome(t, by_index.get(t.index)) for t in self.transfers]


def _outcome(t: Transfer, r: dict | None) -> TransferOutcome:
    if r is None:
        return TransferOutcome(t, None, None, None, None, None, 0, None, "no result reported")
    return TransferOutcome(t, r["start_s"], r["connected_s"], r["first_byte_s"], r["last_byte_s"],
                           r["acked_s"], r["received"], r["subflows"], r["error"])
