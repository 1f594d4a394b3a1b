"""Every input a user can type: generated bad values for every option and
positional of every subcommand get one line on stderr and exit status 2,
with nothing started or written. The values are bad for any option (not a
number, not finite, out of any range, empty), so a pass cannot be an accident
of the value drawn.

The check is the CLI's own (`harness.cli.main` with --validate-only, what
run_mptcp.sh runs with the system Python before anything is installed); a
sample goes through the real script too."""
from __future__ import annotations

import argparse
import contextlib
import io
import subprocess

import pytest

from harness import cli
from tests.conftest import ROOT, needs_root
from tests.leftovers import Snapshot
from tests.test_cli import tree_digest

SCRIPT = str(ROOT / "run_mptcp.sh")
# Bad for every option that takes a value (--results aside: a folder name can be anything).
BAD_VALUES = ("nan", "inf", "-inf", "", "1e999", "-99999999999999999999",
              "99999999999999999999", "x1")
# (argv before the option, its parser): every experiment of the catalogue.
SUBCOMMANDS = {name: (["4"] if name == "fattree" else [name], command.parser())
               for name, command in cli.COMMANDS.items() if name}


def value_options(p: argparse.ArgumentParser) -> list[str]:
    return [a.option_strings[-1] for a in p._actions
            if a.option_strings and a.nargs is None and not isinstance(a, argparse._StoreConstAction)
            and a.dest != "results"]


# Options whose value is a rate or a share of one: zero is bad too (a zero
# link rate once reached a division before it was checked).
RATE_OPTIONS = ("--bw", "--factor")


def cases() -> list[tuple[str, list[str]]]:
    out = []
    for name, (head, p) in SUBCOMMANDS.items():
        for opt in value_options(p):
            bad = BAD_VALUES + (("0", "0.0", "-0") if opt in RATE_OPTIONS else ())
            out += [(f"{name} {opt}={v!r}", [*head, opt, v]) for v in bad]
    out += [(f"fattree k={v!r}", [v]) for v in (*BAD_VALUES, "3", "0", "18", "-4")]
    out += [(f"fattree workload={v!r}", ["4", v]) for v in ("nan", "", "one-to-one")]
    return out


def results_cases(tmp_path) -> list[tuple[str, list[str]]]:
    a_file = tmp_path / "a-file"
    a_file.write_text("not a folder\n")
    return [(f"{name} --results={bad}", [*head, "--results", bad])
            for name, (head, _) in SUBCOMMANDS.items()
            for bad in (str(a_file), str(a_file / "below"), "")]


def validate(argv: list[str]) -> tuple[int, str]:
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        try:
            status = cli.main(["--validate-only", *argv])
        except SystemExit as exc:    # argparse's --help only; anything else is a bug
            status = exc.code
    return status, err.getvalue()


def test_every_bad_value_of_every_option_is_refused_in_one_line(tmp_path):
    before = Snapshot.take()
    all_cases = cases() + results_cases(tmp_path)
    digest = tree_digest(tmp_path)
    assert len(all_cases) > 400
    wrong = []
    for label, argv in all_cases:
        status, err = validate(argv)
        lines = err.strip().splitlines()
        if status != 2 or len(lines) != 1 or not lines[0].startswith("run_mptcp.sh: error: "):
            wrong.append((label, status, lines[:3]))
    assert wrong == [], wrong[:10]
    assert tree_digest(tmp_path) == digest
    assert Snapshot.take().new_since(before) == {}


@pytest.mark.parametrize("argv,words", [
    (["4", "--subflows", "1-999999999999"], "within 1..8"),
    (["dhft", "--loads", "nan"], "finite"),
    (["wifi3g", "--sweeps", ""], "at least one"),
    (["wifi3g", "--buffers", ""], "at least one value"),
    (["dhft", "--hosts-per-rack", "0"], "2..16"),
    (["oversub", "--matrices", "uniform"], "unknown matrix"),
    (["oversub", "--loads", "16"], "connections per host"),
    (["topologies", "--topologies", "jellyfish"], "unknown topology"),
    (["provisioned", "--paths", "a1-b2,a2-b2,a1-a2-b2,a2-a1-b1"], "path 1 a1-b2: no link a1-b2"),
    (["topologies", "--subflows", "9"], "within 1..8"),
    (["topologies", "--fabric", "openflow"], "l3 fabric"),
    (["4", "--seed", "-1"], "--seed -1"),
    (["filesize", "--sizes", "0,10"], "1..100000 packets"),
    (["filesize", "--schemes", "udp"], "unknown scheme"),
    (["shortflows", "--long-share", "1"], "fraction of the hosts"),
    (["shortflows", "--file-interval", "0.05"], "client port each"),
    (["transfers", "--receivers", "9"], "1..8"),
    (["manytoone", "--n", "4", "--levels", "2"], "576 flows"),
    (["manytoone", "--cc", "lia,cubic"], "unknown congestion control"),
    (["scheduling", "--fabric", "l3"], "runs on openflow-reactive"),
    (["scheduling", "--schedule-interval", "0.01,1"], "every 0.05..60 s"),
    (["scheduling", "--schemes", ""], "at least one"),
    (["scheduling", "--dilation", "20"], "5: first fit runs every 0.05..60 s (times --dilation 20)"),
])
def test_the_script_refuses_them_too(argv, words, tmp_path):
    done = subprocess.run([SCRIPT, *argv], capture_output=True, text=True, timeout=60, cwd=tmp_path)
    lines = done.stderr.strip().splitlines()
    assert done.returncode == 2 and len(lines) == 1 and words in lines[0], (done.returncode, lines)
    assert list(tmp_path.iterdir()) == []


def test_an_option_before_the_subcommand_goes_to_the_subcommand():
    assert cli.split_subcommand(["--cc", "reno", "wifi3g"]) == ("wifi3g", ["--cc", "reno"])
    assert cli.split_subcommand(["--results", "dhft", "4"]) == (None, ["--results", "dhft", "4"])
    assert cli.split_subcommand(["dhft", "--k", "8"]) == ("dhft", ["--k", "8"])
    cfg, _ = cli.COMMANDS["wifi3g"].config_from(["--cc", "reno"])
    assert cfg.cc == "reno"
    assert validate(["--cc", "reno", "wifi3g"]) == (0, "")


@needs_root
def test_a_results_folder_that_cannot_be_written_is_refused_before_anything_starts(tmp_path):
    """/proc/nope passes every check a path can take without writing; the
    check as root (a probe file) refuses it, before any network exists."""
    before = Snapshot.take()
    done = subprocess.run([SCRIPT, "4", "--cc", "reno", "--results", "/proc/nope"],
                          capture_output=True, text=True, timeout=120)
    lines = done.stderr.strip().splitlines()
    assert done.returncode == 2 and len(lines) == 1 and "cannot write there" in lines[0], lines
    assert "Traceback" not in done.stdout + done.stderr
    assert Snapshot.take().new_since(before) == {}
