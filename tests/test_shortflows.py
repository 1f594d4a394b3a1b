"""Short flows beside long ones (paper Fig. 12, experiments/shortflows.py):
the config's defaults and order, a small run end to end, and the figure
from records."""
from __future__ import annotations

import json
import subprocess

from experiments.config import LinkParams, ShortflowsConfig
from tests.conftest import ROOT, needs_root


def test_files_load_a_link_by_the_papers_share_and_schemes_group_by_congestion_control():
    """One 70 KB file every 200 ms at 100 Mb/s is 2.8 % of a link; at
    10 Mb/s the same share is one every 2 s. TCP and UNCOUPLED (both reno)
    run on one network, before EWTCP's and LIA's."""
    assert ShortflowsConfig(link=LinkParams(bw_mbps=10)).interval == 2.0
    assert ShortflowsConfig(link=LinkParams(bw_mbps=100)).interval == 0.2
    cfg = ShortflowsConfig(schemes=("lia", "tcp", "ewtcp", "uncoupled"))
    cfg.validate()
    assert [p.scheme for p in cfg.points()] == ["lia", "tcp", "uncoupled", "ewtcp"]
    assert [p.cc for p in cfg.points()] == ["lia", "reno", "reno", "ewtcp"]
    assert ShortflowsConfig().n_hosts == 64 and ShortflowsConfig(ratio=1).n_hosts == 16


@needs_root
def test_small_run_times_short_files_beside_long_flows(tmp_path, no_leftovers):
    results = tmp_path / "results"
    done = subprocess.run(
        [str(ROOT / "run_mptcp.sh"), "shortflows", "--cc", "tcp,uncoupled", "--ratio", "1",
         "--time", "6", "--warmup", "2", "--results", str(results)],
        capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    runs = {s: json.loads((results / "shortflows4" / s / "run.json").read_text())
            for s in ("tcp", "uncoupled")}
    for scheme, run in runs.items():
        short = run["short"]
        # 16 hosts: 5 send long flows, 11 send files, about 3 each in 6 s.
        assert len(run["flows"]) == 5 and short["files"] >= 10, (scheme, short["files"])
        assert short["completed"] == short["files"] and short["failed"] == 0, short["errors"]
        # A 70 KB file takes at least its size over a 10 Mb/s link.
        assert min(short["completion_ms"]) >= 70_000 * 8 / 10e6 * 1000, short["completion_ms"][:3]
        assert run["config"]["short_cc"] == "reno"
    assert runs["tcp"]["config"]["subflows"] == 1 and runs["uncoupled"]["config"]["subflows"] == 4
    assert all(f["subflows_established"] == 4 for f in runs["uncoupled"]["flows"]), runs["uncoupled"]["flags"]
    assert (results / "plots/shortflows4.png").stat().st_size > 10000
    assert "## Short flows beside long flows (paper Fig. 12)" in (results / "report.md").read_text()


def test_figure_and_report_from_records(tmp_path):
    import plot
    for scheme, times, mbps, valid in (("tcp", [50, 60, 400], 3.0, True),
                                       ("uncoupled", [80, 90, 900], 5.0, True),
                                       ("lia", [55, 70, 500], 4.5, False)):
        d = tmp_path / "shortflows4" / scheme
        d.mkdir(parents=True)
        d.joinpath("run.json").write_text(json.dumps({
            "config": {"scheme": scheme, "k": 4, "ratio": 4, "bw_mbps": 10, "subflows": 4,
                       "multipath_subflows": 4, "file_bytes": 70000, "interval_s": 2.0,
                       "time_s": 40, "warmup_s": 5},
            "mean_flow_mbps": mbps,
            "short": {"files": 3, "completed": 3, "completion_ms": times, "median_ms": times[1],
                      "p90_ms": times[2], "p99_ms": times[2]},
            "valid": valid, "flags": [] if valid else ["cpu_saturated"]}))
    drawn = plot.draw_all(tmp_path).others["shortflows4"]
    assert drawn.data["uncoupled"] == {"median_ms": 90, "long_pct": 50.0, "files": 3, "valid": True}
    assert drawn.data["lia"]["valid"] is False and drawn.mentions("cpu_saturated")
    assert drawn.mentions("UNCOUPLED: median 90 ms")
    report = (tmp_path / "report.md").read_text()
    assert "| UNCOUPLED | 3 of 3 | 90 | 900 | 900 | 50.0 | 49 |" in report
    assert "| MPTCP (LIA) ! |" in report
