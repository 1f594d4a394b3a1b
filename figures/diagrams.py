"""The pictures of the docs, drawn from the harness's own topologies so that
their node names are the ones a run uses: FatTree(4), the dual-homed
FatTree(4), WiFi + 3G, and the path of a run.

    .venv/bin/python -m figures.diagrams [DIR]    # default docs/img
"""
from __future__ import annotations

import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.patches import FancyArrowPatch, FancyBboxPatch  # noqa: E402

from base.links import ACCESS, CELL, WIFI  # noqa: E402
from dctopo.clos import DHFT, FatTree  # noqa: E402
from dctopo.paths import WiFi3G  # noqa: E402

IMG = Path(__file__).resolve().parent.parent / "docs" / "img"
TIERS = ("core", "agg", "edge", "host")   # top to bottom
PLANE_COLOUR = {0: "#6baed6", 1: "#fd8d3c"}
TIER_COLOUR = {"core": "#9467bd", "agg": "#1f77b4", "edge": "#2ca02c", "host": "#7f7f7f"}


def _tier_positions(topo) -> dict[str, tuple[float, float]]:
    """Each node at its tier's height, spread evenly in the order of its name
    (pod by pod, as the names number them)."""
    pos = {}
    for y, tier in enumerate(reversed(TIERS)):
        nodes = sorted((n for n in topo.nodes() if topo.nodeInfo(n).get("role") == tier),
                       key=lambda n: [int(x) for x in n[1:].split("_")])
        for i, node in enumerate(nodes):
            pos[node] = ((i + 0.5) / len(nodes), float(y))
    return pos


def _save(fig, ax, path: Path) -> None:
    """A picture has no axes: only what is drawn."""
    ax.axis("off")
    fig.tight_layout()
    fig.savefig(path, dpi=130)
    plt.close(fig)


def draw_clos(topo, title: str, path: Path) -> None:
    pos = _tier_positions(topo)
    hosts = len(topo.hosts())
    fig, ax = plt.subplots(figsize=(max(8.0, hosts * 0.5), 4.6))
    for a, b in topo.links():
        (x1, y1), (x2, y2) = pos[a], pos[b]
        plane = topo.nodeInfo(b).get("plane", topo.nodeInfo(a).get("plane"))   # DHFT's edges
        ax.plot([x1, x2], [y1, y2], color=PLANE_COLOUR.get(plane, "#bbbbbb"), lw=0.8, zorder=1)
    for node, (x, y) in pos.items():
        role = topo.nodeInfo(node)["role"]
        ax.scatter([x], [y], s=260 if role != "host" else 120, color=TIER_COLOUR[role],
                   marker="s" if role != "host" else "o", zorder=2)
        ax.annotate(node, (x, y), xytext=(0, -13 if role == "host" else 11), textcoords="offset points",
                    ha="center", fontsize=6.5, rotation=90 if role == "host" else 0,
                    va="top" if role == "host" else "bottom")
    for y, tier in enumerate(reversed(TIERS)):
        ax.text(-0.02, y, tier, ha="right", va="center", fontsize=9, color=TIER_COLOUR[tier])
    ax.set_title(title, fontsize=10)
    ax.set_xlim(-0.1, 1.02)
    ax.set_ylim(-0.9, len(TIERS) - 0.5)
    _save(fig, ax, path)


def _link_text(params) -> str:
    delay = f", {params.delay_ms:g} ms" if params.delay_ms else ""
    return f"{params.bw_mbps:g} Mb/s{delay}, {params.queue_pkts} pkts"


def draw_wifi3g(path: Path) -> None:
    topo = WiFi3G()
    pos = {"h1": (0.0, 0.5), "s1": (0.5, 1.0), "s2": (0.5, 0.0), "h2": (1.0, 0.5)}
    fig, ax = plt.subplots(figsize=(7.5, 3.4))
    for a, b in topo.links():
        (x1, y1), (x2, y2) = pos[a], pos[b]
        ax.plot([x1, x2], [y1, y2], color="#888888", lw=1.2, zorder=1)
    for node, (x, y) in pos.items():
        host = node.startswith("h")
        ax.scatter([x], [y], s=500, color=TIER_COLOUR["host" if host else "edge"],
                   marker="o" if host else "s", zorder=2)
        ax.annotate(node, (x, y), ha="center", va="center", fontsize=9, color="white", zorder=3)
    ax.text(0.0, 0.32, "sender", ha="center", fontsize=8)
    ax.text(1.0, 0.32, "receiver", ha="center", fontsize=8)
    for name, params, y in (("WiFi", WIFI, 0.87), ("3G", CELL, 0.13)):   # beside each path's last link
        ax.text(0.76, y, f"{name}: {_link_text(params)}", ha="left", va="center", fontsize=8)
    ax.text(0.25, 0.5, f"access links\n{ACCESS.bw_mbps:g} Mb/s", ha="center", va="center", fontsize=7.5,
            color="#555555")
    ax.set_title("wifi3g: one sender and one receiver over a WiFi and a 3G path (defaults)", fontsize=10)
    ax.set_xlim(-0.15, 1.35)
    ax.set_ylim(-0.25, 1.25)
    _save(fig, ax, path)


# The path of a run: each step, and the code that does it.
RUN_STEPS = (
    ("input check", "harness/cli.py\nconfig.validate()", "bad input: one line, exit 2"),
    ("capacity guard", "experiments/capacity/\ncalibration + demand", "refuses what the\ncores cannot carry"),
    ("set-up", "emulator/network.py\nfabric, hosts, path manager,\ncongestion control", ""),
    ("runs", "experiments/runner.py\nmonitors, traffic driver", "each run flagged\nwhere it went wrong"),
    ("records", "RESULTS/.../run.json\nand the monitors' CSVs", "staged, replaced\natomically"),
    ("figures", "plot.py, figures/\nplots/*.png, report.md", "beside the baseline"),
)


def draw_run_path(path: Path) -> None:
    fig, ax = plt.subplots(figsize=(12.5, 2.6))
    width, gap = 0.145, 0.026
    for i, (step, code, note) in enumerate(RUN_STEPS):
        x = i * (width + gap)
        ax.add_patch(FancyBboxPatch((x, 0.35), width, 0.45, boxstyle="round,pad=0.01",
                                    facecolor="#e8f0fa", edgecolor="#1f77b4"))
        ax.text(x + width / 2, 0.70, step, ha="center", va="center", fontsize=10, weight="bold")
        ax.text(x + width / 2, 0.50, code, ha="center", va="center", fontsize=7)
        if note:
            ax.text(x + width / 2, 0.20, note, ha="center", va="center", fontsize=7, color="#a00000")
        if i:
            ax.add_patch(FancyArrowPatch((x - gap + 0.002, 0.575), (x - 0.002, 0.575),
                                         arrowstyle="-|>", mutation_scale=12, color="#1f77b4"))
    ax.text(0, 0.95, "sudo ./run_mptcp.sh NAME: what happens, in order (Ctrl-C at any step removes "
            "everything the run made)", fontsize=9)
    ax.set_xlim(-0.01, len(RUN_STEPS) * (width + gap))
    ax.set_ylim(0.0, 1.05)
    _save(fig, ax, path)


def draw_all(folder: Path = IMG) -> list[Path]:
    folder.mkdir(parents=True, exist_ok=True)
    made = [folder / n for n in ("fattree4.png", "dhft4.png", "wifi3g.png", "run-path.png")]
    draw_clos(FatTree(k=4), "FatTree(4): 16 hosts, 20 switches, the node names a run uses", made[0])
    draw_clos(DHFT(k=4), "Dual-homed FatTree(4) (dhft): each host on two edge switches, "
              "plane 0 (blue) and plane 1 (orange)", made[1])
    draw_wifi3g(made[2])
    draw_run_path(made[3])
    return made


if __name__ == "__main__":
    for p in draw_all(Path(sys.argv[1]) if len(sys.argv) > 1 else IMG):
        print(p)
