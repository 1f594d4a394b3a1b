"""Bad input: one line on stderr, exit status 2, nothing started, results
untouched. Runs the real script, as root and as an unprivileged user."""
import hashlib
import os
import subprocess
from pathlib import Path

import pytest

from harness import cli
from harness.options import config_from_args, parse_subflows
from experiments import config
from experiments.config import ConfigError
from kernel import preflight
from tests.conftest import ROOT, needs_root
from tests.leftovers import Snapshot

SCRIPT = str(ROOT / "run_mptcp.sh")


def tree_digest(path: Path) -> str:
    h = hashlib.sha256()
    for p in sorted(path.rglob("*")):
        h.update(str(p).encode())
        if p.is_file():
            h.update(p.read_bytes())
    return h.hexdigest()


@pytest.fixture
def existing_results(tmp_path):
    run = tmp_path / "ft4" / "one_to_one" / "flows1"
    run.mkdir(parents=True)
    (run / "run.json").write_text('{"valid": true}\n')
    os.chmod(tmp_path, 0o777)
    return tmp_path


BAD = [
    (["3"], "even"),
    (["4", "--subflows", "9"], "1..8"),
    (["4", "nosuchload"], "unknown workload"),
    (["4", "--subflows", "0"], "1..8"),
    (["x"], "arity"),
    (["4", "--fabric", "nosuch"], "unknown fabric"),
    (["4", "--cc", "nosuch"], "congestion control"),
    (["4", "--bw", "-1"], "link rate"),
    (["4", "--bw", "0"], "link rate"),   # the default run length divides by it
    (["4", "--frobnicate"], "unrecognized"),
    (["8", "all_to_all"], "capped"),
    (["wifi3g", "--sweeps", "buffer,nosuch"], "unknown sweep"),
    (["wifi3g", "--buffers", "100,2"], "receive buffer 2 KB"),
    (["wifi3g", "--losses", "100"], "loss 100.0 %"),
    (["wifi3g", "--rtts", "1,abc"], "comma list"),
    (["wifi3g", "--samples", "0"], "--samples 0"),
    (["wifi3g", "--cc", "nosuch"], "congestion control"),
    (["dhft", "--k", "6"], "divisible by 4"),
    (["dhft", "--subflows", "9"], "2..8"),
    (["dhft", "--subflows", "1"], "at least one per interface"),
    (["dhft", "--localities", "0.95"], "cannot all send outside their rack"),
    (["dhft", "--localities", "1.5"], "within 0..1"),
    (["dhft", "--loads", "40"], "connections per host"),
    (["dhft", "--sweeps", "nosuch"], "unknown sweep"),
    (["dhft", "--fabric", "nosuch"], "unknown fabric"),
    (["algorithms", "--cc", "lia,nosuch"], "unknown congestion control"),
    (["algorithms", "--subflows", "9"], "2..8"),
    (["algorithms", "--k", "5"], "FatTree(4)"),
    (["hotspot", "--factor", "0"], "share of its rate"),
    (["hotspot", "--time", "9"], "at least 15 s"),
    (["linkfailure", "--k", "6"], "DHFT needs k divisible by 4"),
    (["linkfailure", "--schemes", "tcp_dhft,tcp_perfect"], "unknown scheme"),
    (["linkfailure", "--factor", "1"], "share of its rate"),
    (["linkfailure", "--time", "12"], "at least 15 s"),
]


@pytest.mark.parametrize("argv,words", BAD)
def test_bad_input_is_rejected_before_anything_starts(argv, words, existing_results):
    before = Snapshot.take()
    digest = tree_digest(existing_results)
    done = subprocess.run([SCRIPT, *argv, "--results", str(existing_results)],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 2, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and words in lines[0], lines
    assert tree_digest(existing_results) == digest
    assert Snapshot.take().new_since(before) == {}


@needs_root
def test_non_root_user_is_refused(existing_results):
    digest = tree_digest(existing_results)
    done = subprocess.run(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups",
                           SCRIPT, "4", "--results", str(existing_results)],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [
        "run_mptcp.sh: error: must be run as root (it builds network namespaces): try sudo"]
    assert tree_digest(existing_results) == digest


def test_kernel_without_mptcp_is_refused(tmp_path):
    with pytest.raises(preflight.PreflightError, match="no MPTCP"):
        preflight.check_mptcp(tmp_path)


def test_missing_binary_is_named():
    with pytest.raises(preflight.PreflightError, match="no-such-tool.*Debian package nowhere"):
        preflight.check_binaries({"no-such-tool": "nowhere", "sh": "dash"})


def test_defaults_and_lists():
    cfg, _ = config_from_args(["4"])
    assert cfg.workloads == ("one_to_one",) and cfg.subflows == tuple(range(1, 9))
    assert cfg.cc == ("lia" if config.coupled_cc_supported() else "reno") and cfg.fabric == "l3"
    assert parse_subflows("1,4-6,8") == (1, 4, 5, 6, 8)
    cfg, _ = config_from_args(["4", "all", "--subflows", "1,8"])
    assert cfg.workloads == ("one_to_one", "one_to_several", "all_to_all")
    with pytest.raises(ConfigError):
        config_from_args(["4", "--subflows", "a"])


@pytest.mark.parametrize("bw, counted, cap", [
    (10, 40, 20), (100, 40, 20), (20, 40, 20), (5, 80, 40), (2, 120, 100), (1, 120, 200), (0.5, 120, 300)])
def test_run_length_scales_with_round_trips_below_10mbps(bw, counted, cap):
    """Queues are in packets, so a round trip lasts 10/bw times as long as at
    10 Mb/s: the default window and the levelled warm-up's cap grow by that,
    up to their caps, and the run says so; given lengths are kept as given."""
    cfg, args = config_from_args(["4", "--bw", str(bw)])
    assert (cfg.counted, cfg.warmup, cfg.levelled) == (counted, cap, True)
    assert {(rc.time_s, rc.warmup_s, rc.warmup_levelled) for rc in cfg.runs()} == {(counted, cap, True)}
    [note] = [n for n in cli._notes(cfg, args) if n.startswith("run length")]
    assert f"{counted:g} s counted after a warm-up that ends when the goodput levels, within {cap:g} s" in note
    cfg, args = config_from_args(["4", "--bw", str(bw), "--time", "7", "--warmup", "3"])
    assert (cfg.counted, cfg.warmup, cfg.levelled) == (7, 3, False)
    assert not cfg.runs()[0].warmup_levelled
    assert not [n for n in cli._notes(cfg, args) if n.startswith("run length")]


@pytest.mark.parametrize("ovs_module", [True, False])
def test_default_fabric_is_l3_until_openflow_is_shown_to_match_it(monkeypatch, ovs_module):
    """The rule, on any machine: l3 by default, and the note says why."""
    monkeypatch.setattr(config.common, "openvswitch_kernel_datapath", lambda: ovs_module)
    cfg, _ = config_from_args(["4"])
    assert cfg.fabric == "l3"
    assert cfg.fabric_note == f"default fabric l3: {config.FABRIC_DEFAULT_WHY[ovs_module]}"
    assert ("kernel datapath is available" in cfg.fabric_note) == ovs_module
    assert config_from_args(["4", "--fabric", "openflow"])[0].fabric_note == ""


@pytest.mark.parametrize("kfunc", [True, False])
def test_coupled_cc_needs_the_kfunc_and_the_default_falls_back(monkeypatch, kfunc):
    monkeypatch.setattr(config.common, "btf_has", lambda name: kfunc and name == "bpf_rdonly_cast")
    cfg, _ = config_from_args(["4"])
    assert cfg.cc == ("lia" if kfunc else "reno")
    assert ("bpf_rdonly_cast" in cfg.cc_note) == (not kfunc)
    assert cfg.runs()[0].as_record().get("cc_note", "") == cfg.cc_note
    if kfunc:
        assert config_from_args(["4", "--cc", "olia"])[0].cc == "olia"
    else:
        with pytest.raises(ConfigError, match="--cc lia: this kernel lacks the bpf_rdonly_cast"):
            config_from_args(["4", "--cc", "lia"])
        with pytest.raises(ConfigError, match="--cc lia"):
            cli.COMMANDS["algorithms"].config_from(["--cc", "tcp,lia"])
        cfg, args = cli.COMMANDS["algorithms"].config_from([])
        assert cfg.schemes == ("tcp", "uncoupled") and "bpf_rdonly_cast" in args.notes[0]
    assert config_from_args(["4", "--cc", "reno"])[0].cc_note == ""


def _run_with_stdout_closed(argv: list[str]) -> subprocess.CompletedProcess:
    """The CLI with its output a pipe nobody reads any more, as after `| head`."""
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        return subprocess.run([str(ROOT / ".venv/bin/python"), "-m", "harness.cli", *argv],
                              cwd=ROOT, stdout=write_end, stderr=subprocess.PIPE, text=True,
                              env={**os.environ, "PYTHONPATH": str(ROOT)}, timeout=120)
    finally:
        os.close(write_end)


def test_closed_output_stops_the_command_in_one_line(tmp_path):
    done = _run_with_stdout_closed(["model", "--k", "4", "--results", str(tmp_path)])
    assert done.returncode == cli.EXIT_BROKEN_PIPE, done.stderr
    assert done.stderr.strip().splitlines() == [
        "run_mptcp.sh: output closed (broken pipe); stopped, the network and every process "
        "of the experiment were removed, finished runs are kept"]


@needs_root
def test_closed_output_releases_the_machine(tmp_path):
    from base.lock import ExperimentLock
    before = Snapshot.take()
    done = _run_with_stdout_closed(["4", "--subflows", "1", "--cc", "reno", "--time", "2",
                                    "--results", str(tmp_path)])
    assert done.returncode == cli.EXIT_BROKEN_PIPE, done.stderr
    assert "Traceback" not in done.stderr and len(done.stderr.strip().splitlines()) == 1
    assert ExperimentLock().holder() == {}, "the lock was not released"
    assert Snapshot.take().new_since(before) == {}
