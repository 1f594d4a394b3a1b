"""Mean RTT of the data subflows per subflow count, ± one standard deviation
(2013 reproduction, Fig 11; there from ping, which may have taken other
paths than the flows, here the kernel's smoothed RTT)."""
from __future__ import annotations

from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.lines import Line2D

from figures.drawing import save_figure
from figures.runs import Run, flag_text, gaps_text, subflow_label, sweep, figure_title, window_text
from figures.samples import RttStats
from figures.style import FLAG_COLOR, subflow_color

PACKET_BYTES = 1500


def drawn_rtt(ax) -> dict[int, tuple[float, float]]:
    """Read back the error bars drawn: {subflows: (mean, sd)}."""
    out = {}
    for c in ax.containers:
        line, _caps, (bars, *_) = c.lines
        gid = line.get_gid() or ""
        if gid.startswith("rtt:"):
            (x, lo), (_, hi) = bars.get_segments()[0]
            out[int(gid[4:])] = (float(line.get_ydata()[0]), float(hi - lo) / 2)
    return out


def draw_rtt(topology: str, workload: str, runs: dict[int, Run], stats: dict[int, RttStats],
             skipped: dict[int, str], out: Path):
    """Write the figure; returns what it shows (drawn_rtt)."""
    fig, ax = plt.subplots(figsize=(10, 6), layout="constrained")
    fig.suptitle(f"{figure_title(topology, workload, runs)}\nRTT of the data subflows: the kernel's smoothed RTT "
                 f"(tcpi_rtt) read at the sender, not ping (2013 Fig 11)\n"
                 f"1 s samples over the counted window ({window_text(runs)})", fontsize=10)
    xs = sweep(runs)
    rng = np.random.default_rng(0)
    top = 0.0
    for n in xs:
        if n not in runs or n not in stats:
            why = "no run" if n not in runs else "no RTT samples (see note)"
            ax.text(n, 0.5, why, rotation=90, ha="center", va="center", transform=ax.get_xaxis_transform(),
                    color="#777777", fontsize=9, style="italic")
            continue
        run, s = runs[n], stats[n]
        color = subflow_color(n)
        flows = np.asarray(s.flow_means)
        ax.plot(n + rng.uniform(-0.18, 0.18, flows.size), flows, ".", color=color, alpha=0.35, ms=4, zorder=2)
        c = ax.errorbar([n], [s.mean], yerr=[s.sd], fmt="o", ms=8, capsize=6, lw=1.8, zorder=3,
                        color=color, mfc=color if run.valid else "white", mew=2)
        c.lines[0].set_gid(f"rtt:{n}")
        if not run.valid:
            c.lines[2][0].set_linestyle("--")
            ax.annotate(f"INVALID\n{flag_text(run)}", (n, s.mean + s.sd), xytext=(0, 6),
                        textcoords="offset points", ha="center", va="bottom", fontsize=6.5,
                        color=FLAG_COLOR)
        top = max(top, s.mean + s.sd, float(flows.max()) if flows.size else 0)
    bw = next(iter(runs.values())).number("bw_mbps")
    q = next(iter(runs.values())).number("queue_pkts")
    handles = [Line2D([], [], ls="", marker="o", color="black", label="mean ± 1 sd of all samples"),
               Line2D([], [], ls="", marker="o", color="black", mfc="white", mew=2,
                      label="invalid run (flags above)"),
               Line2D([], [], ls="", marker=".", color="black", alpha=0.4, label="one flow's mean")]
    if bw and q:
        full = q * PACKET_BYTES * 8 / (bw * 1e6) * 1e3
        ax.axhline(full, color="#d62728", ls=":", lw=1.2)
        handles.append(Line2D([], [], color="#d62728", ls=":",
                              label=f"one full queue: {q:g} × {PACKET_BYTES} B at {bw:g} Mb/s = {full:.0f} ms"))
        top = max(top, full)
    ax.set_xticks(xs, [subflow_label(n) + (f"\n{stats[n].subflows} sf" if n in stats else "\n")
                       for n in xs])
    ax.set_xlim(xs[0] - 0.6, xs[-1] + 0.6)
    ax.set_ylim(0, 1.15 * top if top else 1)
    ax.set_xlabel("Number of subflows per connection (subflows measured)")
    ax.set_ylabel("Smoothed RTT (ms)")
    ax.grid(axis="y", alpha=0.3)
    ax.legend(handles=handles, fontsize=8, loc="upper left")
    return save_figure(fig, out, lambda _fig: drawn_rtt(ax), gaps_text(runs, skipped, "figure"),
                       wrap=140, reserve=0.06)
