"""Short flows beside long ones (paper Fig. 12): the distribution of the
short files' completion times per long-flow scheme, and the long flows' mean
rate per scheme beside the paper's.

Reads results/shortflows<k>/<scheme>/run.json; one figure per k,
shortflows<k>.png. An invalid run's curve is dashed and its flags are named
under the figure.
"""
from __future__ import annotations

from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np

from base import flowsizes, records
from figures.drawing import Drawn, draw_each, save_figure
from figures.experiment_records import runs_by_scheme
from figures.runs import driver_text
from figures.style import scheme_style
from figures.tables import figure_tables

STYLE = {s: scheme_style(s) for s in ("tcp", "uncoupled", "ewtcp", "lia")}
# Paper Fig. 12's text (htsim, 4:1 oversubscribed FatTree, 100 Mb/s links):
# the long flows' mean throughput in Mb/s, so % of a host link; 65 is the
# mean if every core link were saturated.
PAPER_LONG_PCT = {"tcp": 28, "ewtcp": 43, "lia": 47, "uncoupled": 49}
PAPER_MAX_PCT = 65


class Run:
    """One scheme's run.json."""

    def __init__(self, record: dict):
        self.record = record
        self.scheme = record["config"]["scheme"]
        self.times = [float(t) for t in record["short"]["completion_ms"]]
        self.median = record["short"]["median_ms"]
        self.long_pct = float(record["mean_flow_mbps"]) / float(record["config"]["bw_mbps"]) * 100
        self.valid = bool(record["valid"])
        self.flags = list(record.get("flags") or [])


def load(results: Path) -> dict[str, dict[str, Run]]:
    """{"shortflows<k>": {scheme: run}} in STYLE's order."""
    return runs_by_scheme(results, records.of("shortflows"), Run, lambda p: p.parent.parent.name, STYLE)


def _subtitle(runs: dict[str, Run]) -> str:
    c = next(iter(runs.values())).record["config"]
    return (f"FatTree({c['k']}) {c['ratio']}:1 oversubscribed, {c['bw_mbps']:g} Mb/s links; a third of "
            f"the hosts send a long flow ({c['multipath_subflows']} subflows when multipath), the rest "
            f"{_files(c)} by TCP every {c['interval_s']:g} s (Poisson); "
            f"{c['time_s']:g} s after {c['warmup_s']:g} s warm-up{driver_text(c)}")


def _files(config: dict) -> str:
    """The short files' sizes as the run had them: fixed, or from a CDF file
    (records before the CDF option have file_bytes only)."""
    if "file_sizes" in config:
        return flowsizes.from_record(config["file_sizes"]).describe()
    return flowsizes.FixedSize(config["file_bytes"]).describe()


def draw(runs: dict[str, Run], out: Path) -> Drawn:
    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4.8), layout="constrained",
                                      gridspec_kw={"width_ratios": [3, 2]})
    shown, flagged = {}, []
    for scheme, run in runs.items():
        name, color = STYLE[scheme].label, STYLE[scheme].colour
        if run.times:
            xs = np.sort(run.times)
            ys = np.arange(1, len(xs) + 1) / len(xs)
            left.plot(xs, ys, color=color, linewidth=1.6, linestyle="-" if run.valid else "--",
                      label=f"{name}: median {run.median:.0f} ms" + ("" if run.valid else " (INVALID)"))
        shown[scheme] = {"median_ms": run.median, "long_pct": round(run.long_pct, 2),
                         "files": len(run.times), "valid": run.valid}
        if not run.valid:
            flagged.append(f"{name}: {', '.join(run.flags)}")
    left.set_xscale("log")
    left.set_xlabel("short file completion time, ms")
    left.set_ylabel("share of short files")
    left.set_ylim(0, 1.01)
    left.grid(alpha=0.3, which="both")
    left.legend(loc="lower right", fontsize=8, title="long flows' scheme", title_fontsize=8)
    left.set_title("Short files' completion times (CDF)", fontsize=9)
    xs = np.arange(len(runs))
    names = [STYLE[s].label for s in runs]
    right.bar(xs, [r.long_pct for r in runs.values()], color=[STYLE[s].colour for s in runs], width=0.6,
              label="here", hatch=None, alpha=0.85)
    right.scatter(xs, [PAPER_LONG_PCT[s] for s in runs], marker="_", s=600, color="black", zorder=3,
                  label="paper Fig. 12 (htsim, 100 Mb/s links)")
    right.axhline(PAPER_MAX_PCT, color="#999999", linestyle="--", linewidth=0.8,
                  label="paper's theoretical mean (65 %)")
    for x, r in zip(xs, runs.values()):
        right.text(x, r.long_pct + 1, f"{r.long_pct:.0f}", ha="center", fontsize=8)
    right.set_xticks(xs, names, fontsize=8)
    right.set_ylabel("long flows' mean rate, % of a host link")
    right.set_ylim(0, 100)
    right.grid(alpha=0.3, axis="y")
    right.legend(loc="upper left", fontsize=7)
    right.set_title("Long flows", fontsize=9)
    fig.suptitle(f"Short flows beside long flows (paper Fig. 12)\n{_subtitle(runs)}", fontsize=8)
    notes = ("INVALID (dashed): " + "; ".join(flagged)) if flagged else ""
    return save_figure(fig, out, lambda _fig: shown, notes, wrap=130, reserve=0.06)


def draw_all(results: Path, plots: Path) -> dict[str, tuple[Path, Drawn]]:
    return draw_each(plots, load(results), draw)


REPORT_HEAD = """\
## Short flows beside long flows (paper Fig. 12)

Per scheme of the long flows: the short files' completion times and the long
flows' mean rate in % of a host link; `!` marks an invalid run. The paper:
UNCOUPLED hurts the short flows most, single-path TCP spreads them widest;
long flows 28 (TCP), 43 (EWTCP), 47 (MPTCP), 49 (UNCOUPLED) % of a link.
"""


def report_lines(results: Path) -> list[str]:
    def row(scheme: str, r) -> list[str]:
        s = r.record["short"]
        cell = lambda v: "–" if v is None else f"{v:.0f}"
        return [f"{STYLE[scheme].label}{'' if r.valid else ' !'}", f"{s['completed']} of {s['files']}",
                cell(s["median_ms"]), cell(s["p90_ms"]), cell(s["p99_ms"]), f"{r.long_pct:.1f}",
                str(PAPER_LONG_PCT[scheme])]
    return figure_tables(REPORT_HEAD, load(results), [
        "long flows", "files done", "median ms", "p90 ms", "p99 ms", "long flows, % of link",
        "paper %"], row)
