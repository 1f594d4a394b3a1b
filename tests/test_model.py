"""The subflow model of paper Fig. 6 (subflow_model.py) against values
worked out by hand from the paper's formulas (§4.3.2), its shape, and the
`model` command end to end (no network: it needs no root)."""
from __future__ import annotations

import json

import pytest

import subflow_model
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
