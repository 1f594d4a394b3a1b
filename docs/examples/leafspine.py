"""A leaf-spine fabric: 4 leaves of 4 hosts each, every leaf linked to each
of 4 spines. The hosts' links run at the sweep's --bw; the leaves' uplinks
are given their own rate with Mininet's TCLink arguments, here the same
10 Mb/s, so a leaf's 4 uplinks carry what its 4 hosts can send.

    sudo ./run_mptcp.sh --topo docs/examples/leafspine.py:leafspine \\
        --matrix docs/examples/leafspine.csv --subflows 1,4
"""
from mininet.topo import Topo

LEAVES, SPINES, HOSTS_PER_LEAF = 4, 4, 4


class LeafSpine(Topo):
    def build(self, uplink_mbps=10):
        spines = [self.addSwitch(f"s{j}") for j in range(SPINES)]
        for i in range(LEAVES):
            leaf = self.addSwitch(f"l{i}")
            for h in range(HOSTS_PER_LEAF):
                self.addLink(self.addHost(f"h{i}_{h}"), leaf)
            for spine in spines:
                self.addLink(leaf, spine, bw=uplink_mbps, max_queue_size=100)


topos = {"leafspine": LeafSpine}
