"""BCube many-to-one (experiments/manytoone.py): the matrix and each flow's
direct path, a small experiment end to end on the kernel's routes, and the
figure from records."""
from __future__ import annotations

import json
import subprocess

from dctopo import BCube
from experiments.config import ManyToOneConfig
from experiments.manytoone import differing_level, neighbour_reads
from tests.conftest import ROOT, needs_root


def test_every_host_reads_from_each_neighbour_once():
    topo = BCube(n=4, k=1)
    matrix = neighbour_reads(topo, 0)
    assert len(matrix.flows) == 16 * 6 == ManyToOneConfig().n_flows
    into = {}
    for f in matrix.flows:
        into.setdefault(f.dst, set()).add(f.src)
    for i, name in enumerate(topo.names):
        assert into[name] == {topo.names[j] for j in topo.neighbours(i)}
    # h0_1 and h0_3 share the level-0 switch, h0_1 and h2_1 the level-1 one.
    idx = topo.names.index
    assert differing_level(topo, idx("h0_1"), idx("h0_3")) == 0
    assert differing_level(topo, idx("h0_1"), idx("h2_1")) == 1


def test_points_and_subflows_follow_the_levels():
    cfg = ManyToOneConfig(k=2, n=3)
    cfg.validate()
    assert cfg.subflows == 3 and cfg.n_flows == 27 * 6
    assert [p.cc for p in cfg.points()] == ["reno", "ewtcp", "lia"]


@needs_root
def test_tcp_stays_on_the_direct_paths_and_mptcp_detours(tmp_path, no_leftovers):
    """BCube(2,1): 4 hosts, each reading from 2 neighbours. TCP's flows all
    take their one-hop path, so no host relays a datagram; MPTCP's second
    subflow starts on the other level, a detour through two relays."""
    results = tmp_path / "results"
    done = subprocess.run(
        [str(ROOT / "run_mptcp.sh"), "manytoone", "--n", "2", "--cc", "tcp,lia", "--bw", "10",
         "--time", "3", "--warmup", "1", "--results", str(results)],
        capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    base = results / "manytoone/bcube2-1"
    tcp = json.loads((base / "tcp/reads/run.json").read_text())
    lia = json.loads((base / "lia/reads/run.json").read_text())
    assert tcp["hosts"] == 4 and len(tcp["flows"]) == 8 and len(tcp["reads_mbps"]) == 4
    assert all(f["pct_of_link"] > 0 for f in tcp["flows"]), tcp["flags"]
    assert tcp["relay"]["forwarded"] == 0 and tcp["relay"]["sent"] > 0
    assert all(f["subflows_established"] == 2 for f in lia["flows"]), lia["flags"]
    assert lia["relay"]["forwarded"] > 0
    assert (results / "plots/manytoone-bcube2-1.png").stat().st_size > 10000
    assert "Many-to-one on BCube" in (results / "report.md").read_text()


def test_figure_from_records_without_root(tmp_path):
    import plot
    cfg = ManyToOneConfig()
    for p, pct, relayed in zip(cfg.points(), (90.0, 60.0, 80.0), (0.0, 1.5, 0.4)):
        d = p.run_dir(tmp_path, cfg.n, cfg.k)
        d.mkdir(parents=True)
        invalid = p.scheme == "ewtcp"
        d.joinpath("run.json").write_text(json.dumps({
            "config": {"scheme": p.scheme, "network": "BCube(4,1)", "subflows": 1 if p.scheme == "tcp" else 2,
                       "bw_mbps": 5, "queue_pkts": 100, "time_s": 40, "warmup_s": 10},
            "hosts": 2, "flows": [{}] * 12, "read_pct_of_max": pct, "read_max_mbps": 10.0,
            "reads_mbps": {"h0_0": pct / 10 - 1, "h0_1": pct / 10 + 1}, "read_mean_mbps": pct / 10,
            "relay": {"forwarded_per_sent": relayed},
            "valid": not invalid, "flags": ["cpu_saturated"] if invalid else []}))
    drawn = plot.draw_all(tmp_path).others["manytoone-bcube4-1"]
    assert drawn.data["tcp"] == {"read_pct": 90.0, "min_pct": 80.0, "relayed_per_sent": 0.0, "valid": True}
    assert drawn.data["ewtcp"]["valid"] is False and drawn.mentions("cpu_saturated")
    report = (tmp_path / "report.md").read_text()
    assert "| EWTCP ! | 6.00 | 60.0 | 50.0 | 1.50 | 76 |" in report
