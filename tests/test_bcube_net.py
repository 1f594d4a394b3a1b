"""BCube(4,1) built by the kernel-routing fabric: hosts relay between the
two levels, and each source interface starts its own path (dctopo.BCube)."""
from __future__ import annotations

import re

from base.procs import run
from dctopo import BCube
from emulator.fabrics.l3 import L3Fabric
from experiments.config import LinkParams
from tests.conftest import needs_root


def forwarded(fabric: L3Fabric, host: str) -> int:
    """The host namespace's Ip ForwDatagrams (/proc/PID/net/snmp)."""
    with open(f"/proc/{fabric.pid(host)}/net/snmp") as f:
        names, values = [line.split()[1:] for line in f if line.startswith("Ip:")]
    return int(dict(zip(names, values))["ForwDatagrams"])


@needs_root
def test_each_source_level_takes_its_own_relay(no_leftovers):
    """h0_0 (digits 0,0) to h3_3 (3,3): from its level-0 address the path
    corrects digit 0 first, through relay h0_3; from its level-1 address
    digit 1 first, through h3_0. Both reach either of h3_3's addresses."""
    topo = BCube(n=4, k=1)
    fabric = L3Fabric(topo, LinkParams(bw_mbps=100, queue_pkts=100))
    try:
        fabric.start()
        src, dst = topo.names.index("h0_0"), topo.names.index("h3_3")
        for level, relay in ((0, "h0_3"), (1, "h3_0")):
            other = {0: "h3_0", 1: "h0_3"}[level]
            before, before_other = forwarded(fabric, relay), forwarded(fabric, other)
            for dst_level in (0, 1):
                out = run(["ping", "-n", "-c", "5", "-i", "0.05", "-W", "2", "-I",
                           topo.address(src, level), topo.address(dst, dst_level)],
                          timeout=30, ns_pid=fabric.pid("h0_0"), check=False).stdout
                received = int(re.search(r"(\d+) received", out)[1])
                assert received == 5, (level, dst_level, out)
            # The 10 requests cross `relay`. A reply leaves h3_3 from the
            # address pinged, so its path starts on that level: from level 0
            # through h3_0, from level 1 through h0_3, 5 each.
            assert forwarded(fabric, relay) - before == 10 + 5, (level, relay)
            assert forwarded(fabric, other) - before_other == 5, (level, other)
    finally:
        fabric.stop()


@needs_root
def test_a_neighbour_is_reached_directly_or_by_a_detour(no_leftovers):
    """h0_0 to h0_3 differ in digit 0 only: from h0_0's level-0 address one
    hop, no host relays; from its level-1 address the path detours through
    h1_0 (digit 1 one higher), corrects digit 0 at h1_3, and returns on
    level 1. The replies, from h0_3's level-1 address, take the mirror
    detour through h1_3 and h1_0."""
    topo = BCube(n=4, k=1)
    fabric = L3Fabric(topo, LinkParams(bw_mbps=100, queue_pkts=100))
    try:
        fabric.start()
        src, dst = topo.names.index("h0_0"), topo.names.index("h0_3")
        relays = ("h1_0", "h1_3")
        for level, relayed in ((0, 0), (1, 10)):
            before = {h: forwarded(fabric, h) for h in relays}
            out = run(["ping", "-n", "-c", "5", "-i", "0.05", "-W", "2", "-I",
                       topo.address(src, level), topo.address(dst, level)],
                      timeout=30, ns_pid=fabric.pid("h0_0"), check=False).stdout
            assert int(re.search(r"(\d+) received", out)[1]) == 5, (level, out)
            assert {h: forwarded(fabric, h) - before[h] for h in relays} == \
                {h: relayed for h in relays}, level
    finally:
        fabric.stop()
