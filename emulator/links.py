"""Link shaping that holds on kernels without sch_netem.

Mininet's TCLink puts the queue limit, delay and loss into netem; on a kernel
without netem all three silently disappear. Here:

* rate and queue: every interface at both ends of a link gets an HTB class at
  the link rate with a FIFO under it, both present on a stock kernel. At a
  switch the FIFO counts packets (`queue_pkts`): the fabric carries MTU
  frames only. At a host it counts bytes (`queue_pkts` MTU frames' worth),
  because a host's own TCP hands its qdisc GSO packets of up to 64 KB
  whatever the device offers (`offload_commands`), and a FIFO of 100 such
  packets held seconds of traffic at 10 Mb/s (docs/methodology.md, item 3).
  `queue_bytes` bounds a switch's in bytes too, and `ack_lane` gives pure
  ACKs a class of their own (both as the paper's simulator has them);
* delay, jitter and loss, where the link has any:
  - with sch_netem (`base.platform.netem_available()`), netem replaces the FIFO under the
    HTB class: the sending side delays, as Mininet does;
  - without it, the receiving side delays: each end's *arriving* packets go
    through an NFQUEUE to the fabric's delay line (emulator/delayline.py).
  Either way each direction of the link sees the delay and the loss once.
"""
from __future__ import annotations

import math

from base.links import LinkParams

# A single class never borrows, so HTB's quantum only has to hold one frame;
# setting it avoids the kernel's "quantum is big" warning at high rates.
FRAME_BYTES = 1514
HTB_QUANTUM = FRAME_BYTES


def tc_batch(intf: str, link: LinkParams, netem: bool = False, host: bool = False,
             frame_bytes: int = FRAME_BYTES) -> list[str]:
    """`tc -batch` lines shaping `intf`'s egress to the link's rate and queue,
    and, with `netem`, its delay, jitter and loss. `host`: the interface is
    a host's, whose queue is bounded in bytes (module docstring).
    `frame_bytes`: the fabric's full frame (smaller where links are tunnels)."""
    rate = f"{link.bw_mbps:g}mbit"
    lines = [
        f"qdisc replace dev {intf} root handle 1: htb default 1",
        f"class replace dev {intf} parent 1: classid 1:1 htb rate {rate} ceil {rate} "
        f"quantum {HTB_QUANTUM}",
    ]
    if netem and link.impaired:
        lines.append(f"qdisc replace dev {intf} parent 1:1 handle 10: {netem_args(link, frame_bytes)}")
    elif host or link.queue_bytes:
        lines.append(f"qdisc replace dev {intf} parent 1:1 handle 10: bfifo limit {host_queue_bytes(link, frame_bytes)}")
    else:
        lines.append(f"qdisc replace dev {intf} parent 1:1 handle 10: pfifo limit {link.queue_pkts}")
    return lines + (ack_lane(intf, rate) if link.ack_lane else [])


ACK_LANE_PKTS = 1000
# IPv4 total length below 128 bytes: its 16 bits with the top 9 clear.
SMALL_IPV4 = "u32 match u16 0x0000 0xff80 at 2"


def ack_lane(intf: str, rate: str) -> list[str]:
    """A second HTB class, beside the data's and never borrowing from it,
    for pure ACKs (and SYNs): they neither wait behind data nor take its rate."""
    return [f"class replace dev {intf} parent 1: classid 1:2 htb rate {rate} ceil {rate} "
            f"quantum {HTB_QUANTUM}",
            f"qdisc replace dev {intf} parent 1:2 handle 20: pfifo limit {ACK_LANE_PKTS}",
            f"filter add dev {intf} parent 1: protocol ip prio 1 {SMALL_IPV4} flowid 1:2"]


def host_queue_bytes(link: LinkParams, frame_bytes: int = FRAME_BYTES) -> int:
    """A host's queue limit: `queue_pkts` MTU frames, in bytes as the qdisc
    counts them (a GSO packet counts every frame it will be split into)."""
    return link.queue_pkts * frame_bytes


def rate_change(intf: str, bw_mbps: float) -> list[str]:
    """`tc` arguments changing the rate of `intf`'s HTB class (made by
    tc_batch) while traffic flows; its queue and what it holds stay."""
    rate = f"{bw_mbps:g}mbit"
    return ["class", "change", "dev", intf, "parent", "1:", "classid", "1:1", "htb",
            "rate", rate, "ceil", rate, "quantum", str(HTB_QUANTUM)]


def netem_in_flight_pkts(link: LinkParams, frame_bytes: int = FRAME_BYTES) -> int:
    """MTU frames the link's delay (and jitter) holds at its rate."""
    return math.ceil(link.bw_mbps * 1e6 * (link.delay_ms + link.jitter_ms) / 1000 / (8 * frame_bytes))


def netem_args(link: LinkParams, frame_bytes: int = FRAME_BYTES) -> str:
    """netem under the HTB class. Its limit counts the packets being delayed
    as well as those queued, so the delay line's share is added to the queue."""
    args = f"netem limit {link.queue_pkts + netem_in_flight_pkts(link, frame_bytes)}"
    if link.delay_ms:
        args += f" delay {link.delay_ms:g}ms"
        if link.jitter_ms:
            args += f" {link.jitter_ms:g}ms"
    if link.loss_pct:
        args += f" loss {link.loss_pct:g}%"
    return args


def nfqueue_rules(rules: list[tuple[str, int]]) -> list[str]:
    """`iptables-restore --noflush` input sending what arrives on each
    interface to its netfilter queue. The raw table runs before connection
    tracking, which stays off."""
    if not rules:
        return []
    return ["*raw", *(f"-A PREROUTING -i {intf} -j NFQUEUE --queue-num {queue}"
                      for intf, queue in rules), "COMMIT"]


def offload_commands(intf: str, link: LinkParams) -> list[str]:
    """Shell lines setting segmentation offloads on a host interface.

    With TSO/GSO off the host hands the fabric MTU-sized frames only (veth GRO
    is off by default, so routers never merge them), so every switch's queue
    limit in packets is a limit in MTU packets. Not the host's own queue:
    TCP builds GSO packets whatever the device offers (Linux 4.13 on) and the
    device splits them after its qdisc, so the host's HTB holds and releases
    up to 64 KB at a time (docs/methodology.md, item 3).
    """
    state = "on" if link.offload else "off"
    return [f"ethtool -K {intf} tso {state} gso {state}"]
