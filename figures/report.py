"""results/report.md: every figure, and per topology and workload a table of
the runs beside the reference values (figures.runs.REFERENCE, with their sources)."""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from base.files import atomic_write_text
from kernel.coupled_cc import COUPLED
from figures.drawing import Drawn
from figures.runs import REFERENCE, REFERENCE_DOC, REFERENCE_SOURCE, Run, common, subflow_label, sweep, title
from figures.samples import CpuStats, RttStats

# What docs/congestion-control.md measured (bench/fairness.py,
# bench/diagnosis/cwnd_trace.py, issue 24), said wherever a run used a coupled algorithm.
COUPLED_SHORTFALL = (
    "These runs' links have exact timing, and a drop-tail queue then drops by phase: at one "
    "shared bottleneck MPTCP's subflows met more of the drops than a Reno flow beside them, "
    "and two LIA subflows took about half of its rate (0.50 at 25-packet queues), where RFC 6356 "
    "aims at one. With 2 +- 2 ms of jitter on the access links LIA took 0.91-1.06 and uncoupled "
    "subflows 2.0 (docs/congestion-control.md). How much this weighs with many "
    "flows per queue, as here, is not measured.")

FIGURES = {"throughput": "Throughput and rank of flows (paper Fig 2, 3)",
           "link-util": "Rank of link utilisation (2013 Fig 4)",
           "rtt": "RTT of the data subflows (2013 Fig 11)",
           "queue": "Queue occupancy over time (2013 Fig 10, 12)"}


@dataclass
class Section:
    """What the report says about one (topology, workload)."""
    topology: str
    workload: str
    runs: dict[int, Run]
    figures: dict[str, Path | str] = field(default_factory=dict)   # kind -> PNG, or why not drawn
    cpu: dict[int, CpuStats] = field(default_factory=dict)
    util: dict[int, dict[str, list[float]]] = field(default_factory=dict)
    rtt: dict[int, RttStats] = field(default_factory=dict)
    unusable: dict[int, str] = field(default_factory=dict)            # flows<N> whose run.json was skipped
    drawn: dict[str, Drawn | dict] = field(default_factory=dict)      # kind -> what the figure shows


def _cell(text: str) -> str:
    """Text safe inside a Markdown table cell."""
    return text.replace("|", "\\|").replace("\n", " ")


def _fmt(v: float | None, digits: int = 1) -> str:
    return "–" if v is None else f"{v:.{digits}f}"


def _figure(results: Path, name: str, fig: Path | str | None) -> str:
    if fig is None:
        return ""
    if isinstance(fig, Path):
        rel = Path(os.path.relpath(fig, results)).as_posix()
        return f"![{name}]({rel})\n"
    return f"*{name}: not drawn ({fig}).*\n"


def table(s: Section) -> list[str]:
    first = next(iter(s.runs.values()))
    k, workload = first.config.get("k"), first.workload    # s.workload may be a seed's section
    paper = REFERENCE.get((k, workload), {})
    source = REFERENCE_SOURCE.get((k, workload))
    if source and "packet-level" in source:
        source += f" ({REFERENCE_DOC})"
    rows = ([f"Reference mean: {source}.", ""] if source else []) + ["| Subflows | Mean % | p10 % | Min % | Reference mean % | CPU % | Link util % | RTT ms (mean ± sd) "
            "| Valid | Flags |",
            "|---|---:|---:|---:|---:|---:|---:|---:|---|---|"]
    for n in sorted(set(sweep(s.runs)) | set(paper) | set(s.unusable)):
        ref = str(paper[n]) if n in paper else "–"
        label = f"{subflow_label(n)} ({n})" if n == 1 else str(n)
        run = s.runs.get(n)
        if run is None:
            what = f"unusable run.json: {_cell(s.unusable[n])}" if n in s.unusable else "missing (no run)"
            rows.append(f"| {label} | {what} | | | {ref} | | | | | |")
            continue
        cpu = s.cpu.get(n)
        cpu_text = "–" if cpu is None else _fmt(cpu.mean) + (" (run.json)" if cpu.source == "run.json" else "")
        util = s.util.get(n, {}).get("all")
        rtt = s.rtt.get(n)
        rows.append(f"| {label} | {run.mean:.1f} | {run.p10:.1f} | {run.min:.1f} | {ref} | {cpu_text} "
                    f"| {_fmt(float(np.mean(util)) if util else None)} "
                    f"| {'–' if rtt is None else f'{rtt.mean:.1f} ± {rtt.sd:.1f}'} "
                    f"| {'yes' if run.valid else '**NO**'} | {_cell(', '.join(run.flags))} |")
    return rows


def write_report(results: Path, sections: list[Section], cpu_figures: dict[str, Path | str],
                 notes: list[str], out: Path, extra: list[str] | None = None) -> None:
    """`extra`: sections of other experiments (`wifi3g`), placed before the notes."""
    lines = ["# Results report", "",
             f"Drawn by `plot.py {results}` from the run records under this directory. "
             + ("Throughput is goodput at the receiver over the counted window, as % of the "
                "optimal (a single flow alone on the network). Paper: Raiciu et al., SIGCOMM 2011, "
                "FatTree one_to_one (Fig 2). CPU: the machine's, % of all cores, over the counted "
                "window (\"(run.json)\": the whole-run mean, no usable cpu.csv). Link util: mean "
                "over every switch port. RTT: the kernel's smoothed RTT of the data subflows. "
                if sections else "")
             + "The harness's results/README.md says how each figure is computed.", ""]
    for s in sections:
        runs = s.runs
        lines += [f"## {s.topology} / {s.workload}", "",
                  f"{title(s.topology, s.workload, runs)}; queues {common(runs, 'queue_pkts', ' packets')}, "
                  f"seed {common(runs, 'seed')}.", ""]
        lines += table(s) + [""]
        for kind, name in FIGURES.items():
            text = _figure(results, name, s.figures.get(kind))
            if text:
                lines += [text]
    if cpu_figures:
        lines += ["## CPU across FatTree sizes (2013 Fig 5)", ""]
        for workload, fig in cpu_figures.items():
            lines += [_figure(results, f"{workload} CPU", fig)]
    lines += extra or []
    coupled = any(r.config.get("cc") in COUPLED for s in sections for r in s.runs.values())
    lines += ["## Notes", ""]
    lines += [f"- {n}" for n in notes] or ["- none: every run and sample file was usable."]
    lines += [f"- {COUPLED_SHORTFALL}"] if coupled else []
    # replaced whole: also over a copy someone else owns
    atomic_write_text(out, "\n".join(lines).rstrip() + "\n")
