"""The OpenFlow fabric's controller failing mid-run, in real namespaces: the
run is marked invalid with `controller_failed`, the next run gets a fresh
controller that rebuilds the switches' tables and is valid, and nothing of
ours is left behind. A crash is SIGKILL, a hang SIGSTOP (the switches notice
through their inactivity probes). Both cases run on one network, built once:
under full emulation a build of it took 49-51 s of each case's 114-121 s."""
from __future__ import annotations

import json
import os
import signal
import threading

import pytest

from experiments.config import LinkParams, SweepConfig
from experiments.fattree import Sweep
from tests.conftest import FULL_EMULATION, needs_root, nothing_left_behind, opened_sweep
from tests.subflows import FALLBACK_COUNTERS

# Host only, not among the guest tests (`-m guest`). Under full emulation the
# runs right after a fresh controller took over lose clients at start-up
# (ARP unanswered, connect timing out), and how many varies: 14 and 11 of 16
# flows carried in two clean-clone CI runs (comments below), then 8 and 11 in
# both tries of one more (Debian 13 guest), failing CI; the CPU
# was 66-81 %. What a stock kernel changes here is the datapath: Open
# vSwitch forwarding in the kernel under our controller, which
# test_fattree_net's openflow tests run in both guests. The failure and the
# replacement are userspace, the same on every kernel, and run here. The
# FULL_EMULATION branches below stay for a run by hand in a guest
# (`./guest/run.sh debian13 -- ./run_tests.sh tests/test_openflow_controller.py`).
pytestmark = [needs_root]

# The kernel's counts of connections that fell back to TCP at start-up: the
# client's SYN retransmitted without MP_CAPABLE, or the server's handshake
# ending in an ACK without it.

# Under full emulation (a TCG guest, conftest.FULL_EMULATION) the run after the
# replacement starts at the emulator's pace, on the kernel datapath, whose new
# connections each wait for an upcall to ovs-vswitchd. In a clean-clone CI run
# on a slower host (AMD EPYC, Debian 13 guest, both cases) its 16 clients
# started over 4.7 and 6.5 s, 2 of them did not connect within iperf3's 5 s,
# 3 and 6 SYNs were retransmitted without MP_CAPABLE (fallback to TCP), and
# 14 of 16 flows carried, at 72.7 and 79.1 % of the guest's CPU. The same
# start-up at 1 Mb/s the comment in the test describes, only slower; a fresh
# controller that left switches unconfigured would leave most flows without
# data. So in a guest the run after the replacement must have no
# controller_failed or any flag but those of start-up and CPU, and at least
# this share of its flows must carry; on the host every flow must.
GUEST_MIN_CARRYING = 0.75
GUEST_STARTUP_FLAGS = {"handshake_failed", "zero_goodput_flow", "subflows_missing", "clients_started_late"}
# GUEST_SECOND_RUN: where the first run after the replacement falls short of
# that share, the guest case runs once more on the same fabric and fresh
# controller, and holds that run to it. In a clean-clone CI run (AMD EPYC host,
# Debian 13 guest, crash case) the first run after the replacement carried on
# 11 of 16 flows: its clients started over 7.1 s, all four of pod 3's got "No
# route to host" (their ARP, which the controller answers, went unanswered for
# 3 s), one more timed out in connect, at 67.2 % of the guest's CPU. The
# replacement itself had been made: every switch configured, by barrier.


def guest_carries(record: dict) -> bool:
    carrying = [f for f in record["flows"] if f["goodput_mbps"] > 0]
    return len(carrying) >= GUEST_MIN_CARRYING * len(record["flows"])


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


@pytest.fixture(scope="module")
def openflow_net(tmp_path_factory):
    """FatTree(4) on the openflow fabric, shared by both cases, and the lines
    the sweep said; nothing of it may be left once it is closed."""
    # 1 Mb/s: at 3 Mb/s this machine's userspace datapath ran at 75-85 % of
    # both cores in steady state, and the start-up second at 97-99 %; one more
    # hot second flagged the run after the replacement cpu_saturated in CI.
    # At 1 Mb/s the steady state leaves room, so that run can be held to `valid`.
    # 20-packet queues: at 1 Mb/s a 100-packet queue holds 1.2 s per hop, and a
    # data connection's SYN queued behind the first flows meets its 1 s timer;
    # after two retransmissions the kernel falls back to TCP
    # (net.mptcp.syn_retrans_before_tcp_fallback = 2), and 1 run in 3 here came
    # out `subflows_missing`. That start-up effect is not what this test is about.
    cfg = SweepConfig(k=4, workloads=("one_to_one",), subflows=(2, 2), time_s=10, warmup_s=1,
                      link=LinkParams(bw_mbps=1, queue_pkts=20), fabric="openflow",
                      results=tmp_path_factory.mktemp("results"))
    lines: list[str] = []
    with nothing_left_behind(), opened_sweep(cfg, say=lines.append) as sweep:
        sweep.baseline_mbps = cfg.link.bw_mbps   # nominal: % of optimal is not checked here
        yield sweep, lines


# Run by hand in a guest, only the crash case runs. What a stock kernel changes here is the
# datapath (Open vSwitch forwarding in the kernel, flows installed by a fresh
# controller), and both cases exercise it alike; they differ in how the
# failure is noticed (ovs-vswitchd's inactivity probe, the harness's
# watchdog), which is userspace and runs on the host. Under full emulation
# the hang case took 78.90-102.90 s of each guest stage (clean-clone CI),
# a stage that keeps CI over its 45 minutes.
HANG_CASE = pytest.param(signal.SIGSTOP, id="hang", marks=pytest.mark.skipif(
    FULL_EMULATION, reason="the hang differs from the crash only in userspace: run on the host"))


@pytest.mark.parametrize("sig", [pytest.param(signal.SIGKILL, id="crash"), HANG_CASE])
def test_a_failed_controller_invalidates_its_run_and_is_replaced(sig, openflow_net):
    sweep, lines = openflow_net
    cfg = sweep.cfg
    tmp_path = cfg.results
    del lines[:]
    try:
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
        sweep.during_runs = None
    assert "controller_failed" in hurt["flags"] and not hurt["valid"], \
        (hurt["flags"], hurt.get("health"), hurt.get("event"))
    assert any("starting a fresh controller" in line for line in lines), lines
    assert new_pid != old_pid
    # The replacement restores the fabric: every flow carries, and no flag but
    # the userspace datapath's CPU (at 1 Mb/s, CI once saw the run after the
    # replacement cpu_saturated; what this machine's datapath can carry is
    # bench/fabric_compare.py's), or subflows missing where the kernel itself
    # says why: a data connection whose SYN was retransmitted without
    # MP_CAPABLE (MPTcpExtMPCapableSYNTXDisabled) fell back to TCP, so it has
    # no subflow at all. That is the start-up effect of 1 Mb/s queues the
    # comment above describes, not the controller's (CI, Debian 13 guest: one
    # connection of 16, two such SYNs, the flow carrying 0.72 Mb/s). The
    # handshake's third ACK can be lost the same way: the server then sees
    # data without MP_CAPABLE and falls back (MPTcpExtMPCapableFallbackACK;
    # CI, host: one connection of 16, one subflow, 0.33 Mb/s). A connection
    # that fell back never joins, so it has at most its first subflow.
    if FULL_EMULATION:
        tries = [after]
        if not guest_carries(after):
            # One more run on the restored fabric, under the same controller:
            # start-up at the emulator's pace can fail a run right after the
            # replacement (GUEST_SECOND_RUN); switches the fresh controller left
            # unconfigured would fail this one too.
            sweep.run_one(second)
            tries.append(json.loads((second.run_dir(tmp_path) / "run.json").read_text()))
            assert sweep.fabric.controller.pid == new_pid, "the fresh controller was replaced too"
        told = " / then: ".join(why_flagged(r) for r in tries)
        assert guest_carries(tries[-1]), told
        assert set(tries[-1]["flags"]) <= {"cpu_saturated"} | GUEST_STARTUP_FLAGS, told
        return
    assert all(f["goodput_mbps"] > 0 for f in after["flows"]), why_flagged(after)
    fell_back = sum(after["kernel_counters"].get(name, 0) for name in FALLBACK_COUNTERS)
    short = [f for f in after["flows"] if f["subflows_established"] < 2]
    explained = bool(short) and len(short) <= fell_back and all(
        f["subflows_established"] <= 1 for f in short)
    # clients_started_late: the 1 s warm-up keeps this test short; how long
    # the clients take to start is not what it is about.
    allowed = {"cpu_saturated", "clients_started_late"} | ({"subflows_missing", "mptcp_fallback"} if explained else set())
    assert set(after["flags"]) <= allowed, why_flagged(after)


def why_flagged(record: dict) -> str:
    """Everything a flagged run says of itself that could tell a start-up
    effect (SYNs lost behind full queues, fallback to TCP) from a switch the
    fresh controller left unconfigured (kept for an intermittent failure in
    a Debian 13 guest, once in CI: subflows_missing after the replacement)."""
    short = [(f["src"], f["dst"], f["subflows_established"], f["goodput_mbps"], f["error"])
             for f in record["flows"] if f["subflows_established"] < record["config"]["subflows"]
             or f["goodput_mbps"] <= 0]
    return (f"flags {record['flags']}, health {record.get('health')}; flows short of subflows "
            f"or data (src, dst, subflows, Mb/s, error): {short}; start-up "
            f"{ {k: v for k, v in (record.get('startup') or {}).items() if k != 'phases'} }; "
            f"kernel counters {record.get('kernel_counters')}; cpu {record.get('cpu_mean_pct')} %")
