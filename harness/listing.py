"""`run_mptcp.sh list` and `run_mptcp.sh NAME --plan`: what there is, and
what one command would run and cost, from the catalogue and the configs
alone. Standard library only; needs no root and builds nothing."""
from __future__ import annotations

import argparse
import dataclasses
import re
import shutil
import sys
import textwrap

from base import catalogue, records
from base.errors import ConfigError
from base.links import LinkParams
from experiments import plan
from harness.declared import row_command
from harness.shared_options import PROG, OneLineParser

# The arguments `list` reads each experiment's defaults with.
DEFAULT_ARGV = {"fattree": ["4"]}


def defaults(row: catalogue.Row):
    """The experiment's config at its defaults."""
    cfg, _ = row_command(row)[1](DEFAULT_ARGV.get(row.name, []))
    return cfg


def estimate(row: catalogue.Row, cfg, points: list | None = None) -> plan.Estimate:
    """The wall time of a row's points (all by default) on this machine."""
    return plan.estimate(row.name, cfg, row.load("traffic"), points, machine=row.machine,
                         calibration_s=plan.CALIBRATION_S if plan.calibrates_first(cfg) else 0.0)


MAX_WIDTH = 99          # list's table, whatever the terminal
HEADS = ("experiment", "root", "runs", "time", "what it runs; figure")


def row_time(row: catalogue.Row) -> tuple[str, str, str, int | None]:
    """(runs, time, note, cores) of a row at its defaults: "~" an estimate
    here, "*" measured for its baseline (on `cores`) where nothing estimates
    it, "unknown" where neither; the note says why a default cannot run here."""
    try:
        est = estimate(row, defaults(row))
    except ConfigError as exc:      # a default this kernel cannot run
        return "-", "not here", f"{row.name}: {exc}", None
    if est.wall_s is not None:
        return str(est.points), f"~{plan.clock(est.wall_s)}", "", None
    known = records.baseline_wall(row.name)
    if known is None:
        return str(est.points), "unknown", "", None
    return str(est.points), f"{plan.clock(known[0])}*", "", known[1]


def table(width: int | None = None) -> list[str]:
    """One experiment a row, at most MAX_WIDTH (or the terminal's) columns:
    name, root or not, runs and time at the defaults, what it runs wrapped."""
    width = min(width or shutil.get_terminal_size((80, 24)).columns, MAX_WIDTH)
    cells, notes, cores = [], [], set()
    for row in catalogue.rows().values():
        runs, time, note, measured_on = row_time(row)
        cores |= {f"{measured_on}-core"} if measured_on else set()
        cells.append((row.name, "yes" if row.machine else "no", runs, time,
                      f"{row.purpose}; {row.reproduces}"))
        notes += [note] if note else []
    sizes = [max(len(c[i]) for c in [HEADS, *cells]) for i in range(4)]
    indent = sum(sizes) + 2 * 4
    last = max(width - indent, 24)

    def line(c, text):
        return "  ".join([c[0].ljust(sizes[0]), c[1].ljust(sizes[1]), c[2].rjust(sizes[2]),
                          c[3].ljust(sizes[3]), text]).rstrip()
    lines = [line(HEADS, HEADS[4])]
    for c in cells:
        wrapped = textwrap.wrap(c[4], last, break_on_hyphens=False) or [""]
        lines += [line(c, wrapped[0])] + [" " * indent + w for w in wrapped[1:]]
    legend = (f"root: needs sudo (builds a network); no: runs as a user once set up. time at the "
              f"defaults: ~ estimated here ({PROG} NAME --plan says from what), * measured for "
              f"its baseline (docs/baseline/NAME) on a {' or '.join(sorted(cores)) or 'recorded'} "
              "machine, unknown: neither. "
              f"`{PROG} 4` is fattree --k 4; `{PROG} NAME --help` lists its options, "
              f"`{PROG} list --markdown` the table README.md carries.")
    return lines + [""] + textwrap.wrap(legend, width) + [w for n in notes for w in textwrap.wrap(n, width)]


def catalogue_markdown() -> list[str]:
    """README's experiment table: what does not depend on the machine. Each
    row of the repository's catalogue links its page, docs/experiments/NAME.md;
    a row added from outside (MPTCP_HARNESS_EXPERIMENTS) has none here."""
    lines = ["| command | reproduces | what it runs | its runs go to | page |",
             "| --- | --- | --- | --- | --- |"]
    for row in catalogue.rows().values():
        page = f"[{row.name}](docs/experiments/{row.name}.md)" if row.name in catalogue.ROWS else "-"
        lines.append(f"| `{PROG} {row.command}` | {row.reproduces} | {row.purpose} | `{row.layout}` | {page} |")
    return lines


OPTIONS_HEAD = ["| option | meaning (default) |", "| --- | --- |"]


def options_markdown(row: catalogue.Row) -> list[str]:
    """A page's table of an experiment's own options, from its parser (what
    every parser shares left out)."""
    from harness.shared_options import add_results_options, subcommand_parser
    shared = subcommand_parser("x", "")
    add_results_options(shared)
    common = {o for a in shared._actions for o in a.option_strings}
    lines = list(OPTIONS_HEAD)
    for a in row_command(row)[0]()._actions:
        if a.option_strings and a.option_strings[0] not in common and a.help != argparse.SUPPRESS:
            metavar = "" if a.nargs == 0 else f" {a.metavar or a.dest.split('.')[-1].upper()}"
            lines.append(f"| `{a.option_strings[0]}{metavar}` | {' '.join(a.help.split())} |"
                         .replace("%%", "%"))
    return lines


def page_options(text: str) -> tuple[int, int] | None:
    """(start, end) line numbers of a page's options table, None without one."""
    lines = text.splitlines()
    if OPTIONS_HEAD[0] not in lines:
        return None
    start = lines.index(OPTIONS_HEAD[0])
    end = start
    while end < len(lines) and lines[end].startswith("|"):
        end += 1
    return start, end


def write_option_tables(pages) -> None:
    """Each docs/experiments/NAME.md's options table made again from its parser."""
    for row in catalogue.ROWS.values():
        page = pages / f"{row.name}.md"
        text = page.read_text()
        where = page_options(text)
        if where:
            lines = text.splitlines()
            page.write_text("\n".join(lines[:where[0]] + options_markdown(row) + lines[where[1]:]) + "\n")


def main(argv: list[str]) -> int:
    p = OneLineParser(prog=f"{PROG} list", description="Every experiment, its figure, and its "
                      "runs and estimated time at the defaults on this machine.")
    p.add_argument("--markdown", action="store_true",
                   help="the table README.md carries (no runs or times: those are this machine's)")
    p.add_argument("--option-tables", metavar="DIR", default=None,
                   help="rewrite each DIR/NAME.md's options table from its parser (docs/experiments)")
    p.add_argument("--validate-only", action="store_true", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.option_tables:
        from pathlib import Path
        write_option_tables(Path(args.option_tables))
    elif args.markdown:
        print("\n".join(catalogue_markdown()))
    elif not args.validate_only:
        print("\n".join(table()))
    return 0


def field_names(point) -> list[str]:
    """A point's fields (a dataclass's or a named tuple's); a seed's point
    (with --seeds) names its own too; [] for a point without names."""
    if dataclasses.is_dataclass(point):
        return getattr(point, "field_names", None) or [f.name for f in dataclasses.fields(point)]
    return list(getattr(point, "_fields", ()))


def varying(points: list) -> list[str]:
    """The fields in which a config's points differ: what tells them apart.
    A field holding a dataclass (a point's LinkParams) is named by the parts
    of it that differ, "wifi.loss_pct"."""
    names = list(dict.fromkeys(n for p in points for n in field_names(p)))
    out = []
    for n in names:
        values = [getattr(p, n, None) for p in points]
        if len({repr(v) for v in values}) < 2:
            continue
        parts = [f.name for f in dataclasses.fields(values[0])] if dataclasses.is_dataclass(values[0]) else []
        out += [f"{n}.{sub}" for sub in parts if len({repr(getattr(v, sub, None)) for v in values}) > 1] or [n]
    return out


def value_of(point, name: str):
    """A point's value of a field ("wifi.loss_pct": of a part of one); None if it has none."""
    head, _, sub = name.partition(".")
    if head not in field_names(point):
        return None
    value = getattr(point, head)
    return getattr(value, sub) if sub else value


def point_text(point, fields: list[str]) -> str:
    """What --plan says of a point: its own `plan_text()` where it has one,
    else its values of `fields` (those it has, not None)."""
    if hasattr(point, "plan_text"):
        return point.plan_text()
    if not field_names(point):
        return str(point)
    shown = [(name.replace(".", " "), value) for name in fields
             if (value := value_of(point, name)) is not None]
    return ", ".join(f"{n} {v:g}" if isinstance(v, float) else f"{n} {v}" for n, v in shown) or "the only run"


PLAN_WIDTH = 100       # --plan's lines wrap here


def network_text(cfg) -> str:
    """What every run of `cfg` shares, for its run lines: the network's size
    (the config's own `plan_network`, else FatTree arity k) and link rates."""
    parts = [cfg.plan_network] if hasattr(cfg, "plan_network") else (
        [f"--topo {cfg.topo}"] if getattr(cfg, "topo", None) else
        [f"k {cfg.k}"] if isinstance(getattr(cfg, "k", None), int) else [])
    links = [(f.name, getattr(cfg, f.name)) for f in dataclasses.fields(cfg)
             if isinstance(getattr(cfg, f.name, None), LinkParams)]
    parts += [f"{'' if name == 'link' or len(links) == 1 else name + ' '}{link.bw_mbps:g} Mb/s"
              for name, link in links]
    return ", ".join(parts)


def traffic_text(cfg, point, traffic) -> str:
    """A run's traffic, its warm-up apart where the config has one."""
    t = traffic(cfg, point)
    if not t:
        return ""
    warm = plan.warmup_of(cfg, point)
    if warm is None or not 0 < warm < t:
        return f": {t:g} s of traffic"
    return f": {warm:g} s warm-up + {t - warm:g} s counted"


def results_text(row: catalogue.Row, cfg) -> str:
    """The runs' folder, with what the config fixes filled in; `<...>` parts
    differ from run to run, a `[...]` part only where --seeds is given."""
    layout = row.layout
    seeds = getattr(cfg, "seeds", ())
    layout = re.sub(r"\[([^\]]*<S>[^\]]*)\]", r"\1" if seeds else "", layout)
    if getattr(cfg, "dilation", 1) == 1:
        layout = re.sub(r"\[-x<F>\]", "", layout)
    if getattr(cfg, "topo", None):     # --topo FILE.py:NAME: results/NAME/
        layout = layout.replace("ft<k>", cfg.topo.rpartition(":")[2])
    fixed = {"k": getattr(cfg, "k", None), "n": getattr(cfg, "n", None),
             "fabric": getattr(cfg, "fabric", None), "F": f"{getattr(cfg, 'dilation', 1):g}",
             "workload": ("matrix" if getattr(cfg, "matrix", None) else
                          cfg.workloads[0] if len(getattr(cfg, "workloads", ())) == 1 else None)}
    for name, value in fixed.items():
        if isinstance(value, (int, str)) and not isinstance(value, bool):
            layout = layout.replace(f"<{name}>", str(value))
    return f"{cfg.results}/{layout}"


def wrapped(lines: list[str], width: int = PLAN_WIDTH) -> list[str]:
    """Each line within `width`, its continuation indented under its text."""
    out = []
    for line in lines:
        indent = " " * (len(line) - len(line.lstrip()) + 4)
        out += textwrap.wrap(line, width, subsequent_indent=indent, break_on_hyphens=False,
                             break_long_words=False) or [""]
    return out


def unwrapped(text: str) -> list[str]:
    """The lines of a plan as they were before `wrapped`: continuations
    (indented 4 more than their line) joined back."""
    out: list[str] = []
    for line in text.splitlines():
        depth = len(line) - len(line.lstrip())
        if out and line.strip() and depth >= len(out[-1]) - len(out[-1].lstrip()) + 4:
            out[-1] += " " + line.strip()
        else:
            out.append(line)
    return out


def plan_text(row: catalogue.Row, cfg, args, shard=None) -> str:
    """Every point with its network and traffic (a shard's only), the totals
    and estimated wall time, where the runs go and the capacity verdict: all
    without building anything."""
    traffic = row.load("traffic")
    every = cfg.points()
    numbered = list(enumerate(every, 1))
    numbered = shard.mine(numbered) if shard else numbered
    points = [p for _, p in numbered]
    fields = varying(every)
    network = network_text(cfg) if row.machine else ""
    lines = [f"plan: {PROG} {row.name} ({row.reproduces})"]
    if shard:
        i, n = shard.index, shard.count
        lines.append(f"shard {shard}: {len(points)} of the {len(every)} points (numbers {i}, {i + n}, "
                     f"{i + 2 * n}, ...); the same command with the other shards runs the rest")
    for i, point in numbered:
        what = ", ".join(x for x in (point_text(point, fields), network) if x)
        lines.append(f"  [{i}/{len(every)}] {what}{traffic_text(cfg, point, traffic)}")
    est = estimate(row, cfg, points)
    lines.append(f"estimate: {est.line()}")
    lines.append(f"results: {results_text(row, cfg)}")
    lines += getattr(cfg, "plan_lines", list)()
    if row.machine:
        lines.append(capacity_line(row, cfg))
    return "\n".join(wrapped(lines))


def racks_verdict(row: catalogue.Row, cfg, cal):
    """The guard's verdict on an experiment of racks (each seed's), from its
    topologies and matrices; None where they cannot be made here (a fresh
    machine lacks Mininet's topology class)."""
    try:
        from experiments.capacity.guard import matrices_judge
        from experiments.overseeds import experiment_for
        exp = experiment_for(row.load("run"), cfg, say=lambda *_: None)
    except ImportError:
        return None
    verdicts = [matrices_judge(e.cfg, e.loads())(cal) for e in getattr(exp, "of_seed", {0: exp}).values()]
    return max(verdicts, key=lambda v: v.predicted_cpu_pct)


def capacity_line(row: catalogue.Row, cfg) -> str:
    """The guard's verdict from this machine's cached calibration where it
    models the runs' demand here, else what it will do, or that it does not
    judge this experiment."""
    from experiments import capacity
    from experiments.capacity import calibration, measurement
    if not plan.guarded(cfg) and not hasattr(cfg, "sweep_config"):
        return ("capacity: not judged: the guard does not model this experiment's demand yet; "
                "each run's cpu_saturated flag says whether the CPU kept up")
    if row.name == "fattree" and getattr(cfg, "topo", None):
        return ("capacity: not judged for a custom topology (--topo): the guard is calibrated on "
                "FatTree runs; each run's cpu_saturated flag says whether the CPU kept up")
    fabric = getattr(cfg, "fabric", "l3")
    cal = capacity.load(fabric)
    if cal is None and not plan.guarded(cfg):
        return (f"capacity: not judged (the guard does not stop this experiment), and this machine "
                f"has no calibration for fabric {fabric} to predict from: a guarded run such as "
                f"`sudo {PROG} 4` measures one")
    if cal is None:
        return ("capacity: this machine is not calibrated yet for fabric "
                f"{fabric}; the first real run measures what forwarding costs here "
                f"(FatTree(4) one_to_one MPTCP-8 at {calibration.CALIBRATION_BW_MBPS:g} Mb/s, "
                f"{measurement.CALIBRATION_REPEATS} x {measurement.CALIBRATION_TIME_S:g} s) before it judges")
    if hasattr(cfg, "sweep_config"):        # runs that are FatTree sweeps, not stopped by the guard
        verdicts = [capacity.judge(cfg.sweep_config(p), cal) for p in cfg.points()]
        worst = max(verdicts, key=lambda v: v.predicted_cpu_pct)
        return (f"capacity, as the guard would judge its costliest run as a FatTree sweep (it does "
                f"not stop this experiment): {'fits' if worst.fits else 'too much'}: {worst.reason()}")
    if not hasattr(cfg, "workloads"):       # an experiment of racks
        verdict = racks_verdict(row, cfg, cal)
        if verdict is None:
            return (f"capacity: judged when it runs, before any network is built: each run's traffic "
                    f"matrix at its max-min rates (an upper bound) against this machine's cached "
                    f"calibration for fabric {fabric}")
        return f"capacity: {'fits' if verdict.fits else 'refused'}: {verdict.reason()}"
    if cfg.servers:
        from experiments.capacity.servers import judge_servers, stand_in_machines
        verdict = judge_servers(cfg, stand_in_machines(cfg, cal))
        return (f"capacity, each server judged as if it were this machine until its worker says "
                f"what it is: {'fits' if verdict.fits else 'refused'}: {verdict.reason()}")
    verdict = capacity.judge(cfg, cal)
    return f"capacity: {'fits' if verdict.fits else 'refused'}: {verdict.reason()}"


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
