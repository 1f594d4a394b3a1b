"""`run_mptcp.sh list` and `run_mptcp.sh NAME --plan`: what there is, and
what one command would run and cost, from the catalogue and the configs
alone. Standard library only; needs no root and builds nothing."""
from __future__ import annotations

import argparse
import dataclasses
import sys

from base import catalogue
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


def table() -> list[str]:
    """One line per experiment: command, what it reproduces, runs and time at the defaults."""
    lines = ["| command | reproduces | what it runs | runs at the defaults | time here |",
             "| --- | --- | --- | --- | --- |"]
    for row in catalogue.rows().values():
        try:
            cfg = defaults(row)
            est = estimate(row, cfg)
            runs, wall = str(est.points), ("unknown" if est.wall_s is None else plan.clock(est.wall_s))
        except ConfigError as exc:      # a default this kernel cannot run
            runs, wall = "-", f"not here: {exc}"
        lines.append(f"| `{PROG} {row.command}` | {row.reproduces} | {row.purpose} | {runs} | {wall} |")
    return lines


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
        print(f"\n`{PROG} NAME --help` lists an experiment's options; `{PROG} NAME --plan` its runs.")
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
