"""The flow-level model of paper Fig. 2-3 (dctopo/flowlevel.py): its link
numbering against the FatTree the emulator builds, its matrix against the
packet-level sweep's, both equilibria against values worked by hand on tiny
cases, their properties on FatTree(4), the config's refusals, and the
record and figures written into a temporary folder. No network, no root."""
from __future__ import annotations

import json
import math

import numpy as np
import pytest

from base.errors import ConfigError
from dctopo import FatTree, flowlevel
from dctopo.flowlevel import FatTreeLinks, Instance, lia_rates, max_min
from dctopo.workloads import make_matrix
from experiments.config.flowlevel import FLOWLEVEL_MODELS, FlowLevelConfig
from experiments.flowlevel import flowlevel_run, write_flowlevel
from figures import flowlevel as figure

INF = np.inf


def directed_links_by_formula(k: int) -> dict[int, tuple[str, str]]:
    """Link index -> (from node, to node), from the module docstring's table
    and dctopo/clos.py's names (core c of aggregation switch a is c<a*h+c>)."""
    ft = FatTreeLinks(k)
    n, h = ft.hosts, ft.half
    out = {}
    for x in range(n):
        p, e, i = x // (h * h), x // h % h, x % h
        out[x] = (f"h{p}_{e}_{i}", f"e{p}_{e}")
        out[n + x] = (f"e{p}_{e}", f"h{p}_{e}_{i}")
    for r in range(n // h):
        p, e = r // h, r % h
        for a in range(h):
            out[2 * n + r * h + a] = (f"e{p}_{e}", f"a{p}_{a}")
            out[3 * n + r * h + a] = (f"a{p}_{a}", f"e{p}_{e}")
    for p in range(k):
        for a in range(h):
            for c in range(h):
                j = (p * h + a) * h + c
                out[4 * n + j] = (f"a{p}_{a}", f"c{a * h + c}")
                out[5 * n + j] = (f"c{a * h + c}", f"a{p}_{a}")
    return out


@pytest.mark.parametrize("k", [4, 6])
def test_the_link_numbers_are_the_emulated_fattrees_links(k):
    by_index = directed_links_by_formula(k)
    emulated = {(a, b) for a, b in FatTree(k=k).links()} | {(b, a) for a, b in FatTree(k=k).links()}
    assert len(by_index) == FatTreeLinks(k).links == len(emulated)
    assert set(by_index.values()) == emulated


def test_paths_cross_the_tiers_they_must():
    ft = FatTreeLinks(4)
    names = directed_links_by_formula(4)
    # h0_0_0 -> h0_0_1 (rack), -> h0_1_0 (pod), -> h2_1_1 (across the core)
    for dst, hops in ((1, 2), (2, 4), (11, 6)):
        for agg in (0, 1):
            for core in (0, 1):
                path = [int(v) for v in ft.paths(0, dst, agg, core) if v != ft.pad]
                assert len(path) == hops
                nodes = [names[path[0]][0]] + [names[v][1] for v in path]
                assert all(names[a][1] == names[b][0] for a, b in zip(path, path[1:]))
                assert nodes[0] == "h0_0_0" and nodes[-1] == ft.host_name(dst)
    across = ft.paths(0, 11, 1, 0)
    assert [names[int(v)][1] for v in across[:3]] == ["e0_0", "a0_1", "c2"]
    with pytest.raises(ValueError):
        ft.paths(3, 3, 0, 0)
    with pytest.raises(ValueError):
        ft.paths(0, 5, 2, 0)


@pytest.mark.parametrize("seed", [0, 1, 7])
def test_the_permutation_is_the_packet_level_sweeps(seed):
    ft = FatTreeLinks(4)
    matrix = make_matrix("one_to_one", FatTree(k=4).hosts(), seed)
    dst = flowlevel.permutation(4, seed)
    assert {(f.src, f.dst) for f in matrix.flows} == {(ft.host_name(s), ft.host_name(int(d)))
                                                         for s, d in enumerate(dst)}
    assert sorted(dst) == list(range(16)) and all(dst != np.arange(16))


def test_routes_are_uniform_and_the_seed_draws_them():
    """ECMP per subflow: every aggregation switch and core equally likely
    (k=32: 65536 draws of 16 values, 4096 expected each; 5 sd is 320)."""
    agg, core = flowlevel.draw_routes(32, 0)
    for drawn in (agg, core):
        counts = np.bincount(drawn.ravel(), minlength=16)
        assert counts.size == 16 and np.abs(counts - 4096).max() < 320
    assert (flowlevel.draw_routes(4, 0)[0] != flowlevel.draw_routes(4, 1)[0]).any()
    assert (flowlevel.draw_routes(4, 2)[1] == flowlevel.draw_routes(4, 2)[1]).all()


def test_tcp_is_the_first_route_of_every_mptcp():
    inst = Instance(4, 3)
    assert (inst.paths(1)[:, 0] == inst.paths(8)[:, 0]).all()
    assert (inst.paths(5) == inst.paths(8)[:, :5]).all()


# -- worked by hand -----------------------------------------------------------

# Hosts of FatTree(4): 0,1 rack 0 and 2,3 rack 1 of pod 0; 4..7 pod 1; 8..11 pod 2.
# A = 0 -> 8 through agg 0, core 0; B = 1 -> 2 through agg 0 (shares A's
# edge -> agg link only); C = 2 -> 12 through agg 0, core 0 (shares A's
# agg -> core link only). Every host sends at most one flow and receives at most one.
A_B_C = [(0, 8), (1, 2), (2, 12)]


def three_flows():
    ft = FatTreeLinks(4)
    paths = np.stack([ft.paths(s, d, 0, 0) for s, d in A_B_C])
    return ft, paths


def test_two_flows_forced_on_one_link_share_it():
    ft = FatTreeLinks(4)
    paths = np.stack([ft.paths(0, 4, 0, 0), ft.paths(1, 5, 0, 0)])   # same edge, agg and core links
    assert max_min(paths, ft.capacity()) == pytest.approx([0.5, 0.5])
    eq = lia_rates(paths[:, None, :], ft.capacity())
    assert eq.rates[:, 0] == pytest.approx([0.5, 0.5], abs=1e-4)


def test_max_min_gives_the_flow_across_two_full_links_an_equal_share():
    ft, paths = three_flows()
    assert max_min(paths, ft.capacity()) == pytest.approx([0.5, 0.5, 0.5])


def test_reno_gives_the_flow_across_two_full_links_less():
    """Reno's equilibrium maximises sum(-1/x): with A + B = A + C = 1,
    1/A^2 = 2/(1-A)^2, so A = 1/(1+sqrt 2) = 0.4142 and B = C = 0.5858."""
    ft, paths = three_flows()
    eq = lia_rates(paths[:, None, :], ft.capacity())
    a = 1 / (1 + math.sqrt(2))
    assert eq.rates[:, 0] == pytest.approx([a, 1 - a, 1 - a], abs=2e-4)
    assert eq.overload <= flowlevel.TOLERANCE


def test_max_min_levels_worked_by_hand():
    """Link 0 shared by f0, f1, f2, link 1 by f0 and f3: 1/3 each on link 0,
    f3 takes the rest of link 1 (2/3); weights 2:1 on a lone link: 2/3, 1/3."""
    cap = np.array([1.0, 1.0, INF])
    paths = np.array([[0, 1], [0, 2], [0, 2], [1, 2]])
    assert max_min(paths, cap) == pytest.approx([1 / 3, 1 / 3, 1 / 3, 2 / 3])
    assert max_min(np.array([[0], [0]]), cap, weights=np.array([2.0, 1.0])) == pytest.approx([2 / 3, 1 / 3])
    with pytest.raises(ValueError):
        max_min(np.array([[2, 2]]), cap)            # no finite link: unbounded


def lia_hand_case():
    """M: two subflows, one across link 1 shared with TCP T, one across
    nothing but M's host link 0; T's own host link is 2."""
    cap = np.array([1.0, 1.0, 1.0, INF])
    paths = np.array([[[0, 1], [0, 3]],      # M
                      [[2, 1], [2, 1]]])     # T (two subflows on one path: one TCP)
    return cap, paths


def test_lia_moves_traffic_off_the_shared_path_worked_by_hand():
    """M's host link is full, so X_M = q_min^-1/2 = 1 and path 2's loss is 1;
    T's host link is not, so x_T = p^-1/2 with p link 1's loss, and M's
    subflow there gets X (1/q1) / (1/q1 + 1/q2) = 1/(2 + p). Link 1 full:
    1/(2+p) + p^-1/2 = 1, p = 1.8315 by bisection: x_T = 0.7389, x_M1 = 0.2611."""
    lo, hi = 1.0, 3.0
    for _ in range(100):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if 1 / (2 + mid) + mid ** -0.5 > 1 else (lo, mid)
    p = (lo + hi) / 2
    cap, paths = lia_hand_case()
    eq = lia_rates(paths, cap)
    assert eq.rates[0] == pytest.approx([1 / (2 + p), 1 - 1 / (2 + p)], abs=2e-4)
    assert eq.rates[1].sum() == pytest.approx(p ** -0.5, abs=2e-4)
    # max-min (T one flow) leaves half of the shared link to M's subflow there
    assert max_min(np.array([[0, 1], [0, 3], [2, 1]]), cap) == pytest.approx([0.5, 0.5, 0.5])


def test_lia_on_one_path_is_one_tcp_whatever_its_subflows():
    """LIA does no harm: m subflows on one path take what one TCP takes
    (uncoupled max-min gives m shares)."""
    ft = FatTreeLinks(4)
    one = ft.paths(0, 4, 0, 0)[None, None, :]
    other = ft.paths(1, 5, 0, 0)[None, None, :]
    for m in (2, 5, 8):
        mptcp = np.concatenate([np.repeat(one, m, axis=1), np.repeat(other, m, axis=1)])
        assert lia_rates(mptcp, ft.capacity()).rates.sum(axis=1) == pytest.approx([0.5, 0.5], abs=1e-4)
    uncoupled = max_min(np.stack([*[one[0, 0]] * 3, other[0, 0]]), ft.capacity())
    assert uncoupled == pytest.approx([0.25, 0.25, 0.25, 0.25])


# -- properties on FatTree(4) --------------------------------------------------

def loads(paths: np.ndarray, rates: np.ndarray, links: int) -> np.ndarray:
    return np.bincount(paths.reshape(-1), weights=np.repeat(rates.reshape(-1), paths.shape[-1]),
                       minlength=links + 1)[:links]


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("m", [1, 2, 8])
def test_max_min_is_feasible_and_every_subflow_has_a_bottleneck(seed, m):
    inst = Instance(4, seed)
    paths = inst.paths(m).reshape(-1, 6)
    rates = max_min(paths, inst.capacity)
    load = loads(paths, rates, inst.ft.links)
    assert load.max() <= 1 + 1e-9
    for f, path in enumerate(paths):
        real = [int(v) for v in path if v != inst.ft.pad]
        full = [l for l in real if load[l] >= 1 - 1e-9]
        on = lambda l: rates[(paths == l).any(axis=1)].max()
        assert any(rates[f] >= on(l) - 1e-9 for l in full), f"subflow {f} has no bottleneck"
    assert rates.reshape(-1, m).sum(axis=1).max() <= 1 + 1e-9


@pytest.mark.parametrize("model", flowlevel.MODELS)
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_no_connection_exceeds_its_host_link_nor_any_link_its_capacity(model, seed):
    inst = Instance(4, seed)
    for m in range(1, 9):
        point = inst.point(model, m)
        assert point.rates.max() <= 1 + 1e-9 and point.rates.min() > 0
        summary = point.summary()
        assert summary["rates_pct"] == sorted(summary["rates_pct"])
        assert summary["min_pct"] <= summary["p10_pct"] <= summary["mean_pct"] <= 100 + 1e-6
    eq = lia_rates(inst.paths(8), inst.capacity)
    assert loads(inst.paths(8), eq.rates, inst.ft.links).max() <= 1 + 1e-9


def test_lia_reports_the_points_iterations_and_stops_at_its_tolerance():
    point = Instance(4, 0).point("lia", 8)
    assert 0 < point.iterations < flowlevel.MAX_ITERATIONS
    assert point.overload <= flowlevel.TOLERANCE


def test_the_shape_the_paper_finds_at_128_hosts():
    """Paper Fig. 2, k=8: TCP below half the capacity, MPTCP rising with
    subflows, eight for about 90 %."""
    inst = Instance(8, 0)
    means = [inst.point("lia", m).rates.mean() for m in (1, 2, 4, 8)]
    assert means[0] < 0.5
    assert all(a < b for a, b in zip(means, means[1:]))
    assert means[-1] > 0.85


# -- the config ------------------------------------------------------------------

def test_the_configs_models_are_the_modules():
    assert FLOWLEVEL_MODELS == flowlevel.MODELS
    assert FLOWLEVEL_MODELS[0] == flowlevel.DEFAULT_MODEL


def test_the_default_config_is_the_papers_and_counts_its_points():
    cfg = FlowLevelConfig()
    cfg.validate()
    assert cfg.ks == (8, 32) and cfg.subflows == tuple(range(1, 9)) and cfg.seeds == (0, 1, 2)
    assert cfg.points() == [(8, 0), (8, 1), (8, 2), (32, 0), (32, 1), (32, 2)]
    assert cfg.to_record() == {"k": [8, 32], "subflows": list(range(1, 9)), "seeds": [0, 1, 2],
                               "models": ["lia", "maxmin"]}


@pytest.mark.parametrize("change,words", [
    (dict(ks=()), "--k: give at least one"),
    (dict(ks=(5,)), "even, within 4..32"),
    (dict(ks=(34,)), "even, within 4..32"),
    (dict(ks=(2,)), "even, within 4..32"),
    (dict(ks=(8, 8)), "given twice"),
    (dict(ks=(True,)), "even"),
    (dict(subflows=(0,)), "1..8"),
    (dict(subflows=(9,)), "1..8"),
    (dict(subflows=()), "at least one subflow count"),
    (dict(seeds=(-1,)), "at least 0"),
    (dict(seeds=(1, 1)), "given twice"),
    (dict(models=("tcp",)), "one of lia, maxmin"),
    (dict(models=()), "at least one model"),
])
def test_bad_config_is_refused_in_one_line(change, words):
    with pytest.raises(ConfigError) as err:
        FlowLevelConfig(**change).validate()
    assert words in str(err.value) and "\n" not in str(err.value)


# -- the record and the figures ---------------------------------------------------

def plant_packet_run(results, m: int, pcts: list[float], valid: bool = True):
    folder = results / "ft4" / "one_to_one" / f"flows{m}"
    folder.mkdir(parents=True)
    (folder / "run.json").write_text(json.dumps({
        "config": {"topology": "ft4", "workload": "one_to_one", "subflows": m},
        "flows": [{"pct_optimal": p} for p in pcts], "valid": valid, "flags": [] if valid else ["cpu_saturated"]}))


def test_the_record_is_written_and_the_figures_drawn(tmp_path):
    results, said = tmp_path / "results", []
    cfg = FlowLevelConfig(ks=(4, 6), subflows=(1, 2, 8), seeds=(0, 1), results=results)
    assert write_flowlevel(cfg, said.append) == [flowlevel_run(results, 4), flowlevel_run(results, 6)]
    record = json.loads((results / "flowlevel" / "ft4" / "run.json").read_text())
    assert record["experiment"] == "flowlevel" and record["valid"] is True and record["hosts"] == 16
    assert record["config"] == cfg.to_record()
    lia = record["models"]["lia"]
    assert set(lia["seeds"]) == {"0", "1"} and set(lia["seeds"]["0"]) == {"1", "2", "8"}
    point = lia["seeds"]["1"]["8"]
    assert len(point["rates_pct"]) == 16 and point["seconds"] >= 0
    assert point["mean_pct"] == pytest.approx(np.mean(point["rates_pct"]), abs=0.01)
    by_m = lia["subflows"]["8"]
    assert by_m["mean_pct"] == pytest.approx(np.mean(by_m["seed_means_pct"]), abs=1e-3)
    assert by_m["sd_pct"] == pytest.approx(np.std(by_m["seed_means_pct"], ddof=1), abs=1e-3)
    assert set(record["seconds"]) == {"0", "1"}
    assert len([s for s in said if "seed" in s and " s)" in s]) == 4 and said[-1].startswith("flowlevel: 2 sizes")
    assert not list((results / "flowlevel").glob(".*"))          # no staging folder left
    plant_packet_run(results, 1, [50.0] * 8 + [100.0] * 8)
    plant_packet_run(results, 8, [90.0] * 16, valid=False)
    drawn = figure.draw_all(results, results / "plots")
    assert set(drawn) == {figure.FIG2, figure.FIG3}
    for png, _ in drawn.values():
        assert png.stat().st_size > 20_000
    fig2 = drawn[figure.FIG2][1]
    assert fig2.data["packet"] == {4: {1: 75.0, 8: 90.0}}
    assert fig2.data["model"][4]["lia"][8] == pytest.approx(by_m["mean_pct"])
    assert fig2.data["reference"][4][1] == 60
    assert fig2.mentions("packet-level runs") and fig2.mentions("not in the paper")
    assert fig2.mentions("flow-level, LIA") and fig2.mentions("flow-level, max-min")
    assert fig2.mentions("invalid packet-level run")
    fig3 = drawn[figure.FIG3][1]
    assert set(fig3.data["model"]) == {4, 6} and fig3.data["model"][6][8]["connections"] == 2 * 54
    assert fig3.data["packet"][4][1] == [50.0] * 8 + [100.0] * 8
    report = "\n".join(figure.report_lines(results))
    assert "paper Fig. 2-3" in report and "| packet-level mean |" in report
    assert f"| 8 | {by_m['mean_pct']:.1f} ± {by_m['sd_pct']:.1f} |" in report and "| 90.0 ! |" in report


def test_no_record_draws_nothing(tmp_path):
    assert figure.draw_all(tmp_path, tmp_path / "plots") == {}
    assert figure.report_lines(tmp_path) == []
