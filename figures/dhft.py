"""`dhft`, the dual-homed FatTree (paper Section 5): aggregate throughput of TCP on
DHFT, MPTCP on DHFT and TCP on the perfect switch, against rack locality
(paper Fig. 15, 18) and, relative to the perfect switch, against load
(connections per host, paper Fig. 16).

Reads results/dhft<k>/<sweep>/<scheme>/<value>/run.json. The locality figure
puts each run at the share of rack-local flows its matrix really has; dashed
lines are what the perfect switch (one link per host) and DHFT's host links
(two per host) can carry at most. Invalid runs are red crosses, with their
flags written under the figure.
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path

import matplotlib.pyplot as plt

from base import records
from figures import rack_seeds
from figures.drawing import (Drawn, connections_axis, draw_sweeps, mark_invalid, reference_lines,
                             save_sweep_figure)
from figures.experiment_records import records_by_topology
from figures.runs import driver_text
from figures.style import FLAG_COLOR, scheme_style
from figures.tables import points_table, section_head

SCHEMES = {"tcp_dhft": scheme_style("tcp", "TCP on DHFT"),
           "mptcp_dhft": scheme_style("mptcp", "MPTCP on DHFT"),
           "tcp_perfect": scheme_style("tcp_perfect")}
SWEEPS = ("locality", "load")
TOPOLOGY_DIR = re.compile(r"dhft(\d+)(-seed\d+)?")


@dataclass
class Point:
    x: float                 # share of rack-local flows, or connections per host
    aggregate_mbps: float
    valid: bool
    flags: list[str]
    record: dict = field(default_factory=dict)


def parse_point(path: Path) -> tuple[str, str, Point]:
    doc = json.loads(path.read_text())
    cfg = doc["config"]
    x = float(doc["local_fraction"]) if cfg["sweep"] == "locality" else float(cfg["x"])
    return cfg["sweep"], cfg["scheme"], Point(x, float(doc["aggregate_mbps"]), bool(doc["valid"]),
                                              list(doc.get("flags") or []), doc)


def load(results: Path) -> dict[str, dict[str, dict[str, list[Point]]]]:
    """{"dhft<k>": {sweep: {scheme: points sorted by x}}}, locality first;
    unreadable records are noted and skipped."""
    return records_by_topology(results, records.of("dhft"), TOPOLOGY_DIR, parse_point, SWEEPS,
                               SCHEMES)


def _subtitle(schemes: dict[str, list[Point]]) -> str:
    """The settings every run of the figure shares, from one of its records."""
    r = next(p for pts in schemes.values() for p in pts).record
    c = r["config"]
    mptcp = schemes.get("mptcp_dhft") or []
    subflows = mptcp[0].record["config"]["subflows"] if mptcp else "?"
    return (f"k={c['k']}, {r.get('hosts')} hosts ({c.get('hosts_per_rack')} per rack), "
            f"{c['bw_mbps']:g} Mb/s links, {c['queue_pkts']} pkt queues,\n"
            f"MPTCP {subflows} subflows, cc {c['cc']}, fabric {c['fabric']}{driver_text(c)}, "
            f"{c['time_s']:g} s after {c['warmup_s']:g} s warm-up")


def _flagged(label: str, p: Point, what: str) -> str:
    return f"{label} at {what}: {', '.join(p.flags)}"


def draw_locality(schemes: dict[str, list[Point]], out: Path) -> Drawn:
    fig, ax = plt.subplots(figsize=(8, 5), layout="constrained")
    first = next(p for pts in schemes.values() for p in pts)
    hosts, link = first.record.get("hosts"), first.record.get("link_mbps")
    if hosts and link:
        reference_lines(ax, [(2 * hosts * link, "two links per host (DHFT)"),
                             (hosts * link, "one link per host (perfect switch)")], 0.01, "bottom")
    flagged = []
    for scheme, style in SCHEMES.items():
        pts = schemes.get(scheme, [])
        if not pts:
            continue
        ax.plot([100 * p.x for p in pts], [p.aggregate_mbps for p in pts], color=style.colour,
                marker=style.marker, ms=6, linewidth=1.5, label=style.label, zorder=3)
        flagged += mark_invalid(ax, style.label, pts, lambda p: 100 * p.x, lambda p: p.aggregate_mbps,
                                lambda p: f"{p.x:.0%} local")
    ax.set_xlabel("rack-local flows (%)")
    ax.set_ylabel("aggregate goodput (Mb/s)")
    ax.set_xlim(-3, 103)
    ax.set_ylim(bottom=0)
    ax.grid(alpha=0.3)
    ax.set_title(f"Dual-homed FatTree: throughput against locality (permutation)\n"
                 f"{_subtitle(schemes)}", fontsize=9)
    return save_sweep_figure(fig, out, {s: [(p.x, p.aggregate_mbps, p.valid) for p in pts]
                                        for s, pts in schemes.items()}, flagged, ncol=3)


def relative_to_perfect(schemes: dict[str, list[Point]]) -> dict[str, list[tuple[float, float, bool]]]:
    """{scheme: [(connections per host, aggregate / perfect switch's, both valid)]}
    at the loads the perfect switch ran."""
    perfect = {p.x: p for p in schemes.get("tcp_perfect", [])}
    out = {}
    for scheme in ("tcp_dhft", "mptcp_dhft"):
        out[scheme] = [(p.x, p.aggregate_mbps / perfect[p.x].aggregate_mbps,
                        p.valid and perfect[p.x].valid)
                       for p in schemes.get(scheme, [])
                       if p.x in perfect and perfect[p.x].aggregate_mbps > 0]
    return out


def draw_load(schemes: dict[str, list[Point]], out: Path) -> Drawn:
    fig, ax = plt.subplots(figsize=(8, 5), layout="constrained")
    rel = relative_to_perfect(schemes)
    ax.axhline(1.0, color=SCHEMES["tcp_perfect"].colour, linestyle="--", linewidth=1.2,
               label=SCHEMES["tcp_perfect"].label + " (= 1)", zorder=2)
    flagged = [_flagged(SCHEMES[s].label, p, f"{p.x:g} connections")
               for s, pts in schemes.items() for p in pts if not p.valid]
    for scheme in ("tcp_dhft", "mptcp_dhft"):
        style = SCHEMES[scheme]
        pts = rel[scheme]
        if not pts:
            continue
        ax.plot([x for x, _, _ in pts], [y for _, y, _ in pts], color=style.colour,
                marker=style.marker, ms=6, linewidth=1.5, label=style.label, zorder=3)
        for x, y, valid in pts:
            if not valid:
                ax.plot(x, y, "x", color=FLAG_COLOR, ms=11, mew=2, zorder=4)
    missing = sorted({p.x for s in ("tcp_dhft", "mptcp_dhft") for p in schemes.get(s, [])}
                     - {p.x for p in schemes.get("tcp_perfect", [])})
    if missing:
        flagged.append("no perfect-switch run at " + ", ".join(f"{x:g}" for x in missing)
                       + " connections: not drawn")
    xs = sorted({p.x for pts in schemes.values() for p in pts})
    connections_axis(ax, xs, "connections per host (random destinations; below 1, that share of hosts sends)")
    ax.set_ylabel("aggregate goodput relative to the perfect switch")
    ax.set_ylim(0, max([2.1] + [y * 1.1 for pts in rel.values() for _, y, _ in pts]))
    ax.grid(alpha=0.3)
    ax.set_title(f"Dual-homed FatTree: throughput against load\n{_subtitle(schemes)}", fontsize=9)
    return save_sweep_figure(fig, out, rel, flagged, ncol=3, what_is_flagged="INVALID (red x) or missing")


DRAW = {"locality": draw_locality, "load": draw_load}


def draw_all(results: Path, plots: Path) -> dict[str, tuple[Path, Drawn]]:
    """Every `dhft` figure with at least one run: {"dhft<k>-<sweep>": (png, what it shows)}."""
    return {**draw_sweeps(load(results), plots, DRAW), **rack_seeds.draw_all(results, plots, "dhft")}


def crossing(schemes: dict[str, list[Point]]) -> float | None:
    """The smallest locality at which MPTCP on DHFT carries more than the
    perfect switch's mean over the sweep (None if it never does)."""
    perfect = [p.aggregate_mbps for p in schemes.get("tcp_perfect", [])]
    if not perfect:
        return None
    level = sum(perfect) / len(perfect)
    return next((p.x for p in schemes.get("mptcp_dhft", []) if p.aggregate_mbps > level), None)


# The section's title and what its tables show.
REPORT_HEAD = """\
## Dual-homed FatTree (`dhft`; paper Section 5, Fig. 15-16)

Aggregate goodput (Mb/s) of all flows after the warm-up; `!` marks an
invalid run. The paper (k=12, 576 hosts): MPTCP on DHFT passes the perfect
switch from 12 % rack-local traffic, and reaches nearly twice the perfect
switch at light to medium load.
"""


def report_lines(results: Path) -> list[str]:
    """report.md's `dhft` section: aggregate goodput per point and scheme."""
    data = load(results)
    lines = section_head(REPORT_HEAD) if data else []
    for topology, sweeps in data.items():
        for sweep, schemes in sweeps.items():
            png = f"plots/{topology}-{sweep}.png"
            head = "rack-local flows" if sweep == "locality" else "connections per host"
            lines += [f"### {topology}: against {sweep}", "", f"![{topology} {sweep}]({png})", ""]

            def row(x, by):
                cells = ["–" if p is None else f"{p.aggregate_mbps:.1f}{'' if p.valid else ' !'}"
                         for p in by.values()]
                perfect = by["tcp_perfect"]
                ratios = [f"{by[s].aggregate_mbps / perfect.aggregate_mbps:.2f}"
                          if by[s] and perfect and perfect.aggregate_mbps > 0 else "–"
                          for s in ("mptcp_dhft", "tcp_dhft")]
                return [f"{x:.0%}" if sweep == "locality" else f"{x:g}", *cells, *ratios]
            lines += points_table(schemes, {s: SCHEMES[s].label for s in SCHEMES}, head,
                                  ["MPTCP / perfect", "TCP / perfect"], row)
            if sweep == "locality":
                cross = crossing(schemes)
                lines += ["", "MPTCP on DHFT first carries more than the perfect switch (its mean "
                          "over the sweep) at " + (f"{cross:.0%} rack-local flows." if cross is not None
                                                   else "no locality of this sweep.")]
            lines.append("")
    return lines + rack_seeds.report_lines(results, "dhft")
