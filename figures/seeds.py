"""A FatTree sweep run over several seeds (`--seeds`): per subflow count,
the mean over the seeds of each run's mean % of optimal, each seed's value
marked and their range drawn, and report.md's mean and standard deviation.
A point is valid only if every seed's run of it is."""
from __future__ import annotations

import statistics
from dataclasses import dataclass
from pathlib import Path

import matplotlib.pyplot as plt
from matplotlib.lines import Line2D
from matplotlib.patches import Patch

from figures.runs import REFERENCE, REFERENCE_SOURCE, Run, subflow_label, figure_title
from figures.style import INVALID_COLOR, REFERENCE_COLOR, scheme_style

TCP, MPTCP = scheme_style("tcp"), scheme_style("mptcp")


class Spread:
    """The mean and sample standard deviation of `values`, one per seed."""
    values: list[float]

    @property
    def mean(self) -> float:
        return statistics.fmean(self.values)

    @property
    def sd(self) -> float:
        return statistics.stdev(self.values) if len(self.values) > 1 else 0.0


@dataclass
class OverSeeds(Spread):
    """One subflow count's runs, one per seed."""
    runs: list[Run]

    @property
    def values(self) -> list[float]:
        """Each seed's run mean."""
        return [r.mean for r in self.runs]

    @property
    def valid(self) -> bool:
        return all(r.valid for r in self.runs)

    @property
    def flags(self) -> list[str]:
        return sorted({f for r in self.runs for f in r.flags})


def by_seed(runs: list[Run]) -> dict[tuple[str, str], dict[int, OverSeeds]]:
    """{(topology, workload): {subflows: OverSeeds}} for the sweeps run with
    two or more seeds (runs in seed<S>/ folders)."""
    seeded: dict[tuple[str, str], dict[int, list[Run]]] = {}
    for r in runs:
        if r.seed_dir:
            seeded.setdefault((r.topology, r.workload), {}).setdefault(r.subflows, []).append(r)
    return {key: {n: OverSeeds(sorted(rs, key=lambda r: r.seed_dir)) for n, rs in sorted(points.items())}
            for key, points in sorted(seeded.items())
            if len({r.seed_dir for rs in points.values() for r in rs}) > 1}


def draw(topology: str, workload: str, points: dict[int, OverSeeds], out: Path) -> dict[int, tuple[float, bool]]:
    """The bars (mean over seeds) with each seed's mean; returns {subflows: (height, valid)}."""
    xs = list(range(min(points), max(points) + 1))
    present = [n for n in xs if n in points]
    k = points[present[0]].runs[0].config.get("k")
    ref, ref_source = REFERENCE.get((k, workload), {}), REFERENCE_SOURCE.get((k, workload), "")
    fig, ax = plt.subplots(figsize=(8.5, 5.2), layout="constrained")
    every = {n: r for n, p in points.items() for r in p.runs[:1]}
    seeds = sorted({r.seed_dir.removeprefix("seed") for p in points.values() for r in p.runs}, key=int)
    fig.suptitle(figure_title(topology, workload, every) + f"\nmean over seeds {', '.join(seeds)}", fontsize=10)
    bars = ax.bar(present, [points[n].mean for n in present], width=0.7, edgecolor="black", linewidth=0.6,
                  color=[(TCP.colour if n == 1 else MPTCP.colour) if points[n].valid else INVALID_COLOR
                         for n in present], zorder=2)
    for rect, n in zip(bars, present):
        p = points[n]
        ax.plot([n, n], [min(p.values), max(p.values)], color="black", lw=1.2, zorder=3)
        ax.plot([n] * len(p.values), p.values, "o", ms=4, mfc="white", mec="black", zorder=4)
        if not p.valid:
            rect.set_hatch("//")
            ax.text(n, 3, "INVALID\n" + "\n".join(p.flags[:3]), rotation=90, ha="center", va="bottom",
                    fontsize=6.5, color="#a00000", zorder=5, bbox=dict(fc="white", ec="none", alpha=0.85, pad=1))
    shown_ref = [n for n in xs if n in ref]
    ax.plot(shown_ref, [ref[n] for n in shown_ref], "D", color=REFERENCE_COLOR, ms=6, mfc="none", mew=1.5, zorder=5)
    ax.set_xticks(xs, [subflow_label(n) + (f"\n{points[n].mean:.0f}±{points[n].sd:.0f}%" if n in points else "\n")
                       for n in xs])
    ax.set_ylim(0, 110)
    ax.set_xlabel("Number of subflows (mean ± sd over seeds, % of optimal)")
    ax.set_ylabel("Throughput (% of optimal)")
    ax.grid(axis="y", alpha=0.3, zorder=0)
    legend = [Patch(fc=TCP.colour, ec="black", label=TCP.label),
              Patch(fc=MPTCP.colour, ec="black", label=MPTCP.label + " (mean over seeds)"),
              Patch(fc=INVALID_COLOR, ec="black", hatch="//", label="a seed's run invalid"),
              Line2D([], [], ls="-", marker="o", color="black", mfc="white", ms=4,
                     label="each seed's mean, and their range")]
    if shown_ref:
        legend.append(Line2D([], [], ls="", marker="D", color=REFERENCE_COLOR, mfc="none", mew=1.5,
                             label=f"reference ({ref_source})"))
    ax.legend(handles=legend, loc="upper center", bbox_to_anchor=(0.5, -0.16), ncol=2, fontsize=8, frameon=False)
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=120)
    plt.close(fig)
    return {n: (points[n].mean, points[n].valid) for n in present}


def report_lines(topology: str, workload: str, points: dict[int, OverSeeds], figure: Path, results: Path) -> list[str]:
    seeds = sorted({r.seed_dir for p in points.values() for r in p.runs})
    lines = [f"## {topology} / {workload} over seeds", "",
             f"Each point run once per seed ({', '.join(seeds)}); the mean and standard deviation are "
             "over the seeds' run means. A point is valid only if every seed's run is.", "",
             "| Subflows | Mean % | sd | Seeds' means % | Valid | Flags |", "|---|---:|---:|---|---|---|"]
    for n, p in points.items():
        lines.append(f"| {subflow_label(n)} | {p.mean:.1f} | {p.sd:.1f} | "
                     f"{', '.join(f'{m:.1f}' for m in p.values)} | {'yes' if p.valid else '**NO**'} | "
                     f"{', '.join(p.flags)} |")
    return lines + ["", f"![over seeds]({figure.relative_to(results).as_posix()})", ""]
