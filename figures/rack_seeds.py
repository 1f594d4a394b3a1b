"""An experiment of racks run with --seeds (experiments/overseeds.py): per
point, the mean over the seeds of its aggregate goodput (`pct_of_host_links`
of run.json: % of what every host's one link carries), each seed's value
marked and their range drawn, and report.md's mean and standard deviation.
A point is valid only if every seed named in its records' `config.seeds` has
a valid run of it. Each seed's own figures are its experiment's, drawn from
its `<top>-seed<S>/` folder."""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

import matplotlib.pyplot as plt
from matplotlib.lines import Line2D
from matplotlib.patches import Patch

from base import records
from figures.drawing import Drawn, save_figure
from figures.experiment_records import read_records
from figures.seeds import Spread
from figures.style import INVALID_COLOR, SCHEMES, scheme_style

SEED_DIR = re.compile(r"(.+)-seed(\d+)")
VALUE = "pct_of_host_links"


@dataclass
class Run:
    seed: int
    value: float
    valid: bool
    flags: list[str]
    config: dict


@dataclass
class OverSeeds(Spread):
    """One point's runs, one per seed, and the seeds it should have."""
    runs: list[Run] = field(default_factory=list)
    seeds: tuple[int, ...] = ()

    @property
    def values(self) -> list[float]:
        return [r.value for r in self.runs]

    @property
    def missing(self) -> list[int]:
        return sorted(set(self.seeds) - {r.seed for r in self.runs})

    @property
    def valid(self) -> bool:
        return not self.missing and all(r.valid for r in self.runs)

    @property
    def flags(self) -> list[str]:
        return sorted({f for r in self.runs for f in r.flags}
                      | ({f"seed {', '.join(map(str, self.missing))} missing"} if self.missing else set()))


def load(results: Path, experiment: str) -> dict[str, dict[str, OverSeeds]]:
    """{top folder without its seed: {point (its folders below the top): OverSeeds}}."""
    out: dict[str, dict[str, OverSeeds]] = {}
    for path, run in read_records(results, records.of(experiment), _run):
        top, *point = path.parent.relative_to(results).parts
        if (m := SEED_DIR.fullmatch(top)) and run.config.get("seeds"):
            over = out.setdefault(m.group(1), {}).setdefault("/".join(point), OverSeeds())
            over.runs.append(run)
            over.seeds = tuple(sorted(set(over.seeds) | set(run.config["seeds"])))
    for points in out.values():
        for over in points.values():
            over.runs.sort(key=lambda r: r.seed)
    return {top: dict(sorted(points.items())) for top, points in sorted(out.items())}


def _run(record: dict) -> Run:
    cfg = record["config"]
    return Run(int(cfg["seed"]), float(record[VALUE]), bool(record["valid"]),
               list(record.get("flags") or []), cfg)


def colour(over: OverSeeds) -> str:
    """The point's scheme's colour: its config's scheme where that has a
    style, else TCP's for one subflow and MPTCP's for more."""
    cfg = over.runs[0].config
    scheme = cfg.get("scheme")
    if scheme not in SCHEMES:
        scheme = "tcp" if int(cfg.get("subflows", 1)) == 1 else "mptcp"
    return scheme_style(scheme).colour


def draw(top: str, points: dict[str, OverSeeds], out: Path) -> Drawn:
    names = list(points)
    fig, ax = plt.subplots(figsize=(8.5, 1.6 + 0.28 * len(names)), layout="constrained")
    ys = range(len(names))
    bars = ax.barh(ys, [points[n].mean for n in names], height=0.7, edgecolor="black", linewidth=0.5,
                   color=[colour(points[n]) if points[n].valid else INVALID_COLOR for n in names], zorder=2)
    for y, (rect, n) in zip(ys, zip(bars, names)):
        p = points[n]
        ax.plot([min(p.values), max(p.values)], [y, y], color="black", lw=1.1, zorder=3)
        ax.plot(p.values, [y] * len(p.values), "o", ms=3.5, mfc="white", mec="black", zorder=4)
        if not p.valid:
            rect.set_hatch("//")
    ax.set_yticks(list(ys), [f"{n}  {points[n].mean:.0f}±{points[n].sd:.0f}" for n in names], fontsize=7)
    ax.invert_yaxis()
    ax.set_xlabel("aggregate goodput, % of what every host's one link carries (mean ± sd over seeds)")
    ax.set_xlim(0, 1.08 * max(max(p.values) for p in points.values()))
    ax.grid(axis="x", alpha=0.3, zorder=0)
    seeds = sorted({s for p in points.values() for s in p.seeds})
    cfg = next(iter(points.values())).runs[0].config
    ax.set_title(f"{top} over seeds {', '.join(map(str, seeds))}\n{cfg.get('bw_mbps')} Mb/s, "
                 f"{cfg.get('queue_pkts')} pkt queues, cc {cfg.get('cc')}, fabric {cfg.get('fabric')}, "
                 f"{cfg.get('time_s')} s after {cfg.get('warmup_s')} s warm-up", fontsize=9)
    legend = [Patch(fc=INVALID_COLOR, ec="black", hatch="//", label="a seed's run invalid or missing"),
              Line2D([], [], marker="o", color="black", mfc="white", ms=4, label="each seed, and their range")]
    fig.legend(handles=legend, loc="outside upper center", ncol=2, fontsize=7, frameon=False)
    invalid = [f"{n}: {', '.join(points[n].flags)}" for n in names if not points[n].valid]
    shown = {n: (round(points[n].mean, 2), points[n].valid) for n in names}
    return save_figure(fig, out, lambda _fig: shown, ("INVALID: " + "; ".join(invalid)) if invalid else "",
                       wrap=120, reserve=0.06)


def draw_all(results: Path, plots: Path, experiment: str) -> dict[str, tuple[Path, Drawn]]:
    return {f"{top}-seeds": (plots / f"{top}-seeds.png", draw(top, points, plots / f"{top}-seeds.png"))
            for top, points in load(results, experiment).items()}


def report_lines(results: Path, experiment: str) -> list[str]:
    lines = []
    for top, points in load(results, experiment).items():
        seeds = sorted({s for p in points.values() for s in p.seeds})
        lines += [f"### {top} over seeds {', '.join(map(str, seeds))}", "",
                  "Aggregate goodput in % of what every host's one link carries, per point: the mean "
                  "and standard deviation over the seeds' runs. A point is valid only if every seed's "
                  "run of it is.", "", f"![{top} over seeds](plots/{top}-seeds.png)", "",
                  "| point | mean % | sd | seeds' values % | valid | flags |", "| --- " * 6 + "|"]
        lines += [f"| {n} | {p.mean:.1f} | {p.sd:.1f} | {', '.join(f'{v:.1f}' for v in p.values)} | "
                  f"{'yes' if p.valid else '**NO**'} | {', '.join(p.flags)} |" for n, p in points.items()]
        lines.append("")
    return lines
