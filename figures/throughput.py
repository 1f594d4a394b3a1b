"""Throughput per subflow count (paper Fig 2) and rank of flows (paper Fig 3)."""
from __future__ import annotations

from pathlib import Path

import matplotlib.pyplot as plt
from matplotlib.lines import Line2D
from matplotlib.patches import Patch

from figures.runs import REFERENCE, REFERENCE_SOURCE, Run, subflow_label, figure_title
from figures.style import INVALID_COLOR, REFERENCE_COLOR, scheme_style

TCP, MPTCP = scheme_style("tcp"), scheme_style("mptcp")


def draw_bars(ax, runs: dict[int, Run], ref_pct: dict[int, float], ref_source: str) -> None:
    """Left panel: mean % of optimal per subflow count, gaps for missing counts."""
    xs = list(range(min(runs), max(runs) + 1))
    present = [n for n in xs if n in runs]
    ax.bar(present, [runs[n].mean for n in present], width=0.7,
           color=[(TCP.colour if n == 1 else MPTCP.colour) if runs[n].valid else INVALID_COLOR
                  for n in present],
           edgecolor="black", linewidth=0.6, zorder=2)
    for rect, n in zip(ax.containers[-1], present):
        run = runs[n]
        if not run.valid:
            rect.set_hatch("//")
            shown = run.flags[:3] + ([f"+{len(run.flags) - 3} more"] if len(run.flags) > 3 else [])
            text = "INVALID\n" + "\n".join(shown) if shown else "INVALID"
            low = run.mean < 55  # short bar: write above it, else inside it
            ax.text(n, run.mean + 4 if low else 3, text, rotation=90, ha="center", va="bottom",
                    fontsize=6.5, color="#a00000", zorder=4, linespacing=1.1,
                    bbox=dict(fc="white", ec="none", alpha=0.85, pad=1))
    ax.plot(present, [runs[n].p10 for n in present], "_", color="black", ms=14, mew=1.5, zorder=3)
    ax.plot(present, [runs[n].min for n in present], "v", color="black", ms=4, zorder=3)
    for n in xs:
        if n not in runs:
            ax.bar(n, 100, width=0.7, fill=False, edgecolor="#bbbbbb", linestyle=":", zorder=1)
            ax.text(n, 50, "no run", rotation=90, ha="center", va="center", color="#777777",
                    fontsize=9, style="italic")
    ref = [n for n in xs if n in ref_pct]
    ax.plot(ref, [ref_pct[n] for n in ref], "D", color=REFERENCE_COLOR, ms=6, mfc="none", mew=1.5, zorder=5)
    ax.set_xticks(xs, [subflow_label(n) + (f"\n{runs[n].mean:.0f}%" if n in runs else "\n")
                       for n in xs])
    ax.set_xlim(xs[0] - 0.6, xs[-1] + 0.6)
    ax.set_ylim(0, max(110, 1.08 * max(r.mean for r in runs.values())))
    ax.set_xlabel("Number of subflows (mean % of optimal)")
    ax.set_ylabel("Throughput (% of optimal)")
    ax.set_title("Mean throughput (paper Fig 2)", fontsize=10)
    ax.grid(axis="y", alpha=0.3, zorder=0)
    legend = [Patch(fc=TCP.colour, ec="black", label=TCP.label),
              Patch(fc=MPTCP.colour, ec="black", label=MPTCP.label),
              Patch(fc=INVALID_COLOR, ec="black", hatch="//", label="invalid run"),
              Line2D([], [], ls="", marker="_", color="black", ms=12, mew=1.5, label="p10 flow"),
              Line2D([], [], ls="", marker="v", color="black", ms=4, label="min flow")]
    if ref:
        legend.append(Line2D([], [], ls="", marker="D", color=REFERENCE_COLOR, mfc="none", mew=1.5,
                             label=f"reference ({ref_source})"))
    ax.legend(handles=legend, loc="upper center", bbox_to_anchor=(0.5, -0.2), ncol=3,
              fontsize=8, frameon=False)


def draw_ranks(ax, runs: dict[int, Run], ref_pct: dict[int, float]) -> None:
    """Right panel: each flow's % of optimal, sorted, for TCP and the largest subflow count."""
    shown = sorted({n for n in (1, max(runs)) if n in runs})
    for n in shown:
        run = runs[n]
        color = TCP.colour if n == 1 else MPTCP.colour
        label = "TCP" if n == 1 else f"MPTCP, {n} subflows"
        label += f" (mean {run.mean:.0f}%)" + ("" if run.valid else ", INVALID")
        ys = sorted(run.pcts)
        ax.plot(range(1, len(ys) + 1), ys, color=color, lw=2, ls="-" if run.valid else "--",
                marker="." if len(ys) <= 32 else None, label=label)
        if n in ref_pct:
            ax.axhline(ref_pct[n], color=color, ls=":", lw=1.2,
                       label=f"reference {'TCP' if n == 1 else f'MPTCP-{n}'} mean ({ref_pct[n]}%)")
    ax.set_xlabel("Rank of flow (lowest throughput first)")
    ax.set_ylabel("Throughput (% of optimal)")
    ax.set_title("Rank of flows (paper Fig 3)", fontsize=10)
    ax.set_ylim(0, max(110, 1.05 * max(max(runs[n].pcts) for n in shown)))
    ax.set_xlim(left=0.5)
    ax.grid(alpha=0.3)
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.2), ncol=1, fontsize=8, frameon=False)


def bar_heights(ax) -> dict[int, tuple[float, bool]]:
    """Read back what the bar panel shows: {subflows: (height, drawn as valid)}."""
    bars = ax.containers[0]
    return {round(r.get_x() + r.get_width() / 2): (r.get_height(), not r.get_hatch()) for r in bars}


def draw_throughput(topology: str, workload: str, runs: dict[int, Run], out: Path):
    """Write the two-panel figure for one (topology, workload); return the bar heights drawn."""
    first = next(iter(runs.values()))
    k, base = first.config.get("k"), first.workload   # `workload` may be a seed's section
    ref_pct = REFERENCE.get((k, base), {})
    ref_source = REFERENCE_SOURCE.get((k, base), "")
    fig, (left, right) = plt.subplots(1, 2, figsize=(12, 5.2), layout="constrained",
                                      gridspec_kw={"width_ratios": [1.15, 1]})
    fig.suptitle(figure_title(topology, workload, runs), fontsize=11)
    draw_bars(left, runs, ref_pct, ref_source)
    draw_ranks(right, runs, ref_pct)
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=120)
    heights = bar_heights(left)
    plt.close(fig)
    return heights
