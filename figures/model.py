"""The subflow model (Raiciu et al., SIGCOMM 2011, §4.3.2, Fig. 6): variance
V_p of the load on a within-pod link against the number of subflows m, one
line per FatTree size k; V_c, the pod-core links', dotted.

Reads results/model/model.json (written by `run_mptcp.sh model`): the
model's values as computed, no network involved.
"""
from __future__ import annotations

import json
from pathlib import Path

import matplotlib.pyplot as plt

from base import records
from figures.runs import Drawn, read_back, section_head

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


def draw(record: dict, out: Path) -> Drawn:
    table = record["table"]
    ms = table["subflows"]
    fig, ax = plt.subplots(figsize=(7.5, 4.8), layout="constrained")
    cmap = plt.get_cmap("viridis")
    ks = sorted(table["k"], key=int)
    for i, k in enumerate(ks):
        row = table["k"][k]
        color = cmap(i / max(1, len(ks) - 1) * 0.9)
        ax.plot(ms, row["V_p"], "-o", color=color, ms=3.5,
                label=f"k={k} ({row['hosts']} hosts): V_p, E_p={row['E_p']:.2f}")
        ax.plot(ms, row["V_c"], ":", color=color, lw=1.2)
    ax.plot([], [], ":", color="black", lw=1.2, label="V_c (pod-core links), same colour per k")
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
    drawn = read_back(fig, {k: table["k"][k]["V_p"] for k in ks})
    plt.close(fig)
    return drawn


def draw_all(results: Path, plots: Path) -> dict[str, tuple[Path, Drawn]]:
    """{"model": (png, what it shows)} when there is a model record, else {}."""
    record = load(results)
    if record is None:
        return {}
    out = plots / PNG
    return {"model": (out, draw(record, out))}


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
    return lines + [""]
