"""One experiment per machine at a time: a second run is refused in one line
naming the first; a killed run's lock is taken over."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys

import pytest

from base.lock import LOCK_PATH, ExperimentLock, ExperimentLockHeld
from tests.conftest import ROOT, needs_root

HOLDER = """
import sys, time
sys.path.insert(0, {root!r})
from base.lock import ExperimentLock
ExperimentLock({path!r}).acquire("run_mptcp.sh 4 --cc reno")
print("held", flush=True)
time.sleep(120)
"""


def hold(path) -> subprocess.Popen:
    proc = subprocess.Popen([sys.executable, "-c", HOLDER.format(root=str(ROOT), path=str(path))],
                            stdout=subprocess.PIPE, text=True)
    assert proc.stdout.readline().strip() == "held"
    return proc


def kill9(proc: subprocess.Popen) -> None:
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=10)


def test_a_second_holder_is_refused_with_the_first_named(tmp_path):
    path = tmp_path / "lock"
    first = hold(path)
    try:
        with pytest.raises(ExperimentLockHeld, match=rf"PID {first.pid}: run_mptcp.sh 4 --cc reno"):
            ExperimentLock(path).acquire("run_mptcp.sh 4")
    finally:
        kill9(first)
    # SIGKILL gave it no chance to let go: the kernel did, and the file still names it.
    assert json.loads(path.read_text())["pid"] == first.pid
    lock = ExperimentLock(path)
    note = lock.acquire("run_mptcp.sh 4")
    assert f"PID {first.pid}" in note and "killed" in note
    lock.release()
    assert path.read_text() == ""
    again = ExperimentLock(path)
    assert again.acquire("run_mptcp.sh 4") == ""     # a run that ended normally leaves nothing stale
    again.release()


@needs_root
def test_the_script_refuses_a_second_experiment(tmp_path):
    first = hold(LOCK_PATH)
    try:
        done = subprocess.run([str(ROOT / "run_mptcp.sh"), "4", "--cc", "reno", "--results", str(tmp_path)],
                              capture_output=True, text=True, timeout=120)
    finally:
        kill9(first)
        cleared = ExperimentLock()      # leave no killed holder's name for the next run to report
        cleared.acquire("tests/test_lock.py")
        cleared.release()
    lines = done.stderr.strip().splitlines()
    assert done.returncode == 2 and len(lines) == 1, done.stderr
    assert f"another experiment is running on this machine (PID {first.pid}: run_mptcp.sh 4 --cc reno)" in lines[0]
    assert list(tmp_path.iterdir()) == []
    assert not os.path.exists(tmp_path / "ft4")
