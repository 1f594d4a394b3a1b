"""Shared fixtures: root-only marks and a check that nothing was left behind."""
from __future__ import annotations

import contextlib
import os
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

# No test reads what an earlier run left in the machine's calibration cache
# (/var/cache/mptcp-dc-harness): the suite points it at a cache of its own,
# holding the calibration _set_suite_calibration sets, and removes it at the end.
# Set before experiments.capacity is imported, and inherited by run_mptcp.sh.
# Named, not created: the cache makes its folder when something calibrates, so
# importing this module (or a suite stopped before its end) leaves no empty
# folder behind; the random part keeps an earlier suite's folder from being read.
SUITE_CACHE = Path(tempfile.gettempdir()) / f"mptcp-test-cache-{os.getpid()}-{secrets.token_hex(4)}"
os.environ["MPTCP_HARNESS_CACHE"] = str(SUITE_CACHE)


# The capacity guard's calibration every run of the suite reads, unless a
# test sets its own (set_guard_calibration): the upper end of this machine
# class's quiet measurements (docs/capacity-guard.md). A run would
# otherwise measure one (a minute), and again each time under the suite's load.
SUITE_GUARD_COST = 1.38


def _set_suite_calibration() -> None:
    from experiments import capacity
    from experiments.config.common import SWEEP_FABRICS
    for fabric in SWEEP_FABRICS:
        capacity.save(capacity.Calibration(fabric=fabric, machine=capacity.machine(),
                                           core_s_per_gbit_hop=SUITE_GUARD_COST, idle_pct=0.0,
                                           measured={"set_by": "tests/conftest.py"}))


def pytest_sessionfinish(session, exitstatus):
    shutil.rmtree(SUITE_CACHE, ignore_errors=True)


# -- which test's network left a coupled algorithm in the kernel -------------
# A TCP socket that outlives its namespace keeps its BPF congestion control's
# struct_ops map in the kernel, unregistered, for hours (docs/cleanup.md).
# No test fails for it (nothing of ours can free it, and a test
# that looks right after its own network may miss a socket freed late), but
# the suite's summary names the test during which each such map was loaded,
# so that a leak can be traced to the runs that made it.
_COUPLED_AT_START: dict[int, str] = {}
_COUPLED_FIRST_SEEN: dict[int, str] = {}


def _coupled_maps_now() -> dict[int, str]:
    """Our algorithms' struct_ops maps in the kernel: id -> name (bpftool, ~10 ms)."""
    from base.procs import CommandError
    from kernel.coupled_cc import COUPLED, loaded_maps
    try:
        return {i: name for i, name in loaded_maps().items() if name in COUPLED}
    except (CommandError, OSError, ValueError):
        return {}


def pytest_sessionstart(session):
    _set_suite_calibration()
    if os.geteuid() == 0:
        _COUPLED_AT_START.update(_coupled_maps_now())


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    yield
    if os.geteuid() == 0:
        for map_id in _coupled_maps_now():
            _COUPLED_FIRST_SEEN.setdefault(map_id, item.nodeid)


def pytest_terminal_summary(terminalreporter):
    if os.geteuid() != 0:
        return
    deadline = time.monotonic() + 3       # the kernel frees them deferred, within about a second
    while (left := {i: n for i, n in _coupled_maps_now().items() if i not in _COUPLED_AT_START}) \
            and time.monotonic() < deadline:
        time.sleep(0.5)
    if left:
        terminalreporter.write_line(
            f"kernel: {len(left)} coupled congestion control map(s) outlived this suite's networks, "
            "held by TCP sockets that outlived their namespaces: " + "; ".join(
                f"{name} (map {i}, loaded by the end of {_COUPLED_FIRST_SEEN.get(i, '?')})"
                for i, name in sorted(left.items())))

from tests.leftovers import Snapshot  # noqa: E402

needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="builds network namespaces: needs root")


def pytest_configure(config):
    config.addinivalue_line(
        "markers", "guest: a path that stock distribution kernels take (sch_netem, Open vSwitch's "
        "kernel datapath, the coupled algorithms' kfunc); run them in guests with "
        "`sudo ./guest/run.sh debian12 -- ./run_tests.sh -m guest` (guest/README.md)")


# What marks a test `guest`, in a module's text: the mark itself or
# stock_kernel_path() below. tests/test_guest_selection.py checks that the
# modules these find are every module with a guest-marked test.
GUEST_MARKERS = ("mark.guest", "stock_kernel_path(")


def pytest_ignore_collect(collection_path, config):
    """With `-m guest`, a test module that marks nothing `guest` is not
    imported. Why: collecting all of tests/ imports matplotlib, and every
    module's assertions are rewritten: in a Debian 13 guest under full
    emulation 47.5 s, against 6.0 s for the modules with guest tests
    for tests that are then deselected.
    HARNESS_COLLECT_ALL=1 collects every module."""
    if config.getoption("markexpr", "") != "guest" or os.environ.get("HARNESS_COLLECT_ALL") \
            or collection_path.suffix != ".py" or not collection_path.name.startswith("test_"):
        return None
    text = collection_path.read_text()
    return None if any(marker in text for marker in GUEST_MARKERS) else True


# In a guest under full emulation (qemu TCG, guest/README.md) the network runs
# at about 1/20 of the host's speed, and a round trip gains 1-2 ms of the
# emulator's own time (a 10 ms netem link measured 11.5 ms). Tests that
# measure rates scale them down there, and delay tests allow that much more.
FULL_EMULATION = os.environ.get("HARNESS_GUEST_ACCEL") == "tcg"
EMULATION_RTT_SLACK_MS = 2.0 if FULL_EMULATION else 0.0


def kernel_has(feature: str) -> bool:
    """The harness's own checks of what a stock kernel adds."""
    from experiments.config import coupled_cc_supported
    from base.platform import netem_available
    return {"netem": netem_available, "kfunc": coupled_cc_supported}[feature]()


def stock_kernel_path(feature: str):
    """Marks for a test (or a parameter) of a path only stock kernels take:
    `guest`, and a skip that says where to run it on a kernel without it."""
    from experiments.config import COUPLED_CC_KFUNC
    why = {"netem": "this kernel has no sch_netem",
           "kfunc": f"this kernel lacks the {COUPLED_CC_KFUNC} kfunc"}[feature]
    return [pytest.mark.guest,
            pytest.mark.skipif(not kernel_has(feature),
                               reason=f"{why}: run it in a guest (guest/README.md)")]


@pytest.fixture
def no_leftovers():
    """Fails the test if it leaves a namespace, root-namespace interface,
    qdisc or process in another network namespace behind."""
    with nothing_left_behind():
        yield


@contextlib.contextmanager
def nothing_left_behind():
    """no_leftovers around any block, e.g. a module fixture's network."""
    before = Snapshot.take()
    yield
    after = Snapshot.wait_clean(before, timeout=10)
    assert after.new_since(before) == {}, f"left behind: {after.new_since(before)}"


@pytest.fixture
def awake():
    """vCPUs kept from idling while a test measures a rate or a delay on the
    wire (emulator/keepawake.py says why); not for tests that measure CPU."""
    from emulator.keepawake import KeepAwake
    with KeepAwake() as keeper:
        yield keeper


def interrupt_after_first_run(argv: list[str], first: Path, settle_s: float,
                              act=None, wait_s: float = 60) -> tuple[int, str, bytes]:
    """Start `argv` (run_mptcp.sh ...), wait until its first run.json `first`
    exists, let the next run's traffic go for `settle_s`, then Ctrl-C it (or
    call `act()`) and wait up to `wait_s` for it to end.
    Returns (exit status, stderr, `first` as it was before)."""
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 120
        while not first.exists() and time.monotonic() < deadline and proc.poll() is None:
            time.sleep(0.2)
        assert first.exists(), "the first run never finished"
        kept = first.read_bytes()
        time.sleep(settle_s)
        act() if act else proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=wait_s)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=10)
    return proc.returncode, err, kept


@contextlib.contextmanager
def opened_sweep(cfg, say=lambda *_: None):
    """A FatTree sweep's network, started for a test module and stopped after it."""
    from experiments.fattree import Sweep   # here: most test modules build no sweep
    sweep = Sweep(cfg, say=say)
    try:
        sweep.open()
        yield sweep
    finally:
        sweep.close()


def set_guard_calibration(monkeypatch, cache: Path, cost: float, set_by: str,
                          fabric: str = "l3") -> None:
    """The capacity guard reads a calibration a test sets (`cost` core-s per
    Gbit-hop delivered, no run measured) from a cache of its own, here and
    in the run_mptcp.sh it starts, instead of measuring one: for tests whose
    subject is not the guard's measurement (tests/test_capacity.py's)."""
    from experiments import capacity
    monkeypatch.setattr(capacity.cache, "CACHE_DIR", cache)
    capacity.save(capacity.Calibration(fabric=fabric, machine=capacity.machine(),
                                       core_s_per_gbit_hop=cost, idle_pct=0.0,
                                       measured={"set_by": set_by}))
    monkeypatch.setenv("MPTCP_HARNESS_CACHE", str(cache))
