"""The wall-time estimate of --plan (experiments/plan.py) from what this
machine recorded: runs over servers kept apart from runs here, and the
calibration a first guarded run makes counted only where it will be made."""
from __future__ import annotations

from base.platform import machine
from experiments import plan
from experiments.capacity.calibration import Calibration
from experiments.capacity import cache
from experiments.config import SchedulingConfig, SweepConfig


def sweep(*servers: str) -> SweepConfig:
    return SweepConfig(subflows=(1, 8), servers=servers, driver="socket" if servers else "iperf3")


def test_runs_over_servers_do_not_make_the_estimate_of_runs_here(tmp_path):
    history = plan.History(tmp_path / "run-history.json")
    history.add("fattree", plan.size_of(sweep("a", "b")), 60.0, 90.0)   # 30 s besides its traffic
    here = plan.estimate("fattree", sweep(), plan.long_flow_traffic, history=history)
    assert "none recorded here yet" in here.basis
    history.add("fattree", plan.size_of(sweep()), 60.0, 64.0)
    here = plan.estimate("fattree", sweep(), plan.long_flow_traffic, history=history)
    assert here.wall_s == 2 * 60.0 + 2 * 4.0 + plan.COMMAND_OVERHEAD_S, here
    spread = plan.estimate("fattree", sweep("a", "b"), plan.long_flow_traffic, history=history)
    assert spread.wall_s == 2 * 60.0 + 2 * 30.0 + plan.COMMAND_OVERHEAD_S, spread


def test_a_guarded_experiment_counts_the_calibration_until_it_is_cached(tmp_path, monkeypatch):
    monkeypatch.setattr(cache, "CACHE_DIR", tmp_path)
    assert plan.calibrates_first(sweep())
    assert not plan.calibrates_first(SchedulingConfig())   # the guard does not judge its runs
    with_it = plan.estimate("fattree", sweep(), plan.long_flow_traffic, history=plan.History(tmp_path / "h"),
                            calibration_s=plan.CALIBRATION_S)
    assert f"{plan.CALIBRATION_S:g} s to calibrate this machine first" in with_it.basis
    cache.save(Calibration(fabric="l3", machine=machine(), core_s_per_gbit_hop=1.0, idle_pct=1.0,
                           measured={}))
    assert cache.load("l3") is not None and not plan.calibrates_first(sweep())
