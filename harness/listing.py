"""`run_mptcp.sh list` and `run_mptcp.sh NAME --plan`: what there is, and
what one command would run and cost, from the catalogue and the configs
alone. Standard library only; needs no root and builds nothing."""
from __future__ import annotations

import argparse
import dataclasses
import shutil
import sys
import textwrap

from base import catalogue, records
from base.errors import ConfigError
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


def main(argv: list[str]) -> int:
    p = OneLineParser(prog=f"{PROG} list", description="Every experiment, its figure, and its "
                      "runs and estimated time at the defaults on this machine.")
    p.add_argument("--markdown", action="store_true",
                   help="the table README.md carries (no runs or times: those are this machine's)")
    p.add_argument("--validate-only", action="store_true", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.markdown:
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


def plan_text(row: catalogue.Row, cfg, args, shard=None) -> str:
    """Every point with its traffic (a shard's only), the totals and
    estimated wall time, the capacity verdict: all without building anything."""
    traffic = row.load("traffic")
    every = cfg.points()
    numbered = list(enumerate(every, 1))
    numbered = shard.mine(numbered) if shard else numbered
    points = [p for _, p in numbered]
    fields = varying(every)
    lines = [f"plan: {PROG} {row.name} ({row.reproduces}): {row.purpose}"]
    if shard:
        i, n = shard.index, shard.count
        lines.append(f"shard {shard}: {len(points)} of the {len(every)} points (numbers {i}, {i + n}, "
                     f"{i + 2 * n}, ...); the same command with the other shards runs the rest")
    for i, point in numbered:
        t = traffic(cfg, point)
        lines.append(f"  [{i}/{len(every)}] {point_text(point, fields)}"
                     + ("" if not t else f": {t:g} s of traffic"))
    est = estimate(row, cfg, points)
    lines.append(f"estimate: {est.line()}")
    lines.append(f"results: {cfg.results}/{row.layout}")
    lines += getattr(cfg, "plan_lines", list)()
    if row.name == "fattree":
        lines.append(capacity_line(cfg))
    return "\n".join(lines)


def capacity_line(cfg) -> str:
    """The guard's verdict from this machine's cached calibration, or what
    the first real run will measure."""
    from experiments import capacity
    from experiments.capacity import calibration, measurement
    cal = capacity.load(cfg.fabric)
    if cal is None:
        return ("capacity: this machine is not calibrated yet for fabric "
                f"{cfg.fabric}; the first real run measures what forwarding costs here "
                f"(FatTree(4) one_to_one MPTCP-8 at {calibration.CALIBRATION_BW_MBPS:g} Mb/s, "
                f"{measurement.CALIBRATION_REPEATS} x {measurement.CALIBRATION_TIME_S:g} s) before it judges")
    if cfg.servers:
        from experiments.capacity.servers import judge_servers, stand_in_machines
        verdict = judge_servers(cfg, stand_in_machines(cfg, cal))
        return (f"capacity, each server judged as if it were this machine until its worker says "
                f"what it is: {'fits' if verdict.fits else 'refused'}: {verdict.reason()}")
    verdict = capacity.judge(cfg, cal)
    return f"capacity: {'fits' if verdict.fits else 'refused'}: {verdict.reason()}"


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
