"""A link slowed for a window of each run: the paper's 1 Gb/s core link
falling back to 100 Mb/s (Raiciu et al. 2011 Fig. 11 and 19). `hotspot` (on a
FatTree) and `linkfailure` (Fig. 19, on a DHFT) run it; a run
starts it with its traffic and puts what it did into run.json."""
from __future__ import annotations

import threading
import time

from base.procs import CommandError
from emulator.fabrics.common import Fabric

# The link both experiments slow: the first aggregation switch of pod 0 to
# the first core switch. It exists in FatTree(k) and DHFT(k) alike (in the
# DHFT, on plane 0).
DEFAULT_LINK = ("a0_0", "c0")


class HotLink:
    """One link, both directions, slowed to `factor` of its rate from
    `window[0]` to `window[1]` seconds after each run's traffic starts.

    Hosts that can send over it are those in the pod of its aggregation
    switch (a quarter of a FatTree(4)'s paths from them cross it); they are
    listed in the run's record."""

    def __init__(self, fabric: Fabric, bw_mbps: float, factor: float, window: tuple[float, float],
                 link: tuple[str, str] = DEFAULT_LINK):
        topo = fabric.topo
        self.fabric = fabric
        self.bw_mbps = bw_mbps
        self.factor = factor
        self.window = window
        self.agg, self.core = link
        [up] = [i for i in topo.interfaces(self.agg) if i.peer == self.core]
        self.ends = [(self.agg, up.port), (self.core, up.peer_port)]
        self.agg_interface = up.name
        pod = topo.nodeInfo(self.agg).get("pod")
        self.exposed = sorted(h for h in topo.hosts() if topo.nodeInfo(h).get("pod") == pod)
        self._timers: list[threading.Timer] = []
        self._lock = threading.Lock()
        self._slow = False

    def start(self) -> None:
        self._t0 = time.monotonic()
        self.applied: dict[str, float] = {}
        self.errors: list[str] = []
        self._timers = [threading.Timer(self.window[0], self._set, ("slowed", True)),
                        threading.Timer(self.window[1], self._set, ("restored", False))]
        for t in self._timers:
            t.daemon = True
            t.start()

    def _set(self, what: str, slow: bool) -> None:
        rate = self.bw_mbps * self.factor if slow else self.bw_mbps
        with self._lock:
            try:
                for node, port in self.ends:
                    self.fabric.set_rate(node, port, rate)
                self._slow = slow
                self.applied[what] = round(time.monotonic() - self._t0, 2)
            except CommandError as exc:
                self.errors.append(f"{what}: {exc}")

    def stop(self) -> dict:
        """Cancel what has not happened, put the link back to its rate, and
        say what was done (seconds since the traffic started)."""
        for t in self._timers:
            t.cancel()
        for t in self._timers:
            t.join(timeout=15)
        if self._slow:
            self._set("restored", False)
        return {
            "kind": "hot_link",
            "link": f"{self.agg}-{self.core}",
            "factor": self.factor,
            "planned_s": [round(x, 2) for x in self.window],
            "applied_s": dict(self.applied),
            "exposed_hosts": self.exposed,
            "errors": list(self.errors),
        }
