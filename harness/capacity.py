"""The capacity guard: can this machine's fabric carry what a sweep asks for?

Every packet that crosses a link costs CPU on an emulator (a veth hop, a
routing or switching decision, a shaper): the 2013 reproduction found results
turn to noise once the CPU saturates (seeds/000). So before a sweep:

  demand     = sum over the traffic matrix's flows of
               (link rate x the flow's fair share x links on its path), in Gb/s
               crossing links: what the fabric has to forward if every flow
               gets its optimal rate;
  cost       = CPU core-seconds per Gbit forwarded across one link, measured
               on this machine for this fabric (`calibrate`), once, cached;
  predicted  = idle CPU + demand x cost, in % of all cores.

Above CPU_BUDGET_PCT the sweep is refused with the largest link rate that fits,
unless `--force`, whose runs then carry the `over_capacity` flag.

The calibration runs the costliest case the harness has, MPTCP with 8 subflows
on FatTree(4) one_to_one at CALIBRATION_BW_MBPS, through the real sweep code,
and divides the CPU it used by the Gbit-hops it carried. Per-packet costs are
higher at low rates (less batching), so the estimate is conservative above the
calibration rate and optimistic well below it; the runs' own `cpu_saturated`
flag stays the final word.
"""
from __future__ import annotations

import json
import math
import os
import platform
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from base.files import atomic_write_text
from harness.config import LinkParams, SweepConfig

CALIBRATION_VERSION = 1
CACHE_DIR = Path(os.environ.get("MPTCP_HARNESS_CACHE", "/var/cache/mptcp-dc-harness"))
# Mean CPU a sweep may be predicted to use. The saturation flag trips when all
# cores are above 90 % in 10 % of the samples; traffic is bursty, so the mean
# has to stay well below that. At 81 % predicted (FatTree(6), 5 Mb/s) MPTCP-8
# measured 81.6 % mean and reached only 81 % of optimal.
CPU_BUDGET_PCT = 70.0
CALIBRATION_BW_MBPS = 10.0
CALIBRATION_TIME_S = 15.0
CALIBRATION_WARMUP_S = 5.0
# Link rates the guard suggests: 1, 1.5, 2, 2.5, 3, 4, 5, 6, 8 times a power of ten.
NICE_MANTISSAS = (1, 1.5, 2, 2.5, 3, 4, 5, 6, 8)


class CalibrationError(RuntimeError):
    """The calibration run failed: the sweep cannot be judged (exit 1)."""


@dataclass(frozen=True)
class Calibration:
    fabric: str
    machine: dict                   # kernel, cpus, cpu_model: where it holds
    core_s_per_gbit_hop: float      # CPU core-seconds per Gbit across one link
    idle_pct: float                 # machine CPU with the network built, no traffic
    measured: dict                  # what the calibration run saw
    version: int = CALIBRATION_VERSION

    def matches(self, fabric: str) -> bool:
        return (self.fabric == fabric and self.machine == machine()
                and self.version == CALIBRATION_VERSION)


@dataclass(frozen=True)
class Verdict:
    fabric: str
    bw_mbps: float
    demand_gbit_hops: float         # Gb/s the fabric must forward, summed over links
    predicted_cpu_pct: float
    budget_pct: float
    suggested_bw_mbps: float | None # None where it fits
    calibration: Calibration

    @property
    def fits(self) -> bool:
        return self.predicted_cpu_pct <= self.budget_pct

    def reason(self) -> str:
        cores = self.calibration.machine["cpus"]
        text = (f"at {self.bw_mbps:g} Mb/s the fabric must forward {self.demand_gbit_hops:.2f} Gb/s "
                f"across its links, about {self.predicted_cpu_pct:.0f} % of this machine's {cores} "
                f"cores on the {self.fabric} fabric (budget {self.budget_pct:.0f} %, measured "
                f"{self.calibration.core_s_per_gbit_hop:.2f} core-s per Gbit per link)")
        if not self.fits:
            text += f"; fidelity cannot hold: use --bw {self.suggested_bw_mbps:g} or less, or --force"
        return text

    def as_record(self) -> dict:
        return {
            "fits": self.fits,
            "bw_mbps": self.bw_mbps,
            "demand_gbit_hops": round(self.demand_gbit_hops, 4),
            "predicted_cpu_pct": round(self.predicted_cpu_pct, 1),
            "budget_pct": self.budget_pct,
            "suggested_bw_mbps": self.suggested_bw_mbps,
            "core_s_per_gbit_hop": self.calibration.core_s_per_gbit_hop,
            "idle_pct": self.calibration.idle_pct,
        }


def machine() -> dict:
    """What a calibration is valid for."""
    model = ""
    try:
        with open("/proc/cpuinfo") as f:
            model = next((ln.split(":", 1)[1].strip() for ln in f if ln.startswith("model name")), "")
    except OSError:
        pass
    return {"kernel": platform.release(), "cpus": os.cpu_count() or 1, "cpu_model": model}


# -- demand ------------------------------------------------------------------

def demand_gbit_hops(topo, matrix, bw_mbps: float) -> float:
    """Gb/s crossing links if every flow of `matrix` ran at its optimal rate."""
    total = 0.0
    for flow in matrix.flows:
        total += bw_mbps * matrix.share(flow) * topo.path_links(flow.src, flow.dst)
    return total / 1000.0


def predict_pct(cal: Calibration, gbit_hops: float) -> float:
    cores = cal.machine["cpus"]
    return cal.idle_pct + 100.0 * gbit_hops * cal.core_s_per_gbit_hop / cores


def nice_rate_at_most(limit_mbps: float) -> float:
    """The largest rate from NICE_MANTISSAS x 10^n not above the limit."""
    if limit_mbps <= 0:
        return 0.0
    exp = math.floor(math.log10(limit_mbps))
    for e in (exp, exp - 1):
        for m in reversed(NICE_MANTISSAS):
            rate = round(m * 10.0 ** e, 6)
            if rate <= limit_mbps * (1 + 1e-9):
                return rate
    return round(10.0 ** (exp - 1), 6)


def judge(cfg: SweepConfig, cal: Calibration, budget_pct: float = CPU_BUDGET_PCT) -> Verdict:
    """The verdict for a sweep: its most demanding workload against the budget."""
    from dctopo import FatTree
    from workloads import make_matrix

    topo = FatTree(k=cfg.k)
    hosts = sorted(topo.hosts())
    demand = max(demand_gbit_hops(topo, make_matrix(w, hosts, cfg.seed), cfg.link.bw_mbps)
                 for w in cfg.workloads)
    predicted = predict_pct(cal, demand)
    suggested = None
    if predicted > budget_pct:
        # Demand is proportional to the link rate; idle CPU is not.
        room = max(0.0, budget_pct - cal.idle_pct)
        used = predicted - cal.idle_pct
        suggested = nice_rate_at_most(cfg.link.bw_mbps * room / used)
    return Verdict(cfg.fabric, cfg.link.bw_mbps, demand, predicted, budget_pct, suggested, cal)


# -- calibration ---------------------------------------------------------------

def cache_path(fabric: str) -> Path:
    return CACHE_DIR / f"calibration-{fabric}.json"


def load(fabric: str) -> Calibration | None:
    try:
        cal = Calibration(**json.loads(cache_path(fabric).read_text()))
    except (OSError, ValueError, TypeError):
        return None
    return cal if cal.matches(fabric) else None


def save(cal: Calibration) -> None:
    CACHE_DIR.mkdir(parents=True, exist_ok=True)
    atomic_write_text(cache_path(cal.fabric), json.dumps(asdict(cal), indent=1) + "\n")


def calibration_for(fabric: str, say=print) -> Calibration:
    """This machine's calibration for `fabric`, measuring it the first time."""
    cal = load(fabric)
    if cal is None:
        say(f"calibrating the {fabric} fabric's forwarding cost on this machine "
            f"(once; about 30 s; cached in {cache_path(fabric)})")
        cal = calibrate(fabric, say)
        save(cal)
    return cal


def calibrate(fabric: str, say=print) -> Calibration:
    """Measure CPU per Gbit-hop with MPTCP-8 on FatTree(4) one_to_one."""
    from harness.sweep import Sweep
    from monitor import CpuMonitor

    with tempfile.TemporaryDirectory(prefix="mptcp-calibration-") as tmp:
        cfg = SweepConfig(k=4, subflows=(8,), link=LinkParams(bw_mbps=CALIBRATION_BW_MBPS),
                          time_s=CALIBRATION_TIME_S, warmup_s=CALIBRATION_WARMUP_S,
                          fabric=fabric, results=Path(tmp), force=True)
        sweep = Sweep(cfg, say=lambda msg: say(f"  calibration: {msg}"))
        idle = CpuMonitor(interval_s=0.5)
        try:
            sweep.open()
            idle.start()
            time.sleep(3)
            idle.stop()
            sweep.baseline_mbps = sweep.measure_baseline()
            [rc] = cfg.runs()
            run_dir = sweep.run_one(rc)
        finally:
            idle.stop()
            sweep.close()
        record = json.loads((run_dir / "run.json").read_text())
        steady_cpu = _mean_busy_after(run_dir / "cpu.csv", CALIBRATION_WARMUP_S)
    topo = sweep.topo
    gbit_hops = sum(f["goodput_mbps"] * topo.path_links(f["src"], f["dst"])
                    for f in record["flows"]) / 1000.0
    cores = os.cpu_count() or 1
    idle_pct = idle.mean_pct() or 0.0
    busy_cores = max(0.0, (steady_cpu - idle_pct) / 100.0 * cores)
    if gbit_hops <= 0 or busy_cores <= 0:
        raise CalibrationError(f"calibration carried nothing measurable (flags: {record['flags']})")
    return Calibration(
        fabric=fabric, machine=machine(),
        core_s_per_gbit_hop=round(busy_cores / gbit_hops, 4),
        idle_pct=round(idle_pct, 1),
        measured={"bw_mbps": CALIBRATION_BW_MBPS, "topology": "ft4", "workload": "one_to_one",
                  "subflows": 8, "time_s": CALIBRATION_TIME_S, "gbit_hops": round(gbit_hops, 4),
                  "cpu_steady_pct": round(steady_cpu, 1), "mean_pct_optimal": record["summary"]["mean_pct"],
                  "flags": record["flags"], "at": time.strftime("%Y-%m-%dT%H:%M:%S%z")})


def _mean_busy_after(cpu_csv: Path, after_s: float) -> float:
    """Mean machine CPU % of the samples taken after the warm-up: the cost
    of forwarding at the steady rate that goodput is counted at."""
    import csv
    with open(cpu_csv) as f:
        busy = [float(r["busy_pct"]) for r in csv.DictReader(f) if float(r["t_s"]) > after_s]
    if not busy:
        raise CalibrationError("calibration took no CPU samples after its warm-up")
    return sum(busy) / len(busy)
