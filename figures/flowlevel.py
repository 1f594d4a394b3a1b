"""The flow-level model of paper Fig. 2 and Fig. 3 (dctopo/flowlevel.py),
drawn from results/flowlevel/ft<k>/run.json (written by
`run_mptcp.sh flowlevel`): computed, no network involved.

flowlevel-fig2.png (paper Fig. 2): one panel per FatTree size, bars of the
mean % of optimal per subflow count: the lead model black (the paper's
flow-level bars are black), every other model computed beside it white,
each seed's mean a dot on its bar with the seeds' range as a whisker.
Where the results folder also holds packet-level FatTree permutation runs
of that size (results/ft<k>/one_to_one/flows<N>/run.json, the FatTree
sweep), their mean is a grey bar beside, as the paper's grey bars; an
invalid run is hatched. Red diamonds: the reference values figures/runs.py
keeps for that size, with their source.

flowlevel-fig3.png (paper Fig. 3): one panel per size, every connection's
rate under the lead model, sorted (rank of flow), one line per subflow
count, the seeds' connections pooled; the packet-level runs' flows of TCP
and of their largest subflow count in grey where they exist.
"""
from __future__ import annotations

import dataclasses
import json
import re
from pathlib import Path

import matplotlib
import matplotlib.pyplot as plt
import numpy as np
from matplotlib.lines import Line2D
from matplotlib.patches import Patch

from base import records
# Only what figures/runs.py has long offered (its helpers are moving to
# figures/drawing.py, style.py and tables.py); the rest is a few lines here.
from figures.runs import REFERENCE, REFERENCE_SOURCE, RUN_DIR, Drawn, Run, note, parse_run

FIG2, FIG3 = "flowlevel-fig2", "flowlevel-fig3"
RECORDS = records.of("flowlevel")
PACKET_RECORDS = (f"ft*/one_to_one/flows*/{records.RECORD}", f"ft*/one_to_one/seed*/flows*/{records.RECORD}")
TOPOLOGY_DIR = re.compile(r"ft(\d+)")
PACKET_COLOR = "#9a9a9a"             # the paper's grey bars: packet level
REFERENCE_COLOR = "#d62728"          # reference values, as figures/runs.py's REFERENCE is drawn elsewhere
FLAG_COLOR = "#a00000"               # the lead model's seeds
TCP_COLOR = "#ff7f0e"
# the lead model black, the others white; no hatch: a hatched bar is an invalid run's
MODEL_STYLE = [dict(fc="black", ec="black"), dict(fc="white", ec="black")]
MODEL_NAME = {"lia": "flow-level, LIA (loss-rate equilibrium)",
              "maxmin": "flow-level, max-min per subflow (uncoupled)"}
SOURCE = ("flow-level model of Raiciu et al. 2011 Fig. 2-3 (dctopo/flowlevel.py): FatTree, "
          "permutation matrix, one random shortest path per subflow")


def subflow_label(m: int) -> str:
    return "TCP" if m == 1 else str(m)


def subflow_color(m: int):
    """TCP orange; MPTCP 2..8 subflows along viridis, as the other FatTree figures."""
    if m == 1:
        return TCP_COLOR
    return matplotlib.colormaps["viridis"](min(0.85, 0.8 * (m - 2) / 6))


def section_head(text: str) -> list[str]:
    """report.md lines of a title and its paragraph (one line)."""
    title, paragraph = text.split("\n\n", 1)
    return [title, "", " ".join(paragraph.split()), ""]


def panels(count: int, height: float):
    """A figure of `count` panels sharing y, two to a row beyond two; the
    axes in order, unused ones hidden."""
    cols = count if count <= 2 else 2
    rows = -(-count // cols)
    fig, axes = plt.subplots(rows, cols, figsize=(1.2 + 5.6 * cols, height * rows + 1.0), sharey=True,
                             layout="constrained", squeeze=False)
    flat = list(axes.ravel())
    for ax in flat[count:]:
        ax.set_visible(False)
    return fig, flat[:count]


def save(fig, out: Path, data: dict) -> Drawn:
    """The PNG, and what the figure shows: `data` and every visible text."""
    from matplotlib.text import Text
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=110)
    drawn = Drawn(data, [t.get_text() for t in fig.findobj(Text) if t.get_visible() and t.get_text()])
    plt.close(fig)
    return drawn


def load(results: Path) -> dict[int, dict]:
    """{k: record} of every readable flow-level record, by k."""
    out = {}
    for path in records.committed(results, RECORDS):
        m = TOPOLOGY_DIR.fullmatch(path.parent.name)
        try:
            record = json.loads(path.read_text())
            models = record["models"]
            if not m or record.get("k") != int(m[1]) or not isinstance(models, dict) or not models:
                raise ValueError("no models, or k is not its folder's")
            for model in models.values():
                model["subflows"].items()
        except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
            note(f"skipped {path}: {exc}")
            continue
        out[record["k"]] = record
    return dict(sorted(out.items()))


def packet_runs(results: Path, ks) -> dict[int, dict[int, Run]]:
    """{k: {subflows: run}} of the packet-level FatTree permutation runs of
    those sizes; a sweep run over several seeds is one run of all their
    flows, valid only if every seed's run is."""
    found: dict[int, dict[int, list[Run]]] = {}
    for path in records.committed(results, PACKET_RECORDS):
        parts = path.relative_to(results).parts
        topology, workload, folder = parts[0], parts[1], parts[-2]
        k, m = TOPOLOGY_DIR.fullmatch(topology), RUN_DIR.fullmatch(folder)
        if not k or not m or int(k[1]) not in ks:
            continue
        try:
            run = parse_run(path, topology, workload, int(m[1]), parts[2] if len(parts) == 5 else "")
        except ValueError as exc:
            note(f"skipped {path}: {exc}")
            continue
        found.setdefault(int(k[1]), {}).setdefault(int(m[1]), []).append(run)
    out = {k: {m: runs[0] if len(runs) == 1 else dataclasses.replace(
                   runs[0], pcts=[p for r in runs for p in r.pcts], valid=all(r.valid for r in runs),
                   flags=sorted({f for r in runs for f in r.flags}))
               for m, runs in by_m.items()} for k, by_m in found.items()}
    return {k: dict(sorted(v.items())) for k, v in sorted(out.items())}


def model_order(record: dict) -> list[str]:
    """The record's models, the lead (the config's first) first."""
    configured = [m for m in record.get("config", {}).get("models", []) if m in record["models"]]
    return configured + [m for m in record["models"] if m not in configured]


def model_label(name: str, record: dict) -> str:
    return MODEL_NAME.get(name, f"flow-level, {name}")


def panel_title(record: dict) -> str:
    k = record["k"]
    seeds = record.get("config", {}).get("seeds", [])
    text = (f"k={k}: {record['hosts']} hosts, {5 * k * k // 4} switches\n"
            f"{len(seeds)} seed{'s' if len(seeds) != 1 else ''} ({', '.join(map(str, seeds))})")
    return text if record.get("valid", True) else text + " INVALID: " + ", ".join(record.get("flags", []))[:60]


def draw_fig2(recs: dict[int, dict], packet: dict[int, dict[int, Run]], out: Path) -> Drawn:
    ks = list(recs)
    fig, axes = panels(len(ks), 4.2)
    shown: dict = {"model": {}, "seeds": {}, "packet": {}, "reference": {}}
    legend: dict[str, object] = {}
    for ax, k in zip(axes, ks):
        rec = recs[k]
        names = model_order(rec)
        runs = packet.get(k, {})
        ms = sorted({int(m) for n in names for m in rec["models"][n]["subflows"]} | set(runs))
        slots = len(names) + (1 if runs else 0)
        width = 0.8 / slots
        for i, name in enumerate(names):
            by_m = rec["models"][name]["subflows"]
            xs = [m for m in ms if str(m) in by_m]
            pos = [m - 0.4 + width * (i + 0.5) for m in xs]
            means = [by_m[str(m)]["mean_pct"] for m in xs]
            style = MODEL_STYLE[min(i, len(MODEL_STYLE) - 1)]
            ax.bar(pos, means, width=width * 0.92, linewidth=0.7, zorder=2, **style)
            for x, m in zip(pos, xs):
                seeds = by_m[str(m)].get("seed_means_pct", [])
                if len(seeds) > 1:
                    ax.plot([x, x], [min(seeds), max(seeds)], color=FLAG_COLOR if i == 0 else "black",
                            lw=1.2, zorder=4)
                ax.plot([x] * len(seeds), seeds, "o", ms=2.8, mfc="white" if i == 0 else "black",
                        mec=FLAG_COLOR if i == 0 else "black", mew=0.8, zorder=5)
            if i == 0:
                for x, v in zip(pos, means):
                    ax.text(x, 2, f"{v:.0f}", rotation=90, ha="center", va="bottom", color="white",
                            fontsize=7.5, zorder=6)
            shown["model"].setdefault(k, {})[name] = dict(zip(xs, means))
            shown["seeds"].setdefault(k, {})[name] = {m: by_m[str(m)].get("seed_means_pct", []) for m in xs}
            legend[name] = Patch(**style, label=model_label(name, rec) + " (mean over seeds)")
        if runs:
            xs = list(runs)
            pos = [m - 0.4 + width * (slots - 0.5) for m in xs]
            bars = ax.bar(pos, [runs[m].mean for m in xs], width=width * 0.92, color=PACKET_COLOR,
                          ec="black", linewidth=0.7, zorder=2)
            for bar, m in zip(bars, xs):
                if not runs[m].valid:
                    bar.set_hatch("xx")
                    bar.set_facecolor("#dddddd")
            for x, m in zip(pos, xs):
                ax.text(x, 2, f"{runs[m].mean:.0f}", rotation=90, ha="center", va="bottom",
                        color="black", fontsize=7.5, zorder=6,
                        bbox=dict(fc=PACKET_COLOR if runs[m].valid else "white", ec="none", pad=0.5))
            shown["packet"][k] = {m: runs[m].mean for m in xs}
            legend["packet"] = Patch(fc=PACKET_COLOR, ec="black",
                                     label="packet-level runs, mean (results/ft<k>/one_to_one/flows<N>)")
            if not all(r.valid for r in runs.values()):
                legend["invalid"] = Patch(fc="#dddddd", ec="black", hatch="xx", label="invalid packet-level run")
        ref = REFERENCE.get((k, "one_to_one"), {})
        if ref:
            ax.plot(list(ref), list(ref.values()), "D", color=REFERENCE_COLOR, ms=6, mfc="none", mew=1.5,
                    zorder=7)
            shown["reference"][k] = dict(ref)
            legend[f"ref{k}"] = Line2D([], [], ls="", marker="D", color=REFERENCE_COLOR, mfc="none", mew=1.5,
                                       label=f"k={k} reference: {REFERENCE_SOURCE[(k, 'one_to_one')]}")
        ax.set_xticks(ms, [subflow_label(m) for m in ms])
        ax.set_xlim(ms[0] - 0.55, ms[-1] + 0.55)
        ax.set_ylim(0, max([105.0] + [runs[m].mean + 3 for m in runs]))
        ax.set_title(panel_title(rec), fontsize=9.5)
        ax.set_xlabel("Number of subflows")
        ax.grid(axis="y", alpha=0.3, zorder=0)
    for ax in axes[::2]:
        ax.set_ylabel("Throughput (% of optimal)")
    legend["seeds"] = Line2D([], [], ls="-", marker="o", ms=3, mfc="white", mec=FLAG_COLOR, color=FLAG_COLOR,
                             lw=1.2, label="each seed's mean, and their range (black on the white bars)")
    fig.suptitle("Multipath needs eight paths to get good utilization in FatTree (paper Fig. 2), "
                 "flow-level model\n" + SOURCE, fontsize=9.5)
    fig.legend(handles=list(legend.values()), loc="outside lower center", ncol=2, fontsize=8, frameon=False)
    return save(fig, out, shown)


def pooled(rec: dict, name: str, m: int) -> np.ndarray:
    """Every seed's sorted connection rates at m subflows, pooled and sorted."""
    seeds = rec["models"][name]["seeds"]
    return np.sort(np.concatenate([np.asarray(s[str(m)]["rates_pct"], dtype=float)
                                   for s in seeds.values() if str(m) in s]))


def draw_fig3(recs: dict[int, dict], packet: dict[int, dict[int, Run]], out: Path) -> Drawn:
    ks = list(recs)
    fig, axes = panels(len(ks), 3.9)
    shown: dict = {"model": {}, "packet": {}}
    handles: dict[str, object] = {}
    for ax, k in zip(axes, ks):
        rec = recs[k]
        lead = model_order(rec)[0]
        n = rec["hosts"]
        ms = sorted(int(m) for m in rec["models"][lead]["subflows"])
        for m in ms:
            ys = pooled(rec, lead, m)
            xs = (np.arange(ys.size) + 0.5) * n / ys.size
            ax.plot(xs, ys, color=subflow_color(m), lw=2.2 if m in (1, ms[-1]) else 1.3, zorder=3)
            shown["model"].setdefault(k, {})[m] = {"min": float(ys[0]), "median": float(np.median(ys)),
                                                   "connections": int(ys.size)}
            handles[f"m{m}"] = Line2D([], [], color=subflow_color(m), lw=2,
                                      label=("TCP" if m == 1 else f"MPTCP-{m}"))
        runs = packet.get(k, {})
        own, top = [], 105.0
        for m in sorted({m for m in (min(runs, default=0), max(runs, default=0)) if m in runs}):
            ys = np.sort(runs[m].pcts)
            xs = (np.arange(ys.size) + 0.5) * n / ys.size
            ax.plot(xs, ys, color=PACKET_COLOR, lw=1.6, ls="--" if m == 1 else "-", marker=".", ms=4,
                    zorder=2)
            shown["packet"].setdefault(k, {})[m] = [float(v) for v in ys]
            own.append(Line2D([], [], color=PACKET_COLOR, lw=1.6, ls="--" if m == 1 else "-", marker=".",
                              label=f"packet-level {'TCP' if m == 1 else f'MPTCP-{m}'} (results/ft{k}, "
                                    f"{ys.size} flows" + ("" if runs[m].valid else ", INVALID") + ")"))
            top = max(top, float(ys[-1]) + 3)
        if own:
            ax.legend(handles=own, loc="lower right", fontsize=7.5, framealpha=0.9)
        ax.set_xlim(0, n)
        ax.set_ylim(0, top)
        ax.set_title(panel_title(rec) + f", pooled; {model_label(lead, rec)}", fontsize=9.5)
        ax.set_xlabel(f"Rank of flow (of {n}, lowest throughput first)")
        ax.grid(alpha=0.3, zorder=0)
    for ax in axes[::2]:
        ax.set_ylabel("Throughput (% of optimal)")
    fig.suptitle("Distribution of throughput in FatTree (paper Fig. 3), flow-level model\n" + SOURCE,
                 fontsize=9.5)
    fig.legend(handles=list(handles.values()), loc="outside lower center", ncol=len(handles),
               fontsize=8, frameon=False)
    return save(fig, out, shown)


def draw_all(results: Path, plots: Path) -> dict[str, tuple[Path, Drawn]]:
    """{"flowlevel-fig2": (png, what it shows), "flowlevel-fig3": ...} when
    there is a flow-level record, else {}."""
    recs = load(results)
    if not recs:
        return {}
    packet = packet_runs(results, set(recs))
    out2, out3 = plots / f"{FIG2}.png", plots / f"{FIG3}.png"
    return {FIG2: (out2, draw_fig2(recs, packet, out2)), FIG3: (out3, draw_fig3(recs, packet, out3))}


REPORT_HEAD = f"""\
## FatTree throughput at scale, flow-level (paper Fig. 2-3)

{SOURCE}. "lia": TCP Reno and MPTCP LIA rates from their paths' loss rates,
iterated to the equilibrium where only full links lose; "maxmin": the
max-min fair share of every subflow, uncoupled. Means over seeds (sd of
the seeds' means), p10 the seeds' mean p10, min the lowest connection of
any seed. The paper: TCP below half of the capacity, about eight subflows
for 90 %, "largely scale-invariant". Neither model has timeouts (the
paper's flow-level simulator neither).
"""


def report_lines(results: Path) -> list[str]:
    recs = load(results)
    if not recs:
        return []
    packet = packet_runs(results, set(recs))
    lines = section_head(REPORT_HEAD) + [f"![{FIG2}](plots/{FIG2}.png)", "", f"![{FIG3}](plots/{FIG3}.png)", ""]
    for k, rec in recs.items():
        names = model_order(rec)
        runs = packet.get(k, {})
        ms = sorted({int(m) for n in names for m in rec["models"][n]["subflows"]})
        secs = sum(rec.get("seconds", {}).values())
        lines += [f"k={k} ({rec['hosts']} hosts), seeds {', '.join(rec['models'][names[0]]['seeds'])}, "
                  f"computed in {secs:.1f} s" + ("" if rec.get("valid", True)
                                                  else f"; INVALID: {', '.join(rec.get('flags', []))}") + ":", "",
                  "| subflows | " + " | ".join(f"{n} mean ± sd | {n} p10 | {n} min" for n in names)
                  + (" | packet-level mean |" if runs else " |"),
                  "|---" * (1 + 3 * len(names) + (1 if runs else 0)) + "|"]
        for m in ms:
            cells = [subflow_label(m)]
            for n in names:
                v = rec["models"][n]["subflows"].get(str(m))
                cells += ([f"{v['mean_pct']:.1f} ± {v['sd_pct']:.1f}", f"{v['p10_pct']:.1f}",
                           f"{v['min_pct']:.1f}"] if v else ["–"] * 3)
            if runs:
                run = runs.get(m)
                cells.append("–" if run is None else f"{run.mean:.1f}" + ("" if run.valid else " !"))
            lines.append("| " + " | ".join(cells) + " |")
        lines.append("")
    return lines
