"""A sweep split over machines (--shard I/N, base/shards.py), several seeds
(--seeds), and folders brought together (./plot.py A B --into C,
base/merge.py): the rule, the refusals, the figure over seeds, and a real
FatTree(4) sweep run as two shards into two folders against the same sweep
run whole."""
from __future__ import annotations

import contextlib
import io
import json
import shutil
import subprocess

import pytest

from base.errors import ConfigError
from base.shards import Shard
from harness import cli
from tests.conftest import ROOT, needs_root, set_guard_calibration
from tests.test_plot import PNG_MAGIC, write_run

SCRIPT = str(ROOT / "run_mptcp.sh")
PLOT = str(ROOT / "plot.py")


# -- the rule ------------------------------------------------------------------
def test_shards_split_the_points_round_robin_and_cover_them_once():
    points = list(range(11))
    shares = [Shard(i, 3).mine(points) for i in (1, 2, 3)]
    assert shares == [[0, 3, 6, 9], [1, 4, 7, 10], [2, 5, 8]]
    assert sorted(p for s in shares for p in s) == points


@pytest.mark.parametrize("text", ["x", "1", "0/2", "3/2", "1/0", "1/1001", "1/2/3", "-1/2"])
def test_a_bad_shard_is_one_line(text):
    with pytest.raises(ConfigError) as err:
        Shard.parse(text)
    assert "\n" not in str(err.value) and "--shard" in str(err.value)


def plan(argv: list[str]) -> tuple[int, str]:
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
        status = cli.main(argv)
    return status, out.getvalue()


def test_plan_lists_a_shards_points_before_anything_runs():
    status, text = plan(["4", "--seeds", "0,1,2", "--subflows", "1,8", "--shard", "2/4", "--plan"])
    assert status == 0, text
    assert "shard 2/4: 2 of the 6 points" in text
    assert "[2/6] subflows 8, seed 0" in text and "[6/6] subflows 8, seed 2" in text
    assert "[1/6]" not in text and "estimate: 2 runs" in text


@pytest.mark.parametrize("argv, says", [
    (["4", "--subflows", "1", "--shard", "2/2"], "would run none"),
    (["flowlevel", "--shard", "1/2"], "has no shards"),
    (["4", "--seeds", "1,1"], "different seeds"),
    (["4", "--seeds", "1,2", "--seed", "3"], "give one"),
])
def test_a_shard_or_seed_list_that_cannot_run_is_refused(argv, says, capsys):
    assert cli.main(argv + ["--plan"]) == 2
    err = capsys.readouterr().err
    assert says in err and err.count("\n") == 1


def test_seeds_run_seed_by_seed_each_in_its_folder():
    cfg, _ = cli.commands()[None].config_from(["4", "--seeds", "3,5", "--subflows", "1,2"])
    runs = cfg.runs()
    assert [(r.seed, r.subflows) for r in runs] == [(3, 1), (3, 2), (5, 1), (5, 2)]
    assert runs[2].run_dir(cfg.results).as_posix() == "results/ft4/one_to_one/seed5/flows1"
    assert runs[2].as_record()["seeds"] == [3, 5]
    one, _ = cli.commands()[None].config_from(["4", "--seed", "5", "--subflows", "1"])
    assert one.runs()[0].run_dir(one.results).as_posix() == "results/ft4/one_to_one/flows1"
    assert "seeds" not in one.runs()[0].as_record()


# -- merging folders -------------------------------------------------------------
def shard_of(index: int, count: int, **settings) -> dict:
    from base.shards import settings_id
    settings = {"k": 4, "bw_mbps": 10.0, **settings}
    return {"index": index, "count": count, "points": 2, "settings": settings,
            "settings_id": settings_id(settings)}


def merged(*argv) -> subprocess.CompletedProcess:
    return subprocess.run([PLOT, *map(str, argv)], capture_output=True, text=True, timeout=300)


def test_shards_in_two_folders_merge_and_draw_one_figure(tmp_path):
    write_run(tmp_path / "a", 1, [50, 60], shard=shard_of(1, 2))
    write_run(tmp_path / "b", 2, [70, 80], shard=shard_of(2, 2))
    (tmp_path / "a" / "ft4" / "one_to_one" / "matrix.json").write_text('{"seed": 0}')
    (tmp_path / "b" / "ft4" / "one_to_one" / "matrix.json").write_text('{"seed": 0}')
    done = merged(tmp_path / "a", tmp_path / "b", "--into", tmp_path / "all")
    assert done.returncode == 0, done.stderr
    both = sorted(p.parent.name for p in (tmp_path / "all").glob("ft4/one_to_one/flows*/run.json"))
    assert both == ["flows1", "flows2"]
    assert (tmp_path / "all" / "ft4" / "one_to_one" / "matrix.json").exists()
    assert (tmp_path / "all" / "plots" / "ft4-one_to_one-throughput.png").read_bytes()[:8] == PNG_MAGIC
    # Done again: the same runs, nothing refused.
    assert merged(tmp_path / "a", tmp_path / "b", "--into", tmp_path / "all").returncode == 0
    # One shard alone is drawn, with a note on the missing one.
    done = merged(tmp_path / "a")
    assert done.returncode == 0 and "shard 2 of 2 not here" in done.stderr


@pytest.mark.parametrize("second, says", [
    (dict(n=1, shard=shard_of(2, 2)), "one point run twice"),
    (dict(n=2, shard=shard_of(2, 2, bw_mbps=5.0)), "other settings"),
    (dict(n=2, shard=shard_of(2, 3)), "2 shards against 3"),
])
def test_a_point_found_twice_or_a_shard_with_other_settings_is_refused(tmp_path, second, says):
    write_run(tmp_path / "a", 1, [50, 60], shard=shard_of(1, 2), samples=False)
    write_run(tmp_path / "b", second.pop("n"), [70, 80], samples=False, **second)
    done = merged(tmp_path / "a", tmp_path / "b", "--into", tmp_path / "all")
    assert done.returncode == 2 and says in done.stderr and done.stderr.count("\n") == 1, done.stderr
    assert not (tmp_path / "all").exists()


def test_several_folders_need_into(tmp_path):
    done = merged(tmp_path / "a", tmp_path / "b")
    assert done.returncode == 2 and "--into" in done.stderr and done.stderr.count("\n") == 1


def test_the_figure_over_seeds_shows_their_mean_and_each(tmp_path):
    for seed, (tcp, mptcp) in {0: (50, 80), 1: (54, 90), 2: (52, 85)}.items():
        for n, pct in ((1, tcp), (2, mptcp)):
            doc = json.loads(write_run(tmp_path, n, [pct, pct], samples=False).read_text())
            doc["config"].update(seed=seed, seeds=[0, 1, 2])
            dest = tmp_path / "ft4" / "one_to_one" / f"seed{seed}" / f"flows{n}"
            dest.mkdir(parents=True)
            (dest / "run.json").write_text(json.dumps(doc))
            shutil.rmtree(tmp_path / "ft4" / "one_to_one" / f"flows{n}")
    import plot
    drawing = plot.draw_all(tmp_path)
    heights = drawing.of("fattree")["ft4-one_to_one-seeds-throughput"]
    assert heights == {1: (52.0, True), 2: (85.0, True)}
    report = (tmp_path / "report.md").read_text()
    assert "| TCP | 52.0 | 2.0 | 50.0, 54.0, 52.0 | yes |" in report
    assert (tmp_path / "plots" / "ft4-one_to_one-seed1-throughput.png").exists()


# -- a real sweep in two shards ----------------------------------------------------
SWEEP = ["4", "--seeds", "0,1", "--subflows", "1,2", "--time", "3", "--warmup", "1", "--no-plots"]


@needs_root
def test_a_sweep_in_two_shards_merges_into_the_whole_sweep(tmp_path, tmp_path_factory, monkeypatch,
                                                            no_leftovers):
    set_guard_calibration(monkeypatch, tmp_path_factory.mktemp("guard-cache"), 1.38, "tests/test_shards.py")
    for name, extra in (("whole", []), ("s1", ["--shard", "1/2"]), ("s2", ["--shard", "2/2"])):
        done = subprocess.run([SCRIPT, *SWEEP, *extra, "--results", str(tmp_path / name)],
                              capture_output=True, text=True, timeout=900)
        assert done.returncode == 0, done.stderr[-2000:]
        assert not extra or f"shard {extra[1]}: 2 of the 4 points" in done.stdout
    done = merged(tmp_path / "s1", tmp_path / "s2", "--into", tmp_path / "merged")
    assert done.returncode == 0, done.stderr

    def points(folder):
        return {p.relative_to(folder).parent: json.loads(p.read_text())
                for p in folder.glob("ft4/one_to_one/seed*/flows*/run.json")}
    whole, together = points(tmp_path / "whole"), points(tmp_path / "merged")
    assert set(whole) == set(together) and len(whole) == 4
    for where, rec in together.items():
        assert set(rec) - {"shard"} == set(whole[where]), where
        assert rec["config"] == whole[where]["config"]
        assert rec["shard"]["count"] == 2
    assert len({r["shard"]["settings_id"] for r in together.values()}) == 1
    assert (tmp_path / "merged" / "plots" / "ft4-one_to_one-seeds-throughput.png").exists()
    # The two seeds are two matrices.
    matrices = [json.loads((tmp_path / "merged" / "ft4" / "one_to_one" / f"seed{s}" / "matrix.json")
                           .read_text())["flows"] for s in (0, 1)]
    assert matrices[0] != matrices[1]
