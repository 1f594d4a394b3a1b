"""The transfer driver (emulator/traffic/transfers.py) and the file-size
experiment (paper Fig. 17, experiments/filesize.py): a transfer's completion
time against what the link can carry, MPTCP transfers joining their second
path by the kernel's own counters, a small run end to end, and the figure
from records."""
from __future__ import annotations

import json
import subprocess

from base.links import LinkParams
from dctopo import WiFi3G
from emulator.network import Network
from emulator.traffic.common import CLIENT_PORT_BASE, SERVER_PORT_BASE
from emulator.traffic.transfers import Transfer
from experiments.config import FilesizeConfig
from figures import filesize as filesize_fig
from tests.conftest import ROOT, needs_root

PAYLOAD_SHARE = 1448 / 1514
MB = 1_000_000


def mptcp_counters(ns_pid: int) -> dict[str, int]:
    """The MPTcpExt counters of a namespace (/proc/PID/net/netstat: a line
    of names, then a line of values)."""
    with open(f"/proc/{ns_pid}/net/netstat") as f:
        names, values = [line.split()[1:] for line in f if line.startswith("MPTcpExt:")]
    return dict(zip(names, map(int, values)))


@needs_root
def test_one_megabyte_takes_what_the_link_carries_and_mptcp_adds_its_second_path(tmp_path, no_leftovers):
    """1 MB over an idle 10 Mb/s path: within 10 % of its size over TCP's
    goodput of the link (the round trips here are a fraction of a ms). Over
    two such paths MPTCP joins the second one, as the server's MPJoinAckRx
    counts, and finishes well before TCP."""
    link = LinkParams(bw_mbps=10, queue_pkts=100)
    ideal_s = 8 * MB / (link.bw_mbps * 1e6 * PAYLOAD_SHARE)
    with Network(WiFi3G(wifi=link, cell=link), LinkParams(), "reno") as net:
        driver = net.transfers
        src, dst = net.topo.path_addresses("wifi")
        server = net.fabric.pid("h2")
        took = {}
        for i, mptcp in enumerate((False, True)):
            port = CLIENT_PORT_BASE + i
            if mptcp:
                net.pm.expand("h1", (src, port), (dst, SERVER_PORT_BASE), 2,
                              paths=[net.topo.path_addresses("3g")])
            before = mptcp_counters(server)
            [out] = driver.run([Transfer(i, "h1", "h2", src, dst, port, SERVER_PORT_BASE, 0.0, MB)],
                               mptcp, tmp_path / str(i))
            after = mptcp_counters(server)
            assert out.error is None and out.received == MB, out
            took[mptcp] = out.completion_s
            joins = after["MPJoinAckRx"] - before["MPJoinAckRx"]
            assert joins == (1 if mptcp else 0), (mptcp, joins)
            assert out.subflows == (2 if mptcp else 1), out
    assert 0.9 * ideal_s <= took[False] <= 1.1 * ideal_s, (took, ideal_s)
    assert took[True] < 0.75 * took[False], took


@needs_root
def test_small_run_writes_records_and_the_figure(tmp_path, no_leftovers):
    results = tmp_path / "results"
    done = subprocess.run(
        [str(ROOT / "run_mptcp.sh"), "filesize", "--sizes", "1,300", "--repeats", "3",
         "--cc", "reno", "--results", str(results)],
        capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    base = results / "filesize/100mbps-0ms"
    big = {s: json.loads((base / s / "300pkts/run.json").read_text()) for s in ("tcp", "mptcp")}
    for record in big.values():
        assert record["valid"] and len(record["completion_ms"]) == 3, record["flags"]
    assert big["mptcp"]["subflows_established"] == [2, 2, 2]
    assert big["tcp"]["subflows_established"] == [1, 1, 1]
    assert (results / "plots/filesize-100mbps-0ms.png").stat().st_size > 10000
    assert "## File size (paper Fig. 17)" in (results / "report.md").read_text()


def write_point(results, scheme: str, size: int, median: float, valid: bool = True) -> None:
    cfg = FilesizeConfig()
    d = results / "filesize" / "100mbps-0ms" / scheme / f"{size}pkts"
    d.mkdir(parents=True)
    d.joinpath("run.json").write_text(json.dumps({
        "config": {"scheme": scheme, "size_pkts": size, "repeats": 3, "bw_mbps": 100, "delay_ms": 0,
                   "queue_pkts": 100, "cc": cfg.cc},
        "median_ms": median, "p10_ms": median * 0.9, "p90_ms": median * 1.1,
        "subflows_established": [2, 2, 1] if scheme == "mptcp" else [1, 1, 1],
        "valid": valid, "flags": [] if valid else ["transfer_failed"]}))


def test_figure_marks_the_crossover_from_records(tmp_path):
    """MPTCP behind at 1 and 10 packets, ahead from 100 on except an invalid
    point, which does not count: the crossover is 100."""
    import plot
    for size, tcp, mptcp in ((1, 1.0, 1.2), (10, 2.0, 2.5), (100, 10.0, 6.0), (1000, 100.0, 55.0)):
        write_point(tmp_path, "tcp", size, tcp)
        write_point(tmp_path, "mptcp", size, mptcp)
    write_point(tmp_path, "tcp", 50, 5.0)
    write_point(tmp_path, "mptcp", 50, 4.0, valid=False)
    drawing = plot.draw_all(tmp_path)
    drawn = drawing.others["filesize-100mbps-0ms"]
    assert drawn.data["crossover"] == 100
    assert drawn.data["mptcp"][2] == (50, 4.0, False)
    assert drawn.mentions("transfer_failed") and drawn.mentions("crossover here: 100 packets")
    report = (tmp_path / "report.md").read_text()
    assert "crossover at 100 packets" in report and "| 50 | 5.00 | 4.00 ! | 0.80 | 67 % |" in report


def test_no_crossover_is_said():
    def point(median):
        return filesize_fig.Point({"config": {"size_pkts": 10}, "median_ms": median, "p10_ms": median,
                                   "p90_ms": median, "subflows_established": [2], "valid": True})
    assert filesize_fig.crossover({"tcp": [point(1.0)], "mptcp": [point(1.5)]}) is None
    assert filesize_fig.crossover({"tcp": [point(1.5)], "mptcp": [point(1.0)]}) == 10


@needs_root
def test_a_closed_loop_starts_each_transfer_when_the_one_before_ends(tmp_path, no_leftovers):
    """Two chains of 200 KB transfers h0 -> h1 until 2 s (each transfer
    after the one before it; 20 Mb/s carries about 12 a second): each
    chained transfer starts once its predecessor has its answer, the one
    running at the stop is ended there, the ones past it end unstarted, and
    the received-byte samples grow to the bytes the transfers received."""
    from emulator.traffic.transfers import STOPPED, TransferDriver
    from tests.hostpair import host_pair
    size, per_chain, stop_s = 200_000, 40, 2.0
    with host_pair() as (fabric, procs, _):
        chains = [[Transfer(c * per_chain + i, "h0", "h1", "10.9.0.2", "10.9.0.3", 0, 7000, 0.0, size,
                            after=None if i == 0 else c * per_chain + i - 1)
                   for i in range(per_chain)] for c in range(2)]
        driver = TransferDriver(fabric, procs)
        outcomes = driver.run([t for chain in chains for t in chain], False, tmp_path,
                              timeout_s=10.0, stop_s=stop_s, sample_s=0.5)
    by_index = {o.transfer.index: o for o in outcomes}
    started = [o for o in outcomes if o.started]
    assert 10 <= len(started) < 2 * per_chain, len(started)
    for chain in chains:
        done = [by_index[t.index] for t in chain]
        ran = [o for o in done if o.started]
        assert done[:len(ran)] == ran, "a chain starts in order and stops once"
        assert all(o.error is None and o.received == size for o in ran[:-1]), ran
        assert ran[-1].error in (None, STOPPED) and ran[-1].received <= size, ran[-1]
        for before, after in zip(ran, ran[1:]):
            assert before.acked_s <= after.start_s <= before.acked_s + 0.1, (before, after)
            assert after.start_s < stop_s
        assert all(o.start_s is None and o.last_byte_s is None for o in done[len(ran):])
    samples = driver.received_samples
    assert [n for _, n in samples] == sorted(n for _, n in samples)
    assert len(samples) >= 4 and samples[-1][1] == sum(o.received for o in outcomes)
