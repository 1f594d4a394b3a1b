"""First fit against MPTCP (paper Fig. 13): the total throughput of
closed-loop flows per scheme, as a share of what the hosts' links can
carry, and the same per second through the run.

Reads results/scheduling<k>/<label>/run.json; one figure per k,
scheduling<k>.png, bars in the paper's order: TCP over ECMP, first fit from
the longest interval to the shortest, MPTCP. An invalid run's bar is
hatched and its flags are named under the figure. The paper's Fig. 13 gives
no values in its text, so no reference bars are drawn; its caption and §4.4
say what to compare: MPTCP above TCP/ECMP, first fit approaching MPTCP only
when run every 100 ms.
"""
from __future__ import annotations

import textwrap
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np

from base import flowsizes, records
from figures.drawing import Drawn, draw_each, save_figure
from figures.experiment_records import read_records
from figures.style import scheme_style
from figures.tables import figure_tables

COLORS = {s: scheme_style(s).colour for s in ("tcp", "firstfit", "mptcp")}
REACTIVE = "openflow-reactive"      # first fit's fabric; bars on another say which
SMOOTH_S = 5        # the per-second panel's moving mean: closed loops swing from second to second


class Run:
    """One run.json of the scheduling experiment."""

    def __init__(self, record: dict):
        self.record = record
        c = record["config"]
        self.scheme, self.interval_s, self.subflows = c["scheme"], c["interval_s"], int(c["subflows"])
        self.pct = float(record["pct_of_optimal"])
        self.per_second = [float(v) for v in record["per_second_mbps"]]
        self.valid = bool(record["valid"])
        self.flags = list(record.get("flags") or [])
        self.first_fit = record.get("first_fit")

    @property
    def fabric(self) -> str:
        return self.record["config"]["fabric"]

    @property
    def name(self) -> str:
        if self.scheme == "firstfit":
            return f"first fit {self.interval_s:g} s"
        name = f"MPTCP-{self.subflows}" if self.scheme == "mptcp" else "TCP / ECMP"
        return name + ("" if self.fabric == REACTIVE else f" on {self.fabric}")

    @property
    def order(self) -> tuple:
        """TCP, first fit from the longest interval down, MPTCP; the runs on
        another fabric than the controller's after them."""
        rank = {"tcp": 0, "firstfit": 1, "mptcp": 2}[self.scheme]
        return (self.fabric != REACTIVE, rank, -(self.interval_s or 0.0))


def load(results: Path) -> dict[str, list[Run]]:
    """{"scheduling<k>": [run, ...] in the bars' order}."""
    out: dict[str, list[Run]] = {}
    for path, run in read_records(results, records.of("scheduling"), Run):
        out.setdefault(path.parent.parent.name, []).append(run)
    return {name: sorted(runs, key=lambda r: r.order) for name, runs in sorted(out.items())}


def _subtitle(runs: list[Run]) -> str:
    r = runs[0].record
    c = r["config"]
    sizes = flowsizes.from_record(c["flow_sizes"]).describe().replace("files", "flows")
    return (f"FatTree({c['k']}), {r['hosts']} hosts in a permutation, each sending one flow at a time "
            f"(closed loop), {sizes}; {c['bw_mbps']:g} Mb/s links, {c['queue_pkts']}-packet queues, "
            f"{REACTIVE} unless a bar names another fabric; {c['time_s']:g} s after {c['warmup_s']:g} s warm-up"
            + _dilated(c))


def _dilated(config: dict) -> str:
    """What a dilated sweep changed (records before --dilation have none: 1)."""
    f = config.get("dilation", 1)
    return ("" if f == 1 else f"; time dilated {f:g} times: flows {f:g} times longer, first fit run "
            f"every {f:g} times the interval named (the paper's intervals against the flows' lifetimes)")


def draw(runs: list[Run], out: Path) -> Drawn:
    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4.6), layout="constrained",
                                      gridspec_kw={"width_ratios": [3, 2]})
    xs = np.arange(len(runs))
    colors = [COLORS[r.scheme] for r in runs]
    left.bar(xs, [r.pct for r in runs], color=colors, width=0.6, alpha=0.85,
             hatch=[None if r.valid else "//" for r in runs])
    for x, r in zip(xs, runs):
        moved = f"\n{r.first_fit['moves']} moved" if r.first_fit else ""
        left.text(x, r.pct + 1.5, f"{r.pct:.1f}{moved}", ha="center", va="bottom", fontsize=8)
    left.set_xticks(xs, [r.name.replace("first fit ", "first fit\n").replace(" on ", "\non ") for r in runs],
                    fontsize=8)
    left.set_ylabel("total throughput, % of the hosts' links")
    left.set_ylim(0, 110)
    left.grid(alpha=0.3, axis="y")
    left.set_title("Total throughput in the counted window", fontsize=9)
    for r in runs:
        smooth = np.convolve(r.per_second, np.ones(SMOOTH_S) / SMOOTH_S, mode="valid")
        right.plot(np.arange(len(smooth)) + SMOOTH_S / 2, smooth, color=COLORS[r.scheme],
                   linestyle=("-" if r.fabric == REACTIVE else ":") if r.valid else "--", linewidth=1,
                   alpha=1.0 if r.scheme != "firstfit" else 0.4 + 0.6 * (r.interval_s or 0) / 5,
                   label=r.name)
    c = runs[0].record["config"]
    right.axvspan(c["warmup_s"], c["warmup_s"] + c["time_s"], color="grey", alpha=0.08,
                  label="counted")
    right.set_xlabel("seconds since the flows started")
    right.set_ylabel(f"all receivers, Mb/s ({SMOOTH_S} s mean)")
    right.grid(alpha=0.3)
    right.legend(fontsize=7, ncol=2)
    right.set_title("Through the run", fontsize=9)
    fig.suptitle("First fit scheduling against ECMP and MPTCP (paper Fig. 13): closed-loop flows\n"
                 + textwrap.fill(_subtitle(runs), 150), fontsize=8)
    shown = {r.record["config"]["label"]: {"pct": r.pct, "valid": r.valid} for r in runs}
    flagged = [f"{r.name}: {', '.join(r.flags)}" for r in runs if not r.valid]
    notes = ("INVALID (hatched, dashed): " + "; ".join(flagged)) if flagged else ""
    return save_figure(fig, out, lambda _fig: shown, notes, wrap=140, reserve=0.06)


def draw_all(results: Path, plots: Path) -> dict[str, tuple[Path, Drawn]]:
    return draw_each(plots, load(results), draw)


REPORT_HEAD = """\
## First fit against MPTCP (paper Fig. 13)

Closed-loop flows of VL2-like sizes under a permutation; per scheme the
total throughput in the counted window as % of the hosts' links, the flows
completed, and what first fit did. `!` marks an invalid run. The paper
(§4.4): MPTCP above TCP over ECMP; first fit approaches MPTCP only when run
every 100 ms, and at 500 ms hardly helps.
"""


def report_lines(results: Path) -> list[str]:
    figures = {name: {r.record["config"]["label"]: r for r in runs} for name, runs in load(results).items()}
    return figure_tables(REPORT_HEAD, figures, [
        "scheme", "% of optimal", "Mb/s", "flows completed", "first fit: rounds, moved",
        "cpu %"], lambda _label, r: [
        f"{r.name}{'' if r.valid else ' !'}", f"{r.pct:.1f}", f"{r.record['goodput_mbps']:.2f}",
        str(r.record["flows"]["completed"]),
        f"{r.first_fit['rounds']}, {r.first_fit['moves']}" if r.first_fit else "–",
        str(r.record["cpu_mean_pct"])])
