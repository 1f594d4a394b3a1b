"""Distributed file transfers (CS536 '13, experiments/transfers.py): the
N-switch topology's paths, a small run of both sweeps end to end, and the
figures from records."""
from __future__ import annotations

import json
import subprocess

from dctopo import NSwitch
from experiments.config import LinkParams, TransfersConfig
from tests.conftest import ROOT, needs_root


def test_nswitch_gives_each_path_its_own_switch_and_addresses():
    topo = NSwitch(n=3, link=LinkParams(bw_mbps=10))
    assert sorted(topo.switches()) == ["s1", "s2", "s3"]
    assert [topo.path_addresses(i) for i in range(3)] == [
        ("10.1.0.2", "10.1.1.2"), ("10.2.0.2", "10.2.1.2"), ("10.3.0.2", "10.3.1.2")]
    assert topo.host_addresses("h1") == ["10.1.0.2", "10.2.0.2", "10.3.0.2"]


def test_points_run_every_subflow_count_up_to_n_switches():
    cfg = TransfersConfig(switches=(2, 3), senders=(1,), receivers=(4,), subflows=(1, 4))
    cfg.validate()
    assert [(p.sweep, p.label, p.subflows) for p in cfg.points()] == [
        ("nswitch", "n2", 1), ("nswitch", "n2", 2), ("nswitch", "n3", 1), ("nswitch", "n3", 2),
        ("nswitch", "n3", 3), ("fattree", "s1-r4", 1), ("fattree", "s1-r4", 4)]


@needs_root
def test_small_run_of_both_sweeps(tmp_path, no_leftovers):
    """2 MB over two switches: MPTCP-2 uses both paths and takes at most 0.7
    of TCP's time; on FatTree(4) 2 senders send to 2 receivers in the other
    pods, every part arrives."""
    results = tmp_path / "results"
    done = subprocess.run(
        [str(ROOT / "run_mptcp.sh"), "transfers", "--switches", "2", "--senders", "2",
         "--receivers", "2", "--subflows", "1,2", "--file-mb", "2", "--cc", "reno",
         "--results", str(results)],
        capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    base = results / "transfers"
    tcp, mptcp = (json.loads((base / f"nswitch/n2/flows{n}/run.json").read_text()) for n in (1, 2))
    assert tcp["valid"] and mptcp["valid"], (tcp["flags"], mptcp["flags"])
    assert mptcp["subflows_established"] == [2]
    assert mptcp["completion_s"] <= 0.7 * tcp["completion_s"], (tcp["completion_s"], mptcp["completion_s"])
    assert tcp["completion_s"] >= 0.95 * tcp["one_link_s"]
    ft = json.loads((base / "fattree/s2-r2/flows2/run.json").read_text())
    assert ft["parts"] == 4 and ft["bytes"] == 2 * 2_000_000 and ft["completion_s"] is not None
    assert all(h.split("_")[0] in ("h0", "h2") for h in ft["senders"])
    assert all(h.split("_")[0] in ("h1", "h3") for h in ft["receivers"])
    for name in ("transfers-nswitch", "transfers-fattree"):
        assert (results / "plots" / f"{name}.png").stat().st_size > 10000
    assert "## Distributed file transfers (CS536 '13)" in (results / "report.md").read_text()


def test_figures_from_records(tmp_path):
    import plot
    def write(sweep, label, subflows, seconds, valid=True, **cfg):
        d = tmp_path / "transfers" / sweep / label / f"flows{subflows}"
        d.mkdir(parents=True)
        d.joinpath("run.json").write_text(json.dumps({
            "config": {"sweep": sweep, "subflows": subflows, "switches": 0, "senders": 0,
                       "receivers": 0, "file_mb": 10, "bw_mbps": 10, "queue_pkts": 100, "cc": "lia",
                       **cfg},
            "completion_s": seconds, "one_link_s": 8.4, "valid": valid,
            "flags": [] if valid else ["cpu_saturated"]}))
    for s, secs in ((1, 8.6), (2, 4.5), (3, 3.2)):
        write("nswitch", "n3", s, secs, switches=3)
    write("fattree", "s4-r4", 1, 20.0, senders=4, receivers=4)
    write("fattree", "s4-r4", 4, 14.0, valid=False, senders=4, receivers=4)
    write("fattree", "s4-r1", 1, 30.0, senders=4, receivers=1)
    write("fattree", "s4-r1", 4, None, valid=False, senders=4, receivers=1)
    drawing = plot.draw_all(tmp_path)
    assert drawing.others["transfers-nswitch"].data == {3: [(1, 8.6, True), (2, 4.5, True), (3, 3.2, True)]}
    fattree = drawing.others["transfers-fattree"]
    assert fattree.data["4:4"] == [(1, 20.0, True), (4, 14.0, False)]
    assert fattree.data["4:1"] == [(1, 30.0, True)] and fattree.mentions("cpu_saturated")
    report = (tmp_path / "report.md").read_text()
    assert "| 3 | 8.60 | 4.50 | 3.20 |" in report and "| 4 to 4 | 20.00 | 14.00 ! |" in report
