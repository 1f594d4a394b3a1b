"""Link shaping that holds on kernels without sch_netem.

Mininet's TCLink puts the queue limit into netem, which this kernel lacks, so
the limit silently disappears. Here every interface at both ends of a link
gets an HTB class at the link rate with a packet FIFO of `queue_pkts` under
it: the rate is HTB's and the queue is the pfifo's, both present on a stock
kernel. Delay and loss need netem or another mechanism and are refused here
rather than dropped silently.
"""
from __future__ import annotations

from harness.config import LinkParams

# A single class never borrows, so HTB's quantum only has to hold one frame;
# setting it avoids the kernel's "quantum is big" warning at high rates.
HTB_QUANTUM = 1514


def tc_batch(intf: str, link: LinkParams) -> list[str]:
    """`tc -batch` lines shaping `intf`'s egress to the link's rate and queue."""
    rate = f"{link.bw_mbps:g}mbit"
    return [
        f"qdisc replace dev {intf} root handle 1: htb default 1",
        f"class replace dev {intf} parent 1: classid 1:1 htb rate {rate} ceil {rate} "
        f"quantum {HTB_QUANTUM}",
        f"qdisc replace dev {intf} parent 1:1 handle 10: pfifo limit {link.queue_pkts}",
    ]


def offload_commands(intf: str, link: LinkParams) -> list[str]:
    """Shell lines setting segmentation offloads on a host interface.

    With TSO/GSO off the host hands the fabric MTU-sized frames only (veth GRO
    is off by default, so routers never merge them), so every queue limit in
    packets is a limit in MTU packets.
    """
    state = "on" if link.offload else "off"
    return [f"ethtool -K {intf} tso {state} gso {state}"]
