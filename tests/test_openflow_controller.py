"""The OpenFlow fabric's controller failing mid-run, in real namespaces: the
run is marked invalid with `controller_failed`, the next run gets a fresh
controller that rebuilds the switches' tables and is valid, and nothing of
ours is left behind. A crash is SIGKILL, a hang SIGSTOP (the switches notice
through their inactivity probes)."""
from __future__ import annotations

import json
import os
import signal
import threading

import pytest

from harness.config import LinkParams, SweepConfig
from harness.sweep import Sweep
from tests.conftest import needs_root

pytestmark = needs_root


class HurtController:
    """A Sweep `during_runs` hook: sends the controller `sig` `after_s`
    seconds into the run's traffic."""

    def __init__(self, sweep: Sweep, sig: int, after_s: float):
        self.sweep, self.sig, self.after_s = sweep, sig, after_s
        self.timer: threading.Timer | None = None
        self.victim: int | None = None

    def start(self) -> None:
        self.victim = self.sweep.fabric.controller.pid
        self.timer = threading.Timer(self.after_s, os.kill, (self.victim, self.sig))
        self.timer.start()

    def stop(self) -> dict:
        self.timer.cancel()
        return {"signal": int(self.sig), "controller_pid": self.victim}


@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGSTOP], ids=["crash", "hang"])
def test_a_failed_controller_invalidates_its_run_and_is_replaced(sig, tmp_path, no_leftovers):
    # 3 Mb/s: a rate this machine's userspace datapath carries without
    # saturating the CPU (the capacity guard allows 4 Mb/s at most, README
    # "Fabrics"), so the run after the replacement can be held to `valid`.
    cfg = SweepConfig(k=4, workloads=("one_to_one",), subflows=(2, 2), time_s=8, warmup_s=1,
                      link=LinkParams(bw_mbps=3, queue_pkts=100), fabric="openflow",
                      results=tmp_path)
    lines: list[str] = []
    sweep = Sweep(cfg, say=lines.append)
    try:
        sweep.open()
        sweep.baseline_mbps = cfg.link.bw_mbps   # nominal: % of optimal is not checked here
        first, second = cfg.runs()[0], cfg.runs()[0]
        sweep.during_runs = HurtController(sweep, sig, after_s=2)
        sweep.run_one(first)
        hurt = json.loads((first.run_dir(tmp_path) / "run.json").read_text())
        old_pid = sweep.during_runs.victim
        sweep.during_runs = None
        sweep.run_one(second)
        after = json.loads((second.run_dir(tmp_path) / "run.json").read_text())
        new_pid = sweep.fabric.controller.pid
    finally:
        sweep.close()
    assert "controller_failed" in hurt["flags"] and not hurt["valid"], hurt["flags"]
    assert any("starting a fresh controller" in line for line in lines), lines
    assert new_pid != old_pid
    assert after["valid"], (after["flags"], after["health"])
    assert all(f["goodput_mbps"] > 0 for f in after["flows"])
