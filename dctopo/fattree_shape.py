"""FatTree(k)'s hosts and path lengths by arithmetic, without building the
Mininet topology: what the input check and `--plan` need on a machine where
nothing but the standard library is installed. Names are dctopo.clos.FatTree's
(h<pod>_<edge>_<i>, e<pod>_<edge>, a<pod>_<agg>, c<j>); tests/test_placement.py
checks that both agree."""
from __future__ import annotations


class FatTreeShape:
    def __init__(self, k: int):
        self.k = k

    def hosts(self) -> list[str]:
        half = self.k // 2
        return sorted(f"h{p}_{e}_{i}" for p in range(self.k) for e in range(half) for i in range(half))

    def switches(self) -> list[str]:
        half = self.k // 2
        return ([f"e{p}_{e}" for p in range(self.k) for e in range(half)]
                + [f"a{p}_{a}" for p in range(self.k) for a in range(half)]
                + [f"c{j}" for j in range(half * half)])

    def links(self) -> list[tuple[str, str]]:
        """Every link as (lower node, upper node): host-edge, edge-agg, agg-core."""
        half = self.k // 2
        out = []
        for p in range(self.k):
            for e in range(half):
                out += [(f"h{p}_{e}_{i}", f"e{p}_{e}") for i in range(half)]
                out += [(f"e{p}_{e}", f"a{p}_{a}") for a in range(half)]
            out += [(f"a{p}_{a}", f"c{a * half + c}") for a in range(half) for c in range(half)]
        return out

    @staticmethod
    def path_links(src: str, dst: str) -> int:
        """Links on a shortest path: 2 under one edge switch, 4 within a pod, 6 across the core."""
        if src == dst:
            return 0
        (sp, se, _), (dp, de, _) = (name[1:].split("_") for name in (src, dst))
        return 2 if (sp, se) == (dp, de) else 4 if sp == dp else 6
