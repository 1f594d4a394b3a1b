"""The catalogue is the one list of experiments: a toy declared in its own
package (tests/toy) with one row, added through MPTCP_HARNESS_EXPERIMENTS,
shows up in `list`, `--help`, `--plan`, the input check, a run through the
runner, the records and plot.py's report, with no shared file edited."""
from __future__ import annotations

import json
import os
import re
import subprocess

import pytest

import plot
from base import catalogue, records
from harness import cli
from harness.declared import row_command
from tests.conftest import ROOT, needs_root
from tests.test_first_step import fresh_machine

SCRIPT = str(ROOT / "run_mptcp.sh")
TOY = {catalogue.EXTRA_ENV: "tests.toy"}


def script(*argv: str, user: str | None = None) -> subprocess.CompletedProcess:
    """run_mptcp.sh with the toy added, as this user or as nobody."""
    head = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"] if user else []
    return subprocess.run([*head, SCRIPT, *argv], capture_output=True, text=True, timeout=60,
                          env={**os.environ, **TOY, "PYTHONPATH": str(ROOT)})


@pytest.fixture
def toy(monkeypatch):
    monkeypatch.setenv(catalogue.EXTRA_ENV, "tests.toy")


def test_every_row_points_at_what_exists():
    for row in catalogue.rows().values():
        parser, config_from = row_command(row)
        assert callable(parser) and callable(config_from) and isinstance(row.load("config"), type)
        assert callable(row.load("traffic")), row.name
        assert row.source in catalogue.SOURCES, row.name
        assert row.records and all(r.endswith(records.RECORD) for r in row.records)


def test_the_toy_is_listed_helped_and_planned():
    listing = script("list")
    assert listing.returncode == 0, listing.stderr
    [line] = [ln for ln in listing.stdout.splitlines() if ln.startswith("toy ")]
    assert "counts to N" in line and line.split()[1:3] == ["no", "3"]
    helped = script("--help")
    assert helped.returncode == 0 and "run_mptcp.sh toy [options]" in helped.stdout
    planned = script("toy", "--count", "2", "--plan")
    assert planned.returncode == 0, planned.stderr
    assert "[1/2] 1" in planned.stdout and "[2/2] 2" in planned.stdout
    assert "estimate: 2 runs" in planned.stdout


def test_the_toys_bad_input_is_one_line_before_anything():
    done = script("toy", "--count", "9")
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == ["run_mptcp.sh: error: --count 9: must be within 1..5"]


def test_the_toy_runs_through_the_runner_into_records_and_report(toy, tmp_path, capsys):
    assert "toy" in cli.commands()
    assert cli.main(["toy", "--count", "3", "--results", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "[1/3] toy 1 (2 left" in out and "toy: 3 runs in" in out
    found = records.committed(tmp_path, catalogue.row("toy").records[0])
    assert [json.loads(p.read_text())["square"] for p in found] == [1, 4, 9]
    assert all(json.loads(p.read_text())["experiment"] == "toy" for p in found)
    assert (tmp_path / "plots" / "toy.png").stat().st_size > 0
    assert "squares: 1->1, 2->4, 3->9" in (tmp_path / "report.md").read_text()
    drawing = plot.draw_all(tmp_path)
    assert drawing.of("toy")["toy"] == {1: 1, 2: 4, 3: 9}


@needs_root
@pytest.mark.parametrize("name", [n for n in catalogue.ROWS])
def test_list_and_plan_need_no_root_and_no_packages(name):
    """As nobody, with Debian's Python packages and the venv hidden."""
    argv = "4" if name == "fattree" else name
    done = fresh_machine(f"./run_mptcp.sh {argv} --plan", user="65534")
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr
    assert done.stdout.startswith(f"plan: run_mptcp.sh {name}") and "estimate: " in done.stdout
    # A point reads as its values: no field that is not set, no object's repr.
    assert not re.search(r"\bNone\b|\w+\(\w+=", done.stdout), done.stdout
    lines = done.stdout.splitlines()
    assert max(map(len, lines)) <= 100, done.stdout
    results = [ln for ln in lines if ln.startswith("results: ")]
    assert len(results) == 1 and "<k>" not in results[0] or name == "flowlevel", results
    capacity = [ln for ln in lines if ln.startswith("capacity")]
    assert len(capacity) == (1 if catalogue.ROWS[name].machine else 0), done.stdout
    from harness.listing import unwrapped
    runs = [ln for ln in unwrapped(done.stdout) if ln.startswith("  [")]
    assert runs and all("Mb/s" in r for r in runs) or not catalogue.ROWS[name].machine, runs


@needs_root
def test_list_on_a_fresh_machine():
    done = fresh_machine("./run_mptcp.sh list", user="65534")
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr
    named = [ln.split()[0] for ln in done.stdout.splitlines() if ln and not ln[0].isspace()]
    assert set(catalogue.ROWS) <= set(named), done.stdout


@pytest.mark.parametrize("columns", [60, 80, 200])
def test_list_fits_the_terminal_and_under_100_columns_with_root_and_a_time_each(columns):
    from harness import listing
    lines = listing.table(columns)
    assert max(map(len, lines)) <= min(columns, listing.MAX_WIDTH)
    rows = {ln.split()[0]: ln.split()[1:4] for ln in lines[1:] if ln and not ln[0].isspace()}
    for name, row in catalogue.ROWS.items():
        root, runs, time = rows[name]
        assert root == ("yes" if row.machine else "no"), (name, root)
        assert time[0] == "~" or time.endswith("*"), (name, time)     # every row of ours has one


def test_the_readme_table_is_the_catalogue():
    text = (ROOT / "README.md").read_text()
    start = text.index("<!-- catalogue: ./run_mptcp.sh list --markdown -->\n")
    table = text[start:text.index("<!-- end of catalogue -->")].splitlines()[1:]
    from harness import listing
    assert table == listing.catalogue_markdown(), "README's table: ./run_mptcp.sh list --markdown"


@pytest.mark.parametrize("name", [n for n in catalogue.ROWS])
def test_a_pages_options_table_is_its_parsers(name):
    from harness import listing
    text = (ROOT / "docs" / "experiments" / f"{name}.md").read_text()
    where = listing.page_options(text)
    if where is None:           # the FatTree sweep's page explains its options at length
        assert name == "fattree"
        return
    table = text.splitlines()[where[0]:where[1]]
    assert table == listing.options_markdown(catalogue.row(name)), \
        "./run_mptcp.sh list --option-tables docs/experiments makes it again"
