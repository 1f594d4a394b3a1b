"""File size (paper Fig. 17): the time to open a connection and move one
file, TCP against MPTCP over two paths, against the file's size in packets;
and MPTCP's time as a share of TCP's, with the crossover marked: the
smallest size from which MPTCP's median is below TCP's at that size and at
every larger one.

Reads results/filesize/<link>/<scheme>/<size>pkts/run.json; one figure per
link setting, filesize-<link>.png. Invalid points are red crosses with their
flags under the figure.
"""
from __future__ import annotations

import json
from pathlib import Path

import matplotlib.pyplot as plt

from base import records
from figures.drawing import Drawn, draw_each, mark_invalid, save_figure
from figures.notes import note
from figures.style import scheme_style
from figures.tables import section_head

STYLE = {"tcp": scheme_style("tcp", "TCP, one path"), "mptcp": scheme_style("mptcp", "MPTCP, two paths")}
# Paper Fig. 17 (Raiciu et al., SIGCOMM 2011, §5.2): two hosts with two
# gigabit interfaces through one switch; TCP is quicker below about 150
# packets, MPTCP above.
PAPER_CROSSOVER_PKTS = 150


class Point:
    """One size of one scheme, read from its run.json."""

    def __init__(self, record: dict):
        if record["median_ms"] is None:
            raise ValueError("no transfer completed")
        self.record = record
        self.size = int(record["config"]["size_pkts"])          # packets
        self.median = float(record["median_ms"])
        self.p10, self.p90 = float(record["p10_ms"]), float(record["p90_ms"])
        self.valid = bool(record["valid"])
        self.flags = list(record.get("flags") or [])
        established = record["subflows_established"]
        # The share of transfers whose second subflow was established.
        self.second_subflow = (sum(1 for n in established if n >= 2) / len(established)
                               if established else 0.0)


def parse_point(path: Path) -> tuple[str, str, Point]:
    """(link label, scheme, point) of one run.json."""
    point = Point(json.loads(path.read_text()))
    return path.parent.parent.parent.name, point.record["config"]["scheme"], point


def load(results: Path) -> dict[str, dict[str, list[Point]]]:
    """{link label: {scheme: points by size}}."""
    out: dict[str, dict[str, list[Point]]] = {}
    for path in records.committed(results, records.of("filesize")):
        try:
            link, scheme, point = parse_point(path)
        except (OSError, ValueError, KeyError, TypeError, ZeroDivisionError) as exc:
            note(f"skipped {path}: {exc}")
            continue
        if scheme in STYLE:
            out.setdefault(link, {}).setdefault(scheme, []).append(point)
    return {link: {s: sorted(by[s], key=lambda p: p.size) for s in STYLE if s in by}
            for link, by in sorted(out.items())}


def crossover(data: dict[str, list[Point]]) -> int | None:
    """The smallest size from which MPTCP's median is below TCP's at every
    size both ran (valid points only); None if MPTCP never stays ahead."""
    tcp = {p.size: p.median for p in data.get("tcp", []) if p.valid}
    mptcp = {p.size: p.median for p in data.get("mptcp", []) if p.valid}
    sizes = sorted(set(tcp) & set(mptcp))
    found = None
    for size in reversed(sizes):
        if mptcp[size] >= tcp[size]:
            break
        found = size
    return found


def _subtitle(data: dict[str, list[Point]]) -> str:
    c = next(iter(data.values()))[0].record["config"]
    return (f"two hosts, two paths of {c['bw_mbps']:g} Mb/s, {c['delay_ms']:g} ms one way, "
            f"{c['queue_pkts']} pkt queues; cc {c['cc']}; median of {c['repeats']} transfers "
            "(bars: p10-p90)")


def draw(data: dict[str, list[Point]], out: Path) -> Drawn:
    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4.8), layout="constrained")
    flagged, shown = [], {}
    for scheme, pts in data.items():
        style = STYLE[scheme]
        xs = [p.size for p in pts]
        left.errorbar(xs, [p.median for p in pts],
                      yerr=[[p.median - p.p10 for p in pts], [p.p90 - p.median for p in pts]],
                      color=style.colour, marker=style.marker, ms=5, linewidth=1.5, capsize=2,
                      label=style.label)
        flagged += mark_invalid(left, style.label, pts, lambda p: p.size, lambda p: p.median,
                                lambda p: f"{p.size} packets")
        shown[scheme] = [(p.size, round(p.median, 3), p.valid) for p in pts]
    tcp = {p.size: p.median for p in data.get("tcp", [])}
    mptcp = {p.size: p for p in data.get("mptcp", [])}
    sizes = sorted(set(tcp) & set(mptcp))
    ratios = [mptcp[s].median / tcp[s] for s in sizes]
    right.plot(sizes, ratios, color=STYLE["mptcp"].colour, marker=STYLE["mptcp"].marker, ms=5,
               linewidth=1.5, label="MPTCP's time over TCP's")
    right.axhline(1.0, color="#999999", linestyle="--", linewidth=0.8)
    share = right.twinx()
    share.plot(sizes, [100 * mptcp[s].second_subflow for s in sizes], color="#7f7f7f",
               linestyle=":", marker=".", label="with a second subflow, %")
    share.set_ylim(0, 105)
    share.set_ylabel("transfers with a second subflow, %", fontsize=8)
    shown["ratio"] = [(s, round(r, 3)) for s, r in zip(sizes, ratios)]
    cross = crossover(data)
    shown["crossover"] = cross
    for ax in (left, right):
        ax.set_xscale("log")
        ax.set_xlabel("file size, packets of 1448 bytes")
        ax.grid(alpha=0.3, which="both")
        ax.axvline(PAPER_CROSSOVER_PKTS, color="#999999", linestyle=":", linewidth=1,
                   label="crossover in paper Fig. 17 (1 Gb/s testbed)" if ax is left else None)
        if cross is not None:
            ax.axvline(cross, color="#2ca02c", linestyle="-", linewidth=1.2, alpha=0.7,
                       label=f"crossover here: {cross} packets" if ax is left else None)
    left.set_yscale("log")
    left.set_ylabel("connection set-up and transfer, ms")
    right.set_ylabel("MPTCP / TCP completion time")
    right.set_ylim(bottom=0)
    if cross is None:
        right.set_title("no crossover: MPTCP never stays ahead of TCP", fontsize=8, color="#a00000")
    left.legend(loc="upper left", fontsize=8)
    right.legend(loc="lower left", fontsize=8)
    share.legend(loc="lower right", fontsize=7)
    fig.suptitle(f"Short files: set-up and transfer time against size (paper Fig. 17)\n"
                 f"{_subtitle(data)}", fontsize=9)
    notes = ("INVALID (red x): " + "; ".join(flagged)) if flagged else ""
    return save_figure(fig, out, lambda _fig: shown, notes, wrap=120, reserve=0.06)


def draw_all(results: Path, plots: Path) -> dict[str, tuple[Path, Drawn]]:
    return draw_each(plots, {f"filesize-{link}": data for link, data in load(results).items()}, draw)


REPORT_HEAD = """\
## File size (paper Fig. 17)

Median time from opening the connection to the receiver's last byte, one
transfer at a time on idle links; `!` marks an invalid point. The paper: TCP
is quicker below about 150 packets on its gigabit testbed, MPTCP above,
because MPTCP can use its second path only once the second subflow is
established.
"""


def report_lines(results: Path) -> list[str]:
    lines = []
    for link, data in load(results).items():
        if not lines:
            lines = section_head(REPORT_HEAD)
        cross = crossover(data)
        lines += [f"![filesize {link}](plots/filesize-{link}.png)", "",
                  f"Links {link}: crossover "
                  + (f"at {cross} packets." if cross is not None else "not reached."), "",
                  "| packets | TCP ms | MPTCP ms | MPTCP / TCP | with second subflow |",
                  "| --- " * 5 + "|"]
        tcp = {p.size: p for p in data.get("tcp", [])}
        mptcp = {p.size: p for p in data.get("mptcp", [])}
        for size in sorted(set(tcp) | set(mptcp)):
            t, m = tcp.get(size), mptcp.get(size)
            cell = lambda p: "–" if p is None else f"{p.median:.2f}{'' if p.valid else ' !'}"
            ratio = f"{m.median / t.median:.2f}" if t and m else "–"
            second = f"{100 * m.second_subflow:.0f} %" if m else "–"
            lines.append(f"| {size} | {cell(t)} | {cell(m)} | {ratio} | {second} |")
        lines.append("")
    return lines
