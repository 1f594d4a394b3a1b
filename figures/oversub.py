"""`oversub`, the 4:1 oversubscribed FatTree (paper §4.3.3): MPTCP's aggregate
goodput as a multiple of TCP's on the same matrix, against connections per
host for permutation and random matrices (paper Fig. 7), and against the
share of rack-local flows (paper Fig. 8, where both aggregates are drawn
too).

Reads results/oversub<k>/<sweep>/<matrix>/<scheme>/<value>/run.json. A gain
whose TCP or MPTCP run is invalid is a red cross, its flags written under
the figure; the locality figure puts each matrix at the share of rack-local
flows it really has. Where the records carry the fluid model's rates
(dctopo/fluid_model.py, written by experiments/oversub.py), its gain on each
point's matrix is drawn dashed, and on the paper's 512-host network dotted:
a reference for the shape, computed, not measured.
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path

import matplotlib.pyplot as plt

from base import records
from figures import rack_seeds
from figures.drawing import (Drawn, connections_axis, draw_sweeps, mark_invalid, save_figure,
                             save_sweep_figure)
from figures.experiment_records import records_by_topology
from figures.runs import driver_text
from figures.style import scheme_style
from figures.tables import section_head

SWEEPS = ("load", "locality")
MATRICES = {"permutation": ("permutation", "#1f77b4", "o"), "random": ("random", "#ff7f0e", "s")}
SCHEME_STYLE = {"tcp": scheme_style("tcp"), "mptcp": scheme_style("mptcp")}
# Series keys: "<matrix>:<scheme>".
SERIES = tuple(f"{m}:{s}" for m in MATRICES for s in SCHEME_STYLE)
TOPOLOGY_DIR = re.compile(r"oversub(\d+)(-seed\d+)?")


@dataclass
class Point:
    x: float                  # connections per host, or the matrix's rack-local share
    aggregate_mbps: float
    valid: bool
    flags: list[str]
    record: dict = field(default_factory=dict)


@dataclass
class Gain:
    x: float
    tcp: Point
    mptcp: Point

    @property
    def value(self) -> float:
        return self.mptcp.aggregate_mbps / self.tcp.aggregate_mbps

    @property
    def valid(self) -> bool:
        return self.tcp.valid and self.mptcp.valid

    @property
    def flags(self) -> list[str]:
        return ([f"TCP {f}" for f in self.tcp.flags] + [f"MPTCP {f}" for f in self.mptcp.flags])

    def _model(self, network: str) -> dict | None:
        return (self.tcp.record.get("fluid_model") or {}).get(network)

    def model_gain(self, network: str) -> float | None:
        """The fluid model's gain on this matrix, on "this_network" or
        "paper_network"; None where the record has none (older records, or
        no paper network at this ratio)."""
        model = self._model(network)
        return float(model["gain"]) if model else None

    def model_local(self, network: str) -> float:
        """The rack-local share of the matrix the model had on `network`:
        the paper's network draws its own (a random host is in the sender's
        rack less often among 512)."""
        model = self._model(network) or {}
        return float(model.get("local_fraction", self.x))


def parse_point(path: Path) -> tuple[str, str, Point]:
    doc = json.loads(path.read_text())
    cfg = doc["config"]
    x = float(doc["local_fraction"]) if cfg["sweep"] == "locality" else float(cfg["x"])
    return cfg["sweep"], f"{cfg['matrix']}:{cfg['scheme']}", Point(
        x, float(doc["aggregate_mbps"]), bool(doc["valid"]), list(doc.get("flags") or []), doc)


def load(results: Path) -> dict[str, dict[str, dict[str, list[Point]]]]:
    """{"oversub<k>": {sweep: {"<matrix>:<scheme>": points sorted by x}}}."""
    return records_by_topology(results, records.of("oversub"), TOPOLOGY_DIR, parse_point,
                               SWEEPS, SERIES)


def gains(series: dict[str, list[Point]], matrix: str) -> list[Gain]:
    """MPTCP over TCP at each point both ran with TCP carrying something,
    paired by the order of their x (a locality matrix's share is the same
    for both schemes: they run the same matrix)."""
    tcp, mptcp = series.get(f"{matrix}:tcp", []), series.get(f"{matrix}:mptcp", [])
    by_x = {p.x: p for p in tcp}
    return [Gain(p.x, by_x[p.x], p) for p in mptcp if p.x in by_x and by_x[p.x].aggregate_mbps > 0]


def _subtitle(series: dict[str, list[Point]]) -> str:
    r = next(p for pts in series.values() for p in pts).record
    c = r["config"]
    mptcp = next((p for k, pts in series.items() if k.endswith(":mptcp") for p in pts), None)
    subflows = mptcp.record["config"]["subflows"] if mptcp else "?"
    return (f"FatTree(k={c['k']}) {c['ratio']}:1, {r.get('hosts')} hosts ({c['hosts_per_rack']} "
            f"per rack), {c['bw_mbps']:g} Mb/s links, {c['queue_pkts']} pkt queues,\n"
            f"MPTCP {subflows} subflows, cc {c['cc']}, fabric {c['fabric']}{driver_text(c)}, "
            f"{c['time_s']:g} s after {c['warmup_s']:g} s warm-up")


MODEL_LINES = {"this_network": ("fluid model, this network", "--"),
               "paper_network": ("fluid model, paper's 512 hosts", ":")}


def _draw_model(ax, gs: list[Gain], label: str, color: str, model_x, shown: dict) -> None:
    """The fluid model's gain at each point that has it, per network, at
    x `model_x(gain, network)`."""
    for network, (what, style) in MODEL_LINES.items():
        modelled = [g for g in gs if g.model_gain(network) is not None]
        if modelled:
            ax.plot([model_x(g, network) for g in modelled], [g.model_gain(network) for g in modelled],
                    color=color, linestyle=style, marker=".", ms=4, linewidth=1.1, alpha=0.8,
                    label=f"{what}, {label}", zorder=2)
            shown[f"{label}:{network}"] = [(g.x, round(g.model_gain(network), 4)) for g in modelled]


def _draw_gains(ax, series, styles: dict, x_of=lambda g: g.x, model_x=None) -> tuple[list[str], dict]:
    """The gain per matrix of `styles` ({matrix: (label, color, marker)}),
    and the fluid model's where the records carry it (at `model_x(gain,
    network)`, by default at the gain's own x)."""
    model_x = model_x or (lambda g, _network: x_of(g))
    flagged, shown = [], {}
    for matrix, (label, color, marker) in styles.items():
        gs = gains(series, matrix)
        if not gs:
            continue
        ax.plot([x_of(g) for g in gs], [g.value for g in gs], color=color, marker=marker, ms=6,
                linewidth=1.5, label=f"MPTCP / TCP, {label} matrix", zorder=3)
        flagged += mark_invalid(ax, label, gs, x_of, lambda g: g.value, lambda g: f"{g.x:g}")
        shown[matrix] = [(g.x, round(g.value, 4), g.valid) for g in gs]
        _draw_model(ax, gs, label, color, model_x, shown)
    ax.axhline(1.0, color="#999999", linestyle="--", linewidth=0.8, zorder=1)
    ax.set_ylim(0, max([2.0] + [pt[1] * 1.1 for pts in shown.values() for pt in pts]))
    ax.grid(alpha=0.3)
    return flagged, shown


def draw_load(series: dict[str, list[Point]], out: Path) -> Drawn:
    fig, ax = plt.subplots(figsize=(8, 5), layout="constrained")
    flagged, shown = _draw_gains(ax, series, MATRICES)
    xs = sorted({p.x for pts in series.values() for p in pts})
    connections_axis(ax, xs, "connections per host (below 1, that share of the hosts sends)")
    ax.set_ylabel("aggregate goodput, MPTCP / TCP")
    ax.set_title(f"Oversubscribed FatTree: MPTCP's gain against load (paper Fig. 7)\n"
                 f"{_subtitle(series)}", fontsize=9)
    return save_sweep_figure(fig, out, shown, flagged, ncol=2)


def draw_locality(series: dict[str, list[Point]], out: Path) -> Drawn:
    fig, (agg, gain) = plt.subplots(1, 2, figsize=(11, 5), layout="constrained")
    flagged, shown = [], {}
    for scheme, style in SCHEME_STYLE.items():
        pts = series.get(f"random:{scheme}", [])
        if pts:
            agg.plot([100 * p.x for p in pts], [p.aggregate_mbps for p in pts], color=style.colour,
                     marker=style.marker, ms=6, linewidth=1.5, label=f"{style.label} aggregate",
                     zorder=3)
            flagged += mark_invalid(agg, style.label, pts, lambda p: 100 * p.x,
                                    lambda p: p.aggregate_mbps, lambda p: f"{p.x:.0%} local")
            shown[scheme] = [(p.x, p.aggregate_mbps, p.valid) for p in pts]
    agg.set_xlabel("rack-local flows (%)")
    agg.set_ylabel("aggregate goodput (Mb/s)")
    agg.set_ylim(bottom=0)
    agg.grid(alpha=0.3)
    # A gain's flags are its runs', already named from the left panel.
    _, gain_shown = _draw_gains(gain, series, {"random": ("random", "#333333", "D")},
                                x_of=lambda g: 100 * g.x, model_x=lambda g, net: 100 * g.model_local(net))
    shown["gain"] = gain_shown.get("random", [])
    shown.update({key: pts for key, pts in gain_shown.items() if ":" in key})
    gain.set_xlabel("rack-local flows (%)")
    gain.set_ylabel("aggregate goodput, MPTCP / TCP")
    for ax in (agg, gain):
        ax.set_xlim(-3, 103)
        ax.legend(fontsize=8, loc="lower right")
    fig.suptitle(f"Oversubscribed FatTree: one flow per host, against locality (paper Fig. 8)\n"
                 f"{_subtitle(series)}", fontsize=9)
    notes = ("INVALID (red x): " + "; ".join(flagged)) if flagged else ""
    return save_figure(fig, out, lambda _fig: shown, notes, wrap=120, reserve=0.08)


DRAW = {"load": draw_load, "locality": draw_locality}


def draw_all(results: Path, plots: Path) -> dict[str, tuple[Path, Drawn]]:
    """Every `oversub` figure with at least one run: {"oversub<k>-<sweep>": (png, drawn)}."""
    return {**draw_sweeps(load(results), plots, DRAW), **rack_seeds.draw_all(results, plots, "oversub")}


REPORT_HEAD = """\
## Oversubscribed FatTree (`oversub`; paper §4.3.3, Fig. 7-8)

Aggregate goodput (Mb/s) of TCP and of MPTCP on the same matrix, and their
ratio; `!` marks an invalid run. The paper (a 512-host 4:1 FatTree,
simulated): the gain is largest at 0.25 connections per host and vanishes at
very light and very heavy load, alike for permutation and random matrices;
against locality it holds until about 75 % of the flows are rack-local.
"model here" and "model, 512 hosts" are the fluid model's gains (max-min
rates, pooled multipath over TCP on ECMP; dctopo/fluid_model.py) on the same matrix
and on the paper's network under a matrix drawn the same way: computed, not
measured.
"""


def report_lines(results: Path) -> list[str]:
    data = load(results)
    lines = section_head(REPORT_HEAD) if data else []
    for topology, sweeps in data.items():
        for sweep, series in sweeps.items():
            head = "rack-local flows" if sweep == "locality" else "connections per host"
            lines += [f"### {topology}: against {sweep}", "",
                      f"![{topology} {sweep}](plots/{topology}-{sweep}.png)", "",
                      f"| matrix | {head} | TCP | MPTCP | MPTCP / TCP | model here | model, 512 hosts |",
                      "| --- " * 7 + "|"]
            for matrix in MATRICES:
                for g in gains(series, matrix):
                    x = f"{g.x:.0%}" if sweep == "locality" else f"{g.x:g}"
                    mark = lambda p: "" if p.valid else " !"    # noqa: E731
                    model = lambda network: ("–" if g.model_gain(network) is None    # noqa: E731
                                             else f"{g.model_gain(network):.2f}")
                    lines.append(f"| {matrix} | {x} | {g.tcp.aggregate_mbps:.1f}{mark(g.tcp)} | "
                                 f"{g.mptcp.aggregate_mbps:.1f}{mark(g.mptcp)} | {g.value:.2f} | "
                                 f"{model('this_network')} | {model('paper_network')} |")
            lines.append("")
    return lines + rack_seeds.report_lines(results, "oversub")
