"""The per-run sample files (cpu.csv, ports.csv, rtt.csv) read and reduced
to what the figures draw. No drawing here.

Every reader raises SampleError with a short reason (missing file, bad
header, the line that does not parse, no sample in the counted window) so a
figure can skip that run and say why; nothing else escapes."""
from __future__ import annotations

import csv
import math
import re
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import numpy as np

from figures.notes import note
from figures.runs import Run

PORT = re.compile(r"(?P<node>[eac]\d+(?:_\d+)?)-eth(?P<port>\d+)")
TIERS = ("core", "aggregation", "edge")
_TIER_OF = {"c": "core", "a": "aggregation", "e": "edge"}


class SampleError(ValueError):
    """A sample file that cannot be used (the message says why, briefly)."""


def _number(text: str) -> float:
    v = float(text)
    if not math.isfinite(v):
        raise ValueError(text)
    return v


def read_table(path: Path, columns: dict[str, Callable[[str], object]]) -> tuple[list[str], dict[str, list]]:
    """(the header, the named columns with each value converted) of a CSV;
    SampleError if the file is missing, lacks a column, has a malformed line
    or holds no sample."""
    name = path.name
    try:
        text = path.read_text()
    except FileNotFoundError:
        raise SampleError(f"no {name}") from None
    except (OSError, UnicodeDecodeError) as e:
        raise SampleError(f"{name} unreadable: {e}") from None
    rows = csv.reader(text.splitlines())
    try:
        header = next(rows, None)
        if not header:
            raise SampleError(f"{name} is empty")
        absent = [c for c in columns if c not in header]
        if absent:
            raise SampleError(f"{name} has no column {', '.join(absent)}")
        where = {c: header.index(c) for c in columns}
        out: dict[str, list] = {c: [] for c in columns}
        for line, row in enumerate(rows, start=2):
            if not row:
                continue
            if len(row) != len(header):
                raise SampleError(f"{name} line {line}: {len(row)} fields, the header has {len(header)}")
            for c, conv in columns.items():
                try:
                    out[c].append(conv(row[where[c]]))
                except ValueError:
                    raise SampleError(f"{name} line {line}: {c}={row[where[c]]!r} is not valid") from None
    except csv.Error as e:
        raise SampleError(f"{name}: {e}") from None
    if not out[next(iter(columns))]:
        raise SampleError(f"{name} has no samples")
    return header, out


def _in_window(t: np.ndarray, run: Run) -> np.ndarray:
    start, end = run.window
    return (t >= start) & (t <= end)


def _interval_in_window(t: np.ndarray, run: Run) -> np.ndarray:
    """For samples that average the interval ending at t (cpu.csv): the
    samples whose whole interval lies in the counted window."""
    steps = np.diff(t)
    dt = float(np.median(steps[steps > 0])) if (steps > 0).any() else 0.0
    start, end = run.window
    return (t - dt >= start - 0.1 * dt) & (t <= end)


def load_each(runs: dict[int, Run], reader: Callable[[Run], object], where: str,
              file: str, used_in: str) -> tuple[dict[int, object], dict[int, str]]:
    """reader(run) for every run: ({subflows: result}, {subflows: why skipped}),
    with one stderr line for all the runs of `where` it skipped."""
    ok, skipped = {}, {}
    for n, run in runs.items():
        try:
            ok[n] = reader(run)
        except SampleError as e:
            skipped[n] = str(e)
    if skipped:
        by_reason: dict[str, list[str]] = {}
        for n, why in skipped.items():
            by_reason.setdefault(why, []).append(runs[n].dir.name)
        note(f"{where}: {file} skipped in the {used_in}: " + "; ".join(
            f"{', '.join(names)} ({why})" for why, names in by_reason.items()))
    return ok, skipped


# --- ports.csv -------------------------------------------------------------------------------

@dataclass
class Port:
    """One switch interface's samples, in time order."""
    node: str
    intf: str
    port: int
    t: np.ndarray
    tx_bytes: np.ndarray
    backlog: np.ndarray

    @property
    def tier(self) -> str:
        return _TIER_OF[self.node[0]]

    def faces(self, k: int | None) -> str:
        """Where this port's egress goes: 'edge→host', 'agg→core', ..."""
        if self.tier == "core":
            return "core→agg"
        if k is None:
            return self.tier
        low = self.port < k // 2
        if self.tier == "edge":
            return "edge→host" if low else "edge→agg"
        return "agg→edge" if low else "agg→core"


def read_ports(run: Run) -> list[Port]:
    """Every switch interface named <node>-eth<port> in ports.csv (others,
    e.g. a controller's port, are left out)."""
    _, cols = read_table(run.dir / "ports.csv", {"t_s": _number, "node": str, "intf": str,
                                              "tx_bytes": _number, "backlog_pkts": _number})
    rows: dict[tuple[str, str], list[int]] = {}
    for i, (node, intf) in enumerate(zip(cols["node"], cols["intf"])):
        rows.setdefault((node, intf), []).append(i)
    t, tx, backlog = (np.asarray(cols[c]) for c in ("t_s", "tx_bytes", "backlog_pkts"))
    ports = []
    for (node, intf), idx in sorted(rows.items()):
        m = PORT.fullmatch(intf)
        if not m or m["node"] != node:
            continue
        idx = np.asarray(idx)[np.argsort(t[idx], kind="stable")]
        ports.append(Port(node, intf, int(m["port"]), t[idx], tx[idx], backlog[idx]))
    if not ports:
        raise SampleError("ports.csv names no FatTree switch interface (e.., a.., c..-eth<port>): "
                          "these figures are drawn by FatTree tier")
    return ports


def _window_share(run: Run, p: Port, bw_mbps: float, scale: float = 1.0) -> float | None:
    """The port's mean rate over the counted window as a share of the link
    rate, times `scale`: Δtx_bytes × 8 / Δt / rate between the first and
    the last sample in the window; None with fewer than two samples in it."""
    inside = _in_window(p.t, run)
    t, tx = p.t[inside], p.tx_bytes[inside]
    if len(t) < 2 or t[-1] <= t[0]:
        return None
    return scale * (tx[-1] - tx[0]) * 8 / (t[-1] - t[0]) / (bw_mbps * 1e6)


def _link_rate(run: Run) -> float:
    bw = run.number("bw_mbps")
    if not bw or bw <= 0:
        raise SampleError("run.json gives no link rate (config.bw_mbps)")
    return bw


def port_utilisation(run: Run, ports: list[Port]) -> dict[str, list[float]]:
    """Mean utilisation (%) of every port over the counted window, per tier
    and under 'all' (ports with fewer than two samples in it are left out)."""
    bw = _link_rate(run)
    out: dict[str, list[float]] = {"all": [], **{t: [] for t in TIERS}}
    for p in ports:
        pct = _window_share(run, p, bw, scale=100)
        if pct is None:
            continue
        out["all"].append(pct)
        out[p.tier].append(pct)
    if not out["all"]:
        raise SampleError("ports.csv has no two samples of a port in the counted window")
    return {tier: sorted(v) for tier, v in out.items()}


def loads_by_face(run: Run, ports: list[Port], k: int) -> dict[str, list[float]]:
    """Every FatTree(k) port's load over the counted window, as a share of
    the link rate, by where its egress goes ('edge→agg', 'agg→core', ...)."""
    bw = _link_rate(run)
    out: dict[str, list[float]] = {}
    for p in ports:
        share = _window_share(run, p, bw)
        if share is not None:
            out.setdefault(p.faces(k), []).append(float(share))
    return out


def read_utilisation(run: Run) -> dict[str, list[float]]:
    return port_utilisation(run, read_ports(run))


@dataclass
class Backlog:
    """Queue occupancy over time for one run."""
    t: np.ndarray                      # one instant per sampling round
    mean: dict[str, np.ndarray]        # tier or 'all' -> mean backlog over its ports
    max: dict[str, np.ndarray]         # tier or 'all' -> largest backlog over its ports
    ports: list[Port]
    busiest: Port                      # highest mean backlog over the counted window
    busiest_mean: float


def backlog(run: Run, ports: list[Port]) -> Backlog:
    """Backlog (packets) per sampling round: the ports of different switches
    are read a few ms apart, so samples are binned by round (the median
    sampling interval)."""
    steps = np.concatenate([np.diff(p.t) for p in ports])
    steps = steps[steps > 0]
    dt = float(np.median(steps)) if steps.size else 1.0
    first = min(float(p.t[0]) for p in ports)
    rounds = sorted({int(r) for p in ports for r in np.rint((p.t - first) / dt)})
    at = {r: i for i, r in enumerate(rounds)}
    grid = np.full((len(ports), len(rounds)), np.nan)
    for i, p in enumerate(ports):
        grid[i, [at[int(r)] for r in np.rint((p.t - first) / dt)]] = p.backlog
    t = first + np.asarray(rounds) * dt
    mean, most = {}, {}
    for tier in ("all", *TIERS):
        rows = [i for i, p in enumerate(ports) if tier in ("all", p.tier)]
        if rows:
            with warnings.catch_warnings():   # a round in which no port of the tier was read: NaN
                warnings.simplefilter("ignore", RuntimeWarning)
                mean[tier] = np.nanmean(grid[rows], axis=0)
                most[tier] = np.nanmax(grid[rows], axis=0)
    scores = []
    for p in ports:
        inside = _in_window(p.t, run)
        scores.append(float(np.mean(p.backlog[inside])) if inside.any() else -1.0)
    i = int(np.argmax(scores))
    return Backlog(t, mean, most, ports, ports[i], max(scores[i], 0.0))


# --- rtt.csv ---------------------------------------------------------------------------------

@dataclass
class RttStats:
    """Smoothed RTT (ms) of a run's data subflows over the counted window."""
    mean: float
    sd: float
    samples: int
    subflows: int
    flow_means: list[float]            # one per measured flow (src, dst, client port)


def read_rtt(run: Run) -> RttStats:
    _, cols = read_table(run.dir / "rtt.csv", {"t_s": _number, "src": str, "dst": str,
                                            "client_port": str, "subflow_local_port": str,
                                            "rtt_ms": _number})
    inside = _in_window(np.asarray(cols["t_s"]), run)
    rtt = np.asarray(cols["rtt_ms"])[inside]
    if not rtt.size:
        raise SampleError("rtt.csv has no sample in the counted window")
    keys = [k for k, keep in zip(zip(cols["src"], cols["dst"], cols["client_port"],
                                     cols["subflow_local_port"]), inside) if keep]
    per_flow: dict[tuple, list[float]] = {}
    for key, v in zip(keys, rtt):
        per_flow.setdefault(key[:3], []).append(float(v))
    return RttStats(float(np.mean(rtt)), float(np.std(rtt)), int(rtt.size), len(set(keys)),
                    [float(np.mean(v)) for v in per_flow.values()])


# --- cpu.csv ---------------------------------------------------------------------------------

@dataclass
class CpuStats:
    """The machine's CPU (% of all cores) over a run's counted window."""
    mean: float
    sd: float
    cores: int | None          # None: taken from run.json, no samples
    source: str                # 'cpu.csv' or 'run.json'
    why: str | None = None     # with source 'run.json': what was wrong with cpu.csv


def read_cpu(run: Run) -> CpuStats:
    """From cpu.csv over the counted window; without a usable cpu.csv, the
    run.json's whole-run mean (source 'run.json'); SampleError if neither."""
    try:
        header, cols = read_table(run.dir / "cpu.csv", {"t_s": _number, "busy_pct": _number})
        t = np.asarray(cols["t_s"])
        busy = np.asarray(cols["busy_pct"])[_interval_in_window(t, run)]
        if not busy.size:
            raise SampleError("cpu.csv has no sample in the counted window")
        cores = sum(1 for c in header if re.fullmatch(r"cpu\d+_busy_pct", c)) or None
        return CpuStats(float(np.mean(busy)), float(np.std(busy)), cores, "cpu.csv")
    except SampleError as e:
        if run.cpu_mean_pct is None:
            raise
        return CpuStats(run.cpu_mean_pct, 0.0, None, "run.json", str(e))
