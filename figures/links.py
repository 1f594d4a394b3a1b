"""Rank of link utilisation per subflow count (2013 reproduction, Fig 4)."""
from __future__ import annotations

from pathlib import Path

import matplotlib.pyplot as plt

from figures.drawing import save_figure, tagged_lines
from figures.runs import Run, gaps_text, run_label, figure_title, window_text
from figures.style import subflow_color

PANELS = (("all", "Every switch port"), ("core", "Core switch ports (core→agg)"),
          ("aggregation", "Aggregation switch ports (→edge, →core)"),
          ("edge", "Edge switch ports (→host, →agg)"))


def drawn_lines(fig) -> dict[str, dict[int, list[float]]]:
    """Read back what the figure shows: {panel: {subflows: utilisations}}."""
    out: dict[str, dict[int, list[float]]] = {}
    for key, line in tagged_lines(fig, "util"):
        panel, n = key.rsplit(":", 1)
        out.setdefault(panel, {})[int(n)] = [float(y) for y in line.get_ydata()]
    return out


def draw_link_util(topology: str, workload: str, runs: dict[int, Run],
                   util: dict[int, dict[str, list[float]]], skipped: dict[int, str], out: Path):
    """Write the figure; `util` is {subflows: {panel: sorted utilisations (%)}} for
    the runs whose ports.csv could be used. Returns what was drawn (drawn_lines)."""
    fig, axes = plt.subplots(2, 2, figsize=(14, 8.8), layout="constrained")
    # Three lines: the legend beside the panels takes the figure's right edge.
    fig.suptitle(f"{figure_title(topology, workload, runs)}\nRank of link utilisation: each switch port's "
                 f"mean transmit rate over the counted window\n({window_text(runs)}), "
                 f"% of the link rate (2013 Fig 4)", fontsize=10.5)
    handles = {}
    for ax, (panel, name) in zip(axes.flat, PANELS):
        for n, tiers in util.items():
            ys = tiers.get(panel) or []
            if not ys:
                continue
            run = runs[n]
            line, = ax.plot(range(1, len(ys) + 1), ys, color=subflow_color(n), lw=1.8,
                            ls="-" if run.valid else "--", marker="." if len(ys) <= 40 else None, ms=4,
                            gid=f"util:{panel}:{n}")
            if panel == "all":
                line.set_label(f"{run_label(run)}:\nmean {sum(ys) / len(ys):.0f} % over {len(ys)} ports")
                handles[n] = line
        ax.axhline(100, color="black", lw=0.8, ls=":")
        ax.set_title(name, fontsize=10)
        ax.set_xlabel("Rank of port (lowest utilisation first)")
        ax.set_ylabel("Link utilisation (% of link rate)")
        ax.set_ylim(0, 110)
        ax.set_xlim(left=0.5)
        ax.grid(alpha=0.3)
        if not any((line.get_gid() or "").startswith("util:") for line in ax.lines):
            ax.text(0.5, 0.5, "no port samples", transform=ax.transAxes, ha="center",
                    color="#777777", style="italic")
    fig.legend(handles=list(handles.values()), loc="outside right upper", fontsize=8,
               title="Run (dashed: invalid)", title_fontsize=8, labelspacing=0.9)
    return save_figure(fig, out, drawn_lines, gaps_text(runs, skipped, "figure"),
                       wrap=190, reserve=0.05)
