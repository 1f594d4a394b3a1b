"""Datacenter topologies as plain data (Mininet `Topo` subclasses).

A topology only describes: node names, roles, addresses and links with port
numbers. A fabric (see `emulator/fabrics/l3.py`) builds the network from it.

FatTree(k), after Al-Fares et al. (SIGCOMM 2008), k even:

  * k pods; each pod has k/2 edge and k/2 aggregation switches.
  * (k/2)^2 core switches; core j links to aggregation switch j // (k/2)
    of every pod.
  * k/2 hosts under every edge switch: k^3/4 hosts, 5k^2/4 switches.

Names and addresses (deterministic; p = pod, e = edge index, a = aggregation
index, i = host index, all from 0):

  =========  =================  =====================================
  node       name               address
  =========  =================  =====================================
  host       h{p}_{e}_{i}       10.p.e.(i+2)        on h..-eth0
  edge       e{p}_{e}           10.p.e.1            router id
  agg        a{p}_{a}           10.p.(k/2+a).1      router id
  core       c{j}               10.k.(j//(k/2)+1).(j%(k/2)+1)  router id
  =========  =================  =====================================

Interface names are `<node>-eth<port>`. Port numbers: a host's port 0 faces
its edge switch; an edge switch's ports 0..k/2-1 face its hosts and
k/2..k-1 its aggregation switches; an aggregation switch's ports 0..k/2-1
face the pod's edge switches and k/2..k-1 the core; core ports are the pods.

A host may carry several interfaces: each link's `params1`/`params2` holds the
address of the interface at that end (`{'ip': '10.0.0.2/32'}`), as Mininet
does, so a multi-homed host simply has several links with addresses. A link
may carry its own shaping, `addLink(..., link=LinkParams(...))` (rate, queue,
delay, loss); links without one get the fabric's.

DHFT(k), the dual-homed FatTree of the paper (Section 5), k divisible by 4:
the same aggregation and core switches as FatTree(k), but every edge switch
is replaced by a pair of edge switches (a "rack") and every host has one
interface on each of the two. The paper's construction, for k-port switches:

  * each rack's two edge switches have k/2 uplinks between them, k/4 each;
    each has hosts_per_rack downlinks, one per host; hosts_per_rack defaults
    to round(2k/3), the paper's 2k/3 (8 at k=12, 3 at k=4), so an edge
    switch has 11k/12 ports (rounded);
  * k/2 racks per pod: (k/2) * hosts_per_rack hosts per pod;
  * edge switch 2r (plane 0) of rack r uplinks to aggregation switches
    0..k/4-1, edge switch 2r+1 (plane 1) to k/4..k/2-1. Aggregation and core
    wiring is FatTree's, so the two planes never meet: a host's first
    interface reaches every other host's first interface through plane 0,
    its second interface the second interfaces through plane 1. A subflow
    keeps to the plane of the address it is bound to.

  =========  =================  =====================================
  node       name               address
  =========  =================  =====================================
  host       h{p}_{r}_{i}       10.p.(2r).(i+2)   on h..-eth0 (plane 0)
                                10.p.(2r+1).(i+2) on h..-eth1 (plane 1)
  edge       e{p}_{2r+x}        10.p.(2r+x).1     router id (plane x)
  agg        a{p}_{a}           10.p.(k+a).1      router id
  core       c{j}               as FatTree
  =========  =================  =====================================

  Switch ports, `switch_ports()`: FatTree(4) 80 for 16 hosts (5 per host),
  DHFT(4) 112 for 24 hosts (4.67 per host), DHFT(12) 2880 for 576 hosts (5
  per host, the paper's "same cost as a FatTree"). Between hosts in different
  pods a plane offers (k/4)(k/2) paths (2 at k=4), within a pod k/4, and
  within a rack one (the shared edge switch).

PerfectSwitch(k): the paper's control: DHFT(k)'s hosts (same names, racks
and first addresses), each with one interface on a single non-blocking
switch. The same traffic matrix runs on both.

VL2(d_a, d_i): the paper's other Clos network (§4.3.1), fewer and faster
links above the racks; FatTree(k, oversubscription=4): the 4:1
oversubscribed FatTree of §4.3.3 (both classes say how they are built).

WiFi3G: a sender and a receiver with one interface per path (see the class).
NSwitch(n): the same with n alike paths, one switch each.

TwoPaths: a multi-homed sender and receiver joined by two disjoint
bottlenecks, and a single-homed pair whose traffic crosses one of them: the
shared-bottleneck and path-shifting tests of coupled congestion control.

The package: base.py (DCTopo, what every topology is), clos.py (FatTree,
VL2, DHFT, PerfectSwitch), bcube.py, paths.py (WiFi3G, NSwitch, TwoPaths).
"""
import importlib

# The topologies are Mininet Topos; the package's other modules (traffic
# matrices, the models) are standard library only and must import on a
# machine without Mininet, so the topologies load on first use (PEP 562).
_WHERE = {
    "dctopo.base": ("DCTopo", "Interface", "Route", "SourceRule", "intf_name"),
    "dctopo.bcube": ("BCUBE_RULE_PRIORITY", "BCUBE_TABLE", "BCube"),
    "dctopo.clos": ("DHFT", "VL2", "FatTree", "PerfectSwitch", "dhft_hosts_per_rack"),
    "dctopo.paths": ("NSwitch", "Provisioned", "TwoPaths", "WiFi3G"),
}
_MODULE_OF = {name: module for module, names in _WHERE.items() for name in names}
__all__ = list(_MODULE_OF)


def __getattr__(name: str):
    if name not in _MODULE_OF:
        raise AttributeError(f"module 'dctopo' has no attribute {name!r}")
    return getattr(importlib.import_module(_MODULE_OF[name]), name)
