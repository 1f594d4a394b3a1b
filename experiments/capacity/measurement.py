"""Measuring this machine's forwarding cost: the calibration (MPTCP-8 on
FatTree(4) one_to_one, on a quiet machine, through the sweep code itself),
and what a finished sweep's MPTCP-8 runs cost."""
from __future__ import annotations

import json
import os
import statistics
import tempfile
import time
from pathlib import Path

from experiments.capacity.cache import cache_path, load, save
from experiments.capacity.calibration import (CALIBRATION_BW_MBPS, Calibration,
                                              CalibrationError, Observation, machine)
from experiments.capacity.prediction import counted, demand_gbit_hops
from experiments.config import LinkParams, SweepConfig

CALIBRATION_TIME_S = 6.0        # per repeat, after the warm-up
CALIBRATION_WARMUP_S = 4.0
CALIBRATION_REPEATS = 3
# A machine is quiet when, with nothing of ours running, it is at most this
# busy and loses at most this much to steal (the hypervisor's other guests).
QUIET_BUSY_PCT = 15.0
QUIET_STEAL_PCT = 5.0
QUIET_WAIT_S = 10.0             # how long to wait for quiet before measuring anyway
REPEATS_AGREE = 1.3             # the median and another repeat: larger / smaller
# When foreign load leaves no CPU above idle to measure (one busy loop per core
# makes both the idle and the loaded readings 100 %), the calibration assumes
# the highest cost the 2-core development VM has read: 1.82 core-s per
# Gbit-hop, under a busy minute (quiet: 1.18-1.38). Never cached, so it serves
# only the invocation that measured under load.
UNDER_LOAD_FALLBACK_COST = 1.82


def calibration_for(fabric: str, say=print, fresh: bool = False) -> Calibration:
    """This machine's calibration for `fabric`, measuring it the first time
    (or when `fresh`). One taken under load serves this invocation only."""
    cal = None if fresh else load(fabric)
    if cal is None:
        say(f"calibrating the {fabric} fabric's forwarding cost on this machine "
            f"(about 1 minute; cached in {cache_path(fabric)} if the machine is quiet)")
        cal = calibrate(fabric, say)
        if cal.under_load:
            say(f"calibration not cached: {cal.under_load}; it serves this run only")
        else:
            save(cal)
    return cal


def cpu_load(seconds: float) -> tuple[float, float]:
    """(busy %, steal %) of the whole machine over the next `seconds`."""
    from monitor import CpuTimes, read_proc_stat
    before = read_proc_stat()["cpu"]
    time.sleep(seconds)
    d = CpuTimes.between(before, read_proc_stat()["cpu"])
    return d.pct(d.busy), d.pct(d.steal)


def wait_for_quiet(say, wait_s: float | None = None) -> tuple[float, float]:
    """Wait up to `wait_s` (QUIET_WAIT_S, read when called) for a 2 s window
    in which the machine is quiet; returns the last window's (busy %, steal %)."""
    deadline = time.monotonic() + (QUIET_WAIT_S if wait_s is None else wait_s)
    busy, steal = cpu_load(2.0)
    while (busy > QUIET_BUSY_PCT or steal > QUIET_STEAL_PCT) and time.monotonic() < deadline:
        say(f"  calibration: waiting for a quiet machine ({busy:.0f} % busy, {steal:.0f} % steal)")
        busy, steal = cpu_load(2.0)
    return busy, steal


def calibrate(fabric: str, say=print) -> Calibration:
    """Measure CPU per Gbit-hop with MPTCP-8 on FatTree(4) one_to_one, the
    median of CALIBRATION_REPEATS runs on one network."""
    from experiments.fattree import Sweep
    from monitor import CpuMonitor, CpuTimes, read_proc_stat

    before_busy, before_steal = wait_for_quiet(say)
    stat_before = read_proc_stat()["cpu"]
    with tempfile.TemporaryDirectory(prefix="mptcp-calibration-") as tmp:
        cfg = SweepConfig(k=4, subflows=(8,), link=LinkParams(bw_mbps=CALIBRATION_BW_MBPS),
                          time_s=CALIBRATION_TIME_S, warmup_s=CALIBRATION_WARMUP_S,
                          fabric=fabric, results=Path(tmp), force=True)
        sweep = Sweep(cfg, say=lambda msg: say(f"  calibration: {msg}"))
        idle = CpuMonitor(interval_s=0.5)
        costs, runs = [], []
        try:
            sweep.open()
            idle.start()
            time.sleep(3)
            idle.stop()
            idle_pct = idle.mean_pct() or 0.0
            sweep.baseline_mbps = sweep.measure_baseline()
            [rc] = cfg.runs()
            for _ in range(CALIBRATION_REPEATS):
                run_dir = sweep.run_one(rc)
                record = json.loads((run_dir / "run.json").read_text())
                steady = _mean_busy_after(run_dir / "cpu.csv", CALIBRATION_WARMUP_S)
                costs.append(run_cost(sweep.topo, rc, record, steady, idle_pct))
                runs.append({"cpu_steady_pct": round(steady, 1), "flags": record["flags"],
                             "mean_pct_optimal": record["summary"]["mean_pct"],
                             **engine_cost(record)})
        finally:
            idle.stop()
            sweep.close()
    stat_after = read_proc_stat()["cpu"]
    during = CpuTimes.between(stat_before, stat_after)
    steal_during = during.pct(during.steal)
    observed = [c for c in costs if c]
    measured = sorted(c.per_delivered for c in observed)
    reasons = []
    if before_busy > QUIET_BUSY_PCT:
        reasons.append(f"the machine was {before_busy:.0f} % busy before it")
    if idle_pct > QUIET_BUSY_PCT:
        reasons.append(f"{idle_pct:.0f} % busy with the network idle")
    if max(before_steal, steal_during) > QUIET_STEAL_PCT:
        reasons.append(f"{max(before_steal, steal_during):.0f} % of the CPU stolen")
    if not measured:
        if not reasons:
            raise CalibrationError(f"calibration carried nothing measurable (runs: {runs})")
        reasons.append(f"no CPU above idle was left to measure, so it assumes "
                       f"{UNDER_LOAD_FALLBACK_COST} core-s per Gbit-hop")
        cost = UNDER_LOAD_FALLBACK_COST
    else:
        if not median_is_seconded(measured):
            shown = ", ".join("nothing" if c is None else f"{c.per_delivered:.2f}" for c in costs)
            reasons.append(f"its repeats disagree ({shown} core-s per Gbit-hop)")
        cost = statistics.median(measured)
    engine = [r["engine_core_s_per_gbit"] for r in runs if "engine_core_s_per_gbit" in r]
    return Calibration(
        fabric=fabric, machine=machine(), core_s_per_gbit_hop=round(cost, 4),
        idle_pct=round(idle_pct, 1), under_load="; ".join(reasons),
        observations=tuple(o.as_dict() for o in observed),
        measured={"bw_mbps": CALIBRATION_BW_MBPS, "topology": "ft4", "workload": "one_to_one",
                  "subflows": 8, "time_s": CALIBRATION_TIME_S, "repeats": runs,
                  "busy_before_pct": round(before_busy, 1), "steal_pct": round(steal_during, 1),
                  **({"engine_core_s_per_gbit": round(statistics.median(engine), 4)} if engine else {}),
                  "at": time.strftime("%Y-%m-%dT%H:%M:%S%z")})


# Wire bits per bit of goodput: a 1514-byte frame carries 1448 bytes of
# payload, and one 66-byte ACK comes back for every two.
WIRE_PER_GOODPUT = (1514 + 66 / 2) / 1448


def engine_cost(record: dict) -> dict:
    """The model fabric's engine: its core-seconds per Gbit its matrix
    demands, as the machine's cost is counted (every flow at its optimal
    rate): its CPU over the frames it delivered in the same time, in goodput,
    times the share of the optimum the flows got ({} on other fabrics)."""
    engine = record.get("fabric_engine")
    if not engine or not engine.get("core_s_per_gbit"):
        return {}
    got = record["summary"]["mean_pct"] / 100
    return {"engine_core_s_per_gbit": engine["core_s_per_gbit"] * WIRE_PER_GOODPUT * got}


def median_is_seconded(costs: list[float]) -> bool:
    """Whether another repeat lies within REPEATS_AGREE of the median, so the
    median is not one odd reading. Not all of them: a quiet machine's 6 s
    repeats can read 0.31 beside 0.53 and 0.56."""
    ordered = sorted(costs)
    if len(ordered) < 2:
        return False
    mid = len(ordered) // 2
    m = ordered[mid]
    others = ordered[:mid] + ordered[mid + 1:]
    return any(max(m, c) <= REPEATS_AGREE * min(m, c) for c in others)


def run_cost(topo, rc, record: dict, steady_cpu_pct: float, idle_pct: float) -> Observation | None:
    """What one run (RunConfig `rc`) cost: the CPU above idle over the
    Gbit-hops its matrix demanded and over those its flows delivered; None
    where it carried nothing. A run flagged `cpu_saturated` gives floors
    (Observation.saturated), a calibration's repeat as much as a sweep's run."""
    from dctopo.workloads import make_matrix
    topo = counted(topo, rc.fabric)
    delivered = sum(f["goodput_mbps"] * topo.path_links(f["src"], f["dst"])
                    for f in record["flows"]) / 1000.0
    demanded = demand_gbit_hops(topo, make_matrix(rc.workload, sorted(topo.hosts()), rc.seed),
                                rc.link.bw_mbps)
    busy_cores = max(0.0, (steady_cpu_pct - idle_pct) / 100.0 * (os.cpu_count() or 1))
    if delivered <= 0 or demanded <= 0 or busy_cores <= 0:
        return None
    return Observation(k=rc.k, workload=rc.workload, bw_mbps=rc.link.bw_mbps,
                       per_demanded=busy_cores / demanded, per_delivered=busy_cores / delivered,
                       saturated=saturated_run(record))


def saturated_run(record: dict) -> bool:
    """Whether a run's record says it saturated the CPU."""
    flags = record.get("flags")
    return isinstance(flags, list) and "cpu_saturated" in flags


def observed_costs(cfg: SweepConfig, idle_pct: float) -> list[Observation]:
    """What the sweep's MPTCP-8 runs cost: the valid ones', and floors from
    the ones that saturated the CPU. Another flagged run's CPU says nothing
    of what the configuration needs: one whose flows failed to start or
    carry forwarded less than a working run would, for a reason other than
    the CPU."""
    from dctopo import FatTree
    topo, costs = FatTree(k=cfg.k), []
    for rc in cfg.runs():
        run_dir = rc.run_dir(cfg.results)
        if rc.subflows != 8 or not (run_dir / "run.json").exists():
            continue
        try:
            record = json.loads((run_dir / "run.json").read_text())
            start = float(record.get("config", {}).get("warmup_s", rc.warmup_s))  # a levelled run's
            steady = _mean_busy_after(run_dir / "cpu.csv", start, start + rc.time_s)
        except (OSError, ValueError, KeyError, CalibrationError):
            continue
        if record.get("flags") != [] and not saturated_run(record):
            continue
        cost = run_cost(topo, rc, record, steady, idle_pct)
        if cost:
            costs.append(cost)
    return costs


def _mean_busy_after(cpu_csv: Path, after_s: float, until_s: float = float("inf")) -> float:
    """Mean machine CPU % of the samples taken after the warm-up (and up to
    `until_s`): the cost of forwarding at the steady rate that goodput is
    counted at."""
    import csv
    with open(cpu_csv) as f:
        busy = [float(r["busy_pct"]) for r in csv.DictReader(f) if after_s < float(r["t_s"]) <= until_s]
    if not busy:
        raise CalibrationError("calibration took no CPU samples after its warm-up")
    return sum(busy) / len(busy)
