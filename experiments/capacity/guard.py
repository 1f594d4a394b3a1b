"""The capacity guard as a service of the runner: before anything is built,
the verdict on the costliest run, a refusal (ConfigError, exit status 2)
where this machine's cores cannot carry it unless --force, and the line that
says so. The FatTree sweep judges with what its own runs taught the cache
(prediction.judge); an experiment of racks gives the Gbit-hops each of its
runs demands per Mb/s of link rate (prediction.judge_demands)."""
from __future__ import annotations

from base.errors import ConfigError
from experiments.capacity.calibration import Calibration
from experiments.capacity.measurement import calibration_for
from experiments.capacity.prediction import Verdict, demand_gbit_hops, judge_demands


def admit(fabric: str, force: bool, judge, say=print, recalibrate: bool = False) -> tuple[Verdict, Calibration]:
    """`judge(calibration) -> Verdict`; returns it with the calibration."""
    cal = calibration_for(fabric, say=say, fresh=recalibrate)
    verdict = judge(cal)
    if not verdict.fits and not force:
        raise ConfigError(f"capacity: {verdict.reason()}")
    say(f"capacity: {verdict.reason()}"
        + ("; going on (--force), runs flagged over_capacity" if not verdict.fits else ""))
    return verdict, cal


# The rack experiments' demand is an upper bound, not fitted to their runs:
# `topologies`' defaults are predicted at 223 % of 2 cores and measured
# 35-84 % after their start-up (docs/experiments/topologies.md). So only
# three times that is refused: more than the bound has been seen to overstate.
RACK_BUDGET_PCT = 300.0


def rack_demand_per_mbps(topo, matrix, models: dict) -> float:
    """Gbit-hops the matrix's flows demand per Mb/s of link rate: at their
    max-min fair rates over all their shortest paths (dctopo/fluid_model.py,
    what MPTCP could carry at best), so that an oversubscribed core is not
    asked for more than it forwards; on multi-homed hosts, which that model
    does not take, at each flow's share of one host link."""
    from dctopo.fluid_model import EcmpModel
    try:
        model = models[id(topo)] if id(topo) in models else models.setdefault(id(topo), EcmpModel(topo, 1.0))
    except ValueError:
        return demand_gbit_hops(topo, matrix, 1.0)
    rates = model.pooled_rates(matrix.pairs())
    return sum(r * topo.path_links(f.src, f.dst) for r, f in zip(rates, matrix.flows)) / 1000.0


def matrices_judge(cfg, loads):
    """`judge(calibration) -> Verdict` for runs given as (topology, traffic
    matrix) pairs on `cfg`'s links and fabric (any config with link and fabric)."""
    models: dict = {}
    per_mbps = [rack_demand_per_mbps(topo, matrix, models) for topo, matrix in loads]
    hosts = max(len(topo.hosts()) for topo, _ in loads)
    return lambda cal: judge_demands(cfg.fabric, cfg.link.bw_mbps, per_mbps, cal, RACK_BUDGET_PCT,
                                     "; for racks an upper bound, hence the higher budget", hosts)


def admit_matrices(cfg, loads, say=print) -> Verdict:
    """The guard for such runs (a config with force too)."""
    return admit(cfg.fabric, cfg.force, matrices_judge(cfg, loads), say)[0]
