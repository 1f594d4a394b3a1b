"""--seeds for the experiments of racks (dhft, oversub, topologies:
experiments/config/common.SeedsSettings, experiments/overseeds.py,
figures/rack_seeds.py): each seed's points, in a folder of its own, a
network each; the figure over seeds from the records; and a real
topologies run over two seeds."""
from __future__ import annotations

import json
import subprocess

import pytest

from experiments.config import DhftConfig, TopologiesConfig
from experiments.config.common import SeedPoint
from experiments.config.oversub import OversubConfig
from experiments.overseeds import OverSeeds, experiment_for, seed_folder
from experiments.topologies import TopologiesExperiment
from tests.conftest import ROOT, needs_root
from tests.subflows import assert_subflows
from tests.test_shards import plan

SEEDED = (DhftConfig, OversubConfig, TopologiesConfig)


@pytest.mark.parametrize("config", SEEDED)
def test_every_seed_runs_the_single_seed_points_in_turn(config):
    one = config()
    both = config(seeds=(3, 5))
    both.validate()
    assert both.points() == [SeedPoint(s, p) for s in (3, 5) for p in one.seed_points()]
    assert one.points() == one.seed_points()
    assert both.for_seed(5).seed == 5 and both.for_seed(5).seeds == ()


def test_each_seed_has_its_network_and_its_folder(tmp_path):
    cfg = TopologiesConfig(topologies=("fattree",), subflows=(1, 2), seeds=(0, 7), results=tmp_path)
    exp = experiment_for(TopologiesExperiment, cfg)
    assert isinstance(exp, OverSeeds) and exp.name == "topologies"
    keys = [exp.network_key(p) for p in exp.points()]
    assert keys == [(0, "fattree"), (0, "fattree"), (7, "fattree"), (7, "fattree")]
    assert exp.run_dir(exp.points()[3]) == tmp_path / "topologies-seed7/fattree/permutation/flows2"
    assert exp.describe(exp.points()[2]).startswith("seed 7: topologies fattree")
    assert isinstance(experiment_for(TopologiesExperiment, TopologiesConfig()), TopologiesExperiment)
    assert seed_folder(tmp_path, tmp_path / "dhft4/load/tcp_dhft/1conn", 2) == \
        tmp_path / "dhft4-seed2/load/tcp_dhft/1conn"


def test_plan_lists_every_seeds_points_and_a_shard_splits_them():
    status, text = plan(["dhft", "--seeds", "0,1", "--sweeps", "load", "--loads", "1", "--plan",
                         "--shard", "1/2"])
    assert status == 0, text
    assert "shard 1/2: 3 of the 6 points" in text
    assert "[1/6] seed 0, scheme tcp_dhft" in text and "[5/6] seed 1, scheme mptcp_dhft" in text


@pytest.mark.parametrize("argv, says", [
    (["topologies", "--seeds", "4"], "two or more different seeds"),
    (["oversub", "--seeds", "1,2,1"], "two or more different seeds"),
    (["dhft", "--seed", "3", "--seeds", "1,2"], "give one"),
    (["dhft", "--seeds", ",".join(map(str, range(21)))], "at most 20 seeds"),
])
def test_a_seed_list_that_cannot_run_is_one_line(argv, says, capsys):
    from harness import cli
    assert cli.main(argv + ["--plan"]) == 2
    err = capsys.readouterr().err
    assert says in err and err.count("\n") == 1, err


def write_seed_run(results, seed: int, subflows: int, pct: float, valid: bool = True, seeds=(0, 1, 2)):
    dest = results / f"topologies-seed{seed}" / "fattree" / "permutation" / f"flows{subflows}"
    dest.mkdir(parents=True)
    flags = [] if valid else ["cpu_saturated"]
    record = {"schema": 1, "experiment": "topologies", "valid": valid, "flags": flags, "hosts": 16,
              "pct_of_host_links": pct, "flows": [{"pct_of_link": pct}],
              "config": {"topology": "fattree", "subflows": subflows, "seed": seed, "seeds": list(seeds),
                         "bw_mbps": 5.0, "queue_pkts": 100, "cc": "lia", "fabric": "l3",
                         "time_s": 20.0, "warmup_s": 10.0, "workload": "permutation"}}
    (dest / "run.json").write_text(json.dumps(record))


def test_the_figure_over_seeds_shows_the_mean_each_seed_and_what_is_invalid(tmp_path):
    for seed, (tcp, mptcp) in {0: (40, 80), 1: (44, 90), 2: (42, 85)}.items():
        write_seed_run(tmp_path, seed, 1, tcp)
        write_seed_run(tmp_path, seed, 8, mptcp, valid=seed != 1)
    import plot
    drawing = plot.draw_all(tmp_path)
    heights = drawing.of("topologies")["topologies-seeds"].data
    assert heights == {"fattree/permutation/flows1": (42.0, True),
                       "fattree/permutation/flows8": (85.0, False)}
    for seed in (0, 1, 2):
        assert f"topologies-seed{seed}-subflows" in drawing.of("topologies")
    report = (tmp_path / "report.md").read_text()
    assert "| fattree/permutation/flows1 | 42.0 | 2.0 | 40.0, 44.0, 42.0 | yes |  |" in report
    assert "| fattree/permutation/flows8 | 85.0 | 5.0 | 80.0, 90.0, 85.0 | **NO** | cpu_saturated |" in report


def test_a_seed_missing_a_point_makes_it_invalid(tmp_path):
    write_seed_run(tmp_path, 0, 1, 40, seeds=(0, 1))
    write_seed_run(tmp_path, 1, 1, 50, seeds=(0, 1))
    write_seed_run(tmp_path, 0, 2, 60, seeds=(0, 1))
    import plot
    heights = plot.draw_all(tmp_path).of("topologies")["topologies-seeds"].data
    assert heights == {"fattree/permutation/flows1": (45.0, True), "fattree/permutation/flows2": (60.0, False)}
    assert "seed 1 missing" in (tmp_path / "report.md").read_text()


@needs_root
def test_a_topologies_run_over_two_seeds(tmp_path, no_leftovers):
    results = tmp_path / "results"
    done = subprocess.run(
        [str(ROOT / "run_mptcp.sh"), "topologies", "--topologies", "fattree", "--subflows", "1,2",
         "--time", "3", "--warmup", "1", "--seeds", "0,1", "--results", str(results)],
        capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "[1/4] seed 0: topologies fattree permutation TCP" in done.stdout
    runs = {p.relative_to(results).parent.as_posix(): json.loads(p.read_text())
            for p in results.glob("topologies-seed*/*/*/*/run.json")}
    assert sorted(runs) == [f"topologies-seed{s}/fattree/permutation/flows{n}" for s in (0, 1) for n in (1, 2)]
    for where, rec in runs.items():
        assert rec["config"]["seed"] == int(where.split("/")[0].removeprefix("topologies-seed"))
        assert rec["config"]["seeds"] == [0, 1]
        assert_subflows(rec, rec["config"]["subflows"])
    # Each seed is its own matrix.
    matrices = [runs[f"topologies-seed{s}/fattree/permutation/flows1"]["matrix"] for s in (0, 1)]
    assert matrices[0] != matrices[1]
    assert not (results / "topologies").exists()
    report = (results / "report.md").read_text()
    assert "### topologies over seeds 0, 1" in report
    assert (results / "plots" / "topologies-seeds.png").exists()
    assert (results / "plots" / "topologies-seed1-rank.png").exists()
