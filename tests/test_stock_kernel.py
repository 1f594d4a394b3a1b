"""What a stock distribution kernel changes, on the kernel the suite runs on.

Debian's and Ubuntu's kernels have sch_netem and the openvswitch module, and
Debian 12's 6.1 lacks the kfunc the coupled algorithms need. The tests of
those paths are marked `guest` (test_links, test_delay, test_fattree_net,
test_coupled_cc, and the ones here) and run in qemu guests booted
with Debian's own kernels. Where the kernel has the kfunc (6.2 and later),
test_coupled_cc.py's `ss -ti` test shows the algorithms on the subflows;
where it lacks it, the test here shows the refusal and the fallback:

    sudo ./guest/run.sh debian12 -- ./run_tests.sh -m guest

The main command end to end at a rate a fully emulated guest carries runs
only in a guest; on the host, tests/test_sweep.py runs it at the default rate.
"""
from __future__ import annotations

import json
import os
import subprocess

import pytest

from harness.options import config_from_args
from experiments.config import COUPLED_CC_KFUNC as KFUNC
from tests.conftest import ROOT, kernel_has, needs_root, set_guard_calibration

SCRIPT = str(ROOT / "run_mptcp.sh")
IN_GUEST = os.environ.get("HARNESS_GUEST", "")


@pytest.mark.guest
@pytest.mark.skipif(kernel_has("kfunc"), reason=f"this kernel has {KFUNC}: the coupled "
                    "algorithms load (tests/test_coupled_cc.py)")
def test_without_the_kfunc_lia_is_refused_in_one_line_and_the_default_falls_back():
    cfg, _ = config_from_args(["4"])
    assert cfg.cc == "reno" and KFUNC in cfg.cc_note, (cfg.cc, cfg.cc_note)
    done = subprocess.run([SCRIPT, "4", "--cc", "lia"], capture_output=True, text=True, timeout=60)
    lines = done.stderr.strip().splitlines()
    assert done.returncode == 2 and len(lines) == 1, done.stderr
    assert KFUNC in lines[0] and "--cc reno" in lines[0], lines[0]


@needs_root
@pytest.mark.guest
@pytest.mark.skipif(not IN_GUEST, reason="guest-sized main command: runs in guests only "
                    "(tests/test_sweep.py runs it on the host)")
def test_the_main_command_at_a_guest_sized_rate(tmp_path, tmp_path_factory, monkeypatch,
                                                no_leftovers):
    """README's main command, FatTree(4) with TCP and MPTCP-8, at 2 Mb/s with
    25-packet queues: no run flagged (but for the guard's over_capacity,
    see below), every flow carried, every connection
    with its subflows. Fidelity (MPTCP-8 against TCP) is measured on the
    host, not here; so are the figures (tests/test_sweep.py, test_plot.py):
    --no-plots, because under full emulation drawing the five figures took
    longer than both runs (Debian 12 guest: 116 s against
    86 s), and matplotlib is the venv's own wheel, the same on every kernel.

    At 1 Mb/s with 100-packet queues (1.2 s per hop) a 6.12 guest started
    flows 1-14 s late (SYNs behind full queues meet their 1 s timer), one
    MPTCP connection fell back to TCP and one carried nothing: the start-up
    problem of FatTree(8) at 1 Mb/s on the host, here at k=4."""
    # --force: the capacity guard's calibration under full emulation swings
    # with the host's load (14.58 core-s per Gbit-hop in one CI run, which
    # refused 2 Mb/s; earlier runs approved it and ran valid). What this test
    # checks is the stock kernel's paths, so only the guard's own flag is let
    # through below, and the guard reads a calibration set here (that CI
    # run's 14.58) instead of measuring one: three more MPTCP-8 runs under
    # full emulation that show nothing of the stock kernel. The calibration
    # itself is tests/test_capacity.py's, on the host.
    set_guard_calibration(monkeypatch, tmp_path_factory.mktemp("guard-cache"), 14.58,
                          "tests/test_stock_kernel.py", fabric=config_from_args(["4"])[0].fabric)
    # --warmup 10 --time 20, not the default 20 + 10 at 2 Mb/s: the same 30 s
    # of traffic, with twice the window in which every flow must carry. In
    # the CI of ef82059 one flow carried nothing in 10 s (which one was cut
    # from the log); in two runs by hand in the same guest (stop 31) the TCP
    # run's slowest flow carried 0.17 and 0.31 Mb/s (a second at 0.00),
    # where MPTCP-8's slowest carried 0.89 and 0.97.
    done = subprocess.run([SCRIPT, "4", "one_to_one", "--subflows", "1,8", "--bw", "2",
                           "--queue", "25", "--warmup", "10", "--time", "20", "--force",
                           "--no-plots", "--results", str(tmp_path)],
                          capture_output=True, text=True, timeout=1500)
    assert done.returncode == 0, (done.stdout[-3000:], done.stderr[-3000:])
    assert "calibrating" not in done.stdout and "over_capacity" in done.stdout, done.stdout[:2000]
    for n in (1, 8):
        rec = json.loads((tmp_path / "ft4" / "one_to_one" / f"flows{n}" / "run.json").read_text())
        assert len(rec["flows"]) == 16
        assert all(f["goodput_mbps"] > 0 for f in rec["flows"]), f"flows{n}:\n{_flow_table(rec)}"
        assert all(f["subflows_established"] == n for f in rec["flows"]), \
            [f["subflows_established"] for f in rec["flows"]]
        errors = {f"{f['src']}->{f['dst']}": f["error"] for f in rec["flows"] if f["error"]}
        print(f"flows{n}: flags {rec['flags']}, flow errors {errors}")
        assert set(rec["flags"]) <= GUEST_ALLOWED_FLAGS, (n, rec["flags"], errors, rec.get("health"),
                                                          rec["cpu_mean_pct"])
    assert "figures not drawn (--no-plots)" in done.stdout and not (tmp_path / "plots").exists()


# The flags the guest's own machine can raise on a correct run: the guard's
# over_capacity (--force, above), and cpu_saturated. Under full emulation the
# guest's two vCPUs run at the host's TCG speed: on an AMD EPYC host where the
# Debian 12 guest suite took 1040 s (596 s on the machine this rate was chosen
# on), the TCP run of this command averaged 89 % CPU and was flagged, with
# every flow carrying on its one subflow. The flag is the record
# being honest about the emulator, not a fault of the stock kernel's paths
# that this test is about; every other flag still fails it. So is
# clients_started_late: at the emulator's pace starting 16 clients has taken
# 7.1 s (tests/test_openflow_controller.py), near this command's 10 s warm-up.
# So is handshake_failed (a flow's iperf3 reported an error) once every flow
# has carried with all its subflows, as asserted before it: CI saw it once on
# Debian 13 in the MPTCP-8 run with all 16 flows carrying on 8 subflows each,
# the stock kernel's paths intact. The errors' text is printed.
GUEST_ALLOWED_FLAGS = {"over_capacity", "cpu_saturated", "clients_started_late", "handshake_failed"}


def _flow_table(rec: dict) -> str:
    """One line per flow, as a string: pytest prints a string message whole,
    where it cut the repr of the records after the first two (CI of ef82059)."""
    return "\n".join(
        f"{f['src']}->{f['dst']} {f['goodput_mbps']:.3f} Mb/s, whole run {f['whole_run_mbps']:.3f}, "
        f"first data {f['first_data_s']}, subflows {f['subflows_established']}, error {f['error']}"
        for f in rec["flows"]) + f"\nflags {rec['flags']}, startup {rec.get('startup')}"
