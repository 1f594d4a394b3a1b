"""The link-failure experiment (experiments/linkfailure.py, paper Fig. 19):
its config, the phases and crossing flows computed from a record and a
tap, and the figure and report from records. The hot link and the tap on a
real network: test_hotlink.py."""
from __future__ import annotations

import json

import pytest

from experiments.config import ConfigError, LinkFailureConfig, LinkFailurePoint
from harness import cli

HOST_OF_IP = {"10.0.0.2": "h0_0_0", "10.0.2.2": "h0_1_0", "10.1.0.2": "h1_0_0", "10.1.0.3": "h1_0_1",
              "10.0.0.3": "h0_0_1", "10.2.2.2": "h2_1_0", "10.2.3.2": "h2_1_0", "10.3.0.2": "h3_0_0",
              "10.2.0.2": "h2_0_0"}
POD0 = {"h0_0_0", "h0_0_1", "h0_1_0", "h0_1_1"}


def test_config_thirds_points_and_folders(tmp_path):
    cfg = LinkFailureConfig(time_s=30, warmup_s=3, results=tmp_path)
    assert cfg.window == (13, 23)
    assert cfg.rack_size == 3 and LinkFailureConfig(k=8).rack_size == 5
    assert cfg.points() == [LinkFailurePoint("tcp_dhft"), LinkFailurePoint("mptcp_dhft")]
    assert LinkFailurePoint("tcp_dhft").run_dir(tmp_path, 4, "openflow") == tmp_path / "linkfailure4-openflow/tcp_dhft"
    with pytest.raises(ConfigError, match="2..16"):
        LinkFailureConfig(hosts_per_rack=1).validate()
    with pytest.raises(ConfigError, match="at least one per interface"):
        LinkFailureConfig(subflows=1).validate()
    got, _ = cli.COMMANDS["linkfailure"].config_from(["--factor", "0.2", "--schemes", "mptcp_dhft",
                                                      "--cc", "reno", "--results", str(tmp_path)])
    assert (got.factor, got.schemes, got.time_s, got.fabric) == (0.2, ("mptcp_dhft",), 60.0, "l3")


def _flow(src: str, dst: str, port: int, before: float, during: float, after: float) -> dict:
    """Warm-up 3 s, then 10 s before, 10 s during and 10 s after the window."""
    return {"src": src, "dst": dst, "server_port": port,
            "per_second_mbps": [before] * 13 + [during] * 10 + [after] * 10}


def _conn(src: str, sport: int, dst: str, dport: int, before: float, during: float) -> dict:
    """A connection as the tap records it from second 8 to 27."""
    series = [before] * 5 + [during] * 10 + [before] * 5
    return {"src": src, "sport": sport, "dst": dst, "dport": dport,
            "bytes": int(sum(series) * 1e6 / 8), "per_second_mbps": series}


def _record() -> dict:
    flows = [_flow("h0_0_0", "h1_0_0", 5201, 10, 0.5, 10),     # TCP out of pod 0 over the link
             _flow("h1_0_1", "h0_0_1", 5201, 9, 0.5, 9),       # TCP into pod 0 over it
             _flow("h2_0_0", "h3_0_0", 5201, 8, 8, 8),         # elsewhere
             _flow("h0_1_0", "h2_1_0", 5202, 6, 6, 6)]         # MPTCP: two subflows on it, moves off
    tap = {"first_s": 8, "window_s": [8, 28], "errors": [],
           "mbps": {"out": [10.0] * 5 + [1.0] * 10 + [10.0] * 5, "in": [9.0] * 5 + [1.0] * 10 + [9.0] * 5},
           "connections": [_conn("10.0.0.2", 40000, "10.1.0.2", 5201, 9.5, 0.5),
                           _conn("10.1.0.3", 40001, "10.0.0.3", 5201, 8.5, 0.5),
                           _conn("10.0.2.2", 40002, "10.2.2.2", 5202, 1.0, 0.0),
                           _conn("10.0.2.2", 40010, "10.2.3.2", 5202, 2.0, 0.0),
                           _conn("10.9.9.9", 1, "10.3.0.2", 9999, 0.0, 3.0)]}   # nobody's
    return {"flows": flows, "event": {"link": "a0_0-c0", "tap": tap, "exposed_hosts": sorted(POD0)}}


def test_phases_crossing_flows_and_link_rate_from_a_record_and_its_tap():
    from experiments.linkfailure import hot_link_summary
    cfg = LinkFailureConfig(time_s=30, warmup_s=3)
    record = _record()
    h = hot_link_summary(record, cfg, HOST_OF_IP, POD0)
    assert h["phases_s"] == {"before": [3, 13], "during": [13, 23], "after": [23, 33]}
    assert h["crossing_flows"] == [0, 1, 3]
    assert h["aggregate_mbps"] == {"before": 33.0, "during": 15.0, "after": 33.0}
    assert h["aggregate_kept"] == round(15 / 33, 4)
    assert h["crossing_mbps"] == {"out": {"before": 16.0, "during": 6.5, "after": 16.0},
                                  "in": {"before": 9.0, "during": 0.5, "after": 9.0}}
    # The link's own rate over the seconds the tap saw of each phase.
    assert h["link_mbps"] == {"out": {"before": 10.0, "during": 1.0, "after": 10.0},
                              "in": {"before": 9.0, "during": 1.0, "after": 9.0}}
    assert h["degraded_mbps"] == 1.0
    flows = record["flows"]
    assert [f["crosses_hot_link"] for f in flows] == [True, True, False, True]
    assert flows[3]["on_hot_link_mbps"][:5] == [3.0] * 5 and flows[2]["on_hot_link_mbps"] == []


def test_without_a_tap_no_flow_crosses_and_the_link_rate_is_unknown():
    from experiments.linkfailure import hot_link_summary
    record = _record()
    del record["event"]["tap"]
    h = hot_link_summary(record, LinkFailureConfig(time_s=30, warmup_s=3), HOST_OF_IP, POD0)
    assert h["crossing_flows"] == [] and h["aggregate_mbps"]["during"] == 15.0
    assert h["link_mbps"]["out"] == {"before": None, "during": None, "after": None}


def test_figure_and_report_from_records(tmp_path):
    import plot
    from experiments.linkfailure import hot_link_summary
    cfg = LinkFailureConfig(time_s=30, warmup_s=3)
    for scheme, valid in (("tcp_dhft", True), ("mptcp_dhft", False)):
        record = _record()
        record["hot_link"] = hot_link_summary(record, cfg, HOST_OF_IP, POD0)
        record.update({"valid": valid, "flags": [] if valid else ["subflows_missing"], "hosts": 24,
                       "config": {"k": 4, "scheme": scheme, "bw_mbps": 10, "factor": 0.1, "fabric": "l3",
                                  "cc": "lia", "warmup_s": 3, "time_s": 30, "window_s": [13, 23]}})
        folder = tmp_path / "linkfailure4-l3" / scheme
        folder.mkdir(parents=True)
        (folder / "run.json").write_text(json.dumps(record))
    drawing = plot.draw_all(tmp_path)
    png = tmp_path / "plots" / "linkfailure4-l3.png"
    assert png.stat().st_size > 10000
    drawn = drawing.others["linkfailure4-l3"]
    assert drawn.data["tcp_dhft"]["aggregate_mbps"]["during"] == 15.0
    assert drawn.data["mptcp_dhft"]["valid"] is False
    assert drawn.mentions("INVALID: MPTCP: subflows_missing")
    assert drawn.mentions("3 of 4 flows crossed a0_0-c0")
    report = (tmp_path / "report.md").read_text()
    assert "| TCP | 33.0 / 15.0 / 33.0 | 45% | 3 | 16.0 / 6.5 | 9.0 / 0.5 | 1 Mb/s |" in report
    assert "| MPTCP ! |" in report
