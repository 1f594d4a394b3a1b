"""Links between servers: when one network is spread over several servers
(dctopo/placement.py), a link whose two ends run on different servers is a
tunnel between the servers' own addresses.

Each end is a VXLAN device made in the namespace that holds its server's
address, then moved into the node's namespace: its UDP socket stays where
it was made, and the node shapes and queues the device like any veth end
(Fabric.link_script). VXLAN, not GRE: this kernel has no GRE
(CONFIG_NET_IPGRE_DEMUX is not set), and VXLAN is in every stock kernel.
Every link of a spread network gets the tunnel's MTU, so that the fabric
carries frames of one size and a queue of N packets is N frames everywhere.
"""
from __future__ import annotations

import contextlib
from dataclasses import dataclass

from base.procs import run

VXLAN_PORT = 4789          # IANA's port for VXLAN
# Outer Ethernet 14 + IPv4 20 + UDP 8 + VXLAN 8 bytes around each inner frame.
VXLAN_OVERHEAD = 50
UNDERLAY_MTU = 1500


def tunnel_mtu(underlay_mtu: int = UNDERLAY_MTU) -> int:
    """The inner MTU whose frames fit the underlay's without fragments."""
    return underlay_mtu - VXLAN_OVERHEAD


@dataclass(frozen=True)
class Server:
    """One server a network is spread over: its name, the address tunnels
    reach it at, and the namespace holding that address (None: the root)."""
    name: str
    address: str
    ns_pid: int | None = None


def vxlan_end(intf: str, vni: int, local: Server, remote: Server, node_pid: int, mtu: int,
              mac: str | None = None) -> list[str]:
    """`ip -batch` lines, run in `local`'s namespace: one end of a tunnelled
    link, moved into the node's namespace as `intf`."""
    address = f" address {mac}" if mac else ""
    return [f"link add {intf}{address} mtu {mtu} type vxlan id {vni} local {local.address} "
            f"remote {remote.address} dstport {VXLAN_PORT} nolearning",
            f"link set {intf} netns {node_pid}"]


COORDINATOR_ADDRESS = "10.254.0.254"   # this machine's own leg on local_servers' LAN


@contextlib.contextmanager
def local_servers(count: int, reachable: bool = False):
    """`count` Servers on this machine for tests and benchmarks: each a
    namespace (a Mininet node) with one veth on a bridge in a namespace of
    its own, addressed 10.254.0.<i+1>/24. `reachable`: the root namespace
    gets a leg on that bridge too, at COORDINATOR_ADDRESS, as a coordinator
    reaches its servers. Everything goes with the bridge's namespace."""
    from emulator.fabrics.common import NsNode
    lan = NsNode("srvlan", inNamespace=True)
    nodes = [NsNode(f"srv{i}", inNamespace=True) for i in range(count)]
    try:
        lines = ["link add lan type bridge", "link set lan up"]
        for i, node in enumerate(nodes):
            lines += [f"link add s{i} type veth peer name up{i} netns {node.pid}",
                      f"link set s{i} master lan", f"link set s{i} up"]
        leg = f"srvlan{lan.pid}"[:15]
        if reachable:   # netns 1: the namespace of PID 1, the root one
            lines += [f"link add c type veth peer name {leg} netns 1", "link set c master lan",
                      "link set c up"]
        run(["ip", "-batch", "-"], timeout=30, ns_pid=lan.pid, input="\n".join(lines) + "\n")
        if reachable:
            run(["ip", "-batch", "-"], timeout=30,
                input=f"addr add {COORDINATOR_ADDRESS}/24 dev {leg}\nlink set {leg} up\n")
        servers = []
        for i, node in enumerate(nodes):
            address = f"10.254.0.{i + 1}"
            run(["ip", "-batch", "-"], timeout=30, ns_pid=node.pid,
                input=f"link set lo up\naddr add {address}/24 dev up{i}\nlink set up{i} up\n")
            servers.append(Server(f"srv{i}", address, node.pid))
        yield servers
    finally:
        for node in [*nodes, lan]:
            node.terminate()
