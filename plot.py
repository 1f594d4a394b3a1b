#!/usr/bin/env python3
"""Draw the throughput figures of a results directory.

    plot.py [RESULTS_DIR]        (default: results)

Reads RESULTS_DIR/<topology>/<workload>/flows<N>/run.json (directories whose
names start with '.' are ignored) and writes, for every (topology, workload)
with at least one readable run,
RESULTS_DIR/plots/<topology>-<workload>-throughput.png:

  left   mean throughput as % of optimal per subflow count (paper Fig 2),
         with p10 and min markers and the paper's values where it gives them;
  right  rank of flows, TCP against the largest subflow count (paper Fig 3).

Invalid runs are drawn hatched grey (bars) and dashed (ranks) with their flags.
Unreadable run.json files are skipped with one line on stderr. Exit status 0
whenever it drew what it could, including when there was nothing to draw.
"""
from __future__ import annotations

import os
import sys
from pathlib import Path

try:
    import matplotlib
except ModuleNotFoundError:  # started as ./plot.py by a python3 outside the venv
    _VENV = Path(__file__).resolve().parent / ".venv"
    if (_VENV / "bin/python").exists() and Path(sys.prefix).resolve() != _VENV.resolve():
        os.execv(_VENV / "bin/python", [str(_VENV / "bin/python"), *sys.argv])
    raise

import argparse
import json
import math
import re
from dataclasses import dataclass

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
from matplotlib.patches import Patch  # noqa: E402
from matplotlib.lines import Line2D  # noqa: E402

# Raiciu et al., SIGCOMM 2011, FatTree one_to_one: {(k, workload): {subflows: % of optimal}}.
PAPER = {
    (4, "one_to_one"): {1: 60, 4: 89, 5: 89, 6: 89, 7: 89, 8: 89},
    (8, "one_to_one"): {1: 50, 8: 93},
}
TCP_COLOR, MPTCP_COLOR, INVALID_COLOR, PAPER_COLOR = "#7f7f7f", "#1f77b4", "#d9d9d9", "#d62728"
RUN_DIR = re.compile(r"flows(\d+)")


@dataclass
class Run:
    """One run.json, reduced to what the figures need."""
    path: Path
    topology: str
    workload: str
    subflows: int
    config: dict
    pcts: list[float]   # flows[].pct_optimal, in file order
    valid: bool
    flags: list[str]

    @property
    def mean(self) -> float:
        return float(np.mean(self.pcts))

    @property
    def p10(self) -> float:
        return float(np.percentile(self.pcts, 10))

    @property
    def min(self) -> float:
        return float(np.min(self.pcts))


def note(msg: str) -> None:
    print(f"plot.py: {msg}", file=sys.stderr)


def parse_run(path: Path, topology: str, workload: str, subflows: int) -> Run:
    """Read one run.json; ValueError (one line) if it is unusable."""
    try:
        doc = json.loads(path.read_text())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
        raise ValueError(f"unreadable: {e}") from None
    if not isinstance(doc, dict) or not isinstance(doc.get("config"), dict):
        raise ValueError("no 'config' object")
    cfg = doc["config"]
    seen = (cfg.get("topology"), cfg.get("workload"), cfg.get("subflows"))
    if seen != (topology, workload, subflows):
        raise ValueError(f"config says {seen}, directory says {(topology, workload, subflows)}")
    flows = doc.get("flows")
    if not isinstance(flows, list) or not flows:
        raise ValueError("no flows")
    pcts = [f.get("pct_optimal") if isinstance(f, dict) else None for f in flows]
    if not all(isinstance(p, (int, float)) and not isinstance(p, bool) and math.isfinite(p) for p in pcts):
        raise ValueError("a flow lacks a numeric pct_optimal")
    if not isinstance(doc.get("valid"), bool):
        raise ValueError("no boolean 'valid'")
    flags = doc.get("flags") or []
    flags = [str(f) for f in flags] if isinstance(flags, list) else [str(flags)]
    return Run(path, topology, workload, subflows, cfg, [float(p) for p in pcts], doc["valid"], flags)


def load_runs(results: Path) -> list[Run]:
    """Every usable run under results/<topology>/<workload>/flows<N>/run.json."""
    runs = []
    for path in sorted(results.glob("*/*/*/run.json")):
        parts = path.relative_to(results).parts
        if any(p.startswith(".") for p in parts) or parts[0] == "plots":
            continue
        m = RUN_DIR.fullmatch(parts[2])
        if not m:
            note(f"skipping {path}: directory is not named flows<N>")
            continue
        try:
            runs.append(parse_run(path, parts[0], parts[1], int(m.group(1))))
        except ValueError as e:
            note(f"skipping {path}: {e}")
    return runs


def group(runs: list[Run]) -> dict[tuple[str, str], dict[int, Run]]:
    """{(topology, workload): {subflows: run}}, sorted by key."""
    groups: dict[tuple[str, str], dict[int, Run]] = {}
    for r in runs:
        groups.setdefault((r.topology, r.workload), {})[r.subflows] = r
    return {key: dict(sorted(g.items())) for key, g in sorted(groups.items())}


def subflow_label(n: int) -> str:
    return "TCP" if n == 1 else str(n)


def common(runs: dict[int, Run], field: str, unit: str = "") -> str:
    """One config value shared by the runs, or all of them marked as mixed."""
    values = sorted({str(r.config.get(field, "?")) for r in runs.values()})
    text = "/".join(values) + unit
    return text if len(values) == 1 else f"{text} (MIXED)"


def title(topology: str, workload: str, runs: dict[int, Run]) -> str:
    return (f"FatTree {topology} (k={common(runs, 'k')}), {workload}: "
            f"{common(runs, 'bw_mbps', ' Mb/s')} links, {common(runs, 'time_s', ' s')} runs, "
            f"cc={common(runs, 'cc')}")


def draw_bars(ax, runs: dict[int, Run], paper: dict[int, float]) -> None:
    """Left panel: mean % of optimal per subflow count, gaps for missing counts."""
    xs = list(range(min(runs), max(runs) + 1))
    present = [n for n in xs if n in runs]
    ax.bar(present, [runs[n].mean for n in present], width=0.7,
           color=[(TCP_COLOR if n == 1 else MPTCP_COLOR) if runs[n].valid else INVALID_COLOR
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
    ref = [n for n in xs if n in paper]
    ax.plot(ref, [paper[n] for n in ref], "D", color=PAPER_COLOR, ms=6, mfc="none", mew=1.5, zorder=5)
    ax.set_xticks(xs, [subflow_label(n) + (f"\n{runs[n].mean:.0f}%" if n in runs else "\n")
                       for n in xs])
    ax.set_xlim(xs[0] - 0.6, xs[-1] + 0.6)
    ax.set_ylim(0, max(110, 1.08 * max(r.mean for r in runs.values())))
    ax.set_xlabel("Number of subflows (mean % of optimal)")
    ax.set_ylabel("Throughput (% of optimal)")
    ax.set_title("Mean throughput (paper Fig 2)", fontsize=10)
    ax.grid(axis="y", alpha=0.3, zorder=0)
    legend = [Patch(fc=TCP_COLOR, ec="black", label="TCP"),
              Patch(fc=MPTCP_COLOR, ec="black", label="MPTCP"),
              Patch(fc=INVALID_COLOR, ec="black", hatch="//", label="invalid run"),
              Line2D([], [], ls="", marker="_", color="black", ms=12, mew=1.5, label="p10 flow"),
              Line2D([], [], ls="", marker="v", color="black", ms=4, label="min flow")]
    if ref:
        legend.append(Line2D([], [], ls="", marker="D", color=PAPER_COLOR, mfc="none", mew=1.5,
                             label="paper"))
    ax.legend(handles=legend, loc="upper center", bbox_to_anchor=(0.5, -0.2), ncol=3,
              fontsize=8, frameon=False)


def draw_ranks(ax, runs: dict[int, Run], paper: dict[int, float]) -> None:
    """Right panel: each flow's % of optimal, sorted, for TCP and the largest subflow count."""
    shown = sorted({n for n in (1, max(runs)) if n in runs})
    for n in shown:
        run = runs[n]
        color = TCP_COLOR if n == 1 else MPTCP_COLOR
        label = "TCP" if n == 1 else f"MPTCP, {n} subflows"
        label += f" (mean {run.mean:.0f}%)" + ("" if run.valid else ", INVALID")
        ys = sorted(run.pcts)
        ax.plot(range(1, len(ys) + 1), ys, color=color, lw=2, ls="-" if run.valid else "--",
                marker="." if len(ys) <= 32 else None, label=label)
        if n in paper:
            ax.axhline(paper[n], color=color, ls=":", lw=1.2,
                       label=f"paper {'TCP' if n == 1 else f'MPTCP-{n}'} mean ({paper[n]}%)")
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
    k = next((r.config.get("k") for r in runs.values()), None)
    paper = PAPER.get((k, workload), {})
    fig, (left, right) = plt.subplots(1, 2, figsize=(12, 5.2), layout="constrained",
                                      gridspec_kw={"width_ratios": [1.15, 1]})
    fig.suptitle(title(topology, workload, runs), fontsize=11)
    draw_bars(left, runs, paper)
    draw_ranks(right, runs, paper)
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=120)
    heights = bar_heights(left)
    plt.close(fig)
    return heights


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("results", nargs="?", default="results", type=Path,
                    help="results directory (default: results)")
    results = ap.parse_args(argv).results
    groups = group(load_runs(results))
    if not groups:
        note(f"no runs under {results}/<topology>/<workload>/flows<N>/run.json; nothing to draw")
        return 0
    for (topology, workload), runs in groups.items():
        out = results / "plots" / f"{topology}-{workload}-throughput.png"
        draw_throughput(topology, workload, runs, out)
        print(out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
