"""`algorithms` and `hotspot` (experiments/algorithms.py): the schemes and the figures from
records (the hot link on a real network: test_hotlink.py)."""
from __future__ import annotations

import json
import re

import pytest

from experiments.config import CC_SCHEMES, CcCompareConfig, ConfigError


def test_schemes_map_to_one_run_sweeps_with_their_algorithm():
    cfg = CcCompareConfig(subflows=6)
    got = {s: (cfg.sweep_config(s).cc, cfg.sweep_config(s).subflows) for s in cfg.schemes}
    assert got == {"tcp": ("reno", (1,)), "uncoupled": ("reno", (6,)), "ewtcp": ("ewtcp", (6,)),
                   "lia": ("lia", (6,)), "olia": ("olia", (6,))}
    assert cfg.sweep_config("lia").results == cfg.results / "algorithms4" / "lia"
    assert CcCompareConfig(schemes=("tcp", "uncoupled")).cc == "reno"
    assert CcCompareConfig(schemes=("tcp", "olia")).cc == "olia"   # the preflight checks the BPF build


def test_hot_window_is_the_middle_third_of_the_counted_time():
    cfg = CcCompareConfig(experiment="hotspot", time_s=60, warmup_s=5)
    assert cfg.hot_window == (25, 45)
    with pytest.raises(ConfigError, match="at least 15 s"):
        CcCompareConfig(experiment="hotspot", time_s=12).validate()


def _fake_run(base, scheme: str, pcts: list[float], drops: int, valid=True, event=None):
    """A run folder as the sweep writes it: run.json and ports.csv with one
    core port (a0_0-eth2), one access port (e0_0-eth0) and one edge uplink."""
    cc, n = CC_SCHEMES[scheme]
    d = base / scheme / "ft4" / "one_to_one" / f"flows{n or 8}"
    d.mkdir(parents=True)
    hosts = ["h0_0_0", "h1_0_0", "h2_0_0", "h3_0_0"]
    flows = [{"src": hosts[i], "dst": hosts[(i + 1) % 4], "pct_optimal": p, "goodput_mbps": p / 10,
              "per_second_mbps": [p / 10] * 10 + ([1.0] * 5 if i == 0 else [p / 10] * 5) + [p / 10] * 5}
             for i, p in enumerate(pcts)]
    d.joinpath("run.json").write_text(json.dumps({
        "config": {"k": 4, "subflows": n or 8, "bw_mbps": 10, "queue_pkts": 100, "time_s": 10,
                   "warmup_s": 5, "fabric": "l3", "seed": 0, "cc": cc},
        "flows": flows, "valid": valid, "flags": [] if valid else ["subflows_missing"],
        "summary": {"mean_pct": sum(pcts) / len(pcts), "p10_pct": min(pcts), "min_pct": min(pcts)},
        **({"event": event} if event else {})}))
    rows = ["t_s,node,intf,tx_bytes,tx_packets,drops,backlog_pkts"]
    for t, k in ((5.0, 0), (15.0, 1)):
        rows += [f"{t},a0_0,a0_0-eth2,0,{1000 * k},{drops * k},0",
                 f"{t},e0_0,e0_0-eth0,0,{1000 * k},{10 * k},0",
                 f"{t},e0_0,e0_0-eth2,0,{1000 * k},{500 * k},0"]     # edge uplink: aggregation
    d.joinpath("ports.csv").write_text("\n".join(rows) + "\n")


def test_figures_and_report_from_records_without_root(tmp_path):
    import plot
    event = {"kind": "hot_link", "link": "a0_0-c0", "factor": 0.1, "planned_s": [10, 15],
             "applied_s": {"slowed": 10.0, "restored": 15.0},
             "exposed_hosts": ["h0_0_0"], "errors": []}
    _fake_run(tmp_path / "algorithms4", "tcp", [40, 60, 80, 20], drops=50)
    _fake_run(tmp_path / "algorithms4", "lia", [90, 85, 80, 95], drops=10, valid=False)
    _fake_run(tmp_path / "hotspot4", "tcp", [40, 60, 80, 20], drops=0, event=event)
    drawing = plot.draw_all(tmp_path)
    algos, hot = drawing.cc["algorithms4"], drawing.cc["hotspot4"]
    assert algos.data["tcp"]["pcts"] == [20, 40, 60, 80]
    # a0_0-eth2 (agg -> core) dropped 50 of 1050; e0_0-eth0 (edge -> host) 10 of 1010
    assert algos.data["tcp"]["loss"]["core"] == [pytest.approx(100 * 50 / 1050)]
    assert algos.data["tcp"]["loss"]["access"] == [pytest.approx(100 * 10 / 1010)]
    assert algos.data["tcp"]["loss"]["aggregation"] == [pytest.approx(100 * 500 / 1500)]
    assert algos.mentions("subflows_missing") and algos.mentions("MPTCP (LIA) (INVALID)")
    # h0_0_0 -> h1_0_0 and h3_0_0 -> h0_0_0 touch pod 0; only the first slows
    assert hot.data["tcp"]["exposed"][11] == pytest.approx((1.0 + 2.0) / 2)
    assert hot.data["tcp"]["during_sorted"][0] == pytest.approx(1.0)
    report = (tmp_path / "report.md").read_text()
    assert re.search(r"\| single-path TCP \| 50\.0 \| 20\.0 \| 20\.0 \| 4\.76 \| 33\.33 \| 0\.99 \| – \|", report)
    assert "| single-path TCP | 3.00 | 1.50 | 0.50 | 7.00 | 7.00 | – |" in report
    assert (tmp_path / "plots" / "algorithms4.png").stat().st_size > 10000
