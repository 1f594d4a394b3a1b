"""plot.py against synthetic results directories (no root, no network)."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
import plot  # noqa: E402

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def write_run(results: Path, n: int, pcts, *, k: int = 4, workload: str = "one_to_one",
              valid: bool = True, flags=(), **overrides) -> Path:
    """Write results/ft<k>/<workload>/flows<n>/run.json as the harness would."""
    doc = {
        "schema": 1,
        "config": {"topology": f"ft{k}", "k": k, "workload": workload, "subflows": n,
                   "bw_mbps": 10.0, "queue_pkts": 100, "offload": False, "time_s": 20,
                   "seed": 0, "fabric": "l3", "cc": "reno"},
        "kernel": "6.18.44",
        "baseline_mbps": 9.5,
        "flows": [{"src": f"h{i}", "dst": f"h{i + 1}", "goodput_mbps": p * 0.095,
                   "optimal_mbps": 9.5, "pct_optimal": p, "subflows_requested": n,
                   "subflows_established": n} for i, p in enumerate(pcts)],
        "valid": valid,
        "flags": list(flags),
    }
    doc.update(overrides)
    path = results / f"ft{k}" / workload / f"flows{n}" / "run.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(doc))
    return path


def run_cli(results: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(ROOT / "plot.py"), str(results)],
                          capture_output=True, text=True, timeout=120)


def draw(results: Path, topology: str = "ft4", workload: str = "one_to_one"):
    """Heights of the bars plot.py draws for one group: {subflows: (height, drawn valid)}."""
    runs = plot.group(plot.load_runs(results))[(topology, workload)]
    return plot.draw_throughput(topology, workload, runs, results / "plots" / "t.png")


def assert_png(path: Path) -> None:
    data = path.read_bytes()
    assert data.startswith(PNG_MAGIC)
    assert len(data) > 20_000, f"{path} is only {len(data)} bytes"


def test_full_sweep_cli_writes_one_png(tmp_path):
    for n in range(1, 9):
        write_run(tmp_path, n, [50 + 5 * n, 60 + 4 * n, 70])
    proc = run_cli(tmp_path)
    out = tmp_path / "plots" / "ft4-one_to_one-throughput.png"
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines() == [str(out)]
    assert proc.stderr == ""
    assert_png(out)


def test_bar_heights_are_means_of_pct_optimal(tmp_path):
    write_run(tmp_path, 1, [40, 60, 80], summary={"mean_pct": 999})  # summary is not trusted
    write_run(tmp_path, 2, [90, 90, 60])
    write_run(tmp_path, 3, [100, 80])
    assert draw(tmp_path) == {1: (60, True), 2: (80, True), 3: (90, True)}


def test_run_statistics(tmp_path):
    write_run(tmp_path, 1, [10, 20, 30, 40, 50, 60, 70, 80, 90, 100, 110])
    (run,) = plot.load_runs(tmp_path)
    assert (run.mean, run.p10, run.min) == (60, 20, 10)


def test_missing_middle_subflow_counts_leave_gaps(tmp_path):
    for n in (1, 2, 5, 8):
        write_run(tmp_path, n, [10.0 * n, 10.0 * n])
    proc = run_cli(tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert_png(tmp_path / "plots" / "ft4-one_to_one-throughput.png")
    assert draw(tmp_path) == {1: (10, True), 2: (20, True), 5: (50, True), 8: (80, True)}


def test_invalid_run_is_drawn_distinctly(tmp_path):
    write_run(tmp_path, 1, [50, 70])
    write_run(tmp_path, 2, [80, 80], valid=False, flags=["cpu_high", "subflows_missing"])
    assert draw(tmp_path) == {1: (60, True), 2: (80, False)}


@pytest.mark.parametrize("content", [
    "{not json",
    "",
    "[]",
    '{"config": {"topology": "ft4", "workload": "one_to_one", "subflows": 2}}',  # no flows
])
def test_unusable_run_json_is_skipped_with_a_note(tmp_path, content):
    write_run(tmp_path, 1, [50, 70])
    bad = write_run(tmp_path, 2, [80])
    bad.write_text(content)
    write_run(tmp_path, 3, [90], valid=False, flags=["drops"])
    proc = run_cli(tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert len(proc.stderr.splitlines()) == 1 and str(bad) in proc.stderr
    assert draw(tmp_path) == {1: (60, True), 3: (90, False)}


@pytest.mark.parametrize("change", [
    lambda d: d["flows"][0].pop("pct_optimal"),
    lambda d: d["flows"][0].update(pct_optimal="85"),
    lambda d: d["flows"][0].update(pct_optimal=None),
    lambda d: d.pop("valid"),
    lambda d: d.update(flows=[]),
    lambda d: d["config"].update(subflows=3),  # disagrees with flows2/
])
def test_run_lacking_fields_is_skipped(tmp_path, capsys, change):
    path = write_run(tmp_path, 2, [80, 90])
    doc = json.loads(path.read_text())
    change(doc)
    path.write_text(json.dumps(doc))
    assert plot.load_runs(tmp_path) == []
    assert str(path) in capsys.readouterr().err


def test_several_workloads_and_topologies_give_several_figures(tmp_path):
    for workload in ("one_to_one", "all_to_all"):
        write_run(tmp_path, 1, [50], workload=workload)
        write_run(tmp_path, 4, [80], workload=workload)
    write_run(tmp_path, 8, [93] * 16, k=8)
    proc = run_cli(tmp_path)
    assert proc.returncode == 0, proc.stderr
    names = ["ft4-all_to_all", "ft4-one_to_one", "ft8-one_to_one"]
    assert proc.stdout.splitlines() == [str(tmp_path / "plots" / f"{n}-throughput.png") for n in names]
    for name in names:
        assert_png(tmp_path / "plots" / f"{name}-throughput.png")


def test_dot_directories_are_ignored(tmp_path):
    write_run(tmp_path, 1, [50])
    hidden = tmp_path / "ft4" / "one_to_one" / ".flows2-partial" / "run.json"
    hidden.parent.mkdir()
    hidden.write_text("{broken")
    old = write_run(tmp_path / ".old", 1, [99])
    assert old.exists()
    proc = run_cli(tmp_path)
    assert proc.returncode == 0 and proc.stderr == ""
    assert sorted(p.name for p in (tmp_path / "plots").iterdir()) == ["ft4-one_to_one-throughput.png"]
    assert draw(tmp_path) == {1: (50, True)}


@pytest.mark.parametrize("make", [lambda p: p.mkdir(), lambda p: None])
def test_no_runs_is_a_note_and_exit_0(tmp_path, make):
    results = tmp_path / "results"
    make(results)
    proc = run_cli(results)
    assert proc.returncode == 0
    assert proc.stdout == "" and "no runs" in proc.stderr
    assert not (results / "plots").exists()


def test_only_mptcp_runs(tmp_path):
    write_run(tmp_path, 3, [70, 75])
    write_run(tmp_path, 6, [85, 95], valid=False)
    proc = run_cli(tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert draw(tmp_path) == {3: (72.5, True), 6: (90, False)}


def test_executable_directly(tmp_path):
    write_run(tmp_path, 1, [50])
    proc = subprocess.run([str(ROOT / "plot.py"), str(tmp_path)], capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert_png(tmp_path / "plots" / "ft4-one_to_one-throughput.png")


def test_title_names_the_configuration(tmp_path):
    write_run(tmp_path, 1, [50], k=8)
    write_run(tmp_path, 2, [50], k=8)
    runs = plot.group(plot.load_runs(tmp_path))[("ft8", "one_to_one")]
    assert plot.title("ft8", "one_to_one", runs) == \
        "FatTree ft8 (k=8), one_to_one: 10.0 Mb/s links, 20 s runs, cc=reno"
    runs[2].config["bw_mbps"] = 20.0
    assert "10.0/20.0 Mb/s (MIXED)" in plot.title("ft8", "one_to_one", runs)
