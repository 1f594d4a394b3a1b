"""Link failure on the dual-homed FatTree (paper Fig. 19, §6.2).

On DHFT(k), under a zero-locality permutation (every flow leaves its rack,
so the core carries everything), core link a0_0-c0 runs at a tenth of its
rate (both directions) during the middle third of the counted time, then
gets its rate back: the paper's core link downgraded from 1 Gb/s to
100 Mb/s four minutes into a run. Single-path TCP cannot avoid the link (a
slow link triggers no re-routing); MPTCP's coupled congestion control
should move its traffic to the other paths and keep its aggregate.

Each scheme (TCP on DHFT, MPTCP on DHFT) runs the same matrix on the same
network. A tap on the link's aggregation end (monitor/linktap.py) records
which connections crossed it and the rate it ran at in each direction, from
a few seconds before it slows to a few seconds after it is restored. The
record's "hot_link" holds, per phase (before, during, after): the
aggregate goodput of all flows, the goodput of the flows that crossed the
link (split by the direction they crossed it in) and the link's own rate.

Results: results/linkfailure<k>-<fabric>/<scheme>/run.json with cpu.csv and
the driver's logs; `--fabric` picks l3 or openflow, one folder each.
"""
from __future__ import annotations

import math
import statistics

from dctopo import DHFT
from experiments.config import LinkFailureConfig, LinkFailurePoint
from experiments.hotlink import HotLink
from experiments.racknet import RackExperiment, RackNetwork
from monitor.linktap import LinkTap

SCHEME_LABELS = {"tcp_dhft": "TCP on DHFT", "mptcp_dhft": "MPTCP on DHFT"}
# The tap opens this long before the link slows and closes this long after
# it is restored (clipped to the counted time): the seconds "before" and
# "after" of the link's own rate, and which flows crossed it at full rate.
TAP_MARGIN_S = 5.0
PHASES = ("before", "during", "after")


class WatchedHotLink:
    """The degraded link (experiments/hotlink.py) and a tap on its
    aggregation end; what both did goes into run.json's "event"."""

    def __init__(self, net: RackNetwork, cfg: LinkFailureConfig):
        self.hot = HotLink(net.fabric, cfg.link.bw_mbps, cfg.factor, cfg.window)
        w0, w1 = cfg.window
        self.tap = LinkTap(net.fabric.pid(self.hot.agg), self.hot.agg_interface,
                           (max(cfg.warmup, w0 - TAP_MARGIN_S),
                            min(cfg.warmup + cfg.time_s, w1 + TAP_MARGIN_S)))

    def start(self) -> None:
        self.hot.start()
        self.tap.start()

    def stop(self) -> dict:
        record = self.hot.stop()
        record["tap"] = tap = self.tap.stop()
        record["errors"] += [f"tap: {e}" for e in tap["errors"]]
        return record


def phase_seconds(warmup_s: float, time_s: float, window: tuple[float, float]) -> dict[str, range]:
    """The whole seconds (second i covers [i, i+1) from the traffic's start)
    of each phase of the counted time."""
    w0, w1 = window
    return {"before": range(math.ceil(warmup_s), math.floor(w0)),
            "during": range(math.ceil(w0), math.floor(w1)),
            "after": range(math.ceil(w1), math.floor(warmup_s + time_s))}


def mean_of_sums(series: list[list[float]], seconds, first: int = 0) -> float | None:
    """The mean over `seconds` of the per-second sum of `series` (each
    starting at second `first`; a second a series lacks counts 0)."""
    sums = [sum(s[i - first] if 0 <= i - first < len(s) else 0.0 for s in series) for i in seconds]
    return round(statistics.fmean(sums), 3) if sums else None


def flows_on_link(flows: list[dict], tap: dict, host_of_ip: dict[str, str]) -> dict[int, list[float]]:
    """Flow index -> its payload Mb/s on the tapped link per tap second.
    A connection's data goes to the flow's server port on one of its
    receiver's addresses, whichever subflow carried it."""
    by_server = {(f["dst"], f["server_port"]): i for i, f in enumerate(flows)}
    out: dict[int, list[float]] = {}
    for conn in tap["connections"]:
        i = by_server.get((host_of_ip.get(conn["dst"]), conn["dport"]))
        if i is None:
            continue          # an ACK-only or foreign connection
        mine = out.setdefault(i, [0.0] * len(conn["per_second_mbps"]))
        out[i] = [a + b for a, b in zip(mine, conn["per_second_mbps"])]
    return out


def hot_link_summary(record: dict, cfg: LinkFailureConfig, host_of_ip: dict[str, str],
                     exposed_pod: set[str]) -> dict:
    """Per phase: every flow's aggregate goodput, that of the flows that
    crossed the link before it slowed (by direction: "out" from the
    link's pod, "in" into it) and the link's own rate; marks each flow."""
    flows, event = record["flows"], record.get("event") or {}
    tap = event.get("tap") or {"connections": [], "mbps": {}, "first_s": 0}
    phases = phase_seconds(cfg.warmup, cfg.time_s, cfg.window)
    on_link = flows_on_link(flows, tap, host_of_ip)
    first = tap["first_s"]
    tapped_seconds = len(tap["mbps"].get("out", []))

    def tapped(seconds) -> list[int]:
        """The seconds of a phase the tap was open for."""
        return [i for i in seconds if first <= i < first + tapped_seconds]
    before_tap = [i - first for i in tapped(phases["before"])]
    crossing = {i for i, s in on_link.items() if any(s[j] > 0 for j in before_tap if j < len(s))}
    for i, f in enumerate(flows):
        f["crosses_hot_link"] = i in crossing
        f["on_hot_link_mbps"] = [round(x, 4) for x in on_link.get(i, [])]
    series = [f["per_second_mbps"] for f in flows]
    direction = {i: "out" if flows[i]["src"] in exposed_pod else "in" for i in crossing}
    summary = {
        "link": event.get("link"), "rate_mbps": cfg.link.bw_mbps,
        "degraded_mbps": round(cfg.link.bw_mbps * cfg.factor, 4),
        "phases_s": {p: [s.start, s.stop] for p, s in phases.items()},
        "aggregate_mbps": {p: mean_of_sums(series, s) for p, s in phases.items()},
        "crossing_flows": sorted(crossing),
        "crossing_mbps": {d: {p: mean_of_sums([series[i] for i in crossing if direction[i] == d], s)
                              for p, s in phases.items()} for d in ("out", "in")},
        "link_mbps": {d: {p: mean_of_sums([tap["mbps"].get(d, [])], tapped(s), first)
                          for p, s in phases.items()} for d in ("out", "in")},
    }
    agg = summary["aggregate_mbps"]
    summary["aggregate_kept"] = (round(agg["during"] / agg["before"], 4)
                                 if agg["before"] and agg["during"] is not None else None)
    return summary


class LinkFailureExperiment(RackExperiment):
    name = "linkfailure"
    MPTCP_SCHEMES = ("mptcp_dhft",)

    def introduce(self) -> str:
        cfg = self.cfg
        w0, w1 = cfg.window
        return (f"linkfailure (Fig. 19): DHFT({cfg.k}) on fabric {cfg.fabric}, zero-locality "
                f"permutation; core link a0_0-c0 at {cfg.factor:g} of its rate from {w0:g} to "
                f"{w1:g} s; {len(cfg.schemes)} schemes, {cfg.warmup:g} + {cfg.time_s:g} s each")

    def run_dir(self, p: LinkFailurePoint):
        return p.run_dir(self.cfg.results, self.cfg.k, self.cfg.fabric)

    def topology(self, key: str) -> DHFT:
        return DHFT(k=self.cfg.k, hosts_per_rack=self.cfg.rack_size)

    def describe(self, p: LinkFailurePoint) -> str:
        return (f"linkfailure{self.cfg.k} {SCHEME_LABELS[p.scheme]}, "
                f"{self.cfg.time_s:g} s after {self.cfg.warmup:g} s warm-up")

    def during_run(self, net: RackNetwork, p: LinkFailurePoint) -> WatchedHotLink:
        self._watched = WatchedHotLink(net, self.cfg)
        return self._watched

    def run_point(self, net: RackNetwork, p: LinkFailurePoint, folder) -> dict:
        record = super().run_point(net, p, folder)
        host_of_ip = {ip: h for h in net.fabric.hosts() for ip in net.topo.host_addresses(h)}
        record["hot_link"] = hot_link_summary(record, self.cfg, host_of_ip,
                                              set(self._watched.hot.exposed))
        return record

    def config_record(self, net: RackNetwork, p: LinkFailurePoint, subflows: int) -> dict:
        cfg = self.cfg
        return {
            "k": cfg.k, "hosts_per_rack": net.topo.hosts_per_rack, "scheme": p.scheme,
            "workload": p.workload, "x": p.x, "subflows": subflows, **cfg.settings_record(),
            "factor": cfg.factor, "window_s": [round(x, 2) for x in cfg.window],
        }

    def summarise(self, record: dict) -> str:
        h = record["hot_link"]
        agg, out, into = h["aggregate_mbps"], h["crossing_mbps"]["out"], h["crossing_mbps"]["in"]
        kept = "–" if h["aggregate_kept"] is None else f"{h['aggregate_kept']:.0%}"
        fmt = lambda x: "–" if x is None else f"{x:.1f}"
        return (f"aggregate {fmt(agg['before'])} / {fmt(agg['during'])} / {fmt(agg['after'])} Mb/s "
                f"before / during / after ({kept} kept); {len(h['crossing_flows'])} flows crossed "
                f"{h['link']}: out {fmt(out['before'])} / {fmt(out['during'])}, in "
                f"{fmt(into['before'])} / {fmt(into['during'])} Mb/s (degraded to "
                f"{h['degraded_mbps']:g}); cpu {record['cpu_mean_pct']} %")
