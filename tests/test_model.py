"""The subflow model of paper Fig. 6 (dctopo/subflow_model.py) against values
worked out by hand from the paper's formulas (§4.3.2), its shape, and the
`model` command end to end (no network: it needs no root)."""
from __future__ import annotations

import json

import pytest

from dctopo import subflow_model
from harness import cli

# Worked by hand, with n0 = k^3/4, n1 = k^2/4, n2 = k/2:
#   k=4: n = 16, 4, 2; E_p = 1 - 2/4 = 1/2; (1 - 1/2)(1 - 1/15) = 7/15
#     m=1: V_p = 1/2 (1 + 7/15 - 1/2) = 29/60
#     m=2: V_p = 1/2 (1/4 + 1/2 + 7/15 - 1/2) = 43/120
#     m=8: V_p = 1/2 (7/16 + 1/8 + 7/15 - 1/2) = 127/480
#   k=4 core: E_c = 1 - 4/16 = 3/4; (1 - 1/4)(1 - 3/15) = 3/5
#     m=1: V_c = 3/4 (1 + 3/5 - 3/4) = 51/80
#   k=8: n = 128, 16, 4; E_p = 3/4; (3/4)(1 - 3/127) = 93/127
#     m=8: V_p = 3/4 (7/32 + 1/8 + 93/127 - 3/4) = 3975/16256
HAND = [
    (subflow_model.within_pod, 4, 1, 1 / 2, 29 / 60),
    (subflow_model.within_pod, 4, 2, 1 / 2, 43 / 120),
    (subflow_model.within_pod, 4, 8, 1 / 2, 127 / 480),
    (subflow_model.pod_core, 4, 1, 3 / 4, 51 / 80),
    (subflow_model.within_pod, 8, 8, 3 / 4, 3975 / 16256),
]


@pytest.mark.parametrize("link,k,m,mean,variance", HAND)
def test_the_model_matches_the_paper_worked_by_hand(link, k, m, mean, variance):
    assert link(k, m) == pytest.approx((mean, variance), rel=1e-12)


@pytest.mark.parametrize("k", [4, 8, 16, 32, 48])
def test_the_variance_settles_above_eight_subflows(k):
    """The paper: "the variance settles down above eight subflows", almost
    whatever the size: going from 8 to 16 subflows removes under a tenth of
    what going from 1 to 8 did, on both kinds of link."""
    for link in (subflow_model.within_pod, subflow_model.pod_core):
        v = [link(k, m)[1] for m in range(1, 17)]
        assert all(a > b for a, b in zip(v, v[1:])), f"k={k}: not falling with m: {v}"
        assert v[7] - v[15] < 0.1 * (v[0] - v[7]), (k, v[0], v[7], v[15])
        assert v[15] > 0


@pytest.mark.parametrize("k", [2, 3, 5, 0, -4])
def test_a_fattree_the_model_cannot_have_is_refused(k):
    with pytest.raises(ValueError):
        subflow_model.within_pod(k, 1)


def test_the_model_command_writes_its_record_and_figure(tmp_path, capsys):
    results = tmp_path / "results"
    assert cli.main(["model", "--k", "4,8,16,48", "--subflows-max", "12", "--results", str(results)]) == 0
    record = json.loads((results / "model" / "run.json").read_text())
    assert record["experiment"] == "model" and record["valid"] is True
    table = record["table"]
    assert table["subflows"] == list(range(1, 13))
    assert sorted(table["k"], key=int) == ["4", "8", "16", "48"]
    assert table["k"]["8"]["V_p"][7] == pytest.approx(3975 / 16256)
    assert table["k"]["48"]["hosts"] == 27648
    png = results / "plots" / "fattree-subflow-model.png"
    assert png.stat().st_size > 10_000
    report = (results / "report.md").read_text()
    assert "How many subflows a FatTree needs (paper Fig. 6)" in report
    assert "| 4 | 16 | 0.500 | 0.483 | 0.358 |" in report


@pytest.mark.parametrize("argv,words", [
    (["model", "--k", "5"], "even"),
    (["model", "--k", "4,4"], "twice"),
    (["model", "--k", ""], "at least one"),
    (["model", "--k", "130"], "4..128"),
    (["model", "--subflows-max", "0"], "1..64"),
])
def test_bad_model_input_is_one_line(argv, words, capsys, tmp_path):
    assert cli.main([*argv, "--results", str(tmp_path / "r")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and words in err[0], err
    assert not (tmp_path / "r").exists()


def _fattree_run(results, m: int, edge_up: list[float], agg_up: list[float]) -> None:
    """A FatTree(4) one_to_one run folder with run.json and a ports.csv whose
    edge→aggregation and aggregation→core ports carried those shares of a
    10 Mb/s link over its 10 counted seconds."""
    d = results / "ft4" / "one_to_one" / f"flows{m}"
    d.mkdir(parents=True)
    d.joinpath("run.json").write_text(json.dumps({
        "config": {"topology": "ft4", "workload": "one_to_one", "subflows": m, "bw_mbps": 10,
                   "warmup_s": 0, "time_s": 10},
        "flows": [{"pct_optimal": 50.0}], "valid": m != 8, "flags": [] if m != 8 else ["cpu_saturated"]}))
    rows = ["t_s,node,intf,tx_bytes,tx_packets,drops,backlog_pkts"]
    ports = ([(f"e{i // 2}_{i % 2}", 2 + i % 2, share) for i, share in enumerate(edge_up)]
             + [(f"a{i // 2}_{i % 2}", 2 + i % 2, share) for i, share in enumerate(agg_up)]
             + [("e0_0", 0, 0.9)])                       # edge→host: not counted
    for t in (0.0, 10.0):
        rows += [f"{t},{node},{node}-eth{port},{int(share * 10e6 / 8 * t)},0,0,0" for node, port, share in ports]
    d.joinpath("ports.csv").write_text("\n".join(rows) + "\n")


def test_the_measured_variance_is_drawn_on_the_model(tmp_path):
    from figures import model as model_fig
    results = tmp_path / "results"
    assert cli.main(["model", "--k", "4,8", "--subflows-max", "8", "--results", str(results)]) == 0
    _fattree_run(results, 1, [0.2, 0.4, 0.6, 0.8], [0.5, 0.5])
    _fattree_run(results, 8, [0.5, 0.5, 0.5, 0.9], [0.3, 0.7])
    seen = model_fig.measured(results)
    assert list(seen) == [4] and list(seen[4]) == [1, 8]
    one = seen[4][1]
    assert (one["links_p"], one["links_c"]) == (4, 2)
    assert one["E_p"] == pytest.approx(0.5) and one["V_p"] == pytest.approx(0.05)
    assert one["V_c"] == pytest.approx(0.0) and seen[4][8]["V_c"] == pytest.approx(0.04)
    [(png, drawn)] = model_fig.draw_all(results, results / "plots").values()
    assert drawn.data["measured"] == {4: {1: pytest.approx(0.05), 8: pytest.approx(0.03)}}
    assert drawn.mentions("k=4 measured: edge→agg bytes (FatTree one_to_one runs)")
    lines = model_fig.report_lines(results)
    assert "| 4 | 1 | 4 | 0.500 | 0.050 | 0.483 | 0.500 | 0.000 |" in "\n".join(lines)
    assert any(line.startswith("| 4 | 8 ! | 4 | 0.600 | 0.030 |") for line in lines)
