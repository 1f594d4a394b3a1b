"""The modelled fabric's engine (engine/): its model's unit tests, its spec
checked, and in real namespaces the times it gives packets (a ping's round
trip is what the model says, a rate change takes effect at once), counters
that balance, and a dead engine reported and cleaned up."""
import os
import re
import signal
import subprocess
import sys
import time

import pytest

from base.links import LinkParams
from base.procs import run
from dctopo.base import DCTopo, dpid
from emulator.fabrics.model import ENGINE, ModelFabric
from tests.conftest import ROOT, needs_root, nothing_left_behind, set_guard_calibration
from tests.leftovers import Snapshot


def test_the_model_passes_its_unit_tests():
    """engine/test_model.c: exit times, drops, byte limits, rate changes,
    ECMP, the three ACK treatments, loss and the packet pool, exactly."""
    done = subprocess.run(["make", "-s", "-C", str(ROOT / "engine"), "test"], capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "all passed" in done.stdout


def test_a_bad_spec_is_refused_in_one_line(tmp_path):
    spec = tmp_path / "spec"
    spec.write_text("fabric-engine-spec 1\nmodel 2 2 100 0 data\nnode 0 router x 0 0 0 1\nend\n")
    done = subprocess.run([str(ENGINE), str(spec), str(tmp_path / "c"), str(tmp_path / "s")],
                          capture_output=True, text=True, timeout=10)
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1 and "spec line 3" in done.stderr, done.stderr


def test_the_spec_describes_fattree4_with_its_equal_cost_ports(monkeypatch):
    """36 nodes, 96 ports (16 host NICs, 20 switches of 4), 16 destinations;
    every switch routes to every host: an edge switch to its own hosts by one
    port and up by two, an aggregation switch down by one and up by two, a
    core by one."""
    from dctopo import FatTree
    fabric = ModelFabric(FatTree(k=4), LinkParams(bw_mbps=10, queue_pkts=100), seed=3)
    monkeypatch.setattr(fabric, "pid", lambda node: 1000)
    lines = fabric.spec_lines()
    words = [line.split()[0] for line in lines]
    assert lines[0] == "fabric-engine-spec 1" and lines[-1] == "end"
    assert (words.count("node"), words.count("port"), words.count("dest"), words.count("route")) == (36, 96, 16, 320)
    fanout: dict[tuple[str, int], int] = {}
    names = {line.split()[1]: line.split()[3] for line in lines if line.startswith("node ")}
    for line in lines:
        if line.startswith("route "):
            _, node, _, *ports = line.split()
            key = (names[node][0], len(ports))
            fanout[key] = fanout.get(key, 0) + 1
    assert fanout == {("e", 1): 16, ("e", 2): 112, ("a", 1): 32, ("a", 2): 96, ("c", 1): 64}, fanout
    port = next(line for line in lines if line.startswith("port ") and line.split()[9] == "e0_0-eth2")
    assert port.split()[3:9] == ["10000000", "0", "0", "0", "100", "0"]    # rate, delay, jitter, loss, queue


class Line(DCTopo):
    """h1 -- s1 -- ... -- sN -- h2: every packet crosses N + 1 links."""

    def build(self, n: int = 3, link: LinkParams = LinkParams()):
        h1 = self.addHost("h1", role="host")
        h2 = self.addHost("h2", role="host")
        switches = [self.addSwitch(f"s{i}", role="edge", dpid=dpid(1, 0, i), router_id=f"10.0.{i}.1")
                    for i in range(1, n + 1)]
        self.addLink(h1, switches[0], port1=0, port2=0, params1={"ip": "10.1.0.2/32"}, link=link)
        for a, b in zip(switches, switches[1:]):
            self.addLink(a, b, port1=1, port2=0, link=link)
        self.addLink(switches[-1], h2, port1=1, port2=0, params2={"ip": "10.2.0.2/32"}, link=link)


LINK = LinkParams(bw_mbps=10, queue_pkts=100, delay_ms=0.5)
FRAME = 1514                      # a full frame: ping's payload plus ICMP, IP and Ethernet headers
PAYLOAD = FRAME - 14 - 20 - 8


@pytest.fixture(scope="module", params=[0, 1], ids=["written by the engine", "a writer thread"])
def line(request):
    fabric = ModelFabric(Line(n=3, link=LINK), LINK, seed=1)
    fabric.engine_options["writers"] = request.param
    before = Snapshot.take()
    try:
        fabric.start()
        yield fabric
    finally:
        fabric.stop()
    assert Snapshot.take().new_since(before) == {}


def min_rtt_ms(fabric, src: str, dst_ip: str, payload: int = PAYLOAD, count: int = 20) -> float:
    out = run(["ping", "-n", "-q", "-c", str(count), "-i", "0.05", "-s", str(payload), dst_ip], timeout=30,
              ns_pid=fabric.pid(src)).stdout
    return float(re.search(r"= ([\d.]+)/", out).group(1))


def expected_rtt_ms(links: int, frame: int, bw_mbps: float, delay_ms: float) -> float:
    """Both ways across `links` links, each serialising the frame and delaying it."""
    return 2 * links * (frame * 8 / (bw_mbps * 1e3) + delay_ms)


def lateness_bound_ms(fabric) -> float:
    """What the engine's own late deliveries can add to a round trip (two
    deliveries), with 0.2 ms for the hosts' stacks' spread."""
    late = fabric.counters()["lateness"]
    return 2 * late["p99_us"] / 1000 + 0.2


@needs_root
def test_a_round_trip_takes_what_the_model_says(line):
    base = min_rtt_ms(line, "h1", "10.1.0.2")              # zero hops: the host's own stack
    line.control("reset")
    rtt = min_rtt_ms(line, "h1", "10.2.0.2")
    want = expected_rtt_ms(4, FRAME, LINK.bw_mbps, LINK.delay_ms)
    assert abs(rtt - base - want) <= lateness_bound_ms(line), (rtt, base, want, line.counters()["lateness"])


@needs_root
def test_a_rate_change_takes_effect_from_the_next_packet(line):
    before = min_rtt_ms(line, "h1", "10.2.0.2", count=10)
    line.set_rate("s2", 1, 1.0)                  # s2 towards s3: the echo requests' way only
    try:
        line.control("reset")
        after = min_rtt_ms(line, "h1", "10.2.0.2", count=10)
        bound = lateness_bound_ms(line)
    finally:
        line.set_rate("s2", 1, LINK.bw_mbps)
    slower = FRAME * 8 / 1e3 * (1 / 1.0 - 1 / LINK.bw_mbps)
    assert abs(after - before - slower) <= bound, (before, after, slower)


@needs_root
def test_every_port_balances(line):
    run(["ping", "-n", "-q", "-f", "-c", "400", "-s", "1400", "10.2.0.2"], timeout=30,
        ns_pid=line.pid("h1"), check=False)
    snap = line.counters()
    assert snap["model"]["delivered"] > 0
    for p in snap["ports"]:
        for lane in ("", "lane_"):
            assert p[lane + "in"] == (p[lane + "out"] + p[lane + "dropped"] + p[lane + "lost"]
                                      + p[lane + "queued"]), p


@needs_root
def test_a_dead_engine_is_reported_and_leaves_nothing():
    fabric = ModelFabric(Line(n=1, link=LINK), LINK, seed=2)
    before = Snapshot.take()
    try:
        fabric.start()
        assert fabric.health_problems() == {}
        os.kill(fabric.engine.pid, signal.SIGKILL)
        deadline = time.monotonic() + 5
        while fabric.engine.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        assert "engine_failed" in fabric.health_problems()
    finally:
        fabric.stop()
    assert Snapshot.take().new_since(before) == {}


SCRIPT = str(ROOT / "run_mptcp.sh")


def engine_pid(harness_pid: int) -> int | None:
    """The fabric engine among the harness's descendants (by parent links)."""
    children: dict[int, list[int]] = {}
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            ppid = int(open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue
        children.setdefault(ppid, []).append(int(pid))
    todo = [harness_pid]
    while todo:
        pid = todo.pop()
        try:
            if os.readlink(f"/proc/{pid}/exe") == str(ENGINE):
                return pid
        except OSError:
            pass
        todo += children.get(pid, [])
    return None


@needs_root
@pytest.mark.parametrize("what", ["SIGINT", "SIGTERM", "SIGKILL", "engine SIGKILL"])
def test_a_sweep_stopped_or_its_engine_killed_keeps_finished_runs_and_leaves_nothing(tmp_path, what, monkeypatch):
    """Mid-way through the second run: the harness interrupted, terminated or
    killed, or the engine killed (the socket driver then ends the run within
    a second, in one line). Whichever, the first run stays as it was and
    nothing of the network is left."""
    set_guard_calibration(monkeypatch, tmp_path / "cache", 1.38, "tests/test_engine.py", fabric="model")
    results = tmp_path / "results"
    first = results / "ft4" / "one_to_one" / "flows1" / "run.json"
    with nothing_left_behind():
        proc = subprocess.Popen([SCRIPT, "4", "--fabric", "model", "--subflows", "1,2", "--time", "8",
                                 "--warmup", "3", "--driver", "socket", "--results", str(results), "--no-plots"],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
        try:
            deadline = time.monotonic() + 120
            while not first.exists() and time.monotonic() < deadline and proc.poll() is None:
                time.sleep(0.2)
            assert first.exists(), f"the first run never finished: {proc.poll() is not None and proc.communicate()}"
            kept = first.read_bytes()
            time.sleep(3)                                   # inside the second run's traffic
            if what == "engine SIGKILL":
                pid = engine_pid(proc.pid)
                assert pid is not None, "no engine among the harness's processes"
                os.kill(pid, signal.SIGKILL)
            else:
                os.killpg(proc.pid, getattr(signal, what))
            _, err = proc.communicate(timeout=60)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait(timeout=10)
    assert first.read_bytes() == kept
    if what == "engine SIGKILL":
        assert proc.returncode == 1, err
        assert len([line for line in err.splitlines() if "fabric engine exited" in line]) == 1, err
    else:
        assert proc.returncode != 0, err


RECEIVER = """
import socket, struct, sys, time
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.setsockopt(socket.SOL_SOCKET, 35, 1)        # SO_TIMESTAMPNS (asm-generic/socket.h)
s.bind(("10.2.0.2", 9000))
s.settimeout(10)
print("ready", flush=True)
for _ in range(int(sys.argv[1])):
    data, anc, _, _ = s.recvmsg(2048, 64)
    sec, nsec = struct.unpack("qq", anc[0][2][:16])
    print(sec * 10**9 + nsec - struct.unpack("q", data[:8])[0], flush=True)
"""
SENDER = """
import socket, struct, sys, time
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
for _ in range(int(sys.argv[1])):
    s.sendto(struct.pack("q", time.time_ns()) + bytes(992), ("10.2.0.2", 9000))
    time.sleep(0.005)
"""


@needs_root
def test_the_engines_lateness_agrees_with_receive_timestamps_in_a_host(line):
    """One-way delays of UDP datagrams, stamped by the sender and by the
    receiving host's kernel, less what the model says they take: what is
    left is the engine's lateness plus the time until it reads a frame, so
    its median is at least the engine's median lateness and not much more."""
    count = 200
    receiver = subprocess.Popen(["mnexec", "-a", str(line.pid("h2")), sys.executable, "-c", RECEIVER,
                                 str(count)], stdout=subprocess.PIPE, text=True)
    try:
        assert receiver.stdout.readline().strip() == "ready"
        line.control("reset")
        run([sys.executable, "-c", SENDER, str(count)], timeout=30, ns_pid=line.pid("h1"))
        delays_ns = [int(receiver.stdout.readline()) for _ in range(count)]
    finally:
        receiver.kill()
        receiver.wait(timeout=10)
    frame = 1000 + 8 + 20 + 14
    model_ns = 4 * (frame * 8 / (LINK.bw_mbps * 1e6) + LINK.delay_ms / 1e3) * 1e9
    excess_us = sorted((d - model_ns) / 1e3 for d in delays_ns)
    late = line.counters()["lateness"]
    median = excess_us[len(excess_us) // 2]
    print(f"excess over the model: median {median:.0f} us, p90 {excess_us[int(0.9 * count)]:.0f} us; "
          f"the engine's lateness: p50 {late['p50_us']} us, p99 {late['p99_us']} us")
    assert late["n"] >= count
    assert late["p50_us"] - 20 <= median <= late["p50_us"] + 500, (median, late, excess_us[::20])
