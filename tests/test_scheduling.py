"""First fit against MPTCP (paper Fig. 13, experiments/scheduling.py): the
VL2-like flow sizes hold what the VL2 paper states, the closed loops cover
the run, a small run end to end, and the figure from records."""
from __future__ import annotations

import json
import random
import re
import subprocess

import pytest

from base.flowsizes import EmpiricalSizes
from experiments.config import ConfigError, LinkParams, SchedulingConfig
from experiments.config.scheduling import vl2_sizes
from tests.conftest import ROOT, needs_root

MB = 1_000_000


def test_the_vl2_like_sizes_hold_what_the_vl2_paper_states():
    """More than 99 % of flows under 100 MB; more than 90 % of the bytes in
    flows of 100 MB to 1 GB; most flows a few KB."""
    sizes = vl2_sizes()
    assert sizes.fraction_at(100 * MB) > 0.99
    assert sizes.fraction_at(10_000) >= 0.5
    top = [(s0, f0, s1, f1) for (s0, f0), (s1, f1) in zip(sizes.points, sizes.points[1:])
           if s0 >= 100 * MB]
    top_bytes = sum((f1 - f0) * (s0 + s1) / 2 for s0, f0, s1, f1 in top)
    assert top_bytes / sizes.mean_bytes > 0.90


def test_the_closed_loops_sizes_are_the_large_flows_scaled_to_the_link_rate():
    cfg = SchedulingConfig(link=LinkParams(bw_mbps=10))
    sizes = cfg.sizes()
    rng = random.Random(1)
    drawn = [sizes.draw(rng) for _ in range(20000)]
    # 1 MB .. 1 GB at 1 Gb/s is 10 KB .. 10 MB at 10 Mb/s.
    assert min(drawn) >= 10_000 and max(drawn) <= 10 * MB
    share = sum(1 for d in drawn if d <= 100_000) / len(drawn)
    expected = (vl2_sizes().fraction_at(10 * MB) - vl2_sizes().fraction_at(MB)) / (1 - vl2_sizes().fraction_at(MB))
    assert abs(share - expected) < 0.02, (share, expected)
    assert abs(sum(drawn) / len(drawn) - sizes.mean_bytes) < 0.05 * sizes.mean_bytes


def test_empirical_sizes_above_and_scaled():
    sizes = EmpiricalSizes(((100, 0.5), (1000, 1.0)))
    above = sizes.above(550)
    assert above.points == ((550, 0.0), (1000, 1.0))
    assert sizes.scaled(0.001).points == ((1, 1.0),)
    assert sizes.scaled(2).points == ((200, 0.5), (2000, 1.0))


def test_points_share_a_network_for_tcp_and_mptcp_and_one_per_interval():
    cfg = SchedulingConfig(intervals_s=(0.1, 5, 1))
    cfg.validate()
    assert [(p.scheme, p.interval_s, p.label) for p in cfg.points()] == [
        ("tcp", None, "tcp"), ("mptcp", None, "mptcp"), ("firstfit", 5, "firstfit-5s"),
        ("firstfit", 1, "firstfit-1s"), ("firstfit", 0.1, "firstfit-0.1s")]
    on_l3 = SchedulingConfig(schemes=("tcp", "mptcp"), fabric="l3")
    on_l3.validate()
    assert [p.label for p in on_l3.points()] == ["tcp-l3", "mptcp-l3"]
    for bad, words in ((SchedulingConfig(schemes=("firstfit",), intervals_s=()), "--schedule-interval"),
                       (SchedulingConfig(fabric="l3"), "first fit runs on openflow-reactive")):
        try:
            bad.validate()
        except ConfigError as exc:
            assert words in str(exc)
        else:
            raise AssertionError(f"{bad} was accepted")


def test_dilation_stretches_the_flows_and_the_intervals_alike(tmp_path):
    """--dilation 10: every flow ten times the size (so ten times as long at
    the same rate), first fit ten times less often, and the runs in a
    folder of their own."""
    plain = SchedulingConfig(link=LinkParams(bw_mbps=1), results=tmp_path)
    dilated = SchedulingConfig(link=LinkParams(bw_mbps=1), results=tmp_path, dilation=10)
    dilated.validate()
    assert [s * 10 for s, _ in plain.sizes().points] == [s for s, _ in dilated.sizes().points]
    assert dilated.sizes().mean_bytes == pytest.approx(10 * plain.sizes().mean_bytes, rel=1e-3)
    assert [dilated.schedule_interval_s(t) for t in dilated.intervals_s] == [50, 10, 5, 1]
    last = dilated.points()[-1]
    assert last.run_dir(tmp_path, 4, dilated.dilation) == tmp_path / "scheduling4-x10" / "firstfit-0.1s"
    assert last.run_dir(tmp_path, 4) == tmp_path / "scheduling4" / "firstfit-0.1s"
    for bad, words in ((SchedulingConfig(dilation=0.5), "--dilation 0.5: must be within 1..100"),
                       (SchedulingConfig(dilation=float("nan")), "--dilation nan"),
                       (SchedulingConfig(dilation=20), "--schedule-interval 5: first fit runs every")):
        with pytest.raises(ConfigError, match=re.escape(words)):
            bad.validate()
    # no first fit, no interval to stretch; but the flows' sizes are checked
    SchedulingConfig(dilation=20, schemes=("tcp", "mptcp"), link=LinkParams(bw_mbps=1)).validate()
    with pytest.raises(ConfigError, match="--bw 10 --dilation 20: flows would reach 200000000 bytes"):
        SchedulingConfig(dilation=20, schemes=("tcp", "mptcp")).validate()


def test_a_fallback_to_tcp_is_told_from_a_missing_join():
    from emulator.traffic.transfers import Transfer, TransferOutcome
    from experiments.scheduling import subflow_shortfalls

    def done(index, seconds, subflows):
        t = Transfer(index, "h1", "h2", "10.0.0.1", "10.0.0.2", 0, 7000, 0.0, 1000)
        return TransferOutcome(t, 0.0, 0.1, 0.2, seconds, seconds, 1000, subflows, None)
    flows = [done(0, 5.0, 8), done(1, 5.0, 0), done(2, 5.0, 3), done(3, 0.5, 3), done(4, 0.5, 0)]
    fell_back, short = subflow_shortfalls(flows, 8)
    assert [o.transfer.index for o in fell_back] == [1, 4]     # however short the flow
    assert [o.transfer.index for o in short] == [2]            # a short flow may still be joining
    assert subflow_shortfalls(flows, 1) == ([], [])


def test_the_chains_cover_the_run_at_the_links_full_rate():
    """Every sender's loop, at the link's payload rate, lasts beyond the run,
    so a sender never runs out of flows before the end."""
    from experiments.scheduling import SchedulingExperiment

    class Fabric:
        def host_ip(self, host):
            return f"10.0.0.{host[1:]}"

    class Net:
        fabric = Fabric()

    from dctopo.workloads import Flow
    cfg = SchedulingConfig(link=LinkParams(bw_mbps=2), time_s=30, warmup_s=5)
    pairs = [Flow(f"h{i}", f"h{(i + 1) % 4}") for i in range(4)]
    transfers = SchedulingExperiment(cfg, say=lambda _: None).closed_loops(Net(), pairs)
    rate = 2e6 / 8 * 1448 / 1514
    for f in pairs:
        chain = [t for t in transfers if t.src == f.src]
        assert chain[0].after is None and all(b.after == a.index for a, b in zip(chain, chain[1:]))
        assert sum(t.size for t in chain) / rate > 35
        assert sum(t.size for t in chain[:-1]) / rate <= 35


@needs_root
def test_small_run_draws_the_figure(tmp_path, no_leftovers):
    """First fit every 0.5 s, 10 s at 2 Mb/s (one network: TCP and MPTCP
    share the same closed loops without the scheduler): the flows carry
    traffic in the counted window, each chain's flows one after the other,
    first fit ran its rounds, and the figure and report section are drawn."""
    results = tmp_path / "results"
    done = subprocess.run(
        [str(ROOT / "run_mptcp.sh"), "scheduling", "--schemes", "firstfit", "--schedule-interval", "0.5",
         "--time", "10", "--warmup", "2", "--bw", "2", "--results", str(results)],
        capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    base = results / "scheduling4"
    r = json.loads((base / "firstfit-0.5s" / "run.json").read_text())
    flows = r["flows"]
    assert r["pct_of_optimal"] > 10 and flows["completed"] > 0 and flows["failed"] == 0, flows
    # A chain runs one flow at a time: at most one per sender was running at the stop.
    assert flows["cut_at_end"] <= r["hosts"] and flows["started"] == flows["completed"] + flows["cut_at_end"]
    assert len(r["per_second_mbps"]) >= 11
    assert r["first_fit"]["interval_s"] == 0.5 and r["first_fit"]["rounds"] >= 10, r["first_fit"]
    assert (base / "fabric" / "firstfit-0.5s" / "schedule.jsonl").exists()
    assert (results / "plots" / "scheduling4.png").stat().st_size > 10000
    assert "## First fit against MPTCP (paper Fig. 13)" in (results / "report.md").read_text()


def test_figure_from_records(tmp_path):
    import plot

    def write(label, scheme, interval, pct, valid=True):
        d = tmp_path / "scheduling4" / label
        d.mkdir(parents=True)
        d.joinpath("run.json").write_text(json.dumps({
            "config": {"k": 4, "scheme": scheme, "interval_s": interval, "label": label,
                       "subflows": 8 if scheme == "mptcp" else 1, "bw_mbps": 2, "queue_pkts": 100,
                       "fabric": "openflow-reactive", "time_s": 30, "warmup_s": 5,
                       "flow_sizes": {"kind": "cdf", "source": "vl2_flow_sizes.cdf", "mean_bytes": 1,
                                      "points": [[2000, 0.0], [2000000, 1.0]]}},
            "hosts": 16, "goodput_mbps": pct * 0.3, "pct_of_optimal": pct,
            "per_second_mbps": [pct * 0.3] * 35, "flows": {"completed": 100},
            "first_fit": {"interval_s": interval, "rounds": 30, "moves": 7} if interval else None,
            "cpu_mean_pct": 60.0, "valid": valid, "flags": [] if valid else ["cpu_saturated"]}))
    write("tcp", "tcp", None, 48.0)
    write("mptcp", "mptcp", None, 70.0, valid=False)
    write("firstfit-0.1s", "firstfit", 0.1, 60.0)
    write("firstfit-5s", "firstfit", 5.0, 49.0)
    drawing = plot.draw_all(tmp_path)
    shown = drawing.others["scheduling4"].data
    assert list(shown) == ["tcp", "firstfit-5s", "firstfit-0.1s", "mptcp"]
    assert shown["mptcp"] == {"pct": 70.0, "valid": False} and shown["tcp"]["valid"]
    assert drawing.others["scheduling4"].mentions("cpu_saturated")
    report = (tmp_path / "report.md").read_text()
    assert "| first fit 0.1 s | 60.0 |" in report and "| MPTCP-8 ! | 70.0 |" in report
    # A dilated sweep's records are a figure of their own that says what was stretched.
    (tmp_path / "scheduling4").rename(tmp_path / "scheduling4-x10")
    for label in ("tcp", "mptcp", "firstfit-0.1s", "firstfit-5s"):
        path = tmp_path / "scheduling4-x10" / label / "run.json"
        record = json.loads(path.read_text())
        record["config"]["dilation"] = 10
        path.write_text(json.dumps(record))
    write("tcp", "tcp", None, 48.0)
    drawing = plot.draw_all(tmp_path)
    assert list(drawing.others["scheduling4"].data) == ["tcp"]
    assert drawing.others["scheduling4-x10"].mentions("time dilated 10 times")
    assert not drawing.others["scheduling4"].mentions("dilated")
