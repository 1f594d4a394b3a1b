"""The machine's CPU per FatTree size and subflow count (2013 reproduction, Fig 5)."""
from __future__ import annotations

from pathlib import Path

import matplotlib
import matplotlib.pyplot as plt
import numpy as np
from matplotlib.lines import Line2D

from figures.drawing import save_figure, tagged_lines
from figures.runs import Run, common, flag_text, seconds, subflow_label, sweep, warmup
from figures.samples import CpuStats
from figures.style import FLAG_COLOR, subflow_color


def k_color(i: int):
    return matplotlib.colormaps["tab10"](i % 10)


def drawn_cpu(fig) -> dict[str, dict[int, dict[int, float]]]:
    """Read back both panels: {'by_k': {subflows: {k: %}}, 'by_subflows': {k: {subflows: %}}}."""
    out: dict[str, dict[int, dict[int, float]]] = {"by_k": {}, "by_subflows": {}}
    for tag, line in tagged_lines(fig, "cpu"):
        panel, key = tag.split(":")
        out[panel][int(key)] = {round(x): float(y) for x, y in zip(line.get_xdata(), line.get_ydata())
                                if np.isfinite(y)}
    return out


def _title(workload: str, groups: dict[str, dict[int, Run]], cores: set[int]) -> str:
    every = {i: r for i, r in enumerate(r for g in groups.values() for r in g.values())}
    topo = ", ".join(f"{t} (k={g[next(iter(g))].config.get('k', '?')})" for t, g in groups.items())
    of = f"% of all {'/'.join(map(str, sorted(cores)))} cores" if cores else "% of all cores"
    return (f"{workload} on FatTree {topo}: {common(every, 'bw_mbps', ' Mb/s')} links, "
            f"{common(every, 'time_s', ' s', seconds)} after {warmup(every)}, cc={common(every, 'cc')}\n"
            f"Machine CPU busy over the counted window ({of}), mean ± 1 sd of 1 s samples (2013 Fig 5)")


def draw_cpu(workload: str, groups: dict[str, dict[int, Run]], stats: dict[str, dict[int, CpuStats]],
             skipped: dict[str, dict[int, str]], out: Path):
    """groups: {topology: {subflows: run}} of one workload; stats likewise for the
    runs with a CPU figure. Returns what it shows (drawn_cpu)."""
    ks = {t: int(g[next(iter(g))].number("k", 0)) for t, g in groups.items()}
    topos = sorted(groups, key=lambda t: (ks[t], t))
    counts = sorted({n for g in groups.values() for n in g})
    cores = {s.cores for st in stats.values() for s in st.values() if s.cores}
    kvals = sorted(set(ks.values()))
    # Against FatTree size only with two sizes or more: one k would be one x value.
    if len(kvals) > 1:
        fig, (by_k, by_n) = plt.subplots(1, 2, figsize=(12.5, 6.4), layout="constrained")
    else:
        fig, by_n = plt.subplots(1, 1, figsize=(8, 6.4), layout="constrained")
        by_k = None
    fig.suptitle(_title(workload, {t: groups[t] for t in topos}, cores), fontsize=10)

    def point(ax, x, s: CpuStats, run: Run, color):
        ax.errorbar([x], [s.mean], yerr=[s.sd], fmt="s" if s.source == "run.json" else "o", ms=7,
                    capsize=4, color=color, mfc=color if run.valid else "white", mew=1.8, zorder=3)
        if not run.valid:
            ax.annotate(flag_text(run, 2), (x, s.mean), xytext=(6, -3), textcoords="offset points",
                        fontsize=6, color=FLAG_COLOR, rotation=20)

    # left: against k, one line per subflow count (dodged a little so the error bars stay apart)
    for n in counts if by_k is not None else ():
        dodge = min(0.12, 0.8 / max(1, counts[-1] - counts[0])) * (n - (counts[0] + counts[-1]) / 2)
        xs = [ks[t] + dodge for t in topos]
        ys = [stats[t][n].mean if n in stats.get(t, {}) else np.nan for t in topos]
        if all(np.isnan(ys)):
            continue
        by_k.plot(xs, ys, color=subflow_color(n), lw=1.5, gid=f"cpu:by_k:{n}",
                  label=subflow_label(n) if n == 1 else f"MPTCP-{n}")
        for t in topos:
            if n in stats.get(t, {}):
                point(by_k, ks[t] + dodge, stats[t][n], groups[t][n], subflow_color(n))
    if by_k is not None:
        by_k.set_xticks(kvals, [f"k={k}" for k in kvals])
        by_k.set_xlim(kvals[0] - 1, kvals[-1] + 1)
        by_k.set_xlabel("FatTree size")
        by_k.set_title("Against FatTree size, one line per subflow count", fontsize=10)

    # right: against subflow count, one line per k
    for i, t in enumerate(topos):
        xs = sweep(groups[t])
        ys = [stats[t][n].mean if n in stats.get(t, {}) else np.nan for n in xs]
        if all(np.isnan(ys)):
            continue
        by_n.plot(xs, ys, color=k_color(i), lw=1.5, gid=f"cpu:by_subflows:{ks[t]}",
                  label=f"{t} (k={ks[t]})")
        for n in xs:
            if n in stats.get(t, {}):
                point(by_n, n, stats[t][n], groups[t][n], k_color(i))
            elif n not in groups[t]:
                by_n.annotate(f"no {t} run", (n + 0.15 * i, 2), rotation=90, ha="center", va="bottom",
                              fontsize=7, color=k_color(i), style="italic")
    span = list(range(counts[0], counts[-1] + 1))
    by_n.set_xticks(span, [subflow_label(n) for n in span])
    by_n.set_xlim(counts[0] - 0.6, counts[-1] + 0.6)
    by_n.set_xlabel("Number of subflows per connection")
    by_n.set_title("Against subflow count, one line per FatTree", fontsize=10)

    extra = [Line2D([], [], ls="", marker="o", color="black", mfc="white", mew=1.8,
                    label="hollow: invalid run (flags beside)"),
             Line2D([], [], ls="", marker="s", color="black",
                    label="square: run.json whole-run mean (no usable cpu.csv)"),
             Line2D([], [], color="black", ls=":", label="all cores busy")]
    for ax in (a for a in (by_k, by_n) if a is not None):
        ax.axhline(100, color="black", ls=":", lw=1)
        ax.set_ylim(0, 108)
        ax.set_ylabel("CPU busy (% of all cores)")
        ax.grid(alpha=0.3)
        handles, _ = ax.get_legend_handles_labels()
        # below the panel, clear of the data and the 100 % line
        ax.legend(handles=handles + extra, fontsize=7.5, loc="upper center",
                  bbox_to_anchor=(0.5, -0.13), ncol=3)
    notes = []
    for t in topos:
        absent = [n for n in sweep(groups[t]) if n not in groups[t]]
        if absent:
            notes.append(f"{t}: no run (gap) for subflows {', '.join(map(str, absent))}.")
        for n, why in sorted(skipped.get(t, {}).items()):
            notes.append(f"{t} {subflow_label(n)}: not drawn ({why}).")
    return save_figure(fig, out, drawn_cpu, " ".join(notes), wrap=180, reserve=0.06)
