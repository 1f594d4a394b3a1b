"""Link failure on the dual-homed FatTree (paper Fig. 19): per-flow
throughput over time for TCP and MPTCP while core link a0_0-c0 runs at a
tenth of its rate, and the aggregate of all flows.

Reads results/linkfailure<k>-<fabric>/<scheme>/run.json; one figure per k
and fabric, linkfailure<k>-<fabric>.png. Flows that crossed the link before
it slowed (seen by the tap on it) are drawn in colour, the others in grey;
the shaded band is the degraded window, the dashed line the degraded
link's rate. An invalid run's panel says so, with its flags.
"""
from __future__ import annotations

import json
from pathlib import Path

import matplotlib.pyplot as plt

from base import records
from figures.drawing import Drawn, draw_each, save_figure
from figures.notes import note
from figures.runs import driver_text
from figures.style import FLAG_COLOR, scheme_style
from figures.tables import figure_tables

SCHEMES = {"tcp_dhft": scheme_style("tcp"), "mptcp_dhft": scheme_style("mptcp")}
# Lines are moving means over this many one-second samples: an MPTCP flow's
# per-second goodput at the receiver swings between 0 and 16 Mb/s at 10 Mb/s
# links (a first run here), which hides the shape the paper's Fig. 19 shows.
SMOOTH_S = 3
DIRECTION_COLOR = {"out": "#d62728", "in": "#9467bd"}
OTHER_COLOR = "#bbbbbb"


def load(results: Path) -> dict[str, dict[str, dict]]:
    """{"linkfailure<k>-<fabric>": {scheme: record}}, schemes in SCHEMES' order."""
    out: dict[str, dict[str, dict]] = {}
    for path in records.committed(results, records.of("linkfailure")):
        try:
            record = json.loads(path.read_text())
            scheme = record["config"]["scheme"]
            if not isinstance(record.get("hot_link"), dict):
                raise ValueError("no hot_link summary")
        except (OSError, ValueError, KeyError, TypeError) as exc:
            note(f"skipped {path}: {exc}")
            continue
        if scheme in SCHEMES:
            out.setdefault(path.parent.parent.name, {})[scheme] = record
    return {name: {s: runs[s] for s in SCHEMES if s in runs} for name, runs in sorted(out.items())}


def _direction(record: dict, flow: dict) -> str:
    return "out" if flow["src"] in (record.get("event") or {}).get("exposed_hosts", []) else "in"


def _shade(ax, record: dict) -> None:
    w0, w1 = record["config"]["window_s"]
    ax.axvspan(w0, w1, color="#f2e6c9", zorder=0)
    ax.axvline(record["config"]["warmup_s"], color="#888888", linewidth=0.7, linestyle=":")


def smooth(ys: list[float], n: int = SMOOTH_S) -> list[float]:
    """Centred moving mean over n samples (fewer at the ends)."""
    half = n // 2
    return [sum(ys[max(0, i - half):i + half + 1]) / len(ys[max(0, i - half):i + half + 1])
            for i in range(len(ys))]


def _fmt(x) -> str:
    return "–" if x is None else f"{x:.1f}"


def draw(runs: dict[str, dict], out: Path) -> Drawn:
    fig, axes = plt.subplots(len(runs) + 1, 1, figsize=(10, 3.2 * (len(runs) + 1)),
                             layout="constrained", sharex=True)
    shown, flagged = {}, []
    for ax, (scheme, record) in zip(axes, runs.items()):
        label = SCHEMES[scheme].label
        h = record["hot_link"]
        _shade(ax, record)
        crossing = 0
        for flow in record["flows"]:
            ys = smooth(flow.get("per_second_mbps") or [])
            xs = [i + 0.5 for i in range(len(ys))]
            if flow.get("crosses_hot_link"):
                crossing += 1
                ax.plot(xs, ys, color=DIRECTION_COLOR[_direction(record, flow)], linewidth=1.1, zorder=3)
            else:
                ax.plot(xs, ys, color=OTHER_COLOR, linewidth=0.7, zorder=2)
        ax.axhline(h["degraded_mbps"], color="black", linestyle="--", linewidth=0.8)
        agg = h["aggregate_mbps"]
        ax.set_title(f"{label}: {crossing} of {len(record['flows'])} flows crossed {h['link']} "
                     f"(red: out of its pod, purple: into it); aggregate {_fmt(agg['before'])} / "
                     f"{_fmt(agg['during'])} / {_fmt(agg['after'])} Mb/s before / during / after"
                     + ("" if record["valid"] else "  INVALID"), fontsize=8,
                     color="black" if record["valid"] else FLAG_COLOR)
        ax.set_ylabel(f"flow Mb/s ({SMOOTH_S} s mean)")
        ax.set_ylim(bottom=0)
        ax.grid(alpha=0.3)
        if not record["valid"]:
            flagged.append(f"{label}: {', '.join(record['flags'])}")
        shown[scheme] = {"aggregate_mbps": agg, "crossing_mbps": h["crossing_mbps"],
                         "crossing_flows": len(h["crossing_flows"]), "valid": record["valid"]}
    total = axes[-1]
    for scheme, record in runs.items():
        label, color = SCHEMES[scheme].label, SCHEMES[scheme].colour
        series = [f.get("per_second_mbps") or [] for f in record["flows"]]
        length = max((len(s) for s in series), default=0)
        ys = smooth([sum(s[i] for s in series if i < len(s)) for i in range(length)])
        total.plot([i + 0.5 for i in range(length)], ys, color=color, linewidth=1.5,
                   linestyle="-" if record["valid"] else "--", label=label)
    first = next(iter(runs.values()))
    _shade(total, first)
    total.set_ylabel(f"all flows, Mb/s ({SMOOTH_S} s mean)")
    total.set_xlabel("seconds since the traffic started (dotted: end of warm-up; shaded: link degraded)")
    total.set_ylim(bottom=0)
    total.grid(alpha=0.3)
    total.legend(loc="lower left", fontsize=8)
    c = first["config"]
    fig.suptitle(f"Link failure on DHFT({c['k']}) (paper Fig. 19): core link {first['hot_link']['link']} "
                 f"at {c['factor']:g} of {c['bw_mbps']:g} Mb/s from {c['window_s'][0]:g} to "
                 f"{c['window_s'][1]:g} s; zero-locality permutation, {first.get('hosts')} hosts, "
                 f"fabric {c['fabric']}, cc {c['cc']}{driver_text(c)}", fontsize=9)
    notes = ("INVALID: " + "; ".join(flagged)) if flagged else ""
    return save_figure(fig, out, lambda _fig: shown, notes, wrap=130, reserve=0.04)


def draw_all(results: Path, plots: Path) -> dict[str, tuple[Path, Drawn]]:
    return draw_each(plots, load(results), draw)


REPORT_HEAD = """\
## Link failure on the dual-homed FatTree (paper Fig. 19)

Core link a0_0-c0 runs at a tenth of its rate during the middle third of the
counted time. Per scheme, the mean aggregate goodput of all flows before,
during and after, and that of the flows the tap saw crossing the link, by
direction; `!` marks an invalid run. The paper: MPTCP spreads the remaining
core capacity over the flows and refills the link when it returns; the TCP
flows on the link fall to what it carries.
"""


def report_lines(results: Path) -> list[str]:
    def row(scheme: str, r: dict) -> list[str]:
        h = r["hot_link"]
        agg, out, into = h["aggregate_mbps"], h["crossing_mbps"]["out"], h["crossing_mbps"]["in"]
        kept = "–" if h["aggregate_kept"] is None else f"{h['aggregate_kept']:.0%}"
        return [f"{SCHEMES[scheme].label}{'' if r['valid'] else ' !'}",
                f"{_fmt(agg['before'])} / {_fmt(agg['during'])} / {_fmt(agg['after'])}", kept,
                str(len(h["crossing_flows"])), f"{_fmt(out['before'])} / {_fmt(out['during'])}",
                f"{_fmt(into['before'])} / {_fmt(into['during'])}", f"{h['degraded_mbps']:g} Mb/s"]
    return figure_tables(REPORT_HEAD, load(results), [
        "scheme", "all flows before / during / after, Mb/s", "kept during", "crossing flows",
        "out of the pod, before / during", "into the pod, before / during", "link degraded to"], row)
