#!/usr/bin/env python3
"""Draw every figure of a results directory, and a report.

    plot.py [RESULTS_DIR] [--queue-run N ...]        (default: results)

Reads RESULTS_DIR/<topology>/<workload>/flows<N>/ (run.json and the monitors'
cpu.csv, ports.csv, rtt.csv; directories whose names start with '.' are
ignored) and writes into RESULTS_DIR/plots/, for every (topology, workload)
with at least one readable run:

  <topology>-<workload>-throughput.png  mean % of optimal per subflow count and
                                        rank of flows (paper Fig 2, 3)
  <topology>-<workload>-link-util.png   rank of switch-port utilisation per
                                        subflow count (2013 Fig 4)
  <topology>-<workload>-rtt.png         mean ± sd smoothed RTT of the data
                                        subflows per subflow count (2013 Fig 11)
  <topology>-<workload>-queue.png       queue backlog over time, smallest and
                                        largest subflow count or --queue-run
                                        (2013 Fig 10, 12)

and per workload <workload>-cpu.png (CPU against FatTree size and subflow
count, 2013 Fig 5); from RESULTS_DIR/wifi3g/<sweep>/<scheme>/<value>/run.json
(E4) wifi3g-buffer.png, wifi3g-loss.png and wifi3g-rtt.png (goodput of TCP
over WiFi, TCP over 3G and MPTCP against receive buffer, WiFi loss and WiFi
RTT; NSDI 2012 Fig 4, CS244 '14); from RESULTS_DIR/dhft<k>/<sweep>/<scheme>/<value>/run.json
(E7) dhft<k>-locality.png and dhft<k>-load.png (aggregate goodput of TCP and
MPTCP on the dual-homed FatTree and TCP on the perfect switch against rack
locality, and relative to the perfect switch against load; paper Fig 15,
16); from RESULTS_DIR/oversub<k>/<sweep>/<matrix>/<scheme>/<value>/run.json
(E8) oversub<k>-load.png and oversub<k>-locality.png (MPTCP-4's aggregate
over TCP's on the 4:1 oversubscribed FatTree against load and locality;
paper Fig 7, 8); from RESULTS_DIR/topologies/<topology>/permutation/flows<N>/run.json
(E9) topologies-subflows.png and topologies-rank.png (goodput per flow on
FatTree, VL2 and BCube against subflows, and ranked; paper Fig 4, 5); from
RESULTS_DIR/manytoone/bcube<n>-<k>/<scheme>/reads/run.json manytoone-bcube<n>-<k>.png
(each host's read rate from its neighbours per scheme, and the traffic the
hosts relayed; paper §4.3.1's BCube table); from
RESULTS_DIR/filesize/<link>/<scheme>/<size>pkts/run.json filesize-<link>.png
(set-up and transfer time of one file, TCP against MPTCP over two paths,
against size; paper Fig 17); from RESULTS_DIR/shortflows<k>/<scheme>/run.json
shortflows<k>.png (short files' completion times and the long flows' rates
per long-flow scheme; paper Fig 12); from
RESULTS_DIR/transfers/<sweep>/<label>/flows<N>/run.json transfers-nswitch.png
and transfers-fattree.png (time until every receiver has its data against
subflows; CS536 '13); from RESULTS_DIR/linkfailure<k>-<fabric>/<scheme>/run.json
linkfailure<k>-<fabric>.png (each flow's throughput over time while a DHFT
core link is degraded, TCP against MPTCP; paper Fig 19); from
RESULTS_DIR/provisioned-<fabric>/<scheme>/run.json provisioned-<fabric>.png
(what the sender put on each of four provisioned paths over time, coupled
against uncoupled MPTCP; TNC 2013); from RESULTS_DIR/scheduling<k>/<scheme>/run.json
scheduling<k>.png (total throughput of closed-loop flows, TCP over ECMP,
first fit at each interval and MPTCP; paper Fig 13); from RESULTS_DIR/algorithms<k>/ and RESULTS_DIR/hotspot<k>/ (E5, E6)
algorithms<k>.png (each flow's throughput and core and access link loss
rates per congestion control; paper Fig 9-10) and hotspot<k>.png (throughput
over time with a core link slowed, per congestion control; paper Fig 11,
19); from RESULTS_DIR/model/run.json (`run_mptcp.sh model`)
fattree-subflow-model.png (the load variance of the paper's subflow model
against the number of subflows; paper Fig. 6); then RESULTS_DIR/report.md (every figure, and a table per
topology and workload beside the paper's values). Each path written is printed.

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

from figures import algorithms as cc_fig  # noqa: E402
from figures import dhft as dhft_fig  # noqa: E402
from figures import model as model_fig  # noqa: E402
from figures import linkfailure as linkfailure_fig  # noqa: E402
from figures import oversub as oversub_fig  # noqa: E402
from figures import topologies as topologies_fig  # noqa: E402
from figures import manytoone as manytoone_fig  # noqa: E402
from figures import filesize as filesize_fig  # noqa: E402
from figures import provisioned as provisioned_fig  # noqa: E402
from figures import scheduling as scheduling_fig  # noqa: E402
from figures import shortflows as shortflows_fig  # noqa: E402
from figures import transfers as transfers_fig  # noqa: E402
from figures import queue as queue_fig  # noqa: E402
from figures import wifi3g as wifi3g_fig  # noqa: E402
from figures.cpu import draw_cpu  # noqa: E402
from figures.links import draw_link_util  # noqa: E402
from figures.report import Section, write_report  # noqa: E402
from figures.rtt import draw_rtt  # noqa: E402
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
    wifi3g: dict[str, Drawn]         # E4 sweep -> what its figure shows
    dhft: dict[str, Drawn]           # E7 "dhft<k>-<sweep>" -> what its figure shows
    cc: dict[str, Drawn]             # E5/E6 "algorithms<k>" / "hotspot<k>" -> what it shows
    model: Drawn | None = None       # the subflow model (Fig. 6), if there is its record
    # E8 "oversub<k>-<sweep>", E9 "topologies-subflows" and "topologies-rank",
    # file sizes "filesize-<link>", short flows "shortflows<k>", scheduling
    # "scheduling<k>", transfers
    # "transfers-<sweep>"
    others: dict[str, Drawn] = field(default_factory=dict)


def draw_all(results: Path, queue_runs: list[int] | None = None) -> Drawing | None:
    """Every figure and the report of a results directory (None: no run to draw)."""
    NOTES.clear()
    unusable: dict[Path, str] = {}
    groups = group(load_runs(results, unusable))
    plots = results / "plots"
    wifi3g = {}
    for sweep, (png, drawn) in wifi3g_fig.draw_all(results, plots).items():
        _written(png)
        wifi3g[sweep] = drawn
    dhft = {}
    for name, (png, drawn) in dhft_fig.draw_all(results, plots).items():
        _written(png)
        dhft[name] = drawn
    cc = {}
    for name, (png, drawn) in cc_fig.draw_all(results, plots).items():
        _written(png)
        cc[name] = drawn
    others = {}       # E8, E9 and the file sizes, by figure name
    for fig_module in (oversub_fig, topologies_fig, manytoone_fig, filesize_fig, shortflows_fig,
                       transfers_fig, linkfailure_fig, provisioned_fig, scheduling_fig):
        for name, (png, drawn) in fig_module.draw_all(results, plots).items():
            _written(png)
            others[name] = drawn
    model = None
    for png, drawn in model_fig.draw_all(results, plots).values():
        _written(png)
        model = drawn
    if not groups and not wifi3g and not dhft and not cc and not model and not others:
        note(f"no runs under {results}/<topology>/<workload>/flows<N>/run.json, "
             f"{results}/wifi3g/, {results}/dhft<k>/, {results}/oversub<k>/, {results}/topologies/, "
             f"{results}/algorithms<k>/, {results}/hotspot<k>/, {results}/filesize/, "
             f"{results}/shortflows<k>/, {results}/transfers/, {results}/linkfailure<k>-<fabric>/, "
             f"{results}/manytoone/, {results}/provisioned-<fabric>/, {results}/scheduling<k>/ "
             f"or {results}/model/; "
             "nothing to draw")
        return None
    sections = []
    for (topology, workload), runs in groups.items():
        s = Section(topology, workload, runs, unusable={
            int(m[1]): why for p, why in unusable.items()
            if p.parent.parent == results / topology / workload and (m := RUN_DIR.fullmatch(p.parent.name))})
        out = plots / f"{topology}-{workload}-throughput.png"
        s.drawn["throughput"] = draw_throughput(topology, workload, runs, out)
        s.figures["throughput"] = _written(out)
        sample_figures(s, plots, queue_runs)
        sections.append(s)
    cpu, cpu_drawn = cpu_figures(sections, plots)
    report = results / "report.md"
    extra = [line for fig in (wifi3g_fig, dhft_fig, linkfailure_fig, oversub_fig, topologies_fig,
                              manytoone_fig, filesize_fig, shortflows_fig, transfers_fig,
                              provisioned_fig, scheduling_fig, cc_fig, model_fig)
             for line in fig.report_lines(results)]
    write_report(results, sections, cpu, list(NOTES), report, extra=extra)
    return Drawing(sections, cpu, cpu_drawn, _written(report), wifi3g, dhft, cc, model, others)


class _OneLineParser(argparse.ArgumentParser):
    def error(self, message: str):
        print(f"plot.py: error: {message}", file=sys.stderr)
        sys.exit(2)


def main(argv: list[str] | None = None) -> int:
    ap = _OneLineParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("results", nargs="?", default="results", type=Path,
                    help="results directory (default: results)")
    ap.add_argument("--queue-run", type=int, action="append", metavar="N",
                    help="subflow count whose queues to draw (repeatable; default: the smallest "
                         "and the largest with port samples)")
    args = ap.parse_args(argv)
    if args.results.exists() and not args.results.is_dir():
        ap.error(f"{args.results} is a file, not a results folder")
    if any(not 1 <= n <= 8 for n in args.queue_run or ()):
        ap.error("--queue-run: a subflow count within 1..8")
    try:
        draw_all(args.results, args.queue_run)
    except OSError as e:   # a figure or the report could not be written
        note(f"cannot write into {args.results}: {e}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
