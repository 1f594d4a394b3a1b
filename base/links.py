"""Link parameters: what a link is shaped to, and the presets the
experiments use. In the base layer because topologies (dctopo/) carry them
as data and every layer above passes them down."""
from __future__ import annotations

from dataclasses import dataclass

from base.errors import ConfigError
from base.options import option


@dataclass(frozen=True)
class LinkParams:
    """What every link of the fabric is shaped to, in both directions."""
    bw_mbps: float = option(10.0, flag="--bw", metavar="MBPS", help="link rate in Mb/s")
    queue_pkts: int = option(100, flag="--queue", metavar="PKTS",
                             help="queue length in packets; a host's in 1514-byte frames' worth of bytes")
    # Segmentation offloads on the hosts' interfaces. Off, every packet in the
    # fabric is one MTU frame, so a switch's queue limit in packets means
    # packets (a host's own queue still holds TCP's GSO packets: docs/methodology.md,
    # item 3).
    offload: bool = option(False, flag="--offload", help="leave TSO/GSO on at the hosts (switch "
                           "queue limits then count superpackets)")
    # Switch queues bounded in bytes (queue_pkts full frames' worth), as a
    # switch's buffer and the paper's simulator's queues are: an ACK then
    # takes 66 bytes of it, not a packet's slot.
    queue_bytes: bool = option(False, flag="--queue-bytes", help="bound the switches' queues in "
                               "bytes too (PKTS full frames' worth), so that an ACK takes its size, "
                               "not a packet's slot")
    # Pure ACKs in a lane of their own on every port, as in the paper's
    # packet-level simulator, whose ACKs go straight back to the sender
    # (docs/methodology.md, "The packet-level reference"). Off: ACKs queue with data, as
    # in a real switch.
    ack_lane: bool = option(False, flag="--ack-lane", help="give pure ACKs (packets under 128 "
                            "bytes) a queue and rate of their own on every port, as the paper's "
                            "simulator does; off, they share the data queue")
    # One-way propagation delay, its jitter (uniform within +-jitter, never
    # reordering) and random loss, each applied in both directions as
    # Mininet's TCLink does (emulator/links.py says how, with or without netem).
    delay_ms: float = option(0.0, flag="--delay", metavar="MS", help="one-way delay of a link in ms")
    jitter_ms: float = 0.0
    loss_pct: float = 0.0

    @property
    def impaired(self) -> bool:
        """True if the link has delay, jitter or loss on top of rate and queue."""
        return bool(self.delay_ms or self.jitter_ms or self.loss_pct)

    def validate(self) -> None:
        if not 0.01 <= self.bw_mbps <= 10000:
            raise ConfigError(f"--bw {self.bw_mbps}: link rate must be within 0.01..10000 Mb/s")
        if not 2 <= self.queue_pkts <= 100000:
            raise ConfigError(f"--queue {self.queue_pkts}: queue length must be within 2..100000 packets")
        if not 0 <= self.delay_ms <= 10000:
            raise ConfigError(f"delay {self.delay_ms} ms: one-way delay must be within 0..10000 ms")
        if not 0 <= self.jitter_ms <= self.delay_ms:
            raise ConfigError(f"jitter {self.jitter_ms} ms: must be within 0..delay ({self.delay_ms} ms)")
        if not 0 <= self.loss_pct < 100:
            raise ConfigError(f"loss {self.loss_pct} %: must be within 0..100 %")
        if self.ack_lane and self.impaired:
            raise ConfigError("--ack-lane: only on links without delay, jitter or loss")


def buffer_pkts(bw_mbps: float, buffer_ms: float) -> int:
    """A buffer given in time (the paper's "80 ms of buffer") in MTU packets."""
    return max(2, round(bw_mbps * 1e6 * buffer_ms / 1000 / (1514 * 8)))


# The WiFi + 3G paths of CS244 '14 (NSDI 2012, Fig. 4): WiFi 8 Mb/s, 20 ms RTT,
# 80 ms of buffer; 3G 2 Mb/s, 150 ms RTT, 2 s of buffer. Delay is one-way.
WIFI = LinkParams(bw_mbps=8.0, queue_pkts=buffer_pkts(8.0, 80), delay_ms=10.0)
CELL = LinkParams(bw_mbps=2.0, queue_pkts=buffer_pkts(2.0, 2000), delay_ms=75.0)
# A link that is never the bottleneck: fast, and deep enough never to drop.
ACCESS = LinkParams(bw_mbps=1000.0, queue_pkts=1000)
