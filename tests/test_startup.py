"""experiments.startup: what a run's start-up record says, from path-manager
records and CPU samples (the end-to-end numbers are checked in test_sweep)."""
import time

from experiments.startup import PhaseClock, clients_started_late, startup_record
from kernel.mptcp_pm import Connection
from monitor import CpuSample

KEYS = [("10.0.0.2", 40000, "10.1.0.2", 5201), ("10.0.0.3", 40000, "10.1.0.3", 5201)]


def conn(established_at, last_subflow_at, subflows):
    return Connection(ns="h", token=1, established_at=established_at,
                      last_subflow_at=last_subflow_at, subflows_established=subflows)


def samples(*busy):
    return [CpuSample(t=i + 1.0, cores_busy_pct=[b, b], user_pct=0, system_pct=0, softirq_pct=0)
            for i, b in enumerate(busy)]


class Marks:
    """A PhaseClock's answers for marks at fixed times."""
    at_s = {"start_servers": 100.0, "start_clients": 100.5}

    def at(self, name):
        return self.at_s[name]

    def phases(self):
        return {"start_clients": {"wall_s": 0.5, "cpu_core_s": 0.9}}


START = Marks()


def test_complete_when_every_connection_has_all_its_subflows():
    conns = {KEYS[0]: conn(100.2, 101.5, 4), KEYS[1]: conn(100.8, 102.2, 4)}
    rec = startup_record(START, conns, KEYS, 4, samples(95, 80, 40, 30), monitor_t0=100.5)
    assert rec["clients"] == 2 and rec["clients_started_s"] == 0.5
    assert rec["established"] == 2
    assert (rec["first_established_s"], rec["last_established_s"]) == (0.2, 0.8)
    assert rec["last_subflow_s"] == rec["complete_s"] == 2.2
    # Samples at 101.5 and 102.5 cover up to 102.2; the one at 103.5 does not.
    assert rec["cpu_until_complete_pct"] == 87.5
    # From the last client's start (100.5) to 102.2, at 87.5 % of 2 cores.
    assert rec["phases"]["connect_and_join"] == {"wall_s": 1.7, "cpu_core_s": 2.98}


def test_a_missing_subflow_or_connection_leaves_it_incomplete():
    short = {KEYS[0]: conn(100.2, 101.5, 4), KEYS[1]: conn(100.8, 101.0, 3)}
    rec = startup_record(START, short, KEYS, 4, samples(95), monitor_t0=100.5)
    assert rec["complete_s"] is None and rec["cpu_until_complete_pct"] is None
    assert rec["last_subflow_s"] == 1.5
    missing = {KEYS[0]: conn(100.2, 101.5, 4)}
    rec = startup_record(START, missing, KEYS, 4, samples(95), monitor_t0=100.5)
    assert rec["established"] == 1 and rec["complete_s"] is None


def test_tcp_runs_have_no_connection_times():
    rec = startup_record(START, {}, KEYS, 1, samples(50), monitor_t0=100.5)
    assert rec["clients"] == 2 and rec["phases"]["start_clients"]["cpu_core_s"] == 0.9
    assert rec["established"] is None and rec["complete_s"] is None


def test_phase_clock_splits_wall_time_and_cpu_between_marks():
    clock = PhaseClock()
    clock.mark("begin")
    end = time.monotonic() + 0.3
    while time.monotonic() < end:     # one core busy for 0.3 s
        pass
    clock.mark("spin")
    [(name, phase)] = clock.phases().items()
    assert name == "spin" and phase["wall_s"] >= 0.3
    # At least most of the spin shows as busy CPU (ticks are 10 ms).
    assert phase["cpu_core_s"] >= 0.2, phase
    assert abs(clock.at("spin") - clock.at("begin") - phase["wall_s"]) < 1e-3


def test_a_client_start_longer_than_the_warm_up_is_flagged_for_iperf3_only():
    from emulator.traffic.drivers import DRIVERS
    rec = startup_record(START, {}, KEYS, 1, samples(50), monitor_t0=100.5)
    started = rec["clients_started_s"]
    assert started > 0
    iperf3, socket = DRIVERS["iperf3"].clients_send_at_start, DRIVERS["socket"].clients_send_at_start
    assert clients_started_late(rec, warmup_s=started / 2, clients_send_at_start=iperf3)
    assert not clients_started_late(rec, warmup_s=started * 2, clients_send_at_start=iperf3)
    # The socket driver opens every connection before any data flows.
    assert not clients_started_late(rec, warmup_s=started / 2, clients_send_at_start=socket)
