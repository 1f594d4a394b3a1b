"""Runs as the figures see them: run.json read and checked, grouped per
(topology, workload), plus the labels, colours and notes every figure shares."""
from __future__ import annotations

import json
import textwrap
import math
import re
import sys
from dataclasses import dataclass
from pathlib import Path

import matplotlib
import numpy as np

from base import records

# Reference % of optimal for FatTree one_to_one, {(k, workload): {subflows: %}},
# and where each set comes from (shown in the figure's legend and the report).
# The paper's FatTree figure (Raiciu et al. 2011, Fig. 2) is k=8 only; its
# text gives single-path TCP "less than half of the available capacity" and
# eight subflows for 90 %. The k=4 values are from a packet-level simulation
# of FatTree(4) with 100-packet queues and hashed paths, the project's
# fidelity target (bench/fidelity.py).
REFERENCE = {
    (4, "one_to_one"): {1: 60, 4: 89, 5: 89, 6: 89, 7: 89, 8: 89},
    (8, "one_to_one"): {1: 50, 8: 90},
}
REFERENCE_SOURCE = {
    (4, "one_to_one"): "packet-level simulation of FatTree(4), not in the paper",
    (8, "one_to_one"): "paper Fig. 2 text: TCP < 50 %, MPTCP-8 90 %",
}
TCP_COLOR, MPTCP_COLOR, INVALID_COLOR, REFERENCE_COLOR = "#7f7f7f", "#1f77b4", "#d9d9d9", "#d62728"
FLAG_COLOR = "#a00000"
RUN_DIR = re.compile(r"flows(\d+)")

NOTES: list[str] = []   # every note of this invocation, for the report


def note(msg: str) -> None:
    """One line on stderr (and kept for the report's notes)."""
    NOTES.append(msg)
    print(f"plot.py: {msg}", file=sys.stderr)


class FlowPercents:
    """Mean, p10 and min of a run's per-flow percentages (`pcts`)."""
    pcts: list[float]

    @property
    def mean(self) -> float:
        return float(np.mean(self.pcts))

    @property
    def p10(self) -> float:
        return float(np.percentile(self.pcts, 10))

    @property
    def min(self) -> float:
        return float(np.min(self.pcts))


@dataclass
class Run(FlowPercents):
    """One run.json, reduced to what the figures need."""
    path: Path
    topology: str
    workload: str
    subflows: int
    config: dict
    pcts: list[float]   # flows[].pct_optimal, in file order
    valid: bool
    flags: list[str]
    cpu_mean_pct: float | None = None   # run.json's, over the whole run

    @property
    def dir(self) -> Path:
        return self.path.parent

    def number(self, field: str, default: float | None = None) -> float | None:
        """A numeric config value, or `default` when absent or not a number."""
        v = self.config.get(field)
        return float(v) if _is_number(v) else default

    @property
    def window(self) -> tuple[float, float]:
        """The counted window in sample time (t_s since the traffic started):
        from the end of the warm-up to its end plus time_s (half a second of
        slack for the sample taken as the traffic stops)."""
        start = self.number("warmup_s", 0.0)
        time_s = self.number("time_s")
        return start, (start + time_s + 0.5 if time_s else math.inf)


def _is_number(v) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def parse_run(path: Path, topology: str, workload: str, subflows: int) -> Run:
    """Read one run.json; ValueError (one line) if it is unusable."""
    try:
        doc = json.loads(path.read_text())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
        raise ValueError(f"unreadable: {e}") from None
    if not isinstance(doc, dict) or not isinstance(doc.get("config"), dict):
        raise ValueError("no 'config' object")
    cfg = doc["config"]
    seen = (cfg.get("topology"), cfg.get("workload"), cfg.get("subflows"))
    if seen != (topology, workload, subflows):
        raise ValueError(f"config says {seen}, directory says {(topology, workload, subflows)}")
    flows = doc.get("flows")
    if not isinstance(flows, list) or not flows:
        raise ValueError("no flows")
    pcts = [f.get("pct_optimal") if isinstance(f, dict) else None for f in flows]
    if not all(_is_number(p) for p in pcts):
        raise ValueError("a flow lacks a numeric pct_optimal")
    if not isinstance(doc.get("valid"), bool):
        raise ValueError("no boolean 'valid'")
    flags = doc.get("flags") or []
    flags = [str(f) for f in flags] if isinstance(flags, list) else [str(flags)]
    cpu = doc.get("cpu_mean_pct")
    return Run(path, topology, workload, subflows, cfg, [float(p) for p in pcts], doc["valid"], flags,
               float(cpu) if _is_number(cpu) else None)


def load_runs(results: Path, skipped: dict[Path, str] | None = None) -> list[Run]:
    """Every usable run under results/<topology>/<workload>/flows<N>/run.json;
    the unusable ones are noted (and put in `skipped`, path -> reason)."""
    runs = []
    for path in records.committed(results, records.FATTREE_RECORDS):
        parts = path.relative_to(results).parts
        if parts[0] == "plots":
            continue
        m = RUN_DIR.fullmatch(parts[2])
        reason = None
        if not m:
            reason = "directory is not named flows<N>"
        else:
            try:
                runs.append(parse_run(path, parts[0], parts[1], int(m.group(1))))
            except ValueError as e:
                reason = str(e)
        if reason:
            note(f"skipping {path}: {reason}")
            if skipped is not None:
                skipped[path] = reason
    return runs


def group(runs: list[Run]) -> dict[tuple[str, str], dict[int, Run]]:
    """{(topology, workload): {subflows: run}}, sorted by key."""
    groups: dict[tuple[str, str], dict[int, Run]] = {}
    for r in runs:
        groups.setdefault((r.topology, r.workload), {})[r.subflows] = r
    return {key: dict(sorted(g.items())) for key, g in sorted(groups.items())}


def sweep(runs: dict[int, Run]) -> list[int]:
    """The subflow counts a figure's axis spans: smallest to largest run."""
    return list(range(min(runs), max(runs) + 1))


def subflow_label(n: int) -> str:
    return "TCP" if n == 1 else str(n)


def run_label(run: Run) -> str:
    """'TCP' or 'MPTCP-4', plus INVALID and the flags when the run is invalid."""
    text = "TCP" if run.subflows == 1 else f"MPTCP-{run.subflows}"
    return text if run.valid else f"{text} INVALID ({flag_text(run)})"


def flag_text(run: Run, most: int = 3) -> str:
    shown = run.flags[:most] + ([f"+{len(run.flags) - most} more"] if len(run.flags) > most else [])
    return ", ".join(shown) or "no flags"


def subflow_color(n: int):
    """TCP grey; MPTCP 2..8 subflows along viridis (dark to green), the same in every figure."""
    if n == 1:
        return TCP_COLOR
    return matplotlib.colormaps["viridis"](min(0.85, 0.8 * (n - 2) / 6))


def common(runs: dict[int, Run], field: str, unit: str = "", shown=str) -> str:
    """One config value shared by the runs (as `shown` writes it), or all
    of them marked as mixed."""
    values = sorted({shown(r.config[field]) if field in r.config else "?" for r in runs.values()})
    text = "/".join(values) + unit
    return text if len(values) == 1 else f"{text} (MIXED)"


def seconds(value) -> str:
    return f"{value:g}" if isinstance(value, (int, float)) else str(value)


def title(topology: str, workload: str, runs: dict[int, Run]) -> str:
    """The configuration the runs share, the counted window included: a
    window that starts inside MPTCP's climb shows less (README, "What a
    run is", item 6)."""
    return (f"FatTree {topology} (k={common(runs, 'k')}), {workload}: "
            f"{common(runs, 'bw_mbps', ' Mb/s')} links, "
            f"{common(runs, 'time_s', ' s', seconds)} after {common(runs, 'warmup_s', ' s', seconds)} "
            f"warm-up, cc={common(runs, 'cc')}, {routing(runs)}")


def routing(runs: dict[int, Run]) -> str:
    """The fabric, and the controller's first fit where it ran: flows it
    moves are not on their hashed paths, so the figure must say so."""
    text = f"fabric={common(runs, 'fabric')}"
    intervals = {r.config.get("schedule_interval_s") for r in runs.values()}
    if intervals != {None}:
        shown = "/".join(sorted(f"every {v:g} s" if v else "off" for v in intervals))
        text += f", first fit {shown}" + (" (MIXED)" if len(intervals) > 1 else "")
    if any(driver_text(r.config) for r in runs.values()):
        text += f", driver={common(runs, 'driver')}"
    return text


def driver_text(config: dict) -> str:
    """', socket driver' where a run's flows were not iperf3's (records
    before the rack experiments took --driver have no `driver`: iperf3)."""
    driver = config.get("driver", "iperf3")
    return "" if driver == "iperf3" else f", {driver} driver"


def window_text(runs: dict[int, Run]) -> str:
    """'5–45 s', or every distinct window when the runs differ."""
    spans = sorted({(r.window[0], r.window[1] - 0.5) for r in runs.values()})
    text = "/".join(f"{a:g}–{b:g} s" if b != math.inf else f"from {a:g} s" for a, b in spans)
    return text if len(spans) == 1 else f"{text} (MIXED)"


def gaps_text(runs: dict[int, Run], skipped: dict[int, str], what: str) -> str:
    """The note under a figure: subflow counts with no run, runs whose samples were skipped."""
    parts = []
    absent = [n for n in sweep(runs) if n not in runs]
    if absent:
        parts.append("No run (gap) for subflows " + ", ".join(map(str, absent)) + ".")
    if skipped:
        parts.append(f"Not in this {what}: " + "; ".join(
            f"{subflow_label(n)} ({why})" for n, why in sorted(skipped.items())) + ".")
    return " ".join(parts)


@dataclass
class Drawn:
    """What a figure shows, read back from its artists: the data of its
    lines/bars (shape per figure) and every visible text (titles, labels,
    legend entries, notes)."""
    data: dict
    texts: list[str]

    def mentions(self, text: str) -> bool:
        return any(text in t for t in self.texts)


def read_back(fig, data: dict) -> Drawn:
    from matplotlib.text import Text
    return Drawn(data, [t.get_text() for t in fig.findobj(Text) if t.get_visible() and t.get_text()])


def tagged_lines(fig, tag: str):
    """(what follows "tag:" in its gid, line) for every line of the figure
    drawn with such a gid: how the readouts find the series they check."""
    for ax in fig.axes:
        for line in ax.lines:
            gid = line.get_gid() or ""
            if gid.startswith(tag + ":"):
                yield gid[len(tag) + 1:], line


def draw_each(plots: Path, items: dict, draw) -> dict[str, tuple[Path, "Drawn"]]:
    """{name: (plots/<name>.png, draw(data, that path))} for every name and
    data of `items`: the figure modules that draw one figure per setting."""
    return {name: (plots / f"{name}.png", draw(data, plots / f"{name}.png"))
            for name, data in items.items()}


def save_figure(fig, out: Path, readout, notes: str = "", wrap: int = 160,
                reserve: float = 0.05, dpi: int = 110) -> Drawn:
    """Write the notes (gaps, skipped runs) along the bottom, keeping
    `reserve` of the height for them, save the figure as PNG, read back what
    it shows (`readout(fig)`) and close it."""
    import matplotlib.pyplot as plt
    if notes:
        fig.text(0.01, 0.002, textwrap.fill(notes, wrap), fontsize=8, color=FLAG_COLOR, va="bottom")
        fig.get_layout_engine().set(rect=(0, reserve, 1, 1 - reserve))
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=dpi)
    drawn = read_back(fig, readout(fig))
    plt.close(fig)
    return drawn


def points_table(schemes: dict[str, list], scheme_names: dict[str, str], first_head: str,
                 extra_heads: list[str], row) -> list[str]:
    """A markdown table of a sweep: one row per x value seen in any scheme's
    points (each with `.x`); `row(x, {scheme: its point at x or None})`
    gives the row's cells, the first being x."""
    lines = ["| " + " | ".join([first_head, *scheme_names.values(), *extra_heads]) + " |",
             "| --- " * (1 + len(scheme_names) + len(extra_heads)) + "|"]
    for x in sorted({p.x for pts in schemes.values() for p in pts}):
        by = {s: next((p for p in schemes.get(s, []) if p.x == x), None) for s in scheme_names}
        lines.append("| " + " | ".join(row(x, by)) + " |")
    return lines


def sweep_points(paths: list[Path], parse, sweeps, schemes) -> dict[str, dict[str, list]]:
    """{sweep: {scheme: points sorted by x}} from the records at `paths`;
    `parse(path)` gives (sweep, scheme, point). Unreadable records are noted
    and skipped, and points of unknown sweeps or schemes are left out;
    sweeps come in the order of `sweeps`."""
    out: dict[str, dict[str, list]] = {}
    for path in paths:
        try:
            sweep, scheme, point = parse(path)
        except (OSError, ValueError, KeyError, TypeError) as exc:
            note(f"skipped {path}: {exc}")
            continue
        if sweep in sweeps and scheme in schemes:
            out.setdefault(sweep, {}).setdefault(scheme, []).append(point)
    for by_scheme in out.values():
        for pts in by_scheme.values():
            pts.sort(key=lambda p: p.x)
    return {s: out[s] for s in sweeps if s in out}


def records_by_topology(results: Path, pattern: str, topology_dir, parse, sweeps,
                        series) -> dict[str, dict[str, dict[str, list]]]:
    """{topology folder: {sweep: {series: points sorted by x}}} of the
    records matching `pattern` under folders named as `topology_dir` (a
    compiled regex) matches; `parse` as sweep_points takes it."""
    by_top: dict[str, list[Path]] = {}
    for path in records.committed(results, pattern):
        top = path.relative_to(results).parts[0]
        if topology_dir.fullmatch(top):
            by_top.setdefault(top, []).append(path)
    return {top: points for top, paths in by_top.items()
            if (points := sweep_points(paths, parse, sweeps, series))}


def connections_axis(ax, xs: list[float], label: str) -> None:
    """An x axis of connections per host: log 2, a tick at each value run."""
    import matplotlib.pyplot as plt
    ax.set_xscale("log", base=2)
    ax.set_xticks(xs)
    ax.get_xaxis().set_major_formatter(plt.FuncFormatter(lambda v, _: f"{v:g}"))
    ax.get_xaxis().set_minor_formatter(plt.NullFormatter())
    ax.set_xlabel(label)


def draw_sweeps(data: dict[str, dict[str, object]], plots: Path, draw: dict) -> dict:
    """Figure "<topology>-<sweep>" of every sweep in `data` ({topology:
    {sweep: its points}}), drawn by `draw[sweep](points, png)`:
    {name: (png, what it shows)}."""
    drawn = {}
    for topology, sweeps in data.items():
        for sweep, points in sweeps.items():
            name = f"{topology}-{sweep}"
            out = plots / f"{name}.png"
            drawn[name] = (out, draw[sweep](points, out))
    return drawn


def read_records(results: Path, pattern: str, read):
    """(path, read(record)) for every committed record matching `pattern`;
    a record that cannot be read, or that `read` cannot make sense of, is
    noted and skipped."""
    for path in records.committed(results, pattern):
        try:
            run = read(json.loads(path.read_text()))
        except (OSError, ValueError, KeyError, TypeError, IndexError, ZeroDivisionError) as exc:
            note(f"skipped {path}: {exc}")
            continue
        yield path, run


def runs_by_scheme(results: Path, pattern: str, read, figure_of, order) -> dict[str, dict[str, object]]:
    """{figure name: {scheme: run}} from the records matching `pattern`:
    `read(record)` makes a run with a `scheme` (read_records),
    `figure_of(path)` names the figure a record belongs to; schemes outside
    `order` are left out, the rest kept in its order."""
    out: dict[str, dict[str, object]] = {}
    for path, run in read_records(results, pattern, read):
        if run.scheme in order:
            out.setdefault(figure_of(path), {})[run.scheme] = run
    return {name: {s: runs[s] for s in order if s in runs} for name, runs in sorted(out.items())}


def section_head(text: str) -> list[str]:
    """report.md lines of a section's title and paragraph, written as
    "title\n\nparagraph" (wrapped): the paragraph becomes one line."""
    title, paragraph = text.split("\n\n", 1)
    return [title, "", " ".join(paragraph.split()), ""]


def figure_tables(head: str, figures: dict[str, dict], columns: list[str], row) -> list[str]:
    """report.md lines of a section of per-figure tables: the section head
    (`section_head`), then per figure its image and a table, one row per run
    (`row(key, run)` gives the cells); nothing where there are no figures."""
    if not figures:
        return []
    lines = section_head(head)
    for name, runs in figures.items():
        lines += [f"![{name}](plots/{name}.png)", "", "| " + " | ".join(columns) + " |",
                  "| --- " * len(columns) + "|"]
        lines += ["| " + " | ".join(row(key, run)) + " |" for key, run in runs.items()]
        lines.append("")
    return lines


def save_sweep_figure(fig, out: Path, readout_data: dict, flagged: list[str], ncol: int,
                      what_is_flagged: str = "INVALID (red x)") -> "Drawn":
    """A sweep figure's legend above it, the flagged points named under it,
    and the PNG; `readout_data` is what the figure shows, for checking."""
    fig.legend(loc="outside upper center", ncol=ncol, fontsize=8, frameon=False)
    notes = (f"{what_is_flagged}: " + "; ".join(flagged)) if flagged else ""
    return save_figure(fig, out, lambda _fig: readout_data, notes, wrap=120, reserve=0.08)


def reference_lines(ax, lines: list[tuple[float, str]], at: float, va: str) -> None:
    """Dashed horizontal lines, each labelled at `at` (axes fraction)."""
    for y, label in lines:
        ax.axhline(y, color="#999999", linestyle="--", linewidth=0.8, zorder=1)
        ax.text(at, y, label, transform=ax.get_yaxis_transform(), va=va, fontsize=8, color="#666666")


def mark_invalid(ax, label: str, points: list, x_of, y_of, where) -> list[str]:
    """A red x on each invalid point (with `.valid`, `.flags`); returns
    "<label> at <where(p)>: <flags>" for each."""
    flagged = []
    for p in points:
        if not p.valid:
            ax.plot(x_of(p), y_of(p), "x", color=FLAG_COLOR, ms=11, mew=2, zorder=4)
            flagged.append(f"{label} at {where(p)}: {', '.join(p.flags)}")
    return flagged
