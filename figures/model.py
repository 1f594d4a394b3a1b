"""The subflow model (Raiciu et al., SIGCOMM 2011, §4.3.2, Fig. 6): variance
V_p of the load on a within-pod link against the number of subflows m, one
line per FatTree size k; V_c, the pod-core links', dotted.

Reads results/model/model.json (written by `run_mptcp.sh model`): the
model's values as computed, no network involved.

Beyond the paper, the same variance measured: where the results folder also
holds FatTree one_to_one runs (the permutation; results/ft<k>/one_to_one/
flows<m>/ with ports.csv), each run's load on every edge→aggregation port
(within-pod, up) and aggregation→core port over the counted window, as a
share of the link rate, gives a mean and a variance across those links,
drawn as crosses (within-pod) and pluses (pod-core) in the colour of that
k's curve. The two are not the same quantity: the model's load is a routing
weight (each subflow weighing 1/m, whatever its rate), the measured one the
bytes the link carried, which congestion control shapes and the link's rate
caps at 1. The table beside the figure gives both, with their means.
"""
from __future__ import annotations

import json
import re
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np

from base import records
from figures.drawing import Drawn, read_back
from figures.runs import RUN_DIR, parse_run
from figures.samples import SampleError, loads_by_face, read_ports
from figures.tables import section_head

PNG = "fattree-subflow-model.png"
SOURCE = "Raiciu et al. 2011, §4.3.2 (Fig. 6): analytic model, permutation matrix, random routing"


def load(results: Path) -> dict | None:
    """The model's record, or None when there is none or it cannot be read."""
    path = records.model_run(results) / records.RECORD
    try:
        record = json.loads(path.read_text())
        return record if isinstance(record.get("table"), dict) else None
    except (OSError, ValueError, AttributeError):
        return None


TOPOLOGY_DIR = re.compile(r"ft(\d+)")
# ports.csv faces (figures/samples.py) standing for the model's two kinds of link
WITHIN_POD, POD_CORE = "edge→agg", "agg→core"


def measured(results: Path) -> dict[int, dict[int, dict]]:
    """{k: {m: {"E_p", "V_p", "E_c", "V_c", "links_p", "links_c", "valid"}}}
    from the FatTree one_to_one runs' ports.csv (see the module's
    docstring); runs whose samples cannot be read are left out (the
    FatTree figures already say why)."""
    out: dict[int, dict[int, dict]] = {}
    for path in records.committed(results, records.of("fattree")):
        topology, workload, folder = path.relative_to(results).parts[:3]
        k, m = TOPOLOGY_DIR.fullmatch(topology), RUN_DIR.fullmatch(folder)
        if not k or not m or workload != "one_to_one":
            continue
        try:
            run = parse_run(path, topology, workload, int(m[1]))
            loads = loads_by_face(run, read_ports(run), int(k[1]))
        except (ValueError, SampleError):
            continue
        within, core = loads.get(WITHIN_POD, []), loads.get(POD_CORE, [])
        if not within:
            continue
        out.setdefault(int(k[1]), {})[int(m[1])] = {
            "E_p": float(np.mean(within)), "V_p": float(np.var(within)), "links_p": len(within),
            "E_c": float(np.mean(core)) if core else None,
            "V_c": float(np.var(core)) if core else None, "links_c": len(core),
            "valid": run.valid}
    return {k: dict(sorted(by_m.items())) for k, by_m in sorted(out.items())}


def draw(record: dict, out: Path, seen: dict[int, dict[int, dict]] | None = None) -> Drawn:
    table = record["table"]
    ms = table["subflows"]
    seen = seen or {}
    fig, ax = plt.subplots(figsize=(7.5, 4.8), layout="constrained")
    cmap = plt.get_cmap("viridis")
    ks = sorted(table["k"], key=int)
    for i, k in enumerate(ks):
        row = table["k"][k]
        color = cmap(i / max(1, len(ks) - 1) * 0.9)
        ax.plot(ms, row["V_p"], "-o", color=color, ms=3.5,
                label=f"k={k} ({row['hosts']} hosts): V_p, E_p={row['E_p']:.2f}")
        ax.plot(ms, row["V_c"], ":", color=color, lw=1.2)
        by_m = seen.get(int(k), {})
        if by_m:
            xs = list(by_m)
            ax.plot(xs, [by_m[x]["V_p"] for x in xs], "x", color=color, ms=8, mew=2,
                    label=f"k={k} measured: edge→agg bytes (FatTree one_to_one runs)")
            core = [x for x in xs if by_m[x]["V_c"] is not None]
            ax.plot(core, [by_m[x]["V_c"] for x in core], "+", color=color, ms=9, mew=1.5)
    ax.plot([], [], ":", color="black", lw=1.2, label="V_c (pod-core links), same colour per k")
    if any(int(k) in seen for k in ks):
        ax.plot([], [], "+", color="black", ms=9, label="measured agg→core bytes, same colour per k")
    ax.axvline(8, color="#999999", lw=0.8, ls="--")
    ax.text(8.15, ax.get_ylim()[1] * 0.97, "8 subflows", va="top", fontsize=8, color="#666666")
    ax.set_xlabel("Number of subflows m")
    ax.set_ylabel("Variance of the load on a link")
    ax.set_xlim(0.5, ms[-1] + 0.5)
    ax.set_ylim(bottom=0)
    ax.grid(alpha=0.3)
    ax.set_title(f"Load variance against subflows\n({SOURCE})", fontsize=9.5)
    ax.legend(fontsize=7.5, loc="upper right")
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=120)
    drawn = read_back(fig, {**{k: table["k"][k]["V_p"] for k in ks},
                            "measured": {k: {m: v["V_p"] for m, v in by_m.items()}
                                         for k, by_m in seen.items() if str(k) in table["k"]}})
    plt.close(fig)
    return drawn


def draw_all(results: Path, plots: Path) -> dict[str, tuple[Path, Drawn]]:
    """{"model": (png, what it shows)} when there is a model record, else {}."""
    record = load(results)
    if record is None:
        return {}
    out = plots / PNG
    return {"model": (out, draw(record, out, measured(results)))}


REPORT_HEAD = f"""\
## How many subflows a FatTree needs (paper Fig. 6)

{SOURCE}. V_p: variance of the weight on a within-pod link, each subflow
weighing 1/m; the paper finds it settles above eight subflows almost
whatever the network's size.
"""


def report_lines(results: Path) -> list[str]:
    record = load(results)
    if record is None:
        return []
    table = record["table"]
    ms = table["subflows"]
    shown = [m for m in (1, 2, 4, 8, 16) if m in ms]
    lines = section_head(REPORT_HEAD) + [f"![model](plots/{PNG})", "",
                                         "| k | hosts | E_p | " + " | ".join(f"V_p m={m}" for m in shown) + " |",
                                         "|---:|---:|---:|" + "---:|" * len(shown)]
    for k in sorted(table["k"], key=int):
        row = table["k"][k]
        lines.append(f"| {k} | {row['hosts']} | {row['E_p']:.3f} | "
                     + " | ".join(f"{row['V_p'][ms.index(m)]:.3f}" for m in shown) + " |")
    seen = {k: by_m for k, by_m in measured(results).items() if str(k) in table["k"]}
    if seen:
        lines += ["", "Measured in the FatTree one_to_one runs of this folder: each run's load on "
                  "every edge→aggregation (within-pod) and aggregation→core link over the counted "
                  "window, as a share of the link rate; mean E and variance V across those links, "
                  "beside the model's (a routing weight, not bytes). `!` marks an invalid run.", "",
                  "| k | m | links | E measured | V_p measured | V_p model | E_p model "
                  "| V_c measured | V_c model |",
                  "|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
        for k, by_m in seen.items():
            row = table["k"][str(k)]
            for m, v in by_m.items():
                model_p = f"{row['V_p'][ms.index(m)]:.3f}" if m in ms else "–"
                model_c = f"{row['V_c'][ms.index(m)]:.3f}" if m in ms else "–"
                core = "–" if v["V_c"] is None else f"{v['V_c']:.3f}"
                lines.append(f"| {k} | {m}{'' if v['valid'] else ' !'} | {v['links_p']} | "
                             f"{v['E_p']:.3f} | {v['V_p']:.3f} | {model_p} | {row['E_p']:.3f} | "
                             f"{core} | {model_c} |")
    return lines + [""]
