"""The baselines in docs/baseline/ and report.md's comparison with them (no
root, no network: run records written as the harness writes them)."""
from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from base import catalogue  # noqa: E402
from figures import baseline  # noqa: E402
from tests.test_plot import run_cli, run_main, sweep, write_run  # noqa: E402

SHIPPED = sorted(p.parent for p in baseline.BASELINES.glob(f"*/{baseline.RUNS}"))


def rows_of(lines: list[str], number: str) -> dict[str, list[str]]:
    """The comparison table's rows for one number: {run folder: cells}."""
    cells = [[c.strip() for c in line.strip("|").split("|")] for line in lines if line.startswith("| ")]
    return {c[0]: c[1:] for c in cells if len(c) > 1 and c[1] == number}


@pytest.mark.parametrize("folder", SHIPPED, ids=[p.name for p in SHIPPED])
def test_a_shipped_baseline_names_its_source_and_holds_no_samples(folder):
    doc = json.loads((folder / baseline.RUNS).read_text())
    source = doc["source"]
    assert source["command"].startswith("run_mptcp.sh") and source["commit"] and source["date"]
    experiments = {run["experiment"] for run in doc["runs"].values()}
    assert experiments <= set(catalogue.ROWS) and doc["runs"]
    machine = any(catalogue.ROWS[e].machine for e in experiments)
    assert source["cores"] and (source["kernel"] or not machine)
    for run in doc["runs"].values():
        assert set(run["headline"]) == set(catalogue.ROWS[run["experiment"]].headline)
    assert (folder / "report.md").exists() and list((folder / "plots").glob("*.png"))
    assert not list(folder.rglob("*.csv")), "raw samples are not shipped"


def test_the_baselines_fit_in_ten_megabytes():
    size = sum(p.stat().st_size for p in baseline.BASELINES.rglob("*") if p.is_file())
    assert size <= 10 * 2**20, f"docs/baseline holds {size} bytes"


def test_the_fattree_baseline_is_set_beside_a_run_and_a_far_number_is_marked(tmp_path):
    """A run like the baseline's, one number 10 points off: only that one is marked."""
    base = json.loads((baseline.BASELINES / "fattree" / baseline.RUNS).read_text())["runs"]
    mine = tmp_path / "results"
    for rel, run in base.items():
        path = mine / rel / "run.json"
        path.parent.mkdir(parents=True)
        headline = dict(run["headline"])
        doc = {"experiment": "fattree", "config": run["config"], "valid": True, "flags": [],
               "summary": {"mean_pct": headline["summary.mean_pct"] + (10 if rel.endswith("flows8") else 1),
                           "p10_pct": headline["summary.p10_pct"], "min_pct": headline["summary.min_pct"]},
                "cpu_mean_pct": headline["cpu_mean_pct"]}
        path.write_text(json.dumps(doc))
    lines = baseline.compare_lines(mine)
    means = rows_of(lines, "summary.mean_pct")
    assert set(means) == set(base)
    assert [rel for rel, cells in means.items() if "**differs**" in cells[-1]] == \
        [rel for rel in base if rel.endswith("flows8")]


def seeded_run(results: Path, seed: int, pct: float, scratch: Path) -> None:
    """ft4/one_to_one/seed<S>/flows1, the sweep's layout with --seeds."""
    path = write_run(scratch / str(seed), 1, [pct], samples=False, summary={"mean_pct": pct},
                     experiment="fattree")
    dest = results / "ft4" / "one_to_one" / f"seed{seed}" / "flows1"
    dest.parent.mkdir(parents=True, exist_ok=True)
    path.parent.rename(dest)


def test_a_spread_over_seeds_is_the_tolerance(tmp_path):
    """With two seeds in the baseline, the mark follows their spread, not 5 points."""
    made = tmp_path / "made"
    for seed, pct in ((0, 60.0), (1, 70.0)):
        seeded_run(made, seed, pct, tmp_path / "scratch")
    baseline.save(made, tmp_path / "baselines" / "fattree", "run_mptcp.sh 4 --seeds 0,1")
    for pct, marked in ((74.0, False), (76.0, True)):
        mine = tmp_path / f"mine{pct:g}"
        write_run(mine, 1, [pct], samples=False, summary={"mean_pct": pct}, experiment="fattree")
        cells = rows_of(baseline.compare_lines(mine, tmp_path / "baselines"), "summary.mean_pct")
        assert cells["ft4/one_to_one/flows1"][2] == "65.0 (60.0-70.0)"
        assert ("**differs**" in cells["ft4/one_to_one/flows1"][-1]) is marked


def test_other_settings_are_named_not_compared_silently(tmp_path):
    made, mine = tmp_path / "made", tmp_path / "mine"
    sweep(made, counts=(1, 8), samples=False)
    baseline.save(made, tmp_path / "b" / "fattree", "run_mptcp.sh 4 --subflows 1,8")
    sweep(mine, counts=(1, 8), samples=False)
    for path in mine.rglob("run.json"):
        doc = json.loads(path.read_text())
        doc["config"]["bw_mbps"] = 5.0
        path.write_text(json.dumps(doc))
    lines = baseline.compare_lines(mine, tmp_path / "b")
    assert any("bw_mbps 5.0 (baseline 10.0)" in line and "not comparable" in line for line in lines)


def test_report_md_carries_the_comparison_and_a_bad_baseline_folder_is_one_line(tmp_path):
    made, mine = tmp_path / "made", tmp_path / "mine"
    sweep(made, counts=(1, 8), samples=False)
    baseline.save(made, tmp_path / "b" / "fattree", "run_mptcp.sh 4 --subflows 1,8")
    sweep(mine, counts=(1, 8), samples=False)
    proc = run_main(mine, "--baseline", str(tmp_path / "b"))
    assert proc.returncode == 0, proc.stderr
    report = (mine / "report.md").read_text()
    assert "## Against the baseline" in report
    same = rows_of(report.splitlines(), "cpu_mean_pct")
    assert set(same) == {"ft4/one_to_one/flows1", "ft4/one_to_one/flows8"}
    assert not any("**differs**" in cells[-1] for cells in same.values())
    before = report
    proc = run_cli(mine, "--baseline", str(tmp_path / ("x" * 300) / "y"))
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1 and "--baseline" in proc.stderr
    assert (mine / "report.md").read_text() == before


def test_a_results_folder_without_a_baseline_says_so(tmp_path):
    mine = tmp_path / "mine"
    sweep(mine, counts=(1,), samples=False)
    (tmp_path / "empty").mkdir()
    lines = baseline.compare_lines(mine, tmp_path / "empty")
    assert any(line.startswith("No baseline under") and "fattree" in line for line in lines)


def test_every_subcommand_has_its_baseline():
    assert {p.name for p in SHIPPED} == set(catalogue.ROWS)


def nested(headline: dict[str, float | None]) -> dict:
    """A record holding the headline numbers at their dotted keys."""
    doc: dict = {}
    for key, value in headline.items():
        *parents, leaf = key.split(".")
        node = doc
        for part in parents:
            node = node.setdefault(part, {})
        node[leaf] = value
    return doc


@pytest.mark.parametrize("folder", SHIPPED, ids=[p.name for p in SHIPPED])
def test_each_baseline_compared_with_its_own_runs_finds_each_and_marks_none(folder, tmp_path):
    """Records rebuilt from a baseline's summary, where the harness puts them:
    every run finds its baseline point and no number is marked."""
    runs = json.loads((folder / baseline.RUNS).read_text())["runs"]
    for rel, run in runs.items():
        path = tmp_path / rel / "run.json"
        path.parent.mkdir(parents=True)
        doc = {**nested(run["headline"]), "experiment": run["experiment"], "config": run["config"],
               "valid": run["valid"], "flags": run["flags"]}
        path.write_text(json.dumps(doc))
    lines = baseline.compare_lines(tmp_path, baseline.BASELINES)
    assert not any(line.startswith("No baseline under") for line in lines), lines
    table = [line for line in lines if line.startswith("| ") and not line.startswith("| run ")]
    assert not any("**differs**" in line or "not comparable" in line for line in table)
    numbered = {rel for rel, run in runs.items() if any(v is not None for v in run["headline"].values())}
    assert {line.strip("|").split("|")[0].strip() for line in table} >= numbered


@pytest.mark.parametrize("folder", SHIPPED, ids=[p.name for p in SHIPPED])
def test_a_shipped_report_and_page_section_say_what_is_true(folder):
    """The report names the command, not a temporary folder, and does not
    compare the baseline with itself; the page's section is the generator's
    (rows by number: 50kb before 100kb; a table's header matches its rows)."""
    report = (folder / "report.md").read_text()
    source = json.loads((folder / baseline.RUNS).read_text())
    assert f"records of `{source['source']['command']}`" in report
    assert "/tmp/" not in report and "See README.md here" not in report
    assert "## Against the baseline" not in report
    page = ROOT / "docs" / "experiments" / f"{folder.name}.md"
    section = baseline.page_section(source, folder, page)
    assert "\n".join(section).strip() in page.read_text()
    rows = [line for line in section if line.startswith("|")]
    assert len({line.count("|") for line in rows}) == 1, rows


def test_runs_sort_by_their_numbers():
    names = ["w/mptcp/1000kb", "w/mptcp/50kb", "w/mptcp/150kb", "w/mptcp/0.5pct", "w/tcp/2kb"]
    assert sorted(names, key=baseline._natural) == [
        "w/mptcp/0.5pct", "w/mptcp/50kb", "w/mptcp/150kb", "w/mptcp/1000kb", "w/tcp/2kb"]


def test_a_report_kept_as_a_baseline_names_its_command_and_drops_the_comparison():
    text = ("# Results report\n\nDrawn by `plot.py /tmp/x` from the run records under this "
            "directory. The rest.\n\n## a\n\nx\n\n## Against the baseline\n\nNo baseline under "
            "`docs/baseline` for: a.\n\n## Notes\n\n- none\n")
    kept = baseline.baseline_report(text, "run_mptcp.sh a")
    assert "Drawn by `plot.py` from the records of `run_mptcp.sh a`" in kept and "/tmp/x" not in kept
    assert "Against the baseline" not in kept and "## Notes" in kept and "## a\n\nx" in kept
