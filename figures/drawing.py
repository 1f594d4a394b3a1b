"""Drawing, saving and reading back a figure: the notes under it, the
legend under a sweep, reference lines, flagged points marked, the PNG, and
what it shows (Drawn) for the tests and the report to check."""
from __future__ import annotations

import textwrap
from dataclasses import dataclass
from pathlib import Path

from figures.style import FLAG_COLOR


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


def save_sweep_figure(fig, out: Path, readout_data: dict, flagged: list[str], ncol: int,
                      what_is_flagged: str = "INVALID (red x)") -> "Drawn":
    """A sweep figure's legend under it (clear of its title), then the flagged points named,
    and the PNG; `readout_data` is what the figure shows, for checking."""
    # Under the first panel's axis label, as a child of that panel, so that
    # the layout keeps it clear of the data, the title and the notes.
    handles, labels = {}, []
    for ax in fig.axes:
        for h, label in zip(*ax.get_legend_handles_labels()):
            if label not in handles:
                handles[label] = h
                labels.append(label)
    one = len(fig.axes) == 1
    fig.axes[0].legend([handles[k] for k in labels], labels, ncol=ncol, fontsize=8, frameon=False,
                       loc="upper center" if one else "upper left",
                       bbox_to_anchor=(0.5 if one else 0.0, -0.12))
    notes = (f"{what_is_flagged}: " + "; ".join(flagged)) if flagged else ""
    return save_figure(fig, out, lambda _fig: readout_data, notes, wrap=120, reserve=0.08)


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


def connections_axis(ax, xs: list[float], label: str) -> None:
    """An x axis of connections per host: log 2, a tick at each value run."""
    import matplotlib.pyplot as plt
    ax.set_xscale("log", base=2)
    ax.set_xticks(xs)
    ax.get_xaxis().set_major_formatter(plt.FuncFormatter(lambda v, _: f"{v:g}"))
    ax.get_xaxis().set_minor_formatter(plt.NullFormatter())
    ax.set_xlabel(label)


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
