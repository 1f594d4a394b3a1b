"""Coupled congestion control (LIA, OLIA, EWTCP as BPF struct_ops, kernel/bpf):
the increase rules computed by the BPF code in the kernel against hand
computations from RFC 6356 and Khalili et al.; that subflows really use the
algorithm asked for; nothing of ours left in the kernel afterwards, also
when the harness is killed. Fairness at a shared bottleneck and moving
traffic off a loaded path are measured by bench/fairness.py."""
import json
import logging
import subprocess
import threading
import time
import warnings

import pytest

from dctopo import TwoPaths
from experiments.config import LinkParams
from emulator.network import Network
from base.procs import run
from emulator.traffic.common import CLIENT_PORT_BASE, SERVER_PORT_BASE, FlowEndpoints
from kernel import coupled_cc
from tests.conftest import kernel_has, needs_root

pytestmark = needs_root

BOTTLENECK = LinkParams(bw_mbps=10, queue_pkts=50)


# -- the increase rules, as the kernel computes them ---------------------------

def kernel_math(own: tuple, others: list[tuple], delay_us: int = 0,
                rwnd_pkts: int = 0) -> tuple[int, int, int, int]:
    """(n, LIA's cnt, OLIA's increase per ACKed packet in 2^-32 packets,
    liab's hold level: 0 none, 1 no window growth, 2 no new data) that the BPF code computes for a subflow `own` =
    (window, rtt µs, loss distance bytes) of a connection whose other
    subflows are `others`; the hold also takes what a byte handed to the
    subflow now waits (`delay_us`) and the receive window in MSS."""
    run(["make", "-s", "-C", str(coupled_cc.BPF_DIR), "mathtest"], timeout=120)
    slots = [(i + 1, *o) for i, o in enumerate(others)] + [(0, 0, 0, 0)] * (8 - len(others))
    line = " ".join(map(str, (8, *own, *(v for s in slots for v in s), delay_us, rwnd_pkts)))
    build = coupled_cc.BPF_DIR / "build"
    out = run([str(build / "mathtest"), str(build / "mathtest.bpf.o")], timeout=30, input=line + "\n")
    n, lia, olia, hold = map(int, out.stdout.split())
    return n, lia, olia, hold


MS = 1000  # µs


@pytest.mark.parametrize("own,others,cnt", [
    # RFC 6356, two subflows alike: alpha = 0.5, alpha / w_total = 1/40.
    ((10, 10 * MS, 0), [(10, 10 * MS, 0)], 40),
    # w 10 at 10 ms and w 20 at 20 ms: alpha = 30 * 0.1 / 2^2 = 0.75, 1/40 for both.
    ((10, 10 * MS, 0), [(20, 20 * MS, 0)], 40),
    ((20, 20 * MS, 0), [(10, 10 * MS, 0)], 40),
    # alpha / w_total = (10/1) / (10/1 + 100/100)^2 = 1/12.1, below 1/w_i = 1/10.
    ((10, 1 * MS, 0), [(100, 100 * MS, 0)], 12),
    # The RFC's cap: never more than a TCP flow on the same path, 1/w_i.
    ((10, 1 * MS, 0), [(1, 100 * MS, 0)], 10),
    # One subflow: Reno.
    ((17, 10 * MS, 0), [], 17),
])
def test_lia_increase(own, others, cnt):
    n, lia, _, _ = kernel_math(own, others)
    assert (n, lia) == (len(others) + 1, cnt)


@pytest.mark.parametrize("own,others,per_ack", [
    # Equal paths, B = M: alpha 0; (w/rtt^2) / (sum w/rtt)^2 = 0.2 / 4^2 = 1/80.
    ((20, 10 * MS, 100000), [(20, 10 * MS, 100000)], 1 / 80),
    # Same l/rtt^2, so B = both; M = the larger window; B\M = this path:
    # 0.1 / 3^2 + 1 / (n |B\M| w) = 1/90 + 1/20.
    ((10, 10 * MS, 100000), [(20, 10 * MS, 100000)], 1 / 90 + 1 / 20),
    # ... and the larger window gives some up: 1/45 - 1 / (n |M| w) = 1/45 - 1/40.
    ((20, 10 * MS, 100000), [(10, 10 * MS, 100000)], 1 / 45 - 1 / 40),
    # The larger window is also the best path (B = M): alpha 0 for both.
    ((10, 10 * MS, 100000), [(20, 10 * MS, 300000)], 1 / 90),
])
def test_olia_increase(own, others, per_ack):
    _, _, olia, _ = kernel_math(own, others)
    assert olia == pytest.approx(per_ack * 2 ** 32, abs=4)


NONE, FREEZE, HOLD = 0, 1, 2    # kernel/bpf/hold.h's levels


@pytest.mark.parametrize("own,others,delay_ms,rwnd_pkts,level", [
    # `wifi3g`'s shape: WiFi 70 packets per 80 ms; a 3G subflow at 300 ms.
    # Within 300 ms WiFi sends 262 packets: half of 400 or more, so hold;
    ((10, 300 * MS, 0), [(70, 80 * MS, 0)], 300, 400, HOLD),
    # a quarter of 600 or more but not half: no growth (hold.h's shifts);
    ((10, 300 * MS, 0), [(70, 80 * MS, 0)], 300, 600, FREEZE),
    # less than a quarter of 1200: free.
    ((10, 300 * MS, 0), [(70, 80 * MS, 0)], 300, 1200, NONE),
    # The same window with 1 s of unsent data queued on the 3G subflow.
    ((10, 300 * MS, 0), [(70, 80 * MS, 0)], 1300, 1200, HOLD),
    # The faster subflow never holds, however small the window.
    ((70, 80 * MS, 0), [(10, 300 * MS, 0)], 80, 1, NONE),
    # Alone, or with no receive window known: free.
    ((10, 300 * MS, 0), [], 300, 1, NONE),
    ((10, 300 * MS, 0), [(70, 80 * MS, 0)], 300, 0, NONE),
    # Slower than one of two others but not the slowest: free.
    ((10, 300 * MS, 0), [(70, 80 * MS, 0), (5, 400 * MS, 0)], 300, 10, NONE),
])
def test_liab_holds_only_the_slowest_subflow_when_the_others_would_fill_the_window(
        own, others, delay_ms, rwnd_pkts, level):
    assert kernel_math(own, others, delay_ms * MS, rwnd_pkts)[3] == level


@pytest.mark.parametrize("others", [0, 1, 2])
def test_ewtcp_counts_the_subflows(others):
    """EWTCP's increase is Reno's divided by n^2 (cnt = n^2 w): n is what the
    code counts, the connection's subflows with an RTT sample."""
    n, *_ = kernel_math((10, 10 * MS, 0), [(10, 10 * MS, 0)] * others + [(10, 0, 0)])
    assert n == others + 1      # the subflow without an RTT sample does not count


# -- on the real kernel ---------------------------------------------------------

def ours_in_kernel() -> dict[str, set[tuple[int, str]]]:
    """Our struct_ops, programs and maps in the kernel, as (id, name)."""
    found = {}
    for kind in ("struct_ops", "prog", "map"):
        out = run(["bpftool", "-j", kind, "list"], timeout=20).stdout or "[]"
        # struct_ops maps are named after the algorithms, programs after
        # their functions (lia_init, mptcp_cc_gather, ...), the state map mptcp_cc_conns
        found[kind] = {(o["id"], o.get("name", "")) for o in json.loads(out)
                       if o.get("name", "") in coupled_cc.COUPLED
                       or o.get("name", "").startswith(("lia_", "olia_", "ewtcp_", "mptcp_cc"))}
    return found


def new_since(before: dict[str, set]) -> dict[str, list[str]]:
    now = ours_in_kernel()
    return {k: sorted(name for _, name in now[k] - before[k]) for k in now if now[k] - before[k]}


def wait_gone(before: dict[str, set], timeout: float = 10) -> dict[str, list[str]]:
    """What the test loaded and is still in the kernel after `timeout`."""
    deadline = time.monotonic() + timeout
    while (left := new_since(before)) and time.monotonic() < deadline:
        time.sleep(0.2)
    return left


@pytest.fixture
def nothing_of_ours_left():
    """Nothing the test loads stays in the kernel. Programs and maps of an
    earlier loader may be there already, unregistered but held by a TCP
    socket that outlived its namespace (kernel/coupled_cc.py); they are not
    the test's doing, so only what is new is checked; and the test's own
    sockets can be such sockets, which no process can free (below). Orphans
    a killed run left registered are removed first, as every run does."""
    coupled_cc.remove_orphans()
    assert not set(coupled_cc.COUPLED) & set(coupled_cc.available()), \
        "a coupled algorithm is registered before the test"
    before = ours_in_kernel()
    yield
    assert not set(coupled_cc.COUPLED) & set(coupled_cc.available())
    left = wait_gone(before)
    if not left:
        return
    # What is left is ours only while a process holds it (a loader alive)
    # or it is still registered. An unregistered map that no process holds
    # and that the kernel has not freed after 10 s is held by a TCP socket
    # that outlived its namespace: a socket the kernel never destroyed after
    # a graceful close (docs/cleanup.md; the trace in docs/notebook.md). No
    # process of ours can free it, so it is reported, not failed; the
    # suite's summary names the test during which it was loaded.
    held_by = coupled_cc.open_map_ids()
    new_maps = ours_in_kernel()["map"] - before["map"]
    assert not {i for i, _ in new_maps} & set(held_by), \
        f"a process still holds our maps: {left} (pids {sorted(set(held_by.values()))})"
    warnings.warn(f"the kernel still holds {left}, unregistered and held by no process: "
                  "a TCP socket of a closed namespace keeps them")


CC_NAMES = {*coupled_cc.COUPLED, "reno", "cubic", "bbr"}


def subflow_ccs(net: Network, host: str, dport: int) -> list[str]:
    """The congestion control of each of `host`'s established TCP sockets to
    port `dport`, read from `ss -tin` inside the host (each socket's info
    line names it among its options: "ts sack lia wscale:...")."""
    out = run(["ss", "-tin", "state", "established", f"( dport = :{dport} )"], timeout=10,
              ns_pid=net.fabric.pid(host)).stdout
    infos = [line.split() for line in out.splitlines()[1:] if line.startswith(("\t", " "))]
    return [next((w for w in words if w in CC_NAMES), "?") for words in infos]


def flow(index: int, src: str, dst: str, src_ip: str, dst_ip: str) -> FlowEndpoints:
    return FlowEndpoints(index, src, dst, src_ip, dst_ip, CLIENT_PORT_BASE + index,
                         SERVER_PORT_BASE + index)


@pytest.mark.guest   # on 6.12 guests; Debian 12's 6.1 lacks the kfunc (test_stock_kernel.py)
@pytest.mark.skipif(not kernel_has("kfunc"), reason="this kernel lacks the bpf_rdonly_cast kfunc")
def test_subflows_use_the_algorithm_asked_for(tmp_path, nothing_of_ours_left):
    """Must-show 1: per algorithm, both subflows of an MPTCP connection run it."""
    topo = TwoPaths(bottleneck=BOTTLENECK)
    with Network(topo, LinkParams(), cc="lia") as net:
        for i, cc in enumerate((*coupled_cc.COUPLED, "reno")):
            net.set_cc("h1", cc)
            f = flow(i, "h1", "h2", *topo.path_addresses(0))
            net.pm.reset()
            net.pm.expand("h1", (f.src_ip, f.client_port), (f.dst_ip, f.server_port), 2,
                          paths=[topo.path_addresses(1)])
            seen = []

            def look():
                # until the control connection and both subflows are up
                deadline = time.monotonic() + 3
                while len(seen) < 3 and time.monotonic() < deadline:
                    time.sleep(0.5)
                    seen[:] = subflow_ccs(net, "h1", f.server_port)
            looker = threading.Thread(target=look)
            [out] = net.driver.run([f], True, 3, tmp_path / cc, on_started=looker.start,
                                   bind_servers=False)
            looker.join()
            assert out.error is None, out.error
            # iperf3's control connection plus the data connection's two subflows
            assert seen.count(cc) >= 2 and set(seen) == {cc}, (cc, seen)
        # the counters and the repair log the runs record can be read
        assert all(isinstance(net.coupled_cc.counter(name), int)
                   for name in ("window_repairs", "penalties", "holds"))
        repairs = net.coupled_cc.window_repairs()
        seen, records = net.coupled_cc.repair_log()
        assert isinstance(repairs, int) and isinstance(seen, int) and isinstance(records, list)
        assert len(records) == min(seen, 64)
    assert net.coupled_cc.window_repairs() is None      # nothing loaded any more
    assert net.coupled_cc.repair_log() is None


def test_a_repair_record_is_named():
    from kernel.coupled_cc import named_repair
    got = named_repair({"hook": 2, "kind": 1 | 8, "ca_state": 3, "cwnd": 400000000, "acked": 7,
                        "last": {"hook": 5, "ca_state": 0, "cwnd": 12}})
    assert (got["hook"], got["kind"], got["ca_state"]) == ("after_cong_avoid",
                                                          ["cwnd_over_cap", "undo_over_cap"], "Recovery")
    assert got["last"] == {"hook": "in_ack_event", "ca_state": "Open", "cwnd": 12}
    assert got["cwnd"] == 400000000 and got["acked"] == 7


def test_loader_unregisters_when_the_harness_dies(nothing_of_ours_left):
    """Must-show 5 for a crash: a harness process killed with SIGKILL while
    the algorithms are registered leaves none of them behind."""
    script = ("import sys, time; sys.path.insert(0, %r)\n"
              "from kernel.coupled_cc import CoupledCC\n"
              "c = CoupledCC('olia'); c.start(); print('up', flush=True); time.sleep(60)\n"
              % str(coupled_cc.BPF_DIR.parent.parent))
    proc = subprocess.Popen([str(coupled_cc.BPF_DIR.parent.parent / ".venv/bin/python"), "-c", script],
                            stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout.readline().strip() == "up"
        assert "olia" in coupled_cc.available()
    finally:
        proc.kill()
        proc.wait(timeout=10)
    deadline = time.monotonic() + 10
    while "olia" in coupled_cc.available() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert "olia" not in coupled_cc.available()


def test_a_loader_killed_from_outside_leaves_an_orphan_the_next_run_removes(nothing_of_ours_left,
                                                                           caplog):
    """A supervisor's SIGKILL of the loader itself (libbpf 1.1 registers
    without a link) leaves the algorithms registered with nobody holding
    them. While a loader lives, its algorithm is refused with its pid; once
    it is killed, preflight passes and start() removes the orphans."""
    loader = subprocess.Popen([str(coupled_cc.LOADER), str(coupled_cc.OBJECT)],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert loader.stdout.readline().split()[0] == "ready"
        assert coupled_cc.registered_by().get("olia") == loader.pid
        with pytest.raises(coupled_cc.CoupledCCError, match=f"process {loader.pid}"):
            coupled_cc.check_built()
    finally:
        loader.kill()
        loader.wait(timeout=10)
        loader.stdout.close()
        loader.stdin.close()
    if "olia" not in coupled_cc.available():
        pytest.skip("this libbpf registers through a BPF link: SIGKILL unregisters")
    assert coupled_cc.registered_by() == {n: None for n in coupled_cc.COUPLED}
    coupled_cc.check_built()
    cc = coupled_cc.CoupledCC("olia")
    with caplog.at_level(logging.WARNING, logger=coupled_cc.__name__):
        cc.start()
    try:
        assert coupled_cc.registered_by().get("olia") == cc.loader.pid
        assert sum("removed congestion control" in r.getMessage() for r in caplog.records) == len(
            coupled_cc.COUPLED)
    finally:
        cc.stop()
