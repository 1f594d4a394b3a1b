"""Queue occupancy over time for chosen runs (2013 reproduction, Fig 10 and 12)."""
from __future__ import annotations

from pathlib import Path

import matplotlib.pyplot as plt
from matplotlib.collections import LineCollection
import numpy as np

from figures.drawing import save_figure, tagged_lines
from figures.runs import Run, gaps_text, run_label, figure_title
from figures.samples import Backlog
from figures.style import FLAG_COLOR

CORE_COLOR, BUSIEST_COLOR = "#1f77b4", "#ff7f0e"


def choose(available: list[int], requested: list[int] | None) -> tuple[list[int], str | None]:
    """The subflow counts to draw: the requested ones that have samples, else
    the smallest and the largest that do; and a note when a request was not met."""
    if requested:
        chosen = [n for n in dict.fromkeys(requested) if n in available]
        absent = [n for n in requested if n not in available]
        why = (f"--queue-run {', '.join(map(str, absent))}: no such run with port samples"
               if absent else None)
        if chosen:
            return chosen, why
    else:
        why = None
    return sorted({min(available), max(available)}), why


def drawn_queues(fig) -> dict[int, dict[str, list[float]]]:
    """Read back the panels: {subflows: {series: backlog values}}."""
    out: dict[int, dict[str, list[float]]] = {}
    for key, line in tagged_lines(fig, "queue"):
        n, series = key.split(":", 1)
        out.setdefault(int(n), {})[series] = [float(y) for y in line.get_ydata()]
    return out


def draw_queue(topology: str, workload: str, runs: dict[int, Run], backlogs: dict[int, Backlog],
               skipped: dict[int, str], out: Path, extra_note: str | None = None):
    """One panel per run in `backlogs` (already chosen); returns drawn_queues."""
    chosen = list(backlogs)
    fig, axes = plt.subplots(len(chosen), 1, figsize=(13, 1.2 + 3.6 * len(chosen)), squeeze=False,
                             layout="constrained", sharex=True)
    some = runs[chosen[0]]
    fig.suptitle(f"{figure_title(topology, workload, runs)}\nQueue occupancy of the switch ports' egress queues "
                 f"over time, packets (limit {some.config.get('queue_pkts', '?')}) (2013 Fig 10, 12)",
                 fontsize=10)
    k = int(some.number("k", 0)) or None
    for ax, n in zip(axes[:, 0], chosen):
        run, b = runs[n], backlogs[n]
        start, end = run.window
        # One collection, not a line per port: 80 ports at k=4 (hundreds at
        # k=8) as separate lines made this the slowest figure to draw.
        ax.add_collection(LineCollection([np.column_stack([p.t, p.backlog]) for p in b.ports],
                                         colors="#9a9a9a", linewidths=0.5, alpha=0.35, zorder=1))
        ls = "-" if run.valid else "--"
        if "core" in b.mean:
            ax.plot(b.t, b.mean["core"], color=CORE_COLOR, lw=2, ls=ls, gid=f"queue:{n}:core mean",
                    label="mean over core ports", zorder=3)
            ax.plot(b.t, b.max["core"], color=CORE_COLOR, lw=1.2, ls=":", gid=f"queue:{n}:core max",
                    label="largest core port", zorder=3)
        ax.plot(b.t, b.mean["all"], color="black", lw=1.5, ls=ls, gid=f"queue:{n}:all mean",
                label="mean over all ports", zorder=3)
        bp = b.busiest
        ax.plot(bp.t, bp.backlog, color=BUSIEST_COLOR, lw=1.6, ls=ls, gid=f"queue:{n}:busiest", zorder=4,
                label=f"busiest port {bp.intf}\n({bp.faces(k)}), mean {b.busiest_mean:.0f} pkts")
        ax.plot([], [], color="#9a9a9a", lw=0.8, label=f"each of the {len(b.ports)} ports")
        q = run.number("queue_pkts")
        if q:
            ax.axhline(q, color="#d62728", ls="-.", lw=1.2, label=f"queue limit ({q:g} pkts)")
        ax.axvspan(min(0.0, float(b.t[0])), start, color="#eeeeee", zorder=0, label="warm-up (not counted)")
        if end != float("inf"):
            ax.axvline(end - 0.5, color="#555555", lw=0.8, ls="--", label="end of counted window")
        ax.set_ylim(0, 1.1 * max(q or 0, float(np.nanmax(b.max["all"])), 1.0))
        ax.set_ylabel("Backlog (packets)")
        ax.grid(alpha=0.3)
        ax.set_title(f"{run_label(run)}: {n} subflow{'s' if n > 1 else ''} per connection", fontsize=10,
                     color="black" if run.valid else FLAG_COLOR)
        ax.legend(fontsize=7.5, loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0)
    axes[-1, 0].set_xlabel("Time since the traffic started (s)")
    notes = " ".join(x for x in (gaps_text(runs, skipped, "figure's choice"), extra_note) if x)
    return save_figure(fig, out, drawn_queues, notes, wrap=160, reserve=0.05)
