"""Distributed file transfers (CS536 '13 in README's sources): the time until
every receiver has its data against the number of subflows (1 = TCP).

transfers-nswitch.png: two hosts over N switches, a line per N, with what N
paths could do at best (one link's time over min(subflows, N)).
transfers-fattree.png: FatTree(4), a panel per receiver count, a line per
sender count (the study's Fig. A.2-A.7).

Reads results/transfers/<sweep>/<label>/flows<N>/run.json. Invalid points
are red crosses with their flags under the figure.
"""
from __future__ import annotations

from pathlib import Path

import matplotlib
import matplotlib.pyplot as plt

from base import records
from figures.drawing import Drawn, draw_each, mark_invalid, save_figure
from figures.experiment_records import read_records
from figures.notes import note
from figures.tables import section_head


class Point:
    """One run.json of the experiment."""

    def __init__(self, record: dict):
        cfg = record["config"]
        self.record = record
        self.sweep = cfg["sweep"]
        self.x = int(cfg["subflows"])
        self.switches, self.senders, self.receivers = cfg["switches"], cfg["senders"], cfg["receivers"]
        self.seconds = record["completion_s"]
        self.valid = bool(record["valid"]) and self.seconds is not None
        self.flags = list(record.get("flags") or []) or ([] if self.seconds is not None else ["incomplete"])


def load(results: Path) -> dict[str, list[Point]]:
    """{sweep: points}, only those with a completion time."""
    out: dict[str, list[Point]] = {}
    for path, p in read_records(results, records.of("transfers"), Point):
        if p.seconds is None:
            note(f"{path}: not every part arrived ({', '.join(p.flags)}); not drawn")
            continue
        out.setdefault(p.sweep, []).append(p)
    return {s: sorted(out[s], key=lambda p: (p.switches, p.senders, p.receivers, p.x))
            for s in ("nswitch", "fattree") if s in out}


def _by(points: list[Point], key) -> dict[int, list[Point]]:
    out: dict[int, list[Point]] = {}
    for p in points:
        out.setdefault(key(p), []).append(p)
    return dict(sorted(out.items()))


def _subtitle(p: Point) -> str:
    c = p.record["config"]
    return f"{c['file_mb']:g} MB per sender, {c['bw_mbps']:g} Mb/s links, {c['queue_pkts']} pkt queues, cc {c['cc']}"


def draw_nswitch(points: list[Point], out: Path) -> Drawn:
    fig, ax = plt.subplots(figsize=(7.5, 4.8), layout="constrained")
    shown, flagged = {}, []
    colors = matplotlib.colormaps["viridis"]
    lines = _by(points, lambda p: p.switches)
    for i, (n, pts) in enumerate(lines.items()):
        color = colors(i / max(1, len(lines) - 1) * 0.85)
        ax.plot([p.x for p in pts], [p.seconds for p in pts], marker="o", color=color, label=f"{n} switches")
        one = pts[0].record["one_link_s"]
        ax.plot([p.x for p in pts], [one / min(p.x, n) for p in pts], linestyle=":", color=color, linewidth=1)
        flagged += mark_invalid(ax, f"{n} switches", pts, lambda p: p.x, lambda p: p.seconds,
                                lambda p: f"{p.x} subflows")
        shown[n] = [(p.x, round(p.seconds, 3), p.valid) for p in pts]
    xs = sorted({p.x for p in points})
    ax.set_xticks(xs, ["TCP" if x == 1 else str(x) for x in xs])
    ax.set_xlabel("subflows (dotted: one link's time over the paths used)")
    ax.set_ylabel("time until the receiver has the file, s")
    ax.set_ylim(bottom=0)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    ax.set_title(f"Two hosts over N switches (CS536 '13, Fig. 1 and A.1)\n{_subtitle(points[0])}", fontsize=9)
    notes = ("INVALID (red x): " + "; ".join(flagged)) if flagged else ""
    return save_figure(fig, out, lambda _fig: shown, notes, wrap=110, reserve=0.06)


def draw_fattree(points: list[Point], out: Path) -> Drawn:
    panels = _by(points, lambda p: p.receivers)
    fig, axes = plt.subplots(1, len(panels), figsize=(max(7.5, 4.2 * len(panels)), 4.4),
                             layout="constrained", squeeze=False, sharey=True)
    shown, flagged = {}, []
    colors = matplotlib.colormaps["plasma"]
    for ax, (r, pts) in zip(axes[0], panels.items()):
        lines = _by(pts, lambda p: p.senders)
        for i, (s, line) in enumerate(lines.items()):
            ax.plot([p.x for p in line], [p.seconds for p in line], marker="o",
                    color=colors(i / max(1, len(lines) - 1) * 0.85),
                    label=f"{s} sender" + ("s" if s > 1 else ""))
            flagged += mark_invalid(ax, f"{s} to {r}", line, lambda p: p.x, lambda p: p.seconds,
                                    lambda p: f"{p.x} subflows")
            shown[f"{s}:{r}"] = [(p.x, round(p.seconds, 3), p.valid) for p in line]
        xs = sorted({p.x for p in pts})
        ax.set_xticks(xs, ["TCP" if x == 1 else str(x) for x in xs])
        ax.set_title(f"{r} receiver" + ("s" if r > 1 else ""), fontsize=9)
        ax.set_xlabel("subflows")
        ax.set_ylim(bottom=0)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7)
    axes[0][0].set_ylabel("time until every receiver has its data, s")
    fig.suptitle(f"FatTree(4): senders in pods 0 and 2, receivers in pods 1 and 3 "
                 f"(CS536 '13, Fig. A.2-A.7)\n{_subtitle(points[0])}", fontsize=9)
    notes = ("INVALID (red x): " + "; ".join(flagged)) if flagged else ""
    return save_figure(fig, out, lambda _fig: shown, notes, wrap=130, reserve=0.07)


def draw_all(results: Path, plots: Path) -> dict[str, tuple[Path, Drawn]]:
    def draw(points: list[Point], out: Path) -> Drawn:
        return (draw_nswitch if points[0].sweep == "nswitch" else draw_fattree)(points, out)
    return draw_each(plots, {f"transfers-{s}": pts for s, pts in load(results).items()}, draw)


REPORT_HEAD = """\
## Distributed file transfers (CS536 '13)

Seconds until every receiver has its data, per subflow count (1 = TCP); `!`
marks an invalid point. The study: MPTCP cuts the N-switch transfer time as
subflows rise to N, and on FatTree(4) by up to a third once there are four
or more receivers.
"""


def report_lines(results: Path) -> list[str]:
    data = load(results)
    if not data:
        return []
    lines = section_head(REPORT_HEAD)
    for sweep, points in data.items():
        xs = sorted({p.x for p in points})
        rows = _by(points, (lambda p: p.switches) if sweep == "nswitch" else (lambda p: p.senders * 100 + p.receivers))
        lines += [f"![{sweep}](plots/transfers-{sweep}.png)", "",
                  "| " + ("switches" if sweep == "nswitch" else "senders to receivers") + " | "
                  + " | ".join("TCP" if x == 1 else f"MPTCP-{x}" for x in xs) + " |",
                  "| --- " * (len(xs) + 1) + "|"]
        for key, pts in rows.items():
            by_x = {p.x: p for p in pts}
            label = str(key) if sweep == "nswitch" else f"{key // 100} to {key % 100}"
            cells = [("–" if x not in by_x else f"{by_x[x].seconds:.2f}{'' if by_x[x].valid else ' !'}")
                     for x in xs]
            lines.append(f"| {label} | " + " | ".join(cells) + " |")
        lines.append("")
    return lines
