"""The first command on a fresh machine: before bootstrap nothing but the
system Python's standard library exists, and every subcommand's input check
must still give one line and exit status 2 (or go on to set-up).

A fresh machine is imitated by hiding Debian's Python packages (and the
harness's venv) under empty tmpfs mounts in a private mount namespace."""
from __future__ import annotations

import glob
import os
import shlex
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

from harness.cli import SUBCOMMANDS
from tests.conftest import ROOT, needs_root

pytestmark = needs_root
HIDDEN = ["/usr/lib/python3/dist-packages", *glob.glob("/usr/local/lib/python3*/dist-packages"),
          str(ROOT / ".venv")]


def fresh_machine(command: str, user: str | None = None) -> subprocess.CompletedProcess:
    """Run `command` from the checkout with no Python package but the standard library."""
    mounts = " && ".join(f"mount -t tmpfs none {shlex.quote(d)}" for d in HIDDEN if os.path.isdir(d))
    if user:
        command = f"setpriv --reuid={user} --regid={user} --clear-groups {command}"
    return subprocess.run(["unshare", "-m", "bash", "-c", f"{mounts} && cd {ROOT} && {command}"],
                          capture_output=True, text=True, timeout=60)


def test_nothing_is_importable_in_the_imitation():
    done = fresh_machine("/usr/bin/python3 -c 'import mininet'")
    assert done.returncode == 1 and "No module named 'mininet'" in done.stderr


# Every subcommand of the registry with its defaults, and a few with options.
SUBCOMMAND_CHECKS = [*SUBCOMMANDS, "4", "4 all --subflows 1,8 --fabric openflow", "hotspot --k 6",
                     "oversub --k 6", "--cc reno wifi3g"]


@pytest.mark.parametrize("sub", SUBCOMMAND_CHECKS)
def test_every_subcommand_checks_its_input_with_the_standard_library_only(sub):
    done = fresh_machine(f"PYTHONPATH={ROOT} /usr/bin/python3 -m harness.cli --validate-only {sub}")
    assert done.returncode == 0, done.stderr


@pytest.mark.parametrize("argv,words", [("3", "even number"), ("wifi3g --sweeps nosuch", "unknown sweep"),
                                        ("dhft --loads nan", "finite"), ("algorithms --k 5", "FatTree(4)"),
                                        ("oversub --k 10", "k=4, 6 or 8"),
                                        ("hotspot --time 9", "at least 15 s"), ("4 --bw inf", "finite")])
def test_bad_input_on_a_fresh_machine_is_one_line(argv, words):
    done = fresh_machine(f"./run_mptcp.sh {argv}")
    lines = done.stderr.strip().splitlines()
    assert done.returncode == 2 and len(lines) == 1 and words in lines[0], done.stderr


def test_a_user_reaches_the_root_check_on_a_fresh_machine():
    done = fresh_machine("./run_mptcp.sh 4", user="65534")
    assert done.returncode == 2, done.stderr
    assert done.stderr.strip().splitlines() == [
        "run_mptcp.sh: error: must be run as root (it builds network namespaces): try sudo"]


def test_plot_without_its_packages_says_how_to_set_up():
    done = fresh_machine("./plot.py results")
    lines = done.stderr.strip().splitlines()
    assert done.returncode == 2 and len(lines) == 1 and "bootstrap.sh" in lines[0], done.stderr


def test_no_argument_prints_the_usage_in_one_line_and_installs_nothing():
    done = fresh_machine("./run_mptcp.sh")
    lines = done.stderr.strip().splitlines()
    assert done.returncode == 2 and len(lines) == 1 and lines[0].startswith("usage: run_mptcp.sh K"), done.stderr
    assert done.stdout == "", done.stdout           # no bootstrap line: nothing was installed


@pytest.mark.parametrize("sub", ["flowlevel", "model"])
def test_a_computed_experiment_before_set_up_says_what_to_run_first(sub):
    done = fresh_machine(f"./run_mptcp.sh {sub}", user="65534")
    lines = done.stderr.strip().splitlines()
    assert done.returncode == 2 and len(lines) == 1 and "sudo ./bootstrap.sh" in lines[0], done.stderr


@pytest.mark.parametrize("argv,figure", [("flowlevel --k 8 --seeds 0", "flowlevel-fig2.png"),
                                         ("model", "fattree-subflow-model.png")])
def test_a_computed_experiment_runs_as_a_user_once_set_up(argv, figure):
    tmp_path = Path(tempfile.mkdtemp(prefix="user-run-"))      # pytest's own are root's alone
    tmp_path.chmod(0o777)
    user = "setpriv --reuid=65534 --regid=65534 --clear-groups"
    done = subprocess.run(f"cd {ROOT} && {user} env HOME={tmp_path} ./run_mptcp.sh {argv} "
                          f"--results {tmp_path}/r", shell=True, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    try:
        assert (tmp_path / "r" / "plots" / figure).stat().st_uid == 65534
    finally:
        shutil.rmtree(tmp_path)


def test_a_folder_a_user_may_not_look_into_is_refused_in_one_line():
    hidden = Path(tempfile.mkdtemp(prefix="root-only-"))       # 0700, root's
    try:
        done = subprocess.run(f"cd {ROOT} && setpriv --reuid=65534 --regid=65534 --clear-groups "
                              f"env HOME=/tmp ./run_mptcp.sh model --results {hidden}/r", shell=True,
                              capture_output=True, text=True, timeout=60)
    finally:
        hidden.rmdir()
    assert "Traceback" not in done.stderr
    lines = done.stderr.strip().splitlines()
    assert done.returncode == 2 and len(lines) == 1, done.stderr
