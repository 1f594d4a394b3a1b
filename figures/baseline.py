"""Baselines: a default run of each experiment kept in the repository
(docs/baseline/NAME/), and a results folder's numbers set beside them.

A baseline folder holds the run's figures (plots/), its report.md and
runs.json: where it came from (command, commit, kernel, cores, date, wall
time) and per run its config, validity, flags and headline numbers (the
catalogue row's `headline`), never the raw samples. "Reference" keeps
meaning the paper's and the simulator's values (figures/runs.py).

    python -m figures.baseline RESULTS DIR --command "run_mptcp.sh 4"
"""
from __future__ import annotations

import argparse
import json
import math
import os
import re
import shutil
import statistics
import subprocess
import sys
from datetime import datetime
from pathlib import Path

from base import catalogue, records
from base.files import atomic_write_text

BASELINES, RUNS = records.BASELINES, records.BASELINE_RUNS
# A point is a run's folder with its seed taken out (fattree's seed<S>/, the
# racks' -seed<S>): the seeds of one point give the baseline its spread.
SEED = re.compile(r"/seed\d+(?=/)|-seed\d+(?=/)")
POINTS_OFF = 5.0      # a % number differs when further than this, without seeds
RELATIVE_OFF = 0.05   # any other number, as a share of the baseline's


def _value(record: dict, key: str) -> float | None:
    v = record
    for part in key.split("."):
        v = v.get(part) if isinstance(v, dict) else None
    ok = isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)
    return float(v) if ok else None


def summarise(results: Path) -> dict[str, dict]:
    """{run folder relative to `results`: its compact summary}, for every
    record of every experiment of the catalogue."""
    out: dict[str, dict] = {}
    for row in catalogue.rows().values():
        for path in records.committed(results, row.records):
            try:
                doc = json.loads(path.read_text())
            except (OSError, ValueError):
                continue
            if not isinstance(doc, dict) or doc.get("experiment", row.name) != row.name:
                continue
            out[path.parent.relative_to(results).as_posix()] = {
                "experiment": row.name, "config": doc.get("config", {}),
                "valid": doc.get("valid"), "flags": doc.get("flags", []),
                "started_at": doc.get("started_at"), "finished_at": doc.get("finished_at"),
                "headline": {k: _value(doc, k) for k in row.headline}}
    return out


def _source(runs: dict[str, dict], command: str, results: Path, wall_s: float | None) -> dict:
    first = json.loads((results / min(runs) / records.RECORD).read_text())
    times = [datetime.fromisoformat(t) for r in runs.values()
             for t in (r["started_at"], r["finished_at"]) if t]
    commit = first.get("versions", {}).get("harness")
    if not commit:   # records without `versions`: the checkout's, as saved
        git = subprocess.run(["git", "-C", str(Path(__file__).parent), "rev-parse", "--short", "HEAD"],
                             capture_output=True, text=True, timeout=10)
        commit = f"{git.stdout.strip()} (checkout at saving)" if git.returncode == 0 else None
    return {"command": command, "commit": commit,
            "kernel": first.get("kernel"), "cores": os.cpu_count(),
            "date": min(times).date().isoformat() if times else None,
            "wall_s": wall_s,
            "runs_wall_s": round((max(times) - min(times)).total_seconds()) if times else None}


def save(results: Path, into: Path, command: str, wall_s: float | None = None) -> dict:
    """Make `into` the baseline of the runs under `results` (plot.py has drawn
    them): runs.json, report.md and plots/, replacing what was there."""
    runs = summarise(results)
    if not runs:
        raise ValueError(f"no run records under {results}")
    if into.exists():
        shutil.rmtree(into)
    (into / "plots").mkdir(parents=True)
    for png in sorted((results / "plots").glob("*.png")):
        shutil.copy2(png, into / "plots" / png.name)
    doc = {"source": _source(runs, command, results, wall_s), "runs": runs}
    if (results / "report.md").exists():
        atomic_write_text(into / "report.md", baseline_report((results / "report.md").read_text(), command))
    atomic_write_text(into / RUNS, json.dumps(doc, indent=1) + "\n")
    return doc


def baseline_report(text: str, command: str) -> str:
    """A run's report.md as its baseline keeps it: the first line says which
    command drew it (its folder was temporary, and its raw records are not
    kept), and its comparison with the baselines, made before this one
    existed, is left out."""
    text = re.sub(r"^Drawn by `plot\.py [^`]*` from the run records under this directory\. ",
                  f"Drawn by `plot.py` from the records of `{command}`, kept here as runs.json "
                  "(headline numbers only). ", text, count=1, flags=re.M)
    return re.sub(r"^## Against the baseline\n.*?(?=^## )", "", text, count=1, flags=re.M | re.S)


def _minutes(s: float | None) -> str:
    return "–" if s is None else f"{int(s) // 60}m{int(s) % 60:02d}s"


def _natural(name: str) -> list:
    """A run's name as a sort key whose numbers sort by value (150 before 1000)."""
    return [(0, float(p), "") if re.fullmatch(r"\d+(\.\d+)?", p) else (1, 0.0, p)
            for p in re.split(r"(\d+(?:\.\d+)?)", name) if p]


def page_section(doc: dict, into: Path, page: Path) -> list[str]:
    """The "## Baseline" section of an experiment's page: where the baseline
    came from, its figures, and each run's headline numbers."""
    src, runs = doc["source"], doc["runs"]
    keys = list(dict.fromkeys(k for r in runs.values() for k in r["headline"]))
    rel = Path(os.path.relpath(into, page.parent)).as_posix()
    lines = ["## Baseline", "",
             f"`{src['command']}` on {src['date']}, "
             + (f"kernel {src['kernel']}, " if src.get("kernel") else "no kernel needed, ")
             + f"{src['cores']} cores: wall {_minutes(src.get('wall_s'))} (runs "
             f"{_minutes(src.get('runs_wall_s'))}). Its report: [{rel}/report.md]({rel}/report.md); "
             "`./plot.py RESULTS` sets a run's numbers beside these.", ""]
    lines += [f"![{png.stem}]({rel}/plots/{png.name})" for png in sorted((into / "plots").glob("*.png"))]
    lines += ["", "| run | " + "".join(f"{k} | " for k in keys) + "valid |", "|---|" + "---:|" * len(keys) + "---|"]
    for name, run in sorted(runs.items(), key=lambda item: _natural(item[0])):
        values = [run["headline"].get(k) for k in keys]
        flags = "yes" if run["valid"] else f"**no**: {', '.join(run['flags'])}"
        lines.append(f"| {name} | " + "".join("– | " if v is None else f"{v:.1f} | " for v in values)
                     + f"{flags} |")
    return lines + [""]


def write_page(doc: dict, into: Path, page: Path) -> None:
    """Replace the page's "## Baseline" section (up to its next heading)."""
    text = page.read_text()
    start = text.index("## Baseline\n")
    end = text.find("\n## ", start + 1)
    rest = text[end + 1:] if end >= 0 else ""
    atomic_write_text(page, text[:start] + "\n".join(page_section(doc, into, page)) + "\n" + rest)


def load(root: Path) -> dict[str, dict]:
    """{point: [summaries]} over every baseline under `root`, and their sources."""
    points: dict[str, list[dict]] = {}
    for path in sorted(root.glob(f"*/{RUNS}")):
        try:
            doc = json.loads(path.read_text())
        except (OSError, ValueError):
            continue
        for rel, run in doc.get("runs", {}).items():
            points.setdefault(SEED.sub("", "/" + rel)[1:], []).append(
                {**run, "source": doc.get("source", {}), "baseline": path.parent.name})
    return points


def _differs(key: str, yours: float, base: list[float]) -> bool:
    mean = statistics.fmean(base)
    if len(base) > 1:
        limit = max(base) - min(base)
    else:
        limit = POINTS_OFF if key.endswith("pct") else RELATIVE_OFF * abs(mean)
    return abs(yours - mean) > limit


def _settings(yours: dict, base: dict) -> list[str]:
    """The config settings in which a run differs from its baseline."""
    skip = {"seed", "warmup_s", "fabric_note", "results"}
    return [f"{k} {yours.get(k)} (baseline {base.get(k)})" for k in sorted(set(yours) | set(base))
            if k not in skip and yours.get(k) != base.get(k)]


def compare_lines(results: Path, root: Path = BASELINES) -> list[str]:
    """report.md's section: each headline number of the runs under `results`
    beside the baseline's, marked where it differs by more than the baseline's
    spread over seeds (where it has several) or 5 points (5 % for numbers
    that are not percentages) otherwise."""
    yours = summarise(results)
    if not yours:
        return []
    base = load(root)
    shown = root if not root.is_absolute() else Path(os.path.relpath(root, Path.cwd()))
    lines = ["## Against the baseline", "",
             f"Baselines: `{shown}` (a default run of each experiment on 2 cores; its page names "
             "the command). **differs**: further than the baseline's spread over seeds where it "
             "has several, else 5 points (5 % for numbers that are not percentages).", ""]
    missing: set[str] = set()
    table = ["| run | number | yours | baseline | |", "|---|---|---:|---:|---|"]
    for rel, run in sorted(yours.items()):
        point = SEED.sub("", "/" + rel)[1:]
        theirs = base.get(point)
        if not theirs:
            missing.add(run["experiment"])
            continue
        for key, value in run["headline"].items():
            values = [v for t in theirs if (v := t["headline"].get(key)) is not None]
            if value is None or not values:
                continue
            mark = "**differs**" if _differs(key, value, values) else ""
            spread = f" ({min(values):.1f}-{max(values):.1f})" if len(values) > 1 else ""
            table.append(f"| {rel} | {key} | {value:.1f} | {statistics.fmean(values):.1f}{spread} | {mark} |")
        changed = _settings(run["config"], theirs[0]["config"])
        if changed:
            table.append(f"| {rel} | settings | {'; '.join(changed)} | | not comparable |")
        if not run["valid"] or not theirs[0].get("valid"):
            table.append(f"| {rel} | valid | {run['valid']} {run['flags']} | {theirs[0].get('valid')} "
                         f"{theirs[0].get('flags')} | |")
    if len(table) > 2:
        lines += table + [""]
    if missing:
        lines += [f"No baseline under `{shown}` for: {', '.join(sorted(missing))}.", ""]
    return lines


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m figures.baseline",
                                 description="make DIR the baseline of the runs drawn under RESULTS")
    ap.add_argument("results", type=Path)
    ap.add_argument("into", type=Path, metavar="DIR", help="e.g. docs/baseline/fattree")
    ap.add_argument("--command", required=True, help="the command that made RESULTS")
    ap.add_argument("--wall", type=float, metavar="SECONDS", help="that command's wall time")
    ap.add_argument("--page", type=Path, metavar="MD",
                    help="the experiment's page whose \"## Baseline\" section to rewrite")
    args = ap.parse_args(argv)
    try:
        doc = save(args.results, args.into, args.command, args.wall)
        if args.page:
            write_page(doc, args.into, args.page)
    except (OSError, ValueError) as e:
        print(f"baseline: error: {e}", file=sys.stderr)
        return 1
    print(f"{args.into}: {len(doc['runs'])} runs, {json.dumps(doc['source'])}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
