"""One network over several servers: a worker per server over real ssh
(emulator/cluster.py, emulator/worker.py), each building its share of
FatTree(4) with VXLAN tunnels between the shares. The servers are
namespaces on a LAN, each with its own sshd (emulator/local_sshd.py). After every
way a coordinator can end, each server holds nothing of ours."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import pytest

from base.procs import run
from base.ssh import SshError
from dctopo.clos import FatTree
from dctopo.fattree_shape import FatTreeShape
from dctopo.placement import place_by_pod
from emulator.cluster import Cluster, Remote, tunnel_flags
from emulator.tunnels import local_servers
from emulator.worker import HEARTBEAT_TIMEOUT_S
from tests.conftest import ROOT, interrupt_after_first_run, needs_root
from tests.leftovers import Snapshot
from emulator.local_sshd import ssh_config_file, sshd_on

pytestmark = needs_root

SPEC = {"topology": "FatTree", "k": 4, "fabric": "l3", "seed": 0,
        "link": {"bw_mbps": 10.0, "queue_pkts": 100}}
SOURCE, TARGET = "h0_0_0", "h3_1_1"     # pod 0 (the first server) to pod 3 (the second)


@pytest.fixture
def servers(tmp_path, no_leftovers):
    """(servers, ssh options, what they hold before any worker)."""
    with local_servers(2, reachable=True) as servers, sshd_on(servers, tmp_path) as options:
        yield servers, options, state(servers)


def state(servers) -> tuple:
    """Every process outside the root namespace but sshd's own (a session
    process is the server's), and each server's interfaces."""
    links = {s.name: {l["ifname"] for l in json.loads(run(["ip", "-j", "link", "show"], 10,
                                                          ns_pid=s.ns_pid).stdout)}
             for s in servers}
    return {p for p in Snapshot.take().processes if not p[1].startswith("sshd")}, links


def back_to(servers, before, timeout_s: float) -> float:
    """Seconds until the servers hold only what they held before; fails after `timeout_s`."""
    started = time.monotonic()
    while (now := state(servers)) != before:
        if time.monotonic() - started > timeout_s:
            extra = {s: sorted(map(str, now[1][s] - before[1][s])) for s in now[1]}
            pytest.fail(f"left on the servers: processes {sorted(now[0] - before[0])[:5]}, links {extra}")
        time.sleep(0.5)
    return time.monotonic() - started


def remotes(servers) -> list[Remote]:
    return [Remote(s.name, f"root@{s.address}", s.address) for s in servers]


def placement(servers) -> dict[str, str]:
    return place_by_pod(FatTreeShape(4), tuple(s.name for s in servers)).where


def ping_across(cluster: Cluster, located: dict) -> str:
    """Ping TARGET from SOURCE, in SOURCE's namespace on its server, over ssh."""
    server, pid = located[SOURCE]
    [share] = [s for s in cluster.shares if s.remote.name == server]
    target = FatTree(k=4).host_addresses(TARGET)[0].split("/")[0]
    return share.ssh.run(["nsenter", "-t", str(pid), "-n", "ping", "-n", "-c", "3", "-i", "0.2",
                          "-W", "2", target], 30).stdout


def test_fattree4_over_two_servers_forwards_between_them_and_leaves_nothing(servers):
    servers, options, before = servers
    where = placement(servers)
    with Cluster(remotes(servers), options, say=lambda _: None) as cluster:
        located = cluster.build(SPEC, where)
        assert {n: s for n, (s, _) in located.items()} == where
        assert all(s.identity["commit"] == cluster.shares[0].identity["commit"] for s in cluster.shares)
        assert " 0% packet loss" in ping_across(cluster, located)
        # A crossing link's end is a VXLAN device in its node's namespace.
        [(node, _), *_] = place_by_pod(FatTreeShape(4), tuple(s.name for s in servers)).crossing()
        server, pid = located[node]
        kinds = run(["ip", "-d", "-j", "link", "show"], 10, ns_pid=pid).stdout
        assert '"info_kind":"vxlan"' in kinds
        assert not cluster.problems()
    back_to(servers, before, 30)


def test_a_killed_worker_removes_its_share_and_is_named(servers):
    servers, options, before = servers
    with Cluster(remotes(servers), options, say=lambda _: None) as cluster:
        cluster.build(SPEC, placement(servers))
        os.kill(cluster.shares[0].identity["pid"], signal.SIGKILL)
        deadline = time.monotonic() + 10
        while not cluster.problems() and time.monotonic() < deadline:
            time.sleep(0.2)
        [(name, why)] = cluster.problems().items()
        assert name == f"root@{servers[0].address}" and why.startswith("its worker ended")
    back_to(servers, before, 30)


def test_a_cut_ssh_connection_ends_both_sides_within_a_minute(servers):
    servers, options, before = servers
    lost = servers[0]
    with Cluster(remotes(servers), options, say=lambda _: None) as cluster:
        cluster.build(SPEC, placement(servers))
        cut_ssh(lost)
        cut = time.monotonic()
        while not cluster.problems() and time.monotonic() - cut < 60:
            time.sleep(0.5)
        assert cluster.problems() == {f"root@{lost.address}": "the ssh connection was lost"}
        with pytest.raises(SshError, match=rf"^root@{lost.address}: "):
            cluster.shares[0].ssh.run(["true"], 10)
    # The worker stops by itself once the pings stop reaching it.
    back_to(servers, before, 60)
    assert time.monotonic() - cut < HEARTBEAT_TIMEOUT_S + 60
    # sshd's own session process waits for the lost client: end its socket.
    run(["ss", "-K", "-t", "sport", "= :22"], 10, ns_pid=lost.ns_pid)


@pytest.mark.parametrize("how", [signal.SIGINT, signal.SIGKILL], ids=["ctrl-c", "sigkill"])
def test_a_coordinator_stopped_or_killed_leaves_nothing_on_the_servers(servers, how):
    servers, options, before = servers
    given = {"remotes": [r.__dict__ for r in remotes(servers)], "options": list(options),
             "spec": SPEC, "where": placement(servers)}
    proc = subprocess.Popen([sys.executable, str(ROOT / "tests" / "spread_coordinator.py"),
                             json.dumps(given)], stdout=subprocess.PIPE, text=True,
                            env={**os.environ, "PYTHONPATH": str(ROOT)})
    try:
        assert proc.stdout.readline().strip() == "built"
        assert state(servers) != before
        proc.send_signal(how)
        proc.wait(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=10)
    back_to(servers, before, 30)


def test_a_server_at_another_commit_is_refused_in_one_line(servers, tmp_path):
    servers, options, before = servers
    other = tmp_path / "checkout"          # the same code, one commit further
    git = ["git", "-C", str(ROOT)]
    subprocess.run([*git, "worktree", "add", "--detach", str(other), "HEAD"], check=True,
                   capture_output=True, timeout=60)
    try:
        subprocess.run(["git", "-C", str(other), "-c", "user.name=test", "-c", "user.email=test@test",
                        "commit", "-q", "--allow-empty", "-m", "another commit"], check=True, timeout=30)
        (other / ".venv").symlink_to(ROOT / ".venv")
        with pytest.raises(SshError) as caught:
            with Cluster(remotes(servers)[:1], options, checkout=other, say=lambda _: None):
                pass
        assert str(caught.value).startswith(f"root@{servers[0].address}: its checkout is at ")
        assert "\n" not in str(caught.value)
    finally:
        subprocess.run([*git, "worktree", "remove", "--force", str(other)], capture_output=True, timeout=60)
    back_to(servers, before, 30)


def test_every_pair_of_servers_is_probed_and_a_slow_tunnel_is_flagged(servers):
    servers, options, before = servers
    with Cluster(remotes(servers), options, say=lambda _: None) as cluster:
        probes = cluster.probe(count=20)
    assert set(probes) == {"srv0 -> srv1", "srv1 -> srv0"}
    assert all(p["loss_pct"] == 0 and 0 < p["avg_ms"] < 5 for p in probes.values())
    # A LAN on one machine is far below a frame's time at 10 Mb/s (1.2 ms),
    # and far above it at 10 Gb/s (1.2 us).
    assert tunnel_flags(probes, 10, 1464) == {}
    assert set(tunnel_flags(probes, 10000, 1464)) == {"tunnel_delay"}
    back_to(servers, before, 30)


def sweep_of_two_runs(servers, options, tmp_path):
    """(run_mptcp.sh's argv, its results folder, its first run's record):
    MPTCP-8 then TCP, 10 s of traffic each."""
    results = tmp_path / "results"
    argv = [str(ROOT / "run_mptcp.sh"), "4", "--servers", ",".join(r.destination for r in remotes(servers)),
            "--ssh-config", str(ssh_config_file(tmp_path, options)), "--subflows", "8,1", "--bw", "5",
            "--time", "6", "--warmup", "4", "--no-plots", "--results", str(results)]
    return argv, results, results / "ft4" / "one_to_one" / "flows8" / "run.json"


def worker_pid(server) -> int:
    """The harness's worker on `server`: the process in its network namespace running emulator.worker."""
    netns = os.readlink(f"/proc/{server.ns_pid}/ns/net")
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            if (os.readlink(f"/proc/{pid}/ns/net") == netns
                    and b"emulator.worker" in open(f"/proc/{pid}/cmdline", "rb").read()):
                return int(pid)
        except OSError:     # ended meanwhile
            pass
    raise AssertionError(f"no worker on {server.name}")


def cut_ssh(server) -> None:
    """Drop the server's ssh packets both ways."""
    drop = "\n".join(["*filter", "-I INPUT -p tcp --dport 22 -j DROP",
                      "-I OUTPUT -p tcp --sport 22 -j DROP", "COMMIT", ""])
    run(["iptables-restore", "--noflush"], 10, ns_pid=server.ns_pid, input=drop)


@pytest.mark.parametrize("fault", ["worker-killed", "ssh-cut"])
def test_a_server_lost_mid_run_stops_the_sweep_naming_it_and_leaves_nothing(servers, tmp_path, fault):
    """The first server's worker SIGKILLed, or its ssh cut, 3 s into the second run's traffic."""
    servers, options, before = servers
    lost = servers[0]
    argv, results, first = sweep_of_two_runs(servers, options, tmp_path)
    noticed = {}

    def act():
        if fault == "worker-killed":
            os.kill(worker_pid(lost), signal.SIGKILL)
        else:
            cut_ssh(lost)
        noticed["at"] = time.monotonic()
    try:
        code, err, kept = interrupt_after_first_run(argv, first, settle_s=3, act=act, wait_s=180)
        ended_s = time.monotonic() - noticed["at"]
        lines = err.strip().splitlines()
        assert code == 1 and lines[-1].startswith(f"run_mptcp.sh: error: root@{lost.address}: "), err[-2000:]
        assert first.read_bytes() == kept
        assert not (results / "ft4" / "one_to_one" / "flows1" / "run.json").exists()
        back_to(servers, before, 60)
        print(f"\n{fault}: {lines[-1]}\nthe sweep ended {ended_s:.0f} s after, the servers were "
              f"clean {time.monotonic() - noticed['at']:.0f} s after")
    finally:
        if fault == "ssh-cut":  # sshd's own session process waits for the lost client
            run(["ss", "-K", "-t", "sport", "= :22"], 10, ns_pid=lost.ns_pid)


def test_a_sweep_over_two_servers_runs_mptcp_and_a_ctrl_c_mid_run_leaves_nothing(servers, tmp_path):
    """MPTCP-8, then TCP interrupted 3 s into its traffic."""
    servers, options, before = servers
    argv, results, first = sweep_of_two_runs(servers, options, tmp_path)
    code, err, kept = interrupt_after_first_run(argv, first, settle_s=3)
    assert code == 130 and "interrupted" in err, err[-2000:]
    assert first.read_bytes() == kept
    assert not (results / "ft4" / "one_to_one" / "flows1" / "run.json").exists()
    record = json.loads(kept)
    where = record["servers"]["placement"]
    assert sorted(set(where.values())) == sorted(r.destination for r in remotes(servers))
    assert record["servers"]["crossing_links"] == 8     # half the 16 aggregation-core links
    assert len(record["flows"]) == 16 and all(f["goodput_mbps"] > 0 for f in record["flows"])
    assert all(f["subflows_established"] == 8 for f in record["flows"])
    # Each connection's 7 joins, as the kernels of both servers counted them.
    assert record["kernel_counters"]["MPTcpExtMPJoinAckRx"] >= 16 * 7
    assert record["cpu_mean_pct"] is not None
    # The two servers share this kernel: one machine, judged once against its cores.
    [(machine, judged)] = record["capacity"]["by_machine"].items()
    assert machine == " + ".join(r.destination for r in remotes(servers))
    assert judged["cores"] == os.cpu_count() and judged["fits"]
    back_to(servers, before, 60)


def test_a_sweep_over_servers_their_machine_cannot_carry_is_refused_before_building(servers, tmp_path):
    servers, options, before = servers
    argv, results, _ = sweep_of_two_runs(servers, options, tmp_path)
    refused = subprocess.run([*argv[:argv.index("--bw") + 1], "40", *argv[argv.index("--bw") + 2:]],
                             capture_output=True, text=True, timeout=120)
    assert refused.returncode == 2, refused.stderr[-2000:]
    [line] = refused.stderr.strip().splitlines()
    assert line.startswith("run_mptcp.sh: error: capacity: at 40 Mb/s over 1 machine "
                           f"({os.cpu_count()} cores in all)")
    assert "fidelity cannot hold: use --bw" in line
    assert not (results / "ft4").exists()
    back_to(servers, before, 30)
