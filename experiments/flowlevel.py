"""`run_mptcp.sh flowlevel`: the flow-level model of paper Fig. 2 and Fig. 3
(dctopo/flowlevel.py) computed for the configured FatTree sizes, seeds,
subflow counts and models, written as one record per size,
results/flowlevel/ft<k>/run.json, that figures/flowlevel.py draws. No
network: the model is arithmetic.

A record holds, per model, per seed, per subflow count: the mean, p10
(nearest rank) and min of the connections' rates as % of optimal (a host
link), the sorted rates themselves (Fig. 3's rank curves), the seconds the
computation took and how far from equilibrium it stopped; per model and
subflow count the mean and standard deviation of the seeds' means; per seed
the seconds it took in all. A record is invalid (flag `not_converged`)
where the loss-rate model stopped on its iteration limit instead of at its
tolerance.
"""
from __future__ import annotations

import statistics
import time
from pathlib import Path

from base import records
from dctopo import flowlevel
from experiments.config.flowlevel import FlowLevelConfig
from experiments.staging import RunStage


def flowlevel_run(results: Path, k: int) -> Path:
    """The folder of FatTree(k)'s record."""
    return results / "flowlevel" / f"ft{k}"


def iso(t: float) -> str:
    """experiments/runner.py's time stamp (not imported: the runner pulls in the emulator)."""
    return time.strftime("%Y-%m-%dT%H:%M:%S%z", time.localtime(t))


def label(m: int) -> str:
    return "TCP" if m == 1 else f"MPTCP-{m}"


def compute(cfg: FlowLevelConfig, k: int, say=print) -> dict:
    """FatTree(k)'s record (without the header fields)."""
    ft = flowlevel.FatTreeLinks(k)
    models = {name: {"text": flowlevel.MODEL_TEXT[name], "seeds": {}} for name in cfg.models}
    seconds, flags = {}, []
    for seed in cfg.seeds:
        started = time.perf_counter()
        instance = flowlevel.Instance(k, seed)
        parts = []
        for name in cfg.models:
            by_m = {}
            for m in cfg.subflows:
                point = instance.point(name, m)
                by_m[str(m)] = point.summary()
                if name == "lia" and point.iterations >= flowlevel.MAX_ITERATIONS:
                    flags.append(f"not_converged: lia seed {seed} {label(m)} "
                                 f"(overload {point.overload:.2g} after {point.iterations} iterations)")
            models[name]["seeds"][str(seed)] = by_m
            shown = sorted({min(cfg.subflows), max(cfg.subflows)})
            parts.append(f"{name} " + ", ".join(f"{label(m)} {by_m[str(m)]['mean_pct']:.1f} %" for m in shown))
        seconds[str(seed)] = round(time.perf_counter() - started, 3)
        say(f"flowlevel: ft{k} ({ft.hosts} hosts) seed {seed}: {'; '.join(parts)} "
            f"({seconds[str(seed)]:.1f} s)")
    for name, model in models.items():
        model["subflows"] = {}
        for m in cfg.subflows:
            points = [model["seeds"][str(s)][str(m)] for s in cfg.seeds]
            means = [p["mean_pct"] for p in points]
            model["subflows"][str(m)] = {
                "mean_pct": round(statistics.fmean(means), 3),
                "sd_pct": round(statistics.stdev(means), 3) if len(means) > 1 else 0.0,
                "seed_means_pct": means,
                "p10_pct": round(statistics.fmean(p["p10_pct"] for p in points), 3),
                "min_pct": round(min(p["min_pct"] for p in points), 3)}
    return {"k": k, "hosts": ft.hosts, "links": ft.links, "models": models, "seconds": seconds,
            "flags": flags, "valid": not flags}


def write_flowlevel(cfg: FlowLevelConfig, say=print) -> list[Path]:
    """Compute and write one record per k; the folders written."""
    cfg.validate()
    began = time.perf_counter()
    written = []
    for k in cfg.ks:
        out = flowlevel_run(cfg.results, k)
        with RunStage(out) as stage:
            started = time.time()
            body = compute(cfg, k, say)
            record = {"schema": records.SCHEMA, "experiment": cfg.experiment, "started_at": iso(started),
                      "config": cfg.to_record(), "source": "dctopo/flowlevel.py", **body,
                      "total_seconds": round(time.time() - started, 3)}
            stage.commit(record)
        written.append(out)
        say(f"flowlevel: ft{k}: {out / records.RECORD}"
            + ("" if record["valid"] else f"  INVALID: {', '.join(record['flags'])}"))
    say(f"flowlevel: {len(cfg.ks)} sizes x {len(cfg.seeds)} seeds x {len(cfg.subflows)} subflow counts "
        f"x {len(cfg.models)} models in {time.perf_counter() - began:.1f} s")
    return written
