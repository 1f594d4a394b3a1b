#!/usr/bin/env python3
"""Draw every figure of a results directory, and a report.

    plot.py [RESULTS_DIR] [--queue-run N ...]        (default: results)
    plot.py DIR1 DIR2 ... --into DIR                  (merge, then draw DIR)
    plot.py RESULTS_DIR --baseline DIR                 (compare with other baselines)

Reads the run folders of every experiment of the catalogue (base/catalogue.py;
`run_mptcp.sh list` names them) below RESULTS_DIR, each with its run.json
and monitor samples (folders whose names start with '.' are runs still being
written, and are ignored), and writes into RESULTS_DIR/plots/ each
experiment's figures, drawn by its figure module; then RESULTS_DIR/report.md:
every figure, and per FatTree topology and workload a table beside the
paper's values, and each run's headline numbers beside the baseline's
(docs/baseline/, a default run of each experiment kept in the repository;
figures/baseline.py). Each path written is printed.

The FatTree sweep's figures (ft<k>/<workload>/flows<N>/) are drawn here:
<topology>-<workload>-throughput.png (mean % of optimal per subflow count and
the rank of flows; paper Fig. 2, 3), -link-util.png (2013 Fig. 4), -rtt.png
(2013 Fig. 11), -queue.png (2013 Fig. 10, 12; --queue-run chooses the runs),
and <workload>-cpu.png (2013 Fig. 5).

Only RESULTS_DIR/plots/ and RESULTS_DIR/report.md are written; a figure that
cannot be drawn any more (its samples are gone) is removed from plots/.
Invalid runs are drawn distinctly (hatched, dashed or hollow) with their flags;
subflow counts without a run are gaps with a note. A run.json or sample file
that cannot be used is skipped with one line on stderr and a note on the
figure. Exit status 0 whenever it drew what it could, including when there
was nothing to draw; 1 if it could not write its output.
"""
from __future__ import annotations

import os
import sys
from pathlib import Path

try:
    import matplotlib  # noqa: F401  (only to find out whether this is the venv's python)
except ModuleNotFoundError as _missing:  # started as ./plot.py by a python3 outside the venv
    _VENV = Path(__file__).resolve().parent / ".venv"
    if (_VENV / "bin/python").exists() and Path(sys.prefix).resolve() != _VENV.resolve():
        os.execv(_VENV / "bin/python", [str(_VENV / "bin/python"), *sys.argv])
    print(f"plot.py: error: Python package {_missing.name!r} is missing: run `sudo ./bootstrap.sh` "
          "once (run_mptcp.sh does it too), then ./plot.py again", file=sys.stderr)
    sys.exit(2)

import argparse  # noqa: E402
from dataclasses import dataclass, field  # noqa: E402

import importlib  # noqa: E402

from base import catalogue, merge  # noqa: E402
from base.errors import ConfigError  # noqa: E402
from figures import queue as queue_fig  # noqa: E402
from figures.cpu import draw_cpu  # noqa: E402
from figures.links import draw_link_util  # noqa: E402
from figures.report import Section, write_report  # noqa: E402
from figures.rtt import draw_rtt  # noqa: E402
from figures import baseline, seeds  # noqa: E402
from figures.runs import NOTES, REFERENCE, RUN_DIR, Drawn, Run, group, load_runs, note, title  # noqa: E402,F401
from figures.samples import backlog, load_each, port_utilisation, read_cpu, read_ports, read_rtt  # noqa: E402
from figures.throughput import bar_heights, draw_throughput  # noqa: E402,F401


def _written(path: Path) -> Path:
    print(path)
    return path


def _not_drawn(path: Path, why: str) -> str:
    """A figure this run cannot draw: remove an older copy so nothing stale is shown."""
    path.unlink(missing_ok=True)
    return why


def sample_figures(s: Section, plots: Path, queue_runs: list[int] | None) -> None:
    """Link utilisation, RTT and queue figures of one section; fills its samples in."""
    where, stem = f"{s.topology}/{s.workload}", f"{s.topology}-{s.workload}"
    runs = s.runs

    def ports_and_util(run: Run):
        ports = read_ports(run)
        return ports, port_utilisation(run, ports)

    ports, skipped = load_each(runs, ports_and_util, where, "ports.csv", "link-util and queue figures")
    s.util = {n: util for n, (_, util) in ports.items()}
    out = plots / f"{stem}-link-util.png"
    if ports:
        s.drawn["link-util"] = draw_link_util(s.topology, s.workload, runs, s.util, skipped, out)
        s.figures["link-util"] = _written(out)
        chosen, why = queue_fig.choose(sorted(ports), queue_runs)
        if why:
            note(f"{where}: {why}; drawing {', '.join(map(str, chosen))}")
        out = plots / f"{stem}-queue.png"
        s.drawn["queue"] = queue_fig.draw_queue(s.topology, s.workload, runs,
                                                {n: backlog(runs[n], ports[n][0]) for n in chosen},
                                                skipped, out, why)
        s.figures["queue"] = _written(out)
    else:
        s.figures["link-util"] = _not_drawn(out, "no run has a usable ports.csv")
        s.figures["queue"] = _not_drawn(plots / f"{stem}-queue.png", "no run has a usable ports.csv")

    s.rtt, skipped = load_each(runs, read_rtt, where, "rtt.csv", "RTT figure")
    out = plots / f"{stem}-rtt.png"
    if s.rtt:
        s.drawn["rtt"] = draw_rtt(s.topology, s.workload, runs, s.rtt, skipped, out)
        s.figures["rtt"] = _written(out)
    else:
        s.figures["rtt"] = _not_drawn(out, "no run has a usable rtt.csv")


def cpu_figures(sections: list[Section], plots: Path) -> tuple[dict[str, Path | str], dict[str, Drawn]]:
    """One CPU figure per workload, across the topologies that ran it:
    ({workload: PNG or why not drawn}, {workload: what it shows})."""
    out: dict[str, Path | str] = {}
    drawn: dict[str, Drawn] = {}
    for workload in sorted({s.workload for s in sections}):
        mine = [s for s in sections if s.workload == workload]
        stats, skipped = {}, {}
        for s in mine:
            s.cpu, skipped[s.topology] = load_each(s.runs, read_cpu, f"{s.topology}/{workload}",
                                                   "cpu.csv", "CPU figure")
            fallback = {n: c.why for n, c in s.cpu.items() if c.source == "run.json"}
            if fallback:
                note(f"{s.topology}/{workload}: run.json's whole-run cpu_mean_pct used for " + "; ".join(
                    f"{s.runs[n].dir.name} ({why})" for n, why in fallback.items()))
            if s.cpu:
                stats[s.topology] = s.cpu
        path = plots / f"{workload}-cpu.png"
        if stats:
            drawn[workload] = draw_cpu(workload, {s.topology: s.runs for s in mine}, stats, skipped, path)
            out[workload] = _written(path)
        else:
            out[workload] = _not_drawn(path, "no run has CPU samples")
    return out, drawn


@dataclass
class Drawing:
    """Everything one invocation drew."""
    sections: list[Section]
    cpu: dict[str, Path | str]       # workload -> CPU figure, or why not drawn
    cpu_drawn: dict[str, Drawn]
    report: Path
    # per catalogue row: figure name -> what it shows ("wifi3g-buffer", "dhft4-load", ...)
    by_experiment: dict[str, dict[str, Drawn]] = field(default_factory=dict)

    def of(self, *experiments: str) -> dict[str, Drawn]:
        return {name: d for e in experiments for name, d in self.by_experiment.get(e, {}).items()}

    @property
    def wifi3g(self) -> dict[str, Drawn]:
        return self.of("wifi3g")

    @property
    def dhft(self) -> dict[str, Drawn]:
        return self.of("dhft")

    @property
    def cc(self) -> dict[str, Drawn]:
        return self.of("algorithms", "hotspot")

    @property
    def model(self) -> Drawn | None:
        return next(iter(self.of("model").values()), None)

    @property
    def others(self) -> dict[str, Drawn]:
        return self.of(*(set(self.by_experiment) - {"wifi3g", "dhft", "algorithms", "hotspot", "model"}))


def figure_modules() -> dict[str, list[str]]:
    """Each figure module of the catalogue, with the experiments it draws
    (two experiments may share one); the FatTree sweep's are drawn here."""
    modules: dict[str, list[str]] = {}
    for row in catalogue.rows().values():
        if row.figure != "plot":
            modules.setdefault(row.figure, []).append(row.name)
    return modules


def draw_all(results: Path, queue_runs: list[int] | None = None,
             shard_notes: list[str] = (), baselines: Path = baseline.BASELINES) -> Drawing | None:
    """Every figure and the report of a results directory (None: no run to
    draw); `shard_notes`: the shards missing from it (base/merge.check);
    `baselines`: the folder of baselines its runs are set beside."""
    NOTES.clear()
    for text in shard_notes:
        note(text)
    unusable: dict[Path, str] = {}
    loaded = load_runs(results, unusable)
    groups = group(loaded)
    plots = results / "plots"
    by_experiment: dict[str, dict[str, Drawn]] = {}
    extra: list[str] = []
    for module_name, experiments in figure_modules().items():
        module = importlib.import_module(module_name)
        for name, (png, drawn) in module.draw_all(results, plots).items():
            _written(png)
            by_experiment.setdefault(experiments[0], {})[name] = drawn
        extra += module.report_lines(results)
    if not groups and not by_experiment:
        places = ", ".join(f"{results}/{row.layout}" for row in catalogue.rows().values())
        note(f"no runs under {places}; nothing to draw")
        return None
    sections = []
    for (topology, workload), runs in groups.items():
        here = next(iter(runs.values())).dir.parent
        s = Section(topology, workload, runs, unusable={
            int(m[1]): why for p, why in unusable.items()
            if p.parent.parent == here and (m := RUN_DIR.fullmatch(p.parent.name))})
        out = plots / f"{topology}-{workload}-throughput.png"
        s.drawn["throughput"] = draw_throughput(topology, workload, runs, out)
        s.figures["throughput"] = _written(out)
        sample_figures(s, plots, queue_runs)
        sections.append(s)
    for (topology, workload), points in seeds.by_seed(loaded).items():
        out = plots / f"{topology}-{workload}-seeds-throughput.png"
        by_experiment.setdefault("fattree", {})[out.stem] = seeds.draw(topology, workload, points, out)
        extra = seeds.report_lines(topology, workload, points, _written(out), results) + extra
    cpu, cpu_drawn = cpu_figures(sections, plots)
    report = results / "report.md"
    extra += baseline.compare_lines(results, baselines)
    write_report(results, sections, cpu, list(NOTES), report, extra=extra)
    return Drawing(sections, cpu, cpu_drawn, _written(report), by_experiment)


class _OneLineParser(argparse.ArgumentParser):
    def error(self, message: str):
        print(f"plot.py: error: {message}", file=sys.stderr)
        sys.exit(2)


def main(argv: list[str] | None = None) -> int:
    ap = _OneLineParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("results", nargs="*", type=Path,
                    help="results directory (default: results); several, with --into: merged first")
    ap.add_argument("--into", type=Path, metavar="DIR",
                    help="copy the runs of every RESULTS folder (e.g. shards from several machines) "
                         "into DIR, refusing a point found twice or shards run with other settings, "
                         "and draw DIR")
    ap.add_argument("--queue-run", type=int, action="append", metavar="N",
                    help="subflow count whose queues to draw (repeatable; default: the smallest "
                         "and the largest with port samples)")
    ap.add_argument("--baseline", type=Path, metavar="DIR", default=baseline.BASELINES,
                    help="the baselines report.md sets the runs beside (default: the repository's "
                         "docs/baseline)")
    args = ap.parse_args(argv)
    if not os.path.isdir(args.baseline):
        ap.error(f"--baseline: {args.baseline} is not a folder of baselines")
    sources = args.results or [Path("results")]
    if len(sources) > 1 and args.into is None:
        ap.error("several results folders: name the folder to merge them into with --into DIR")
    for folder in sources + ([args.into] if args.into else []):
        if folder.exists() and not folder.is_dir():
            ap.error(f"{folder} is a file, not a results folder")
    if any(not 1 <= n <= 8 for n in args.queue_run or ()):
        ap.error("--queue-run: a subflow count within 1..8")
    results = args.into or sources[0]
    try:
        shard_notes = (merge.merge(sources, args.into) if args.into
                       else merge.check(merge.runs_in(results)))
    except ConfigError as e:
        ap.error(str(e))
    except OSError as e:   # a run could not be copied
        note(f"cannot merge into {args.into}: {e}")
        return 1
    try:
        draw_all(results, args.queue_run, shard_notes, args.baseline)
    except OSError as e:   # a figure or the report could not be written
        note(f"cannot write into {results}: {e}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
