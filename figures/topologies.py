"""`topologies`, FatTree, VL2 and BCube side by side (paper §4.3.1): mean goodput per
flow in % of one host link against the number of subflows, per network
(paper Fig. 4), and each flow's goodput ranked for TCP, MPTCP-2 and the
most subflows run (paper Fig. 5: TCP against MPTCP-2 on VL2 and MPTCP-8 on
BCube).

Reads results/topologies/<topology>/permutation/flows<N>/run.json. On BCube
a flow can exceed 100 %: its host has one link per level. Invalid runs are
red crosses with their flags under the figure.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

import matplotlib.pyplot as plt

from base import records
from figures import rack_seeds
from figures.drawing import Drawn, mark_invalid, save_figure, save_sweep_figure
from figures.notes import note
from figures.runs import FlowPercents, driver_text
from figures.style import subflow_color
from figures.tables import section_head

STYLE = {"fattree": ("FatTree", "#2ca02c", "^"), "vl2": ("VL2", "#1f77b4", "o"),
         "bcube": ("BCube", "#d62728", "s")}


@dataclass
class Point(FlowPercents):
    x: int                      # subflows; 1 = TCP
    pcts: list[float]           # each flow's goodput, % of one host link
    valid: bool
    flags: list[str]
    record: dict = field(default_factory=dict)


def parse_point(path: Path) -> tuple[str, Point]:
    doc = json.loads(path.read_text())
    cfg = doc["config"]
    pcts = [float(f["pct_of_link"]) for f in doc["flows"]]
    if not pcts:
        raise ValueError("no flows")
    return cfg["topology"], Point(int(cfg["subflows"]), pcts, bool(doc["valid"]),
                                  list(doc.get("flags") or []), doc)


def load(results: Path) -> dict[str, dict[str, list[Point]]]:
    """{top folder: {topology: points by subflow count}}, in STYLE's order;
    the top folder is "topologies", or "topologies-seed<S>" for a seed of --seeds."""
    out: dict[str, dict[str, list[Point]]] = {}
    for path in records.committed(results, records.of("topologies")):
        try:
            topology, point = parse_point(path)
        except (OSError, ValueError, KeyError, TypeError) as exc:
            note(f"skipped {path}: {exc}")
            continue
        out.setdefault(path.relative_to(results).parts[0], {}).setdefault(topology, []).append(point)
    return {top: {t: sorted(by[t], key=lambda p: p.x) for t in [*STYLE, *sorted(set(by) - set(STYLE))]
                  if t in by}
            for top, by in sorted(out.items())}


def style(topology: str) -> tuple[str, str, str]:
    """(label, colour, marker); a --topo's own by its NAME, in grey."""
    return STYLE.get(topology, (topology, "#7f7f7f", "D"))


def _label(topology: str, points: list[Point]) -> str:
    r = points[0].record
    return f"{style(topology)[0]}: {r['config'].get('network', topology)}, {r.get('hosts')} hosts"


def _subtitle(data: dict[str, list[Point]]) -> str:
    c = next(iter(data.values()))[0].record["config"]
    return (f"permutation, {c['bw_mbps']:g} Mb/s host links, {c['queue_pkts']} pkt queues, "
            f"cc {c['cc']}, fabric {c['fabric']}{driver_text(c)}, "
            f"{c['time_s']:g} s after {c['warmup_s']:g} s warm-up")


def draw_subflows(data: dict[str, list[Point]], out: Path) -> Drawn:
    fig, ax = plt.subplots(figsize=(8, 5), layout="constrained")
    flagged, shown = [], {}
    for topology, pts in data.items():
        name, color, marker = style(topology)
        ax.plot([p.x for p in pts], [p.mean for p in pts], color=color, marker=marker, ms=6,
                linewidth=1.5, label=_label(topology, pts) + " (mean)", zorder=3)
        ax.plot([p.x for p in pts], [p.p10 for p in pts], color=color, linestyle=":",
                linewidth=1, zorder=2)
        flagged += mark_invalid(ax, name, pts, lambda p: p.x, lambda p: p.mean,
                                lambda p: f"{p.x} subflow" + ("s" if p.x > 1 else ""))
        shown[topology] = [(p.x, round(p.mean, 2), p.valid) for p in pts]
    ax.axhline(100, color="#999999", linestyle="--", linewidth=0.8, zorder=1)
    xs = sorted({p.x for pts in data.values() for p in pts})
    ax.set_xticks(xs, [("TCP" if x == 1 else str(x)) for x in xs])
    ax.set_xlabel("subflows per connection (dotted: p10 of the flows)")
    ax.set_ylabel("goodput per flow, % of one host link")
    ax.set_ylim(bottom=0)
    ax.grid(alpha=0.3)
    ax.set_title(f"Throughput against subflows (paper Fig. 4)\n{_subtitle(data)}", fontsize=9)
    return save_sweep_figure(fig, out, shown, flagged, ncol=1)


def ranked_runs(pts: list[Point]) -> list[Point]:
    """TCP, MPTCP-2 and the most subflows run, those present."""
    by_x = {p.x: p for p in pts}
    wanted = [1, 2, max(by_x)]
    return [by_x[x] for x in dict.fromkeys(wanted) if x in by_x]


def draw_rank(data: dict[str, list[Point]], out: Path) -> Drawn:
    fig, axes = plt.subplots(1, len(data), figsize=(4.5 * len(data), 4.5), layout="constrained",
                             squeeze=False)
    shown, flagged = {}, []
    for ax, (topology, pts) in zip(axes[0], data.items()):
        for p in ranked_runs(pts):
            label = "TCP" if p.x == 1 else f"MPTCP-{p.x}"
            ys = sorted(p.pcts)
            ax.plot(range(1, len(ys) + 1), ys, color=subflow_color(p.x), linewidth=1.5,
                    linestyle="-" if p.valid else "--",
                    label=label + ("" if p.valid else " (INVALID)"))
            shown[f"{topology}:{p.x}"] = [round(y, 2) for y in ys]
            if not p.valid:
                flagged.append(f"{style(topology)[0]} {label}: {', '.join(p.flags)}")
        ax.axhline(100, color="#999999", linestyle="--", linewidth=0.8)
        ax.set_title(_label(topology, pts), fontsize=8)
        ax.set_xlabel("flows, ranked")
        ax.set_ylim(bottom=0)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8, loc="lower right")
    axes[0][0].set_ylabel("goodput, % of one host link")
    fig.suptitle(f"Flow rates ranked (paper Fig. 5)\n{_subtitle(data)}", fontsize=9)
    notes = ("INVALID (dashed): " + "; ".join(flagged)) if flagged else ""
    return save_figure(fig, out, lambda _fig: shown, notes, wrap=120, reserve=0.08)


def draw_all(results: Path, plots: Path) -> dict[str, tuple[Path, Drawn]]:
    drawn = {}
    for top, data in load(results).items():
        for name, draw in ((f"{top}-subflows", draw_subflows), (f"{top}-rank", draw_rank)):
            out = plots / f"{name}.png"
            drawn[name] = (out, draw(data, out))
    return {**drawn, **rack_seeds.draw_all(results, plots, "topologies")}


REPORT_HEAD = """\
## FatTree, VL2 and BCube (`topologies`; paper §4.3.1, Fig. 4-5)

Mean and p10 of each flow's goodput in % of one host link, per subflow count
(1 = TCP); `!` marks an invalid run. The paper: FatTree and BCube need eight
subflows for 90 % of their throughput, VL2 gets most of its gain with two.
"""


def report_lines(results: Path) -> list[str]:
    tops = load(results)
    lines = section_head(REPORT_HEAD) if tops else []
    for top, data in tops.items():
        lines += _table(top, data)
    return lines + rack_seeds.report_lines(results, "topologies")


def _table(top: str, data: dict[str, list[Point]]) -> list[str]:
    lines = ([f"### {top}", ""] if top != "topologies" else []) + [
        f"![subflows](plots/{top}-subflows.png)", "", f"![rank](plots/{top}-rank.png)", "",
        "| network | subflows | mean % | p10 % | gain over TCP reached |", "| --- " * 5 + "|"]
    for topology, pts in data.items():
        tcp = next((p for p in pts if p.x == 1), None)
        most = max(pts, key=lambda p: p.x)
        for p in pts:
            share = "–"
            if tcp and most.mean > tcp.mean and p is not tcp:
                share = f"{100 * (p.mean - tcp.mean) / (most.mean - tcp.mean):.0f} % of MPTCP-{most.x}'s"
            lines.append(f"| {style(topology)[0]} | {'TCP' if p.x == 1 else p.x} | "
                         f"{p.mean:.1f}{'' if p.valid else ' !'} | {p.p10:.1f} | {share} |")
    return lines + [""]
