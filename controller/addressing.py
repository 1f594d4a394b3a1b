"""Names the OpenFlow fabric and its controller must agree on: a host
interface's MAC address, a switch's datapath id, a port's OpenFlow number.

Both sides derive them from the topology, so nothing is discovered by
flooding and the controller can answer ARP itself.
"""
from __future__ import annotations

import ipaddress

from dctopo import DCTopo


def host_mac(address: str) -> str:
    """A locally administered MAC that encodes the interface's IPv4 address
    (02:00:a.b.c.d), so the controller knows every host's MAC up front."""
    packed = ipaddress.ip_address(address.split("/")[0]).packed
    return "02:00:" + ":".join(f"{b:02x}" for b in packed)


def ofport(port: int) -> int:
    """OpenFlow port numbers start at 1; dctopo ports at 0."""
    return port + 1


def datapath_ids(topo: DCTopo) -> dict[str, int]:
    """switch -> datapath id: the topology's own where it gives one (FatTree,
    DHFT encode tier, pod and index), otherwise 1, 2, ... in name order."""
    ids = {}
    for n, switch in enumerate(sorted(topo.switches()), start=1):
        given = topo.nodeInfo(switch).get("dpid")
        ids[switch] = int(given, 16) if given else n
    return ids
