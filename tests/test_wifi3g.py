"""`wifi3g`, WiFi + 3G: the topology and its routing, the sweep's points, and a
small experiment on the real kernel (each scheme on its own paths, MPTCP on
both), drawn by plot.py."""
import json
import subprocess
from pathlib import Path

import pytest

from dctopo import WiFi3G
from experiments.config import (CELL, WIFI, WIFI3G_SCHEMES, ConfigError, LinkParams, Wifi3GConfig,
                                buffer_pkts, coupled_cc_supported)
from emulator.fabrics.l3 import L3Fabric
from tests.conftest import ROOT, interrupt_after_first_run, needs_root


def test_paths_follow_the_seed():
    # CS244 '14: WiFi 8 Mb/s 20 ms RTT 80 ms buffer; 3G 2 Mb/s 150 ms RTT 2 s buffer.
    assert (WIFI.bw_mbps, 2 * WIFI.delay_ms, WIFI.queue_pkts) == (8.0, 20.0, buffer_pkts(8, 80))
    assert (CELL.bw_mbps, 2 * CELL.delay_ms, CELL.queue_pkts) == (2.0, 150.0, buffer_pkts(2, 2000))
    assert buffer_pkts(8, 80) == 53 and buffer_pkts(2, 2000) == 330


def test_topology_has_one_interface_per_path_at_each_end():
    topo = WiFi3G()
    h1, h2 = topo.interfaces("h1"), topo.interfaces("h2")
    assert [(i.name, i.ip, i.peer) for i in h1] == [("h1-eth0", "10.1.0.2/32", "s1"),
                                                     ("h1-eth1", "10.2.0.2/32", "s2")]
    assert [(i.name, i.ip, i.peer) for i in h2] == [("h2-eth0", "10.1.1.2/32", "s1"),
                                                     ("h2-eth1", "10.2.1.2/32", "s2")]
    # The path's link (towards the receiver) carries the path's shaping.
    assert [i.link for i in h2] == [WIFI, CELL]
    assert topo.path_addresses("3g") == ("10.2.0.2", "10.2.1.2")


def test_multihomed_host_routes_by_source():
    fabric = L3Fabric(WiFi3G(), LinkParams(), delay_backend="nfqueue")
    script = "\n".join(fabric.host_script("h1"))
    assert "rule add from 10.1.0.2 table 100 priority 1000" in script
    assert "rule add from 10.2.0.2 table 101 priority 1001" in script
    assert "route add default via 10.2.0.1 dev h1-eth1 onlink src 10.2.0.2 table 101" in script


def test_points_cover_each_sweep_and_scheme():
    cfg = Wifi3GConfig(buffers_kb=(50, 100), wifi_loss_pcts=(0, 1), wifi_rtts_ms=(20, 80))
    pts = cfg.points()
    assert len(pts) == 3 * 2 * 5       # sweeps, values, schemes
    loss = [p for p in pts if p.sweep == "loss" and p.scheme == "mptcp"]
    assert [p.wifi.loss_pct for p in loss] == [0, 1] and all(p.buffer_kb == 500 for p in loss)
    rtt = [p for p in pts if p.sweep == "rtt" and p.scheme == "tcp_3g"]
    assert [p.wifi.delay_ms for p in rtt] == [10, 40] and rtt[0].cell == CELL
    assert str(pts[0].run_dir(cfg.results)) == "results/wifi3g/buffer/tcp_wifi/50kb"
    assert len(Wifi3GConfig(buffers_kb=(50,), sweeps=("buffer",), schemes=("tcp_wifi", "mptcp")).points()) == 2


def test_the_penalized_scheme_needs_a_coupled_cc():
    with pytest.raises(ConfigError, match="give a coupled --cc"):
        Wifi3GConfig(cc="reno", schemes=("mptcp", "mptcp_penalized")).validate()
    with pytest.raises(ConfigError, match="give a coupled --cc"):
        Wifi3GConfig(cc="reno", schemes=("mptcp_hold",)).validate()
    schemes, note = Wifi3GConfig.default_schemes("reno")
    assert "mptcp_penalized" not in schemes and "mptcp_hold" not in schemes
    assert "mptcp_penalized, mptcp_hold left out" in note


@needs_root
def test_small_experiment_uses_each_path_and_draws(tmp_path, no_leftovers):
    """Buffer sweep at one point: TCP over WiFi only on WiFi, TCP over 3G
    only on 3G, MPTCP with two subflows carrying bytes on both; then
    plot.py draws the buffer figure from the records."""
    results = tmp_path / "results"
    # liap and liab where the kernel can run them: at 400 KB the connection
    # is limited by the receive window, so liap's 3G subflow should be
    # penalized, and liab's held (WiFi fills the window within 3G's RTT).
    penalized = coupled_cc_supported()
    schemes = ("tcp_wifi", "tcp_3g", "mptcp") + (("mptcp_penalized", "mptcp_hold") if penalized else ())
    done = subprocess.run(
        [str(ROOT / "run_mptcp.sh"), "wifi3g", "--sweeps", "buffer", "--buffers", "400",
         "--schemes", ",".join(schemes), "--samples", "4", "--warmup", "4", "--results", str(results)],
        capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    runs = {s: json.loads((results / "wifi3g/buffer" / s / "400kb/run.json").read_text())
            for s in schemes}
    if penalized:
        liap = runs["mptcp_penalized"]
        assert liap["config"]["cc"] == "liap" and liap["subflows_established"] == 2
        assert liap["penalties"] > 0 and liap["holds"] == 0, liap
        assert runs["mptcp"]["penalties"] == 0 and runs["mptcp"]["holds"] == 0
        liab = runs["mptcp_hold"]
        assert liab["config"]["cc"] == "liab" and liab["subflows_established"] == 2
        assert liab["holds"] > 0 and liab["penalties"] == 0, liab
        # Held, the 3G subflow carries far less than plain LIA's does.
        assert liab["path_share"]["3g"] < 0.5 * runs["mptcp"]["path_share"]["3g"], (
            liab["path_share"], runs["mptcp"]["path_share"])
    wifi, cell, mptcp = runs["tcp_wifi"], runs["tcp_3g"], runs["mptcp"]
    assert wifi["path_share"]["wifi"] > 0.99 and cell["path_share"]["3g"] > 0.99
    assert wifi["goodput_mbps"] > 0.8 * wifi["capacity_mbps"]["wifi"], wifi["samples_mbps"]
    assert cell["goodput_mbps"] > 0.8 * cell["capacity_mbps"]["3g"], cell["samples_mbps"]
    assert mptcp["subflows_established"] == 2, mptcp["subflow_create_errors"]
    assert mptcp["path_share"]["3g"] > 0.05, mptcp["path_share"]
    assert mptcp["goodput_mbps"] > 0
    for r in runs.values():
        assert r["config"]["receive_buffer_kb"] == 400 and r["config"]["delay_backend"]
        assert "subflows_missing" not in r["flags"] and "zero_goodput_flow" not in r["flags"]
    assert (results / "plots" / "wifi3g-buffer.png").stat().st_size > 10000
    assert "goodput against receive buffer" in (results / "report.md").read_text()


def test_repeats_are_runs_of_their_own_taking_the_schemes_in_turn():
    cfg = Wifi3GConfig(sweeps=("buffer",), buffers_kb=(200,), schemes=("tcp_wifi", "mptcp"), repeats=3)
    pts = cfg.points()
    assert [(p.scheme, p.repeat) for p in pts] == [("tcp_wifi", 0), ("mptcp", 0), ("tcp_wifi", 1),
                                                   ("mptcp", 1), ("tcp_wifi", 2), ("mptcp", 2)]
    assert [p.label for p in pts[::2]] == ["200kb", "200kb-r2", "200kb-r3"]
    assert len({p.run_dir(cfg.results) for p in pts}) == 6
    with pytest.raises(ConfigError, match="--repeats 0"):
        Wifi3GConfig(repeats=0).validate()


def test_a_points_repeats_are_drawn_as_the_median_of_their_medians():
    from figures.wifi3g import Point, merge_repeats
    runs = [Point(x=200, median=m, q25=0, q75=0, valid=v, flags=f, path_share={"wifi": s})
            for m, v, f, s in ((7.0, True, [], 0.9), (9.0, True, [], 0.7), (8.0, False, ["timed_out"], 0.8))]
    [merged] = merge_repeats(runs + [])
    assert (merged.median, merged.q25, merged.q75, merged.runs) == (8.0, 7.0, 9.0, 3)
    assert not merged.valid and merged.flags == ["timed_out"] and merged.path_share == {"wifi": 0.8}
    assert merge_repeats(runs[:1]) == runs[:1]


@pytest.mark.parametrize("sweep", ["loss", "rtt"])
def test_figure_from_records_without_root(tmp_path, sweep):
    """plot.py draws each `wifi3g` sweep from run.json alone, invalid runs marked."""
    import plot
    cfg = Wifi3GConfig(sweeps=(sweep,), wifi_loss_pcts=(0, 2), wifi_rtts_ms=(20, 100))
    for i, p in enumerate(cfg.points()):
        d = p.run_dir(tmp_path)
        d.mkdir(parents=True)
        valid = i != 0
        d.joinpath("run.json").write_text(json.dumps({
            "config": {"sweep": p.sweep, "scheme": p.scheme, "x": p.x, "receive_buffer_kb": 500,
                       "wifi": {"bw_mbps": 8, "rtt_ms": 2 * p.wifi.delay_ms, "loss_pct": p.wifi.loss_pct,
                                "queue_pkts": 53},
                       "3g": {"bw_mbps": 2, "rtt_ms": 150, "queue_pkts": 330}, "cc": "reno"},
            "goodput_mbps": 1.0 + i, "samples_mbps": [0.5 + i, 1.0 + i, 1.5 + i],
            "capacity_mbps": {"wifi": 7.65, "3g": 1.91}, "path_share": {"wifi": 0.8, "3g": 0.2},
            "valid": valid, "flags": [] if valid else ["delay_line_late"]}))
    drawing = plot.draw_all(tmp_path)
    shown = drawing.wifi3g[sweep]
    assert {s for s in shown.data} == set(WIFI3G_SCHEMES)
    assert shown.data["tcp_wifi"][0] == (cfg.points()[0].x, 1.0, False)
    assert shown.mentions("delay_line_late")
    assert (tmp_path / "plots" / f"wifi3g-{sweep}.png").exists()
    # report.md's table: a ratio column per MPTCP scheme, as many cells as heads
    from figures.wifi3g import report_lines
    rows = [line for line in report_lines(tmp_path) if line.startswith("|")]
    assert rows[0].count("|") == rows[2].count("|") and "hold / TCP over WiFi" in rows[0]


def _delay_line_pids() -> set[int]:
    pids = set()
    for proc in Path("/proc").glob("[0-9]*"):
        try:
            if b"emulator.delayline" in (proc / "cmdline").read_bytes():
                pids.add(int(proc.name))
        except OSError:
            pass
    return pids


@needs_root
def test_ctrl_c_keeps_finished_runs_and_stops_the_delay_line(tmp_path, no_leftovers):
    workdirs = set(Path("/tmp").glob("mptcp-delayline-*"))
    lines_before = _delay_line_pids()
    results = tmp_path / "results"
    argv = [str(ROOT / "run_mptcp.sh"), "wifi3g", "--sweeps", "buffer", "--buffers", "100,200",
            "--samples", "3", "--warmup", "2", "--results", str(results)]
    first = results / "wifi3g/buffer/tcp_wifi/100kb/run.json"
    # 2 s: inside the second run's traffic
    returncode, err, kept = interrupt_after_first_run(argv, first, settle_s=2)
    assert returncode == 130, err
    assert "interrupted" in err
    assert first.read_bytes() == kept
    assert not (results / "wifi3g/buffer/tcp_3g").exists() or not any(
        (results / "wifi3g/buffer/tcp_3g").iterdir())
    assert _delay_line_pids() <= lines_before
    assert set(Path("/tmp").glob("mptcp-delayline-*")) <= workdirs
