"""How many subflows a FatTree needs: the analytic model of Raiciu et al.,
SIGCOMM 2011, §4.3.2 (Fig. 6).

m-way multipath on a k-ary FatTree under a permutation traffic matrix with
random, independent routing: each of a connection's m paths carries weight
1/m. The weight on an access link is always 1; on a within-pod link
(edge-aggregation) it is random with mean E_p and variance V_p, on a
pod-core link with mean E_c and variance V_c:

    E_p = 1 - n2/n1                          E_c = 1 - n1/n0
    V_p = E_p ((m-1)/(m n2) + 1/m + (1 - 1/n2)(1 - (n2-1)/(n0-1)) - E_p)
    V_c = E_c ((m-1)/(m n1) + 1/m + (1 - 1/n1)(1 - (n1-1)/(n0-1)) - E_c)
    n0 = k^3/4 (hosts), n1 = k^2/4 (hosts in a pod), n2 = k/2 (hosts in a rack)

E_p is the share of flows that leave their rack, E_c of those that leave
their pod. The paper: "Almost independent of the size of the network, the
variance settles down above eight subflows"; the model "is too simplistic to
predict throughput".
"""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class FatTreeSizes:
    """A k-ary FatTree's host counts the model uses."""
    k: int

    def __post_init__(self):
        if self.k < 4 or self.k % 2:
            raise ValueError(f"k={self.k}: the model needs an even k of at least 4")

    @property
    def n0(self) -> int:
        """Hosts in the network."""
        return self.k ** 3 // 4

    @property
    def n1(self) -> int:
        """Hosts in a pod."""
        return self.k ** 2 // 4

    @property
    def n2(self) -> int:
        """Hosts in a rack (under one edge switch)."""
        return self.k // 2


def _mean_and_variance(m: int, n_local: int, n_scope: int, n0: int) -> tuple[float, float]:
    """(E, V) of the weight on a link leading out of a group of `n_local`
    hosts within `n_scope` (rack in pod: n2, n1; pod in network: n1, n0)."""
    if m < 1:
        raise ValueError(f"m={m}: at least one subflow")
    mean = 1 - n_local / n_scope
    spread = (m - 1) / (m * n_local) + 1 / m
    others = (1 - 1 / n_local) * (1 - (n_local - 1) / (n0 - 1))
    return mean, mean * (spread + others - mean)


def within_pod(k: int, m: int) -> tuple[float, float]:
    """(E_p, V_p): the weight on an edge-aggregation link."""
    s = FatTreeSizes(k)
    return _mean_and_variance(m, s.n2, s.n1, s.n0)


def pod_core(k: int, m: int) -> tuple[float, float]:
    """(E_c, V_c): the weight on an aggregation-core link."""
    s = FatTreeSizes(k)
    return _mean_and_variance(m, s.n1, s.n0, s.n0)


def variance_table(ks: tuple[int, ...], max_subflows: int) -> dict:
    """Every k's E_p, V_p, E_c, V_c for m = 1..max_subflows, as plain data
    (what the model's record holds and its figure draws)."""
    ms = list(range(1, max_subflows + 1))
    out = {"subflows": ms, "k": {}}
    for k in ks:
        pods = [within_pod(k, m) for m in ms]
        cores = [pod_core(k, m) for m in ms]
        out["k"][str(k)] = {"hosts": FatTreeSizes(k).n0,
                            "E_p": pods[0][0], "V_p": [v for _, v in pods],
                            "E_c": cores[0][0], "V_c": [v for _, v in cores]}
    return out
