"""`-m guest` imports only the modules that hold guest-marked tests
(conftest.pytest_ignore_collect): it must select the same tests as
collecting every module and deselecting by mark."""
from __future__ import annotations

import os
import subprocess
import sys

from tests.conftest import ROOT


def collected(extra_env: dict[str, str]) -> list[str]:
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                           "--collect-only", "-m", "guest", "tests"],
                          cwd=ROOT, env={**os.environ, **extra_env}, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    return sorted(line for line in done.stdout.splitlines() if "::" in line)


def test_guest_selection_skips_no_guest_test():
    every_module = collected({"HARNESS_COLLECT_ALL": "1"})
    assert every_module, "no guest-marked test collected at all"
    assert collected({}) == every_module
