"""`wifi3g`, WiFi + 3G (CS244 '14; Raiciu et al., NSDI 2012, Fig. 4): goodput of TCP
over WiFi, TCP over 3G and MPTCP over both, against the receive buffer, the
WiFi loss rate and the WiFi RTT.

Reads results/wifi3g/<sweep>/<scheme>/<value>/run.json. Each point is the
median of its run's one-second samples, with the interquartile range as a
bar; dashed lines are what each path, and both together, can carry as TCP
goodput; the dotted line adds up the two TCP flows' medians (CS244 '14's
"aggregate TCP"). Invalid runs are drawn as red crosses with their flags.
A point run several times (--repeats) is the median of its runs' medians,
its bar their range; it is marked invalid if one of its runs is.
"""
from __future__ import annotations

import json
import statistics
from dataclasses import dataclass, field
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np

from base import records
from figures.drawing import Drawn, mark_invalid, reference_lines, save_sweep_figure
from figures.experiment_records import sweep_points
from figures.style import scheme_style
from figures.tables import points_table, section_head

SCHEMES = {"tcp_wifi": scheme_style("tcp_wifi"), "tcp_3g": scheme_style("tcp_3g"),
           "mptcp": scheme_style("mptcp", "MPTCP (WiFi + 3G)"),
           "mptcp_penalized": scheme_style("mptcp_penalized"), "mptcp_hold": scheme_style("mptcp_hold")}
MPTCP_SCHEMES = ("mptcp", "mptcp_penalized", "mptcp_hold")
# report.md's ratio columns, one per MPTCP scheme
RATIO_HEADS = {"mptcp": "MPTCP / TCP over WiFi", "mptcp_penalized": "penalized / TCP over WiFi",
               "mptcp_hold": "hold / TCP over WiFi"}
SWEEPS = {
    "buffer": ("receive buffer (KB)", "goodput against receive buffer", "wifi3g-buffer.png"),
    "loss": ("WiFi loss rate (%)", "goodput against WiFi loss", "wifi3g-loss.png"),
    "rtt": ("WiFi RTT (ms)", "goodput against WiFi RTT", "wifi3g-rtt.png"),
}


@dataclass
class Point:
    x: float
    median: float
    q25: float
    q75: float
    valid: bool
    flags: list[str]
    config: dict = field(default_factory=dict)
    capacity: dict = field(default_factory=dict)
    path_share: dict = field(default_factory=dict)
    runs: int = 1         # runs merged into this point (--repeats)


def parse_point(path: Path) -> tuple[str, str, Point]:
    doc = json.loads(path.read_text())
    cfg = doc["config"]
    samples = doc.get("samples_mbps") or [0.0]
    return cfg["sweep"], cfg["scheme"], Point(
        x=float(cfg["x"]), median=float(doc["goodput_mbps"]),
        q25=float(np.percentile(samples, 25)), q75=float(np.percentile(samples, 75)),
        valid=bool(doc["valid"]), flags=list(doc.get("flags") or []), config=cfg,
        capacity=doc.get("capacity_mbps") or {}, path_share=doc.get("path_share") or {})


def merge_repeats(pts: list[Point]) -> list[Point]:
    """One point per x, sorted: a point's runs as the median of their
    medians, the bar spanning them; invalid if any of its runs is."""
    by_x: dict[float, list[Point]] = {}
    for p in pts:
        by_x.setdefault(p.x, []).append(p)
    merged = []
    for x, runs in sorted(by_x.items()):
        if len(runs) == 1:
            merged.append(runs[0])
            continue
        medians = sorted(r.median for r in runs)
        merged.append(Point(
            x=x, median=statistics.median(medians), q25=medians[0], q75=medians[-1],
            valid=all(r.valid for r in runs), flags=sorted({f for r in runs for f in r.flags}),
            config=runs[0].config, capacity=runs[0].capacity,
            path_share={k: statistics.median(r.path_share.get(k, 0.0) for r in runs)
                        for k in runs[0].path_share},
            runs=len(runs)))
    return merged


def load(results: Path) -> dict[str, dict[str, list[Point]]]:
    """{sweep: {scheme: points sorted by x}}, a point's repeated runs merged;
    unreadable records are noted and skipped."""
    found = sweep_points(records.committed(results, records.of("wifi3g")), parse_point, SWEEPS, SCHEMES)
    return {sweep: {scheme: merge_repeats(pts) for scheme, pts in schemes.items()}
            for sweep, schemes in found.items()}


def draw(sweep: str, schemes: dict[str, list[Point]], out: Path) -> Drawn:
    xlabel, what, _ = SWEEPS[sweep]
    fig, ax = plt.subplots(figsize=(8, 5), layout="constrained")
    any_point = next(p for pts in schemes.values() for p in pts)
    wifi_cap, cell_cap = any_point.capacity.get("wifi"), any_point.capacity.get("3g")
    if wifi_cap and cell_cap:
        reference_lines(ax, [(wifi_cap + cell_cap, " both paths"), (wifi_cap, " WiFi path"),
                             (cell_cap, " 3G path")], 1.0, "center")
    flagged = []
    for scheme, style in SCHEMES.items():
        pts = schemes.get(scheme, [])
        if not pts:
            continue
        xs = [p.x for p in pts]
        ax.errorbar(xs, [p.median for p in pts],
                    yerr=[[max(0.0, p.median - p.q25) for p in pts],
                          [max(0.0, p.q75 - p.median) for p in pts]],
                    color=style.colour, marker=style.marker, ms=5, capsize=3, linewidth=1.5,
                    label=style.label, zorder=3)
        flagged += mark_invalid(ax, style.label, pts, lambda p: p.x, lambda p: p.median, lambda p: f"{p.x:g}")
    # the CS244 '14 reproduction's "aggregate TCP": what the two TCP flows get, added up.
    wifi_by_x = {p.x: p.median for p in schemes.get("tcp_wifi", [])}
    cell_by_x = {p.x: p.median for p in schemes.get("tcp_3g", [])}
    both = sorted(x for x in wifi_by_x if x in cell_by_x)
    if both:
        ax.plot(both, [wifi_by_x[x] + cell_by_x[x] for x in both], ":", color="#555555",
                linewidth=1.5, label="TCP over WiFi + TCP over 3G", zorder=2)
    if sweep in ("rtt", "buffer"):
        ax.set_xscale("log")
        ax.set_xticks(sorted({p.x for pts in schemes.values() for p in pts}))
        ax.get_xaxis().set_major_formatter(plt.FuncFormatter(lambda v, _: f"{v:g}"))
        ax.get_xaxis().set_minor_formatter(plt.NullFormatter())
        ax.tick_params(axis="x", labelrotation=45 if sweep == "buffer" else 0)
    ax.set_xlabel(xlabel)
    runs = max(p.runs for pts in schemes.values() for p in pts)
    ax.set_ylabel("goodput (Mb/s): median of 1 s samples, bar = IQR" if runs == 1 else
                  f"goodput (Mb/s): median of {runs} runs' medians\nof 1 s samples, bar = their range")
    ax.set_ylim(bottom=0)
    ax.grid(alpha=0.3)
    cfg = any_point.config
    wifi, cell = cfg.get("wifi", {}), cfg.get("3g", {})
    fixed = (f"; receive buffer {cfg.get('receive_buffer_kb')} KB" if sweep != "buffer" else "")
    ax.set_title(f"WiFi + 3G: {what}\nWiFi {wifi.get('bw_mbps'):g} Mb/s"
                 + (f" {wifi.get('rtt_ms'):g} ms RTT" if sweep != "rtt" else "")
                 + (f" {wifi.get('loss_pct'):g} % loss" if sweep != "loss" else "")
                 + f", {wifi.get('queue_pkts')} pkt buffer; 3G {cell.get('bw_mbps'):g} Mb/s "
                 f"{cell.get('rtt_ms'):g} ms RTT, {cell.get('queue_pkts')} pkt buffer{fixed}; "
                 f"cc {cfg.get('cc')}", fontsize=9)
    return save_sweep_figure(fig, out, {s: [(p.x, p.median, p.valid) for p in pts]
                                        for s, pts in schemes.items()}, flagged, ncol=4)


def draw_all(results: Path, plots: Path) -> dict[str, tuple[Path, Drawn]]:
    """Every `wifi3g` figure with at least one run: {sweep: (png, what it shows)}."""
    drawn = {}
    for sweep, schemes in load(results).items():
        out = plots / SWEEPS[sweep][2]
        drawn[sweep] = (out, draw(sweep, schemes, out))
    return drawn


# The section's title and what its tables show.
REPORT_HEAD = """\
## WiFi + 3G (`wifi3g`; CS244 '14, NSDI 2012 Fig. 4)

Median goodput (Mb/s) of one-second samples after the warm-up (with
`--repeats`, the median of the runs' medians); MPTCP's share of bytes on
WiFi in brackets; `!` marks an invalid run. CS244 '14 reports,
for the paper: MPTCP about 25 % above TCP over WiFi at 100 KB, most of both
paths at 200 KB.
"""


def report_lines(results: Path) -> list[str]:
    """report.md's `wifi3g` section: medians per sweep value and scheme."""
    data = load(results)
    lines = section_head(REPORT_HEAD) if data else []
    for sweep, schemes in data.items():
        xlabel, what, png = SWEEPS[sweep]
        lines += [f"### {what}", "", f"![{what}](plots/{png})", ""]

        def row(x, by):
            cells = []
            for s, p in by.items():
                share = f" ({p.path_share.get('wifi', 0):.0%})" if p and s in MPTCP_SCHEMES else ""
                cells.append("–" if p is None else f"{p.median:.2f}{share}{'' if p.valid else ' !'}")
            w = by["tcp_wifi"]
            return [f"{x:g}", *cells, *(f"{by[m].median / w.median:.2f}" if by[m] and w and w.median > 0
                                         else "–" for m in MPTCP_SCHEMES)]
        lines += points_table(schemes, {s: SCHEMES[s].label for s in SCHEMES}, xlabel,
                              [RATIO_HEADS[m] for m in MPTCP_SCHEMES], row)
        lines.append("")
    return lines
