"""The capacity guard: demand arithmetic, suggestions and the calibration
cache (no root), and the guard as a user meets it through run_mptcp.sh."""
import dataclasses
import json
import os
import subprocess
import sys

import pytest

from dctopo import FatTree
from base.errors import ConfigError
from experiments import capacity
from experiments.config import LinkParams, SweepConfig
from tests.conftest import ROOT, needs_root, set_guard_calibration
from dctopo.workloads import Flow, TrafficMatrix, make_matrix


def calibration(cost=1.0, idle=0.0, cpus=2, fabric="l3"):
    machine = dict(capacity.machine(), cpus=cpus)
    return capacity.Calibration(fabric=fabric, machine=machine, core_s_per_gbit_hop=cost,
                                idle_pct=idle, measured={})


@pytest.mark.parametrize("limit,rate", [(3.36, 3), (1.62, 1.5), (10, 10), (0.95, 0.8),
                                        (73, 60), (100, 100), (0.012, 0.01)])
def test_suggested_rates_are_round_and_never_above_the_limit(limit, rate):
    assert capacity.nice_rate_at_most(limit) == pytest.approx(rate)


def test_demand_counts_every_link_of_every_flows_path():
    topo = FatTree(k=4)
    across_core = TrafficMatrix("one_to_one", 0, (Flow("h0_0_0", "h3_1_1"),))
    same_edge = TrafficMatrix("one_to_one", 0, (Flow("h0_0_0", "h0_0_1"),))
    assert capacity.demand_gbit_hops(topo, across_core, 10) == pytest.approx(0.06)
    assert capacity.demand_gbit_hops(topo, same_edge, 10) == pytest.approx(0.02)
    # all_to_all: every host sends at most its link rate in total
    hosts = sorted(topo.hosts())
    a2a = capacity.demand_gbit_hops(topo, make_matrix("all_to_all", hosts, 0), 10)
    assert a2a <= 16 * 10 * 6 / 1000


def test_the_model_fabric_is_priced_per_gbit_delivered_end_to_end():
    """The engine moves a frame across all its hops in one process: a flow
    across the core counts once, not six times, in the model fabric's demand."""
    cal = calibration(cost=1.0, fabric="model")
    on_model = capacity.judge(SweepConfig(k=4, fabric="model"), cal)
    on_l3 = capacity.judge(SweepConfig(k=4), calibration(cost=1.0))
    assert on_model.demand_gbit_hops == pytest.approx(16 * 10 / 1000)
    assert on_l3.demand_gbit_hops > 5 * on_model.demand_gbit_hops
    assert "end to end" in on_model.reason() and "per Gbit delivered" in on_model.reason()


def test_the_model_fabrics_engine_is_judged_apart_from_the_machine():
    """A machine with room to spare is refused where the engine's one
    thread would not keep up, with a rate at which it would."""
    cal = dataclasses.replace(calibration(cost=0.1, fabric="model"), measured={"engine_core_s_per_gbit": 6.0})
    verdict = capacity.judge(SweepConfig(k=4, fabric="model"), cal)     # 0.16 Gb/s x 6: 96 % of a core
    assert verdict.predicted_cpu_pct < verdict.budget_pct and not verdict.fits
    assert verdict.engine_pct == pytest.approx(96.0)
    assert "engine's thread about 96 % of one core" in verdict.reason()
    slower = capacity.judge(SweepConfig(k=4, fabric="model", link=LinkParams(bw_mbps=verdict.suggested_bw_mbps)), cal)
    assert slower.fits and verdict.suggested_bw_mbps == 8


def test_guard_refuses_with_a_rate_that_then_fits():
    cal = calibration(cost=1.2, idle=1.0)
    small = capacity.judge(SweepConfig(k=4), cal)
    assert small.fits and small.suggested_bw_mbps is None
    big = capacity.judge(SweepConfig(k=6), cal)
    assert not big.fits
    assert "--bw" in big.reason() and "--force" in big.reason()
    assert 0 < big.suggested_bw_mbps < 10
    again = capacity.judge(SweepConfig(k=6, link=LinkParams(bw_mbps=big.suggested_bw_mbps)), cal)
    assert again.fits
    assert again.as_record()["fits"] is True


def test_prediction_scales_with_rate_and_cores():
    cal2, cal4 = calibration(cpus=2), calibration(cpus=4)
    at10 = capacity.judge(SweepConfig(k=4), cal2).predicted_cpu_pct
    at20 = capacity.judge(SweepConfig(k=4, link=LinkParams(bw_mbps=20)), cal2).predicted_cpu_pct
    assert at20 == pytest.approx(2 * at10)
    assert capacity.judge(SweepConfig(k=4), cal4).predicted_cpu_pct == pytest.approx(at10 / 2)


def test_calibration_cache_holds_only_for_the_same_machine_and_fabric(tmp_path, monkeypatch):
    monkeypatch.setattr(capacity.cache, "CACHE_DIR", tmp_path)
    cal = calibration(cpus=capacity.machine()["cpus"])
    capacity.save(cal)
    assert capacity.load("l3") == cal
    assert capacity.load("openflow") is None
    other = json.loads(capacity.cache_path("l3").read_text())
    other["machine"]["kernel"] = "0.0.0-elsewhere"
    capacity.cache_path("l3").write_text(json.dumps(other))
    assert capacity.load("l3") is None       # another kernel: measure again
    capacity.cache_path("l3").write_text("{not json")
    assert capacity.load("l3") is None


@needs_root
def test_overloaded_sweep_is_refused_then_forced_and_flagged(tmp_path, tmp_path_factory, monkeypatch,
                                                             no_leftovers):
    # The development VM's 1.18 (docs/capacity-guard.md), set rather
    # than measured: at 400 Mb/s any calibration this machine class has read
    # (1.18-1.89) refuses, and measuring one here took about 60 s of the suite.
    set_guard_calibration(monkeypatch, tmp_path_factory.mktemp("guard-cache"), 1.18,
                          "tests/test_capacity.py")
    earlier = tmp_path / "ft4" / "one_to_one" / "flows1"
    earlier.mkdir(parents=True)
    (earlier / "run.json").write_text('{"kept": true}')
    argv = [str(ROOT / "run_mptcp.sh"), "4", "--subflows", "1", "--bw", "400", "--time", "4",
            "--results", str(tmp_path)]
    refused = subprocess.run(argv, capture_output=True, text=True, timeout=300)
    assert refused.returncode == 2, refused.stderr
    [line] = refused.stderr.strip().splitlines()
    assert "capacity" in line and "--bw" in line and "--force" in line
    assert (earlier / "run.json").read_text() == '{"kept": true}'

    # --no-plots: the figures are test_sweep's; here they would only cost time.
    forced = subprocess.run(argv + ["--force", "--no-plots"], capture_output=True, text=True, timeout=300)
    assert forced.returncode == 0, forced.stderr[-2000:]
    assert "figures not drawn (--no-plots)" in forced.stdout and not (tmp_path / "plots").exists()
    rec = json.loads((earlier / "run.json").read_text())
    assert rec["capacity"]["fits"] is False
    assert "over_capacity" in rec["flags"] and not rec["valid"]
    assert "cpu_saturated" in rec["flags"], rec["cpu_mean_pct"]


def observation(per_delivered, per_demanded=None, k=4, workload="one_to_one", bw=10.0):
    return capacity.Observation(k, workload, bw, per_demanded or per_delivered * 0.75, per_delivered)


def test_a_cached_calibration_learns_from_runs(tmp_path, monkeypatch):
    """A pessimistic cached cost gives way to what runs measure: the median
    of the observations, so one more bad one does not undo it."""
    monkeypatch.setattr(capacity.cache, "CACHE_DIR", tmp_path)
    capacity.save(dataclasses.replace(calibration(cost=1.82, cpus=capacity.machine()["cpus"]),
                                      observations=(observation(1.82).as_dict(),)))
    capacity.learn("l3", [observation(1.38), observation(1.40)], say=lambda _: None)
    assert capacity.load("l3").core_s_per_gbit_hop == pytest.approx(1.40)
    capacity.learn("l3", [observation(1.39), observation(2.5)], say=lambda _: None)
    assert capacity.load("l3").core_s_per_gbit_hop == pytest.approx(1.40)
    capacity.learn("l3", [observation(1.0)] * 20, say=lambda _: None)
    assert len(capacity.load("l3").observations) == capacity.cache.OBSERVATIONS_KEPT
    # Each configuration keeps its own; a rate below the calibration's does
    # not move the cost used where nothing has been run.
    capacity.learn("l3", [observation(3.0, k=8, bw=1.5)] * 3, say=lambda _: None)
    cal = capacity.load("l3")
    assert len(cal.observations) == capacity.cache.OBSERVATIONS_KEPT + 3
    assert cal.core_s_per_gbit_hop == pytest.approx(1.0)
    assert cal.measured_cost(8, "one_to_one", 1.5) == (pytest.approx(2.25), 3)
    # A saturated run at the calibration's rate is a floor, not a measurement
    # of the cost used where nothing has been run.
    capacity.learn("l3", [dataclasses.replace(observation(9.0), saturated=True)],
                   say=lambda _: None)
    assert capacity.load("l3").core_s_per_gbit_hop == pytest.approx(1.0)
    assert capacity.load("l3").cost_floor(4, "one_to_one", 10) == pytest.approx(6.75)


def test_a_configuration_run_here_is_predicted_from_the_cpu_it_measured():
    """FatTree(4) one_to_one at 10 Mb/s, run here at 0.9 Gbit-hops demanded
    with 1.8 core-s per Gbit-hop delivered at 75 % of optimal: 1.215 cores,
    61 % of two. Counting every flow at its optimal rate would say 81 %."""
    ran = dataclasses.replace(calibration(cost=1.8), observations=(
        observation(1.8, 1.35).as_dict(), observation(1.7, 1.2).as_dict(),
        observation(1.9, 1.5).as_dict()))
    here = capacity.judge(SweepConfig(k=4), ran)
    assert here.predicted_cpu_pct == pytest.approx(100 * 0.9 * 1.35 / 2)
    assert here.fits and "3 MPTCP-8 runs of this configuration" in here.reason()
    assert here.as_record()["core_s_per_gbit_hop"] == pytest.approx(1.35)
    never = capacity.judge(SweepConfig(k=4), calibration(cost=1.8))
    assert never.predicted_cpu_pct == pytest.approx(100 * 0.9 * 1.8 / 2)
    assert not never.fits and "not run here yet" in never.reason()
    # Another rate has not been run: the other rule, and the rate it
    # suggests is one it then accepts.
    at20 = capacity.judge(SweepConfig(k=4, link=LinkParams(bw_mbps=20)), ran)
    assert not at20.fits and "not run here yet" in at20.reason()
    assert at20.suggested_bw_mbps == 10    # as measured; by the other rule only 8 would
    assert capacity.judge(SweepConfig(k=6), ran).suggested_bw_mbps == 2    # priced for its 54 hosts
    again = capacity.judge(SweepConfig(k=4, link=LinkParams(bw_mbps=at20.suggested_bw_mbps)), ran)
    assert again.fits, again.reason()


@needs_root
def test_a_calibration_under_load_is_not_cached(tmp_path, monkeypatch, no_leftovers):
    """One busy loop per core while the calibration runs: it is taken as
    under load, serves only the caller, and is not cached; the next one, on a
    quiet machine, is cached and accepts FatTree(4) at the defaults."""
    monkeypatch.setattr(capacity.cache, "CACHE_DIR", tmp_path)
    monkeypatch.setattr(capacity.measurement, "QUIET_WAIT_S", 2.0)
    loops = [subprocess.Popen([sys.executable, "-c", "while True: pass"])
             for _ in range(os.cpu_count() or 1)]
    try:
        # One short repeat: the load is seen before any run, and two more,
        # slowed by the busy loops, showed nothing more (the whole test took
        # 118 s of the suite's 20 minutes in CI with three); under the loops
        # no CPU above idle is left to measure however long it runs.
        with monkeypatch.context() as one_repeat:
            one_repeat.setattr(capacity.measurement, "CALIBRATION_REPEATS", 1)
            one_repeat.setattr(capacity.measurement, "CALIBRATION_TIME_S", 2.0)
            one_repeat.setattr(capacity.measurement, "CALIBRATION_WARMUP_S", 1.0)
            loaded = capacity.calibration_for("l3", say=lambda _: None)
    finally:
        for p in loops:
            p.kill()
            p.wait(timeout=10)
    assert "busy before it" in loaded.under_load, loaded
    assert not capacity.cache_path("l3").exists()
    # Once the loops are gone the machine is not taken as loaded. Whether the
    # repeats agree is the measurement's own noise (CI once saw 0.44, 0.60 and
    # 0.80 core-s per Gbit-hop on a quiet machine), tested on its own below;
    # a disagreeing calibration is not cached either, which is all it can do.
    # Two shorter repeats (the default is three of 6 s after 4 s): what is
    # checked is the verdict on the machine's load, which each repeat's
    # idle and steal readings decide, not the cost's precision.
    with monkeypatch.context() as shorter:
        # What the loops' teardown leaves busy is waited out, as a user's run would.
        shorter.setattr(capacity.measurement, "QUIET_WAIT_S", 30.0)
        shorter.setattr(capacity.measurement, "CALIBRATION_REPEATS", 2)
        shorter.setattr(capacity.measurement, "CALIBRATION_TIME_S", 4.0)
        shorter.setattr(capacity.measurement, "CALIBRATION_WARMUP_S", 2.0)
        quiet = capacity.calibration_for("l3", say=lambda _: None)
    for sign_of_load in ("busy", "stolen", "no CPU above idle"):
        assert sign_of_load not in quiet.under_load, quiet
    if quiet.under_load == "":
        assert capacity.load("l3") == quiet
    else:
        assert "repeats disagree" in quiet.under_load and not capacity.cache_path("l3").exists()
    assert capacity.judge(SweepConfig(k=4), quiet).fits, capacity.judge(SweepConfig(k=4), quiet).reason()


@pytest.mark.parametrize("costs,agree", [((0.53, 0.56, 0.31), True), ((0.3, 0.6, 1.2), False),
                                         ((1.0,), False), ((1.0, 1.25), True), ((1.0, 1.4), False)])
def test_one_odd_repeat_does_not_void_a_calibration(costs, agree):
    assert capacity.median_is_seconded(list(costs)) is agree


def test_a_sweep_teaches_the_guard_only_its_valid_mptcp8_runs(tmp_path):
    """observed_costs reads run.json and cpu.csv as the sweep wrote them:
    MPTCP-8 runs only, and none that carries a flag."""
    cfg = SweepConfig(k=4, subflows=(1, 8), results=tmp_path / "valid", warmup_s=5)
    hosts = sorted(FatTree(k=4).hosts())
    matrix = make_matrix("one_to_one", hosts, 0)

    def write(results, subflows, flags, mbps=7.5, busy=60.0):
        rc = next(r for r in cfg.runs() if r.subflows == subflows)
        run_dir = rc.run_dir(results)
        run_dir.mkdir(parents=True)
        flows = [{"src": f.src, "dst": f.dst, "goodput_mbps": mbps} for f in matrix.flows]
        (run_dir / "run.json").write_text(json.dumps({"flows": flows, "flags": flags}))
        (run_dir / "cpu.csv").write_text("t_s,busy_pct\n" + "".join(
            f"{t},{99.0 if t <= 5 else busy}\n" for t in range(1, 30)))

    write(cfg.results, 1, [])
    write(cfg.results, 8, [])
    [seen] = capacity.observed_costs(cfg, idle_pct=0.0)
    demanded = capacity.demand_gbit_hops(FatTree(k=4), matrix, 10)
    assert (seen.k, seen.workload, seen.bw_mbps) == (4, "one_to_one", 10.0)
    assert seen.per_demanded == pytest.approx(2 * 0.6 / demanded)      # warm-up left out
    assert seen.per_delivered == pytest.approx(seen.per_demanded / 0.75)
    for flags in (["subflows_missing"], ["over_capacity"]):
        flagged = cfg.replace(results=tmp_path / flags[0])
        write(flagged.results, 8, flags)
        assert capacity.observed_costs(flagged, idle_pct=0.0) == []
    # A run that saturated the CPU measured at most what the configuration
    # costs: kept, as a floor, whatever else it was flagged for.
    saturated = cfg.replace(results=tmp_path / "saturated")
    write(saturated.results, 8, ["subflows_missing", "cpu_saturated"], busy=95.0)
    [floor] = capacity.observed_costs(saturated, idle_pct=0.0)
    assert floor.saturated and floor.as_dict()["saturated"] is True
    assert floor.per_demanded == pytest.approx(2 * 0.95 / demanded)
    assert "saturated" not in seen.as_dict()


def test_a_calibration_repeat_that_saturated_is_a_floor():
    """run_cost, which the calibration's repeats go through as the sweep's
    runs do, reads the run's own flag: a saturated repeat is stored as a
    floor, so the guard never takes it for what the configuration costs."""
    cfg = SweepConfig(k=4, subflows=(8,))
    [rc] = cfg.runs()
    topo = FatTree(k=4)
    flows = [{"src": f.src, "dst": f.dst, "goodput_mbps": 7.5}
             for f in make_matrix("one_to_one", sorted(topo.hosts()), 0).flows]
    quiet = capacity.run_cost(topo, rc, {"flows": flows, "flags": []}, 60.0, 0.0)
    hot = capacity.run_cost(topo, rc, {"flows": flows, "flags": ["cpu_saturated"]}, 95.0, 0.0)
    assert not quiet.saturated and hot.saturated
    cal = dataclasses.replace(calibration(cost=0.5), observations=(hot.as_dict(),))
    assert cal.measured_cost(4, "one_to_one", 10) is None
    assert cal.cost_floor(4, "one_to_one", 10) == pytest.approx(hot.per_demanded, abs=1e-4)


def test_a_configuration_that_saturated_is_refused_until_a_run_of_it_is_valid():
    """FatTree(8) one_to_one at 2 Mb/s (1.468 Gbit-hops demanded) was
    accepted at 68 % and its MPTCP-8 run saturated the CPU (measured 1.2
    core-s per Gbit-hop demanded, as on the development VM): the guard now
    predicts at least that, refuses it, and suggests a lower rate. A valid
    run of the configuration (--force) is the measurement it goes by again."""
    cfg = SweepConfig(k=8, link=LinkParams(bw_mbps=2))
    cal = calibration(cost=0.92 / 1.35)      # 0.92 at FatTree(8)'s 128 hosts
    before = capacity.judge(cfg, cal)
    assert before.fits and "not run here yet" in before.reason()
    floor = capacity.Observation(8, "one_to_one", 2.0, 1.2, 1.7, saturated=True)
    after = capacity.judge(cfg, dataclasses.replace(cal, observations=(floor.as_dict(),)))
    assert not after.fits and "saturated the CPU: at least 1.20" in after.reason()
    assert after.predicted_cpu_pct == pytest.approx(100 * before.demand_gbit_hops * 1.2 / 2)
    assert 0 < after.suggested_bw_mbps < 2
    # A floor below what the calibration predicts never lowers a prediction.
    low = dataclasses.replace(floor, per_demanded=0.5)
    assert capacity.judge(cfg, dataclasses.replace(cal, observations=(low.as_dict(),))) \
        .predicted_cpu_pct == pytest.approx(before.predicted_cpu_pct)
    valid = capacity.Observation(8, "one_to_one", 2.0, 0.8, 1.1)
    ran = capacity.judge(cfg, dataclasses.replace(
        cal, observations=(floor.as_dict(), valid.as_dict())))
    assert ran.fits and "1 MPTCP-8 run of this configuration" in ran.reason()


def test_rack_experiments_are_judged_on_their_costliest_run(tmp_path, monkeypatch):
    """The guard as the runner's service (experiments/capacity/guard.py):
    every point's matrix on its topology, before anything is built."""
    from harness import cli
    from experiments.dhft import DhftExperiment
    from experiments.oversub import OversubExperiment
    monkeypatch.setattr(capacity.cache, "CACHE_DIR", tmp_path)
    capacity.save(calibration(cost=1.38))
    argv = ["--k", "8", "--sweeps", "load", "--matrices", "permutation", "--loads", "0.25,1"]
    cfg, _ = cli.COMMANDS["oversub"].config_from(argv)
    with pytest.raises(ConfigError, match=r"capacity: .* use --bw (\S+) or less, or --force") as e:
        OversubExperiment(cfg, say=lambda m: None).admit()
    # The rate it suggests is one it then accepts; the costlier load decides
    # (the oversubscribed core caps both: fewer flows each get more).
    rate = e.value.args[0].split("use --bw ")[1].split(" ")[0]
    said = []
    fits = OversubExperiment(cli.COMMANDS["oversub"].config_from(argv + ["--bw", rate])[0], say=said.append)
    fits.admit()
    assert fits.capacity.fits and said[-1].startswith(f"capacity: at {rate} Mb/s")
    lighter = OversubExperiment(cli.COMMANDS["oversub"].config_from(
        [*argv[:-1], "0.25", "--bw", rate])[0], say=said.append)
    lighter.admit()
    assert lighter.capacity.predicted_cpu_pct < fits.capacity.predicted_cpu_pct
    # --force goes on, and the verdict says the runs will be over capacity.
    forced = OversubExperiment(cli.COMMANDS["oversub"].config_from(argv + ["--force"])[0], say=said.append)
    forced.admit()
    assert not forced.capacity.fits and "going on (--force)" in said[-1]
    # The defaults that were run here are admitted.
    dhft = DhftExperiment(cli.COMMANDS["dhft"].config_from([])[0], say=said.append)
    dhft.admit()
    assert dhft.capacity.fits


def test_a_fattree_not_run_here_is_priced_for_its_size_and_by_faster_runs():
    """FatTree(8)'s MPTCP-8 cost at least 1.35 times FatTree(4)'s
    calibration per Gbit-hop (it saturated 2 cores at 1.5 Mb/s): a FatTree
    not run here is priced with the calibration scaled to its hosts, and a
    rate is priced at least as a faster one of the same FatTree cost here."""
    cal = calibration(cost=1.15)
    k8 = capacity.judge(SweepConfig(k=8, link=LinkParams(bw_mbps=1.5)), cal)
    assert k8.cost == pytest.approx(1.15 * 1.35, rel=0.01) and "times 1.35 for 128 hosts" in k8.reason()
    assert not k8.fits and k8.suggested_bw_mbps == 1
    assert capacity.judge(SweepConfig(k=4), cal).cost == 1.15
    # Its MPTCP-8 run at 1.5 Mb/s saturated at 2.2 core-s per Gbit-hop: 1 Mb/s
    # is priced at least that, and refused; the rate suggested is accepted.
    seen = dataclasses.replace(cal, observations=(
        capacity.Observation(8, "one_to_one", 1.5, 2.2, 2.9, saturated=True).as_dict(),))
    at1 = capacity.judge(SweepConfig(k=8, link=LinkParams(bw_mbps=1)), seen)
    assert at1.cost == 2.2 and "at 1.5 Mb/s cost here" in at1.reason() and not at1.fits
    assert at1.suggested_bw_mbps == 0.8
    assert capacity.judge(SweepConfig(k=8, link=LinkParams(bw_mbps=at1.suggested_bw_mbps)), seen).fits
    # A slower run says nothing of a faster rate.
    slow = dataclasses.replace(cal, observations=(
        capacity.Observation(8, "one_to_one", 0.5, 3.0, 3.9).as_dict(),))
    assert capacity.judge(SweepConfig(k=8, link=LinkParams(bw_mbps=1)), slow).cost == pytest.approx(1.15 * 1.35, rel=0.01)


@pytest.mark.parametrize("name,argv", [("oversub", ["--k", "8", "--sweeps", "load", "--loads", "0.25,1"]),
                                       ("dhft", ["--seeds", "0,1", "--sweeps", "load"]),
                                       ("topologies", [])])
def test_the_plans_verdict_on_racks_is_the_guards(tmp_path, monkeypatch, name, argv):
    """--plan judges an experiment of racks as its run will, from the cache
    alone (never calibrating)."""
    from base import catalogue
    from experiments.overseeds import experiment_for
    from harness import cli, listing
    monkeypatch.setattr(capacity.cache, "CACHE_DIR", tmp_path)
    capacity.save(calibration(cost=1.38))
    cfg, _ = cli.COMMANDS[name].config_from(argv + ["--force"])
    said = []
    exp = experiment_for(catalogue.row(name).load("run"), cfg, say=said.append)
    exp.admit()
    guard_lines = [line for line in said if line.startswith("capacity: ")]     # one per seed
    line = listing.capacity_line(catalogue.row(name), cfg)
    verdict = line.split(": ", 2)[2]          # the costliest seed's
    assert any(g.startswith(f"capacity: {verdict}") for g in guard_lines), (line, guard_lines)
