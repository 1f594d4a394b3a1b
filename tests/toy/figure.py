"""The toy's figure and report lines, from its records alone."""
from __future__ import annotations

import json
from pathlib import Path

import matplotlib.pyplot as plt

from base import records


def squares(results: Path) -> dict[int, int]:
    return {rec["config"]["n"]: rec["square"]
            for rec in (json.loads(p.read_text()) for p in records.committed(results, "toy/*/run.json"))}


def draw_all(results: Path, plots: Path) -> dict:
    found = squares(results)
    if not found:
        return {}
    plots.mkdir(parents=True, exist_ok=True)
    fig, ax = plt.subplots()
    ax.bar(list(found), list(found.values()))
    out = plots / "toy.png"
    fig.savefig(out)
    plt.close(fig)
    return {"toy": (out, found)}


def report_lines(results: Path) -> list[str]:
    found = squares(results)
    return [f"## toy\n\nsquares: {', '.join(f'{n}->{v}' for n, v in sorted(found.items()))}\n"] if found else []
