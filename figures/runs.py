"""The FatTree sweep's runs as the figures see them: run.json read and
checked, grouped per (topology, workload), and the labels, titles and notes
that name them (driver_text for every experiment's figures too).

Drawing is figures/drawing.py's, colours figures/style.py's, the notes'
list figures/notes.py's; NOTES, note and Drawn are also importable from
here, where plot.py takes them."""
from __future__ import annotations

import json
import math
import re
import textwrap
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from base import records
from figures.drawing import Drawn  # noqa: F401  (plot.py imports it from here)
from figures.notes import NOTES, note  # noqa: F401  (plot.py imports them from here)

# Reference % of optimal for FatTree one_to_one, {(k, workload): {subflows: %}},
# and where each set comes from (shown in the figure's legend and the report).
# The paper's FatTree figure (Raiciu et al. 2011, Fig. 2) is k=8 only; its
# text gives single-path TCP "less than half of the available capacity" and
# eight subflows for 90 %. The k=4 values are from a packet-level simulation
# of FatTree(4) with 100-packet queues and hashed paths, the project's
# fidelity target (bench/fidelity.py); its source: REFERENCE_DOC.
REFERENCE = {
    (4, "one_to_one"): {1: 60, 4: 89, 5: 89, 6: 89, 7: 89, 8: 89},
    (8, "one_to_one"): {1: 50, 8: 90},
}
REFERENCE_SOURCE = {
    (4, "one_to_one"): "packet-level simulation of FatTree(4), not in the paper",
    (8, "one_to_one"): "paper Fig. 2 text: TCP < 50 %, MPTCP-8 90 %",
}
REFERENCE_DOC = 'docs/methodology.md, "The packet-level reference"'
RUN_DIR = re.compile(r"flows(\d+)")
SEED_DIR = re.compile(r"seed(\d+)")


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
    seed_dir: str = ""                  # "seed1": one of a sweep's --seeds (<workload>/seed1/flows<N>)

    @property
    def dir(self) -> Path:
        return self.path.parent

    @property
    def section(self) -> str:
        """The report section and figure name it is drawn in: its workload,
        and its seed where the sweep ran several."""
        return f"{self.workload}-{self.seed_dir}" if self.seed_dir else self.workload

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


def parse_run(path: Path, topology: str, workload: str, subflows: int, seed_dir: str = "") -> Run:
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
    if seed_dir and seed_dir != f"seed{cfg.get('seed')}":
        raise ValueError(f"config says seed {cfg.get('seed')}, directory says {seed_dir}")
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
               float(cpu) if _is_number(cpu) else None, seed_dir)


def load_runs(results: Path, skipped: dict[Path, str] | None = None) -> list[Run]:
    """Every usable run under results/<topology>/<workload>/[seed<S>/]flows<N>/run.json;
    the unusable ones are noted (and put in `skipped`, path -> reason)."""
    runs = []
    for path in records.committed(results, records.of("fattree")):
        parts = path.relative_to(results).parts
        if parts[0] == "plots":
            continue
        seed_dir = parts[2] if len(parts) == 5 else ""
        m = RUN_DIR.fullmatch(parts[-2])
        reason = None
        if not m:
            reason = "directory is not named flows<N>"
        elif seed_dir and not SEED_DIR.fullmatch(seed_dir):
            reason = "directory is not named seed<S>"
        else:
            try:
                runs.append(parse_run(path, parts[0], parts[1], int(m.group(1)), seed_dir))
            except ValueError as e:
                reason = str(e)
        if reason:
            note(f"skipping {path}: {reason}")
            if skipped is not None:
                skipped[path] = reason
    return runs


def group(runs: list[Run]) -> dict[tuple[str, str], dict[int, Run]]:
    """{(topology, section): {subflows: run}}, sorted by key; the section is
    the workload, or the workload and seed of one of a sweep's --seeds."""
    groups: dict[tuple[str, str], dict[int, Run]] = {}
    for r in runs:
        groups.setdefault((r.topology, r.section), {})[r.subflows] = r
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
    window that starts inside MPTCP's climb shows less (docs/methodology.md,
    item 6)."""
    first = next(iter(runs.values())).config
    shape = (f"{topology} ({first['topo_file'].rpartition(':')[0]}; optimum: "
             f"{first.get('optimum', '?').split(':')[0]})" if "topo_file" in first
             else f"FatTree {topology} (k={common(runs, 'k')})")
    return (f"{shape}, {workload}: "
            f"{common(runs, 'bw_mbps', ' Mb/s')} links, "
            f"{common(runs, 'time_s', ' s', seconds)} after {warmup(runs)}, "
            f"cc={common(runs, 'cc')}, {routing(runs)}")


def figure_title(topology: str, workload: str, runs: dict[int, Run]) -> str:
    """title(), wrapped to a figure's width."""
    return textwrap.fill(title(topology, workload, runs), 130, break_long_words=False)


def warmup(runs: dict[int, Run]) -> str:
    """The warm-up: fixed, shared by the runs; or, where each run's ended
    when its goodput levelled, the range of those ends."""
    if any("warmup_cap_s" in r.config for r in runs.values()):
        ends = [r.config.get("warmup_s") for r in runs.values() if _is_number(r.config.get("warmup_s"))]
        span = f"{min(ends):g}-{max(ends):g} s" if ends and min(ends) != max(ends) else f"{ends[0]:g} s" if ends else "?"
        return f"levelled warm-up ({span})"
    return f"{common(runs, 'warmup_s', ' s', seconds)} warm-up"


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
    for key, shown in LINK_SETTINGS:
        values = {bool(r.config.get(key)) for r in runs.values()}
        if values != {False}:
            text += f", {shown}" + (" (MIXED)" if len(values) > 1 else "")
    for key, value, shown in MODEL_SETTINGS:
        values = {r.config.get(key) == value for r in runs.values()}
        if values != {False}:
            text += f", {shown}" + (" (MIXED)" if len(values) > 1 else "")
    for key in HOST_SETTINGS:
        values = {r.config.get(key) for r in runs.values()}
        if values != {None}:
            # Not the kernel's default: say so on the figure (docs/experiments/fattree.md).
            shown = "/".join(sorted(f"{v} B" if v else "kernel's" for v in values))
            text += f", hosts' {key} {shown}" + (" (MIXED)" if len(values) > 1 else "")
    return text


# Link settings a FatTree run may turn on (the paper's simulator's queues), named on its figures.
LINK_SETTINGS = (("queue_bytes", "switch queues in bytes"), ("ack_lane", "ACKs in a lane of their own"))
# The model fabric's choices that depart from a real switch, named on its figures.
MODEL_SETTINGS = (("acks", "sim", "ACKs through no queue"), ("random_drop", True, "random drops near a full queue"),
                  ("host_nic", "model", "hosts' NICs modelled"))
# Host settings a FatTree run may change from the kernel's (RunConfig), named on its figures.
HOST_SETTINGS = ("notsent_lowat", "wmem_max")


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
