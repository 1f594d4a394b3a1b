"""`algorithms` and `hotspot`: congestion controls compared on FatTree one_to_one, without and
with a hot spot (Raiciu et al. 2011 Fig. 9-11, 19).

Reads results/algorithms<k>/<scheme>/ft<k>/one_to_one/flows<N>/ (`algorithms`) and
results/hotspot<k>/... (`hotspot`): run.json and ports.csv.

`algorithms`, `algorithms<k>.png`: each flow's throughput (% of optimal), ranked, one
line per scheme (Fig. 9); the loss rate of every core, aggregation and
access (edge switch to host) link direction, ranked (Fig. 10 has core and
access). A port's loss rate is the
packets its egress queue dropped over those it sent or dropped, in the
counted window.

`hotspot`, `hotspot<k>.png`: per scheme, over the whole run, the mean throughput of
the flows with one end in the pod of the slowed core link (those that can
cross it) and of the others, the slow window shaded (Fig. 19); and each
flow's throughput during the slow window, ranked (Fig. 11).

Invalid runs are drawn dashed, their flags under the figure.
"""
from __future__ import annotations

import csv
import json
import re
import statistics
from dataclasses import dataclass
from pathlib import Path

import matplotlib.pyplot as plt

from base import records
from figures.drawing import Drawn, save_figure
from figures.notes import note
from figures.style import FLAG_COLOR, scheme_style

SCHEMES = {"tcp": scheme_style("tcp", "single-path TCP"), "uncoupled": scheme_style("uncoupled"),
           "ewtcp": scheme_style("ewtcp"), "lia": scheme_style("lia"), "olia": scheme_style("olia")}
# Switch ports by the link their egress feeds. Hosts' own uplinks are not
# switch ports: what a host's subflows lose in its own queue is not counted.
LINK_KINDS = {"core": "Core links: agg→core and core→agg",
              "aggregation": "Aggregation links: edge→agg and agg→edge",
              "access": "Access links: edge switch → host"}
EXPERIMENT_DIR = re.compile(r"(algorithms|hotspot)(\d+)")


@dataclass
class SchemeRun:
    scheme: str
    dir: Path
    record: dict

    @property
    def valid(self) -> bool:
        return bool(self.record.get("valid"))

    @property
    def window(self) -> tuple[float, float]:
        c = self.record["config"]
        return c["warmup_s"], c["warmup_s"] + c["time_s"]

    def pcts(self) -> list[float]:
        return sorted(f["pct_optimal"] for f in self.record["flows"])


def load(results: Path) -> dict[str, dict[str, SchemeRun]]:
    """{"algorithms<k>" | "hotspot<k>": {scheme: its run}}, schemes in the
    paper's order; unreadable records are noted and skipped."""
    found: dict[str, dict[str, SchemeRun]] = {}
    for path in records.committed(results, records.of("algorithms", "hotspot")):
        top, scheme = path.relative_to(results).parts[:2]
        if not EXPERIMENT_DIR.fullmatch(top) or scheme not in SCHEMES:
            continue
        try:
            rec = json.loads(path.read_text())
            rec["flows"][0]["pct_optimal"]
        except (OSError, ValueError, KeyError, IndexError, TypeError) as exc:
            note(f"skipped {path}: {exc}")
            continue
        found.setdefault(top, {})[scheme] = SchemeRun(scheme, path.parent, rec)
    return {top: {s: runs[s] for s in SCHEMES if s in runs} for top, runs in found.items()}


def port_loss(run: SchemeRun) -> dict[str, list[float]]:
    """{kind: [...]} for each of LINK_KINDS: the loss rate (%) of each link
    direction of that kind in the counted window, sorted."""
    k = run.record["config"]["k"]
    start, end = run.window
    first: dict[str, tuple[int, int]] = {}
    last: dict[str, tuple[int, int]] = {}
    try:
        with open(run.dir / "ports.csv", newline="") as f:
            for row in csv.DictReader(f):
                t = float(row["t_s"])
                if not start - 0.5 <= t <= end + 0.5:
                    continue
                key = row["intf"]
                value = (int(row["tx_packets"]), int(row["drops"]))
                first.setdefault(key, value)
                last[key] = value
    except (OSError, ValueError, KeyError) as exc:
        note(f"{run.dir}: ports.csv unusable for loss rates: {exc}")
        return {}
    out: dict[str, list[float]] = {kind: [] for kind in LINK_KINDS}
    for intf, (tx1, dr1) in last.items():
        tx0, dr0 = first[intf]
        node, _, port = intf.rpartition("-eth")
        tier = {"c": "core", "a": "agg", "e": "edge"}.get(node[:1])
        if tier is None:
            continue
        low = int(port) < k // 2
        kind = ("core" if tier == "core" or (tier == "agg" and not low)
                else "access" if tier == "edge" and low else "aggregation")
        sent, dropped = tx1 - tx0, dr1 - dr0
        out[kind].append(100.0 * dropped / (sent + dropped) if sent + dropped > 0 else 0.0)
    return {kind: sorted(v) for kind, v in out.items()}


def _subtitle(runs: dict[str, SchemeRun]) -> str:
    r = next(iter(runs.values())).record
    c = r["config"]
    mptcp = next((x.record["config"]["subflows"] for x in runs.values()
                  if x.record["config"]["subflows"] > 1), "?")
    return (f"FatTree({c['k']}) one_to_one, {c['bw_mbps']:g} Mb/s links, {c['queue_pkts']} pkt queues, "
            f"MPTCP {mptcp} subflows, fabric {c['fabric']}, seed {c['seed']}, "
            f"{c['time_s']:g} s after {c['warmup_s']:g} s warm-up")


def _style(run: SchemeRun) -> dict:
    style = SCHEMES[run.scheme]
    return {"color": style.colour, "linestyle": "-" if run.valid else "--",
            "label": style.label + ("" if run.valid else " (INVALID)")}


def _flag_notes(runs: dict[str, SchemeRun]) -> str:
    bad = [f"{SCHEMES[s].label}: {', '.join(r.record.get('flags') or [])}"
           for s, r in runs.items() if not r.valid]
    return ("INVALID (dashed): " + "; ".join(bad)) if bad else ""


def _ranked(ax, runs: dict[str, SchemeRun], values: dict[str, list[float]], mean_fmt: str,
            xlabel: str, ylabel: str, title: str) -> None:
    """One curve per scheme: its values in ranked order, its mean in the legend."""
    for s, r in runs.items():
        ys = values[s]
        if ys:
            st = _style(r)
            st["label"] += ": mean " + mean_fmt.format(statistics.fmean(ys))
            ax.plot(range(1, len(ys) + 1), ys, marker=".", **st)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_ylim(bottom=0)
    ax.set_title(title, fontsize=10)
    ax.legend(fontsize=8)


def draw_algorithms(runs: dict[str, SchemeRun], out: Path) -> Drawn:
    fig, grid = plt.subplots(2, 2, figsize=(14, 9), layout="constrained")
    axes = grid.flat
    loss = {s: port_loss(r) for s, r in runs.items()}
    _ranked(axes[0], runs, {s: r.pcts() for s, r in runs.items()}, "{:.0f} %",
            "flow (ranked by throughput)", "throughput (% of optimal)",
            "Each flow's throughput (paper Fig. 9)")
    for ax, (kind, name) in zip(axes[1:], LINK_KINDS.items()):
        _ranked(ax, runs, {s: loss[s].get(kind) or [] for s in runs}, "{:.2f} %",
                "link direction (ranked by loss rate)", "loss rate (%)",
                f"{name} (paper Fig. 10: core, access)")
    for ax in axes:
        ax.grid(alpha=0.3)
    fig.suptitle(f"Congestion controls compared (algorithms)\n{_subtitle(runs)}", fontsize=10)

    def readout(_fig) -> dict:
        return {s: {"pcts": r.pcts(), "loss": loss[s]} for s, r in runs.items()}
    return save_figure(fig, out, readout, notes=_flag_notes(runs))


def exposed(run: SchemeRun) -> list[bool]:
    """Per flow, whether one of its ends is under the slowed link's pod."""
    hosts = set((run.record.get("event") or {}).get("exposed_hosts") or [])
    return [(f["src"] in hosts) != (f["dst"] in hosts) for f in run.record["flows"]]


def mean_series(run: SchemeRun, which: list[bool]) -> list[float]:
    """Mean per-second throughput (Mb/s) of the chosen flows, second by second."""
    series = [f.get("per_second_mbps") or [] for f, w in zip(run.record["flows"], which) if w]
    n = min((len(s) for s in series), default=0)
    return [statistics.fmean(s[i] for s in series) for i in range(n)]


def during(run: SchemeRun) -> tuple[list[float], list[float]]:
    """Each flow's mean throughput (Mb/s) while the link was slow, and in
    the counted seconds before it was slowed."""
    lo, hi = (run.record.get("event") or {}).get("planned_s") or (0, 0)
    start = run.window[0]
    slow, before = [], []
    for f in run.record["flows"]:
        s = f.get("per_second_mbps") or []
        slow.append(statistics.fmean(s[int(lo) + 1:int(hi)] or [0.0]))
        before.append(statistics.fmean(s[int(start):int(lo)] or [0.0]))
    return slow, before


def draw_hotspot(runs: dict[str, SchemeRun], out: Path) -> Drawn:
    n = len(runs)
    # Two rows, so that each panel stays readable at page width.
    cols = (n + 2) // 2
    fig, grid = plt.subplots(2, cols, figsize=(4.4 * cols, 8.2), layout="constrained", squeeze=False)
    axes = list(grid.flat)
    for spare in axes[n + 1:]:
        spare.remove()
    axes = axes[:n + 1]
    event = next(iter(runs.values())).record.get("event") or {}
    lo, hi = event.get("planned_s") or (0, 0)
    data = {}
    top = max((max(f.get("per_second_mbps") or [0]) for r in runs.values() for f in r.record["flows"]),
              default=10)
    for ax, (s, r) in zip(axes, runs.items()):
        mask = exposed(r)
        hit = mean_series(r, mask)
        rest = mean_series(r, [not m for m in mask])
        ax.axvspan(lo, hi, color="#ffcccc", alpha=0.5, label=f"link at {event.get('factor', '?'):g}×")
        ax.axvspan(0, r.window[0], color="#eeeeee", alpha=0.7, label="warm-up")
        ax.plot([i + 0.5 for i in range(len(hit))], hit, color="#d62728",
                label=f"{sum(mask)} flows to/from pod 0")
        ax.plot([i + 0.5 for i in range(len(rest))], rest, color="#1f77b4",
                label=f"{len(mask) - sum(mask)} other flows")
        ax.set_ylim(0, min(top, 1.3 * r.record["config"]["bw_mbps"]))
        ax.set_title(SCHEMES[s].label + ("" if r.valid else " (INVALID)"), fontsize=10,
                     color="black" if r.valid else FLAG_COLOR)
        ax.set_xlabel("seconds since traffic started")
        ax.grid(alpha=0.3)
        data[s] = {"exposed": hit, "other": rest}
    for i in range(0, n, cols):
        axes[i].set_ylabel("mean throughput per flow (Mb/s)")
    # one legend for the per-second panels, below them all, clear of the data
    fig.legend(*axes[0].get_legend_handles_labels(), loc="outside lower center", ncol=4, fontsize=8)
    ax = axes[-1]
    for s, r in runs.items():
        slow, _ = during(r)
        ys = sorted(slow)
        st = _style(r)
        st["label"] += f": mean {statistics.fmean(ys):.2f}"
        ax.plot(range(1, len(ys) + 1), ys, marker=".", **st)
        data[s]["during_sorted"] = ys
    ax.set_title("Each flow while the link is slow (Fig. 11)", fontsize=10)
    ax.set_xlabel("flow (ranked)")
    ax.set_ylabel("Mb/s")
    ax.set_ylim(bottom=0)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.14), ncol=2)
    fig.suptitle(f"Hot spot: core link {event.get('link', '?')} at {event.get('factor', '?'):g} of "
                 f"its rate from {lo:g} to {hi:g} s, both directions\n{_subtitle(runs)}", fontsize=10)

    def readout(_fig) -> dict:
        return data
    return save_figure(fig, out, readout, notes=_flag_notes(runs))


def draw_all(results: Path, plots: Path) -> dict[str, tuple[Path, Drawn]]:
    drawn = {}
    for name, runs in load(results).items():
        out = plots / f"{name}.png"
        draw = draw_algorithms if name.startswith("algorithms") else draw_hotspot
        drawn[name] = (out, draw(runs, out))
    return drawn


def report_lines(results: Path) -> list[str]:
    data = load(results)
    lines: list[str] = []
    for name, runs in data.items():
        if name.startswith("algorithms"):
            lines += [f"## Congestion controls compared (`algorithms`): {name}", "",
                      f"![{name}](plots/{name}.png)", "",
                      "Paper (Fig. 9-10, 128-host FatTree packet-level simulation): the multipath "
                      "algorithm does not greatly affect long-flow throughput, every one beating "
                      "single-path TCP; core loss lower with MPTCP than with UNCOUPLED.", "",
                      "Loss rates: packets dropped / (sent + dropped) over the switch ports of "
                      "each kind, mean over its link directions.", "",
                      "| scheme | mean % | p10 % | min % | core loss % | aggregation loss % | "
                      "access loss % | flags |", "| --- " * 8 + "|"]
            for s, r in runs.items():
                loss = port_loss(r)
                sm = r.record["summary"]
                cells = [f"{statistics.fmean(loss[x]):.2f}" if loss.get(x) else "–"
                         for x in LINK_KINDS]
                lines.append(f"| {SCHEMES[s].label} | {sm['mean_pct']:.1f} | {sm['p10_pct']:.1f} | "
                             f"{sm['min_pct']:.1f} | {' | '.join(cells)} | "
                             f"{', '.join(r.record.get('flags') or []) or '–'} |")
        else:
            lines += [f"## Hot spot (`hotspot`): {name}", "", f"![{name}](plots/{name}.png)", "",
                      "Mean throughput (Mb/s) of the flows that can cross the slowed link "
                      "(one end in its pod) before and while it is slow, and of the others. "
                      "Paper (Fig. 11, 19): MPTCP moves traffic off the hot link, so the effect "
                      "is small; UNCOUPLED and EWTCP do not.", "",
                      "| scheme | exposed before | exposed while slow | ratio | others before | "
                      "others while slow | flags |", "| --- " * 7 + "|"]
            for s, r in runs.items():
                slow, before = during(r)
                mask = exposed(r)

                def m(xs, want):
                    sel = [x for x, w in zip(xs, mask) if w == want]
                    return statistics.fmean(sel) if sel else float("nan")
                eb, es, ob, os_ = m(before, True), m(slow, True), m(before, False), m(slow, False)
                lines.append(f"| {SCHEMES[s].label} | {eb:.2f} | {es:.2f} | "
                             f"{es / eb if eb else float('nan'):.2f} | {ob:.2f} | {os_:.2f} | "
                             f"{', '.join(r.record.get('flags') or []) or '–'} |")
        lines.append("")
    return lines
