"""The first command on a fresh machine: before bootstrap nothing but the
system Python's standard library exists, and every subcommand's input check
must still give one line and exit status 2 (or go on to set-up).

A fresh machine is imitated by hiding Debian's Python packages (and the
harness's venv) under empty tmpfs mounts in a private mount namespace."""
from __future__ import annotations

import glob
import os
import shlex
import subprocess

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
