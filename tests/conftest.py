"""Shared fixtures: root-only marks and a check that nothing was left behind."""
from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.leftovers import Snapshot  # noqa: E402

needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="builds network namespaces: needs root")


@pytest.fixture
def no_leftovers():
    """Fails the test if it leaves a namespace, root-namespace interface,
    qdisc or process in another network namespace behind."""
    before = Snapshot.take()
    yield
    after = Snapshot.wait_clean(before, timeout=10)
    assert after.new_since(before) == {}, f"left behind: {after.new_since(before)}"


@pytest.fixture
def awake():
    """vCPUs kept from idling while a test measures a rate or a delay on the
    wire (harness/keepawake.py says why); not for tests that measure CPU."""
    from harness.keepawake import KeepAwake
    with KeepAwake() as keeper:
        yield keeper
