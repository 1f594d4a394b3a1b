"""The smallest routed network the real-network tests measure on: two hosts
and one router (h0 - r0 - h1), built by the l3 fabric."""
from __future__ import annotations

import contextlib

from dctopo import DCTopo


class TwoHostsOneRouter(DCTopo):
    def build(self):
        r = self.addSwitch("r0", role="edge", router_id="10.9.0.1", dpid="0000000000000001")
        for i in range(2):
            h = self.addHost(f"h{i}", role="host")
            self.addLink(h, r, port1=0, port2=i, params1={"ip": f"10.9.0.{i + 2}/32"})


def payload_share(fabric) -> float:
    """TCP payload per full frame on the fabric's links: the MTU less IP and
    TCP headers with timestamps (52 bytes), over the frame (1448 of 1514)."""
    return (fabric.mtu - 52) / fabric.frame_bytes


@contextlib.contextmanager
def host_pair(path_manager: bool = False):
    """(fabric, processes, path manager or None): h0 - r0 - h1 at 20 Mb/s with
    20-packet queues, each host with the sysctls a run sets (reno), and with
    `path_manager` our userspace path manager attached to both. Everything
    is torn down on the way out."""
    from base.procs import ProcessTracker, run
    from emulator.fabrics.l3 import L3Fabric
    from experiments.config import LinkParams
    from kernel import transport
    from kernel.mptcp_pm import UserspacePM

    fabric = L3Fabric(TwoHostsOneRouter(), LinkParams(bw_mbps=20, queue_pkts=20))
    procs, pm = ProcessTracker(), UserspacePM() if path_manager else None
    try:
        fabric.start()
        settings = transport.host_sysctls("reno")
        for h in fabric.hosts():
            run(["sysctl", "-q", "-w", *(f"{k}={v}" for k, v in settings.items())], 10,
                ns_pid=fabric.pid(h))
            if pm:
                pm.attach(h, fabric.pid(h))
        if pm:
            pm.start()
        yield fabric, procs, pm
    finally:
        procs.stop_all()
        if pm:
            pm.close()
        fabric.stop()
