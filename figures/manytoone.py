"""BCube many-to-one (paper §4.3.1, the table after Fig. 11): each host's
total read rate per scheme, as a share of what its interfaces can carry,
beside the paper's; and how much the hosts relayed per datagram they sent.

Reads results/manytoone/bcube<n>-<k>/<scheme>/reads/run.json; one figure per
network, manytoone-bcube<n>-<k>.png. An invalid run's bar is hatched and its
flags are named under the figure.
"""
from __future__ import annotations

from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np

from base import records
from figures.drawing import Drawn, draw_each, save_figure
from figures.experiment_records import runs_by_scheme
from figures.runs import driver_text
from figures.style import scheme_style
from figures.tables import figure_tables

STYLE = {s: scheme_style(s) for s in ("tcp", "ewtcp", "lia", "olia", "uncoupled")}
# The paper's table (htsim, BCube(4,3), 100 Mb/s links; each host reads from
# its 12 neighbours, so three of its four NICs can be filled: 300 Mb/s):
# per-host read Mb/s, as % of those 300.
PAPER_READ_PCT = {"tcp": 297 / 3, "ewtcp": 229 / 3, "lia": 272 / 3}


class Run:
    """One scheme's run.json."""

    def __init__(self, record: dict):
        self.record = record
        self.scheme = record["config"]["scheme"]
        self.pct = float(record["read_pct_of_max"])
        reads = sorted(float(v) for v in record["reads_mbps"].values())
        self.min_pct = 100.0 * reads[0] / float(record["read_max_mbps"])
        self.relayed = float(record["relay"]["forwarded_per_sent"])
        self.valid = bool(record["valid"])
        self.flags = list(record.get("flags") or [])


def load(results: Path) -> dict[str, dict[str, Run]]:
    """{"manytoone-bcube<n>-<k>": {scheme: run}} in STYLE's order."""
    return runs_by_scheme(results, records.of("manytoone"), Run,
                          lambda p: f"manytoone-{p.parents[2].name}", STYLE)


def _subtitle(runs: dict[str, Run]) -> str:
    r = next(iter(runs.values())).record
    c = r["config"]
    per_host = len(r["flows"]) // r["hosts"]
    multipath = next((x.record["config"]["subflows"] for x in runs.values() if x.scheme != "tcp"), None)
    return (f"{c['network']}, {r['hosts']} hosts each reading from its {per_host} neighbours, "
            f"{c['bw_mbps']:g} Mb/s links, {c['queue_pkts']}-packet queues"
            + (f"; multipath with {multipath} subflows, one per level" if multipath else "")
            + f"; {c['time_s']:g} s after {c['warmup_s']:g} s warm-up{driver_text(c)}")


def _bars(ax, runs: dict[str, Run], values: list[float], **bar) -> np.ndarray:
    """A bar per scheme in its colour, hatched where the run is invalid;
    returns the bars' positions."""
    xs = np.arange(len(runs))
    ax.bar(xs, values, color=[STYLE[s].colour for s in runs], width=0.6, alpha=0.85,
           hatch=[None if r.valid else "//" for r in runs.values()], **bar)
    return xs


def _label_bars(ax, runs: dict[str, Run], xs, values: list[float], fmt: str,
                above: float = 0.0, va: str = "baseline") -> None:
    """Each bar's value over it and its scheme's name under it."""
    for x, v in zip(xs, values):
        ax.text(x, v + above, f"{v:{fmt}}", ha="center", va=va, fontsize=8)
    ax.set_xticks(xs, [STYLE[s].label for s in runs], fontsize=8)


def draw(runs: dict[str, Run], out: Path) -> Drawn:
    fig, (left, right) = plt.subplots(1, 2, figsize=(10, 4.6), layout="constrained",
                                      gridspec_kw={"width_ratios": [3, 2]})
    read = [r.pct for r in runs.values()]
    xs = _bars(left, runs, read, label="here: mean per host")
    left.scatter(xs, [r.min_pct for r in runs.values()], marker="v", color="black", zorder=3,
                 label="here: the least-served host")
    paper = [(x, PAPER_READ_PCT[s]) for x, s in zip(xs, runs) if s in PAPER_READ_PCT]
    left.scatter([x for x, _ in paper], [v for _, v in paper], marker="_", s=700, color="black",
                 zorder=3, label="paper's table (htsim, BCube(4,3))")
    # Labelled after the markers, so that the values are drawn over them.
    _label_bars(left, runs, xs, read, ".0f", above=1.5)
    left.set_ylabel("per-host read rate, % of its interfaces")
    left.set_ylim(0, 125)
    left.grid(alpha=0.3, axis="y")
    left.legend(loc="upper center", fontsize=7, ncol=3)
    left.set_title("What each host reads", fontsize=9)
    relayed = [r.relayed for r in runs.values()]
    _bars(right, runs, relayed)
    _label_bars(right, runs, xs, relayed, ".2f", va="bottom")
    right.set_ylabel("datagrams relayed per datagram sent")
    right.grid(alpha=0.3, axis="y")
    right.set_title("Traffic on the long paths (hosts' Ip ForwDatagrams)", fontsize=9)
    fig.suptitle(f"Many-to-one on BCube (paper §4.3.1)\n{_subtitle(runs)}", fontsize=8)
    shown = {s: {"read_pct": round(r.pct, 2), "min_pct": round(r.min_pct, 2),
                 "relayed_per_sent": r.relayed, "valid": r.valid} for s, r in runs.items()}
    flagged = [f"{STYLE[s].label}: {', '.join(r.flags)}" for s, r in runs.items() if not r.valid]
    notes = ("INVALID (hatched): " + "; ".join(flagged)) if flagged else ""
    return save_figure(fig, out, lambda _fig: shown, notes, wrap=120, reserve=0.06)


def draw_all(results: Path, plots: Path) -> dict[str, tuple[Path, Drawn]]:
    return draw_each(plots, load(results), draw)


REPORT_HEAD = """\
## Many-to-one on BCube (paper §4.3.1)

Every host reads from each of its neighbours; per scheme the mean per-host
read rate in % of its interfaces, the least-served host's, and datagrams the
hosts relayed per datagram they sent. `!` marks an invalid run. The paper's
table (BCube(4,3), 100 Mb/s): TCP 297, EWTCP 229, MPTCP 272 Mb/s of 300.
"""


def paper_cell(scheme: str) -> str:
    return f"{PAPER_READ_PCT[scheme]:.0f}" if scheme in PAPER_READ_PCT else "–"


def report_lines(results: Path) -> list[str]:
    return figure_tables(REPORT_HEAD, load(results), [
        "scheme", "per-host read, Mb/s", "% of its interfaces", "least-served host, %",
        "relayed per sent", "paper %"], lambda scheme, r: [
        f"{STYLE[scheme].label}{'' if r.valid else ' !'}", f"{r.record['read_mean_mbps']:.2f}",
        f"{r.pct:.1f}", f"{r.min_pct:.1f}", f"{r.relayed:.2f}", paper_cell(scheme)])
