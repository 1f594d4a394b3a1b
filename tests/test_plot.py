"""plot.py against synthetic results directories (no root, no network)."""
from __future__ import annotations

import contextlib
import io
import json
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
import plot  # noqa: E402

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


BW_MBPS, QUEUE_PKTS, WARMUP_S, TIME_S = 10.0, 100, 5.0, 20


def fattree_ports(k: int) -> list[tuple[str, str]]:
    """(node, intf) of every switch port of a FatTree(k), as ports.csv names them."""
    half = k // 2
    switches = ([f"c{j}" for j in range(half * half)]
                + [f"a{p}_{a}" for p in range(k) for a in range(half)]
                + [f"e{p}_{e}" for p in range(k) for e in range(half)])
    return [(sw, f"{sw}-eth{i}") for sw in switches for i in range(k)]


def port_level(n: int, i: int) -> float:
    """The synthetic utilisation (fraction) of port i in a run with n subflows:
    more subflows, busier and more even links."""
    return min(0.98, 0.25 + 0.08 * n + 0.3 * (((i * 37) % 11) / 10 - 0.5) / n)


def rtt_level(n: int) -> float:
    return 20.0 + 4 * n


def cpu_level(n: int, k: int) -> float:
    return min(99.0, 5.0 * k / 4 + 6 * n)


def write_samples(run_dir: Path, n: int, k: int, flows: list[tuple[str, str]], *,
                  files=("cpu.csv", "ports.csv", "rtt.csv", "subflows.csv")) -> None:
    """The monitors' CSVs for one run, 1 s samples over the warm-up and the
    counted window: utilisation <= 100 %, backlog <= QUEUE_PKTS. Warm-up samples
    are twice as busy, so a figure that counts them is visibly wrong."""
    rng = np.random.default_rng(n * 100 + k)
    times = range(1, int(WARMUP_S + TIME_S) + 1)
    rate = BW_MBPS * 1e6 / 8
    if "ports.csv" in files:
        rows = ["t_s,node,intf,tx_bytes,tx_packets,drops,backlog_pkts"]
        ports = fattree_ports(k)
        sent = [0.0] * len(ports)
        for t in times:
            for i, (node, intf) in enumerate(ports):
                u = port_level(n, i) * (0.5 if t <= WARMUP_S else 1.0)
                sent[i] += u * rate
                at = t + 0.002 * (i // k)      # switches are read a few ms apart
                level = port_level(n, i) * (0.5 if t < WARMUP_S else 1.0)   # an instant, not an interval
                backlog = int(rng.integers(0, int(QUEUE_PKTS * level) + 1))
                rows.append(f"{at:.3f},{node},{intf},{int(sent[i])},{int(sent[i] / 1514)},0,{backlog}")
        (run_dir / "ports.csv").write_text("\n".join(rows) + "\n")
    if "rtt.csv" in files:
        rows = ["t_s,src,dst,client_port,subflow_local_port,rtt_ms,cwnd"]
        for t in times:
            for f, (src, dst) in enumerate(flows):
                for sf in range(n):
                    rtt = rtt_level(n) * (3 if t < WARMUP_S else 1) + rng.normal(0, 2)
                    rows.append(f"{t + 0.001:.3f},{src},{dst},{41000 + f},{41000 + f if sf == 0 else 50000 + sf},"
                                f"{rtt:.3f},{10 + sf}")
        (run_dir / "rtt.csv").write_text("\n".join(rows) + "\n")
    if "cpu.csv" in files:
        rows = ["t_s,busy_pct,user_pct,system_pct,softirq_pct,cpu0_busy_pct,cpu1_busy_pct"]
        for t in times:
            busy = cpu_level(n, k) if t > WARMUP_S else 99.0
            rows.append(f"{t:.3f},{busy:.1f},1.0,{busy / 2:.1f},{busy / 2 - 1:.1f},{busy:.1f},{busy:.1f}")
        (run_dir / "cpu.csv").write_text("\n".join(rows) + "\n")
    if "subflows.csv" in files:
        rows = ["t_s,saddr,sport,daddr,dport,subflows"]
        for t in times:
            for f, _ in enumerate(flows):
                rows.append(f"{t:.3f},10.0.{f}.2,{41000 + f},10.1.{f}.2,5201,{min(n, t)}")
        (run_dir / "subflows.csv").write_text("\n".join(rows) + "\n")


def write_run(results: Path, n: int, pcts, *, k: int = 4, workload: str = "one_to_one",
              valid: bool = True, flags=(), samples=True, **overrides) -> Path:
    """Write results/ft<k>/<workload>/flows<n>/run.json as the harness would,
    and the monitors' CSVs unless samples is False (or the names to write)."""
    doc = {
        "schema": 1,
        "config": {"topology": f"ft{k}", "k": k, "workload": workload, "subflows": n,
                   "bw_mbps": BW_MBPS, "queue_pkts": QUEUE_PKTS, "offload": False, "time_s": TIME_S,
                   "warmup_s": WARMUP_S, "seed": 0, "fabric": "l3", "cc": "reno"},
        "kernel": "6.18.44",
        "baseline_mbps": 9.5,
        "flows": [{"src": f"h{i}", "dst": f"h{i + 1}", "goodput_mbps": p * 0.095,
                   "optimal_mbps": 9.5, "pct_optimal": p, "subflows_requested": n,
                   "subflows_established": n} for i, p in enumerate(pcts)],
        "cpu_mean_pct": round((cpu_level(n, k) * TIME_S + 99.0 * WARMUP_S) / (TIME_S + WARMUP_S), 1),
        "valid": valid,
        "flags": list(flags),
    }
    doc.update(overrides)
    path = results / f"ft{k}" / workload / f"flows{n}" / "run.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(doc))
    if samples:
        flows = [(f["src"], f["dst"]) for f in doc["flows"] if isinstance(f, dict)]
        write_samples(path.parent, n, k, flows, **({} if samples is True else {"files": samples}))
    return path


KINDS = ("throughput", "link-util", "queue", "rtt")


def outputs(results: Path, groups=(("ft4", "one_to_one"),), workloads=("one_to_one",)) -> list[str]:
    """What plot.py prints, in order, when it can draw everything."""
    plots = results / "plots"
    return ([str(plots / f"{t}-{w}-{kind}.png") for t, w in groups for kind in KINDS]
            + [str(plots / f"{w}-cpu.png") for w in workloads] + [str(results / "report.md")])


def run_cli(results: Path, *args: str) -> subprocess.CompletedProcess:
    """plot.py as its own process: the command line end to end."""
    return subprocess.run([sys.executable, str(ROOT / "plot.py"), str(results), *args],
                          capture_output=True, text=True, timeout=300)


def run_main(results: Path, *args: str) -> subprocess.CompletedProcess:
    """plot.main in this process, its exit status and output as run_cli gives
    them. Why: a process of its own starts Python and matplotlib again, about
    2 s each time, and the command line is run_cli's test below."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        status = plot.main([str(results), *args])
    return subprocess.CompletedProcess(["plot.py", str(results), *args], status,
                                       out.getvalue(), err.getvalue())


def first_section_shown(drawing: plot.Drawing) -> dict[str, plot.Drawn]:
    """{kind: what it shows} of the drawing's first section, with 'cpu' for
    its workload's CPU figure."""
    s = drawing.sections[0]
    return {**s.drawn, "cpu": drawing.cpu_drawn.get(s.workload)}


def run_main_seen(results: Path, monkeypatch, *args: str):
    """run_main, and what it drew: (its result, first_section_shown of its
    drawing), from one drawing rather than two."""
    seen = []
    real = plot.draw_all
    monkeypatch.setattr(plot, "draw_all", lambda *a: seen.append(real(*a)) or seen[-1])
    proc = run_main(results, *args)
    assert len(seen) == 1 and seen[0] is not None, proc.stderr
    return proc, first_section_shown(seen[0])


def draw_all(results: Path, queue_runs=None) -> tuple[plot.Drawing, dict[str, plot.Drawn]]:
    """Draw everything in-process: (the drawing, first_section_shown of it)."""
    drawing = plot.draw_all(results, queue_runs)
    return drawing, first_section_shown(drawing)


def sweep(results: Path, counts=range(1, 9), **kw) -> None:
    for n in counts:
        write_run(results, n, [40 + 5 * n, 50 + 5 * n, 60], **kw)


def draw(results: Path, topology: str = "ft4", workload: str = "one_to_one"):
    """Heights of the bars plot.py draws for one group: {subflows: (height, drawn valid)}."""
    runs = plot.group(plot.load_runs(results))[(topology, workload)]
    return plot.draw_throughput(topology, workload, runs, results / "plots" / "t.png")


def assert_png(path: Path) -> None:
    data = path.read_bytes()
    assert data.startswith(PNG_MAGIC)
    assert len(data) > 20_000, f"{path} is only {len(data)} bytes"


def test_full_sweep_cli_writes_every_output(tmp_path):
    sweep(tmp_path)
    proc = run_cli(tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines() == outputs(tmp_path)
    assert proc.stderr == ""
    for out in outputs(tmp_path)[:-1]:
        assert_png(Path(out))


def test_bar_heights_are_means_of_pct_optimal(tmp_path):
    write_run(tmp_path, 1, [40, 60, 80], summary={"mean_pct": 999})  # summary is not trusted
    write_run(tmp_path, 2, [90, 90, 60])
    write_run(tmp_path, 3, [100, 80])
    assert draw(tmp_path) == {1: (60, True), 2: (80, True), 3: (90, True)}


def test_run_statistics(tmp_path):
    write_run(tmp_path, 1, [10, 20, 30, 40, 50, 60, 70, 80, 90, 100, 110])
    (run,) = plot.load_runs(tmp_path)
    assert (run.mean, run.p10, run.min) == (60, 20, 10)


def test_missing_middle_subflow_counts_leave_gaps(tmp_path):
    for n in (1, 2, 5, 8):
        write_run(tmp_path, n, [10.0 * n, 10.0 * n])
    proc = run_main(tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert_png(tmp_path / "plots" / "ft4-one_to_one-throughput.png")
    assert draw(tmp_path) == {1: (10, True), 2: (20, True), 5: (50, True), 8: (80, True)}


def test_invalid_run_is_drawn_distinctly(tmp_path):
    write_run(tmp_path, 1, [50, 70])
    write_run(tmp_path, 2, [80, 80], valid=False, flags=["cpu_high", "subflows_missing"])
    assert draw(tmp_path) == {1: (60, True), 2: (80, False)}


def test_unusable_run_json_is_skipped_with_a_note(tmp_path):
    """The whole command, once: one line on stderr, exit 0, the rest drawn."""
    write_run(tmp_path, 1, [50, 70])
    bad = write_run(tmp_path, 2, [80])
    bad.write_text("{not json")
    write_run(tmp_path, 3, [90], valid=False, flags=["drops"])
    proc = run_main(tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert len(proc.stderr.splitlines()) == 1 and str(bad) in proc.stderr
    assert draw(tmp_path) == {1: (60, True), 3: (90, False)}


# Each other kind of unusable run.json, at the loader every figure reads
# through (the whole command, as above, drew every figure for each: 4 s apiece).
@pytest.mark.parametrize("content", [
    "",
    "[]",
    '{"config": {"topology": "ft4", "workload": "one_to_one", "subflows": 2}}',  # no flows
])
def test_every_unusable_run_json_is_left_out_with_a_note(tmp_path, capsys, content):
    write_run(tmp_path, 1, [50, 70], samples=False)
    bad = write_run(tmp_path, 2, [80], samples=False)
    bad.write_text(content)
    write_run(tmp_path, 3, [90], valid=False, flags=["drops"], samples=False)
    skipped: dict = {}
    assert sorted(r.subflows for r in plot.load_runs(tmp_path, skipped)) == [1, 3]
    err = capsys.readouterr().err.splitlines()
    assert list(skipped) == [bad] and len(err) == 1 and str(bad) in err[0]


@pytest.mark.parametrize("change", [
    lambda d: d["flows"][0].pop("pct_optimal"),
    lambda d: d["flows"][0].update(pct_optimal="85"),
    lambda d: d["flows"][0].update(pct_optimal=None),
    lambda d: d.pop("valid"),
    lambda d: d.update(flows=[]),
    lambda d: d["config"].update(subflows=3),  # disagrees with flows2/
])
def test_run_lacking_fields_is_skipped(tmp_path, capsys, change):
    path = write_run(tmp_path, 2, [80, 90])
    doc = json.loads(path.read_text())
    change(doc)
    path.write_text(json.dumps(doc))
    assert plot.load_runs(tmp_path) == []
    assert str(path) in capsys.readouterr().err


def test_several_workloads_and_topologies_give_several_figures(tmp_path):
    for workload in ("one_to_one", "all_to_all"):
        write_run(tmp_path, 1, [50], workload=workload)
        write_run(tmp_path, 4, [80], workload=workload)
    write_run(tmp_path, 8, [93] * 16, k=8)
    proc = run_main(tmp_path)
    assert proc.returncode == 0, proc.stderr
    groups = [("ft4", "all_to_all"), ("ft4", "one_to_one"), ("ft8", "one_to_one")]
    assert proc.stdout.splitlines() == outputs(tmp_path, groups, ["all_to_all", "one_to_one"])
    for t, w in groups:
        assert_png(tmp_path / "plots" / f"{t}-{w}-throughput.png")


def test_dot_directories_are_ignored(tmp_path):
    write_run(tmp_path, 1, [50])
    hidden = tmp_path / "ft4" / "one_to_one" / ".flows2-partial" / "run.json"
    hidden.parent.mkdir()
    hidden.write_text("{broken")
    old = write_run(tmp_path / ".old", 1, [99])
    assert old.exists()
    proc = run_main(tmp_path)
    assert proc.returncode == 0 and proc.stderr == ""
    assert sorted(p.name for p in (tmp_path / "plots").iterdir()) == sorted(
        Path(p).name for p in outputs(tmp_path)[:-1])
    assert draw(tmp_path) == {1: (50, True)}


@pytest.mark.parametrize("make", [lambda p: p.mkdir(), lambda p: None])
def test_no_runs_is_a_note_and_exit_0(tmp_path, make):
    results = tmp_path / "results"
    make(results)
    proc = run_main(results)
    assert proc.returncode == 0
    assert proc.stdout == "" and "no runs" in proc.stderr
    assert not (results / "plots").exists()


def test_only_mptcp_runs(tmp_path):
    write_run(tmp_path, 3, [70, 75])
    write_run(tmp_path, 6, [85, 95], valid=False)
    proc = run_main(tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert draw(tmp_path) == {3: (72.5, True), 6: (90, False)}


def test_executable_directly(tmp_path):
    write_run(tmp_path, 1, [50])
    proc = subprocess.run([str(ROOT / "plot.py"), str(tmp_path)], capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert_png(tmp_path / "plots" / "ft4-one_to_one-throughput.png")


def test_title_names_the_configuration(tmp_path):
    write_run(tmp_path, 1, [50], k=8)
    write_run(tmp_path, 2, [50], k=8)
    runs = plot.group(plot.load_runs(tmp_path))[("ft8", "one_to_one")]
    assert plot.title("ft8", "one_to_one", runs) == \
        f"FatTree ft8 (k=8), one_to_one: 10.0 Mb/s links, 20 s after {WARMUP_S:g} s warm-up, cc=reno, fabric=l3"
    runs[2].config["bw_mbps"] = 20.0
    assert "10.0/20.0 Mb/s (MIXED)" in plot.title("ft8", "one_to_one", runs)
    # The driver is named where it is not iperf3 (records without one are iperf3's).
    runs[1].config["driver"] = "iperf3"
    assert "driver" not in plot.title("ft8", "one_to_one", runs)
    runs[2].config["driver"] = "socket"
    assert plot.title("ft8", "one_to_one", runs).endswith("fabric=l3, driver=iperf3/socket (MIXED)")


def test_title_says_first_fit_moved_the_flows(tmp_path):
    for n in (1, 2):
        write_run(tmp_path, n, [50], config={"topology": "ft4", "k": 4, "workload": "one_to_one",
                                             "subflows": n, "bw_mbps": 3, "time_s": 60, "cc": "lia",
                                             "fabric": "openflow-reactive", "schedule_interval_s": 0.5})
    runs = plot.group(plot.load_runs(tmp_path))[("ft4", "one_to_one")]
    assert plot.title("ft4", "one_to_one", runs).endswith(
        "fabric=openflow-reactive, first fit every 0.5 s")
    runs[1].config.pop("schedule_interval_s")
    assert "first fit every 0.5 s/off (MIXED)" in plot.title("ft4", "one_to_one", runs)


# --- the sample figures (2013 reproduction, Fig 4, 5, 10-12) and the report ---------------------

def test_every_figure_shows_data(tmp_path):
    sweep(tmp_path, valid=True)
    drawing, drawn = draw_all(tmp_path)
    util = drawn["link-util"].data
    assert set(util) == {"all", "core", "aggregation", "edge"}
    assert sorted(util["all"]) == list(range(1, 9))
    assert all(len(ys) == 80 and 0 < min(ys) and max(ys) <= 100 for ys in util["all"].values())
    assert [len(util[t][8]) for t in ("core", "aggregation", "edge")] == [16, 32, 32]
    rtt = drawn["rtt"].data
    assert sorted(rtt) == list(range(1, 9)) and all(m > 0 and sd > 0 for m, sd in rtt.values())
    cpu = drawn["cpu"].data
    assert cpu["by_subflows"] == {4: {n: cpu_level(n, 4) for n in range(1, 9)}}
    assert cpu["by_k"] == {}   # one k: no panel against FatTree size (one x value)
    queue = drawn["queue"].data
    assert sorted(queue) == [1, 8]
    for series in queue.values():
        assert set(series) == {"core mean", "core max", "all mean", "busiest"}
        assert all(len(v) == WARMUP_S + TIME_S for v in series.values())
        assert max(max(v) for v in series.values()) <= QUEUE_PKTS
    assert drawn["queue"].mentions(f"queue limit ({QUEUE_PKTS} pkts)")
    assert drawn["rtt"].mentions("not ping")
    assert drawing.report.read_text().count("![") == 5


def test_link_utilisation_is_the_counted_window(tmp_path):
    write_run(tmp_path, 3, [70])
    _, drawn = draw_all(tmp_path)
    expected = sorted(100 * port_level(3, i) for i in range(80))   # the warm-up ran at half that
    assert drawn["link-util"].data["all"][3] == pytest.approx(expected, abs=0.01)
    assert drawn["link-util"].mentions("5–25 s")


def test_rtt_and_cpu_leave_the_warm_up_out(tmp_path):
    write_run(tmp_path, 2, [70])
    write_run(tmp_path, 5, [80])
    _, drawn = draw_all(tmp_path)
    for n in (2, 5):
        mean, sd = drawn["rtt"].data[n]
        assert mean == pytest.approx(rtt_level(n), abs=0.5) and sd == pytest.approx(2, abs=0.5)
    assert drawn["cpu"].data["by_subflows"][4] == {2: cpu_level(2, 4), 5: cpu_level(5, 4)}


def test_several_fattree_sizes_in_the_cpu_figure(tmp_path):
    for k in (4, 8):
        write_run(tmp_path, 1, [50], k=k, samples=("cpu.csv",))
        write_run(tmp_path, 8, [90], k=k, samples=("cpu.csv",))
    drawing = plot.draw_all(tmp_path)
    cpu = drawing.cpu_drawn["one_to_one"]
    assert cpu.data["by_k"] == {n: {k: cpu_level(n, k) for k in (4, 8)} for n in (1, 8)}
    assert set(cpu.data["by_subflows"]) == {4, 8}
    assert cpu.mentions("k=8")
    # the title gives the counted window and its warm-up, as the other figures do
    assert cpu.mentions(f"20 s after {WARMUP_S:g} s warm-up")


def test_deleted_run_folder_is_a_noted_gap(tmp_path, monkeypatch):
    sweep(tmp_path)
    shutil.rmtree(tmp_path / "ft4" / "one_to_one" / "flows3")
    proc, drawn = run_main_seen(tmp_path, monkeypatch)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines() == outputs(tmp_path)
    assert sorted(drawn["link-util"].data["all"]) == [1, 2, 4, 5, 6, 7, 8]
    assert sorted(drawn["rtt"].data) == [1, 2, 4, 5, 6, 7, 8]
    assert sorted(drawn["cpu"].data["by_subflows"][4]) == [1, 2, 4, 5, 6, 7, 8]
    for kind in ("link-util", "rtt", "cpu"):
        assert any("no run (gap) for subflows 3" in t.lower() for t in drawn[kind].texts), kind
    assert "| 3 | missing (no run) |" in (tmp_path / "report.md").read_text()


def test_run_without_ports_and_rtt_is_skipped_with_a_note(tmp_path, capsys):
    sweep(tmp_path, counts=(1, 3))
    write_run(tmp_path, 2, [70], samples=("cpu.csv",))
    _, drawn = draw_all(tmp_path)
    out, err = capsys.readouterr()
    assert out.splitlines() == outputs(tmp_path)
    lines = err.splitlines()
    assert len(lines) == 2
    assert "ports.csv" in lines[0] and "flows2 (no ports.csv)" in lines[0]
    assert "rtt.csv" in lines[1] and "flows2 (no rtt.csv)" in lines[1]
    assert sorted(drawn["link-util"].data["all"]) == [1, 3]
    assert sorted(drawn["rtt"].data) == [1, 3]
    assert drawn["link-util"].mentions("no ports.csv") and drawn["rtt"].mentions("no rtt.csv")
    assert sorted(drawn["cpu"].data["by_subflows"][4]) == [1, 2, 3]


def nan_time(text: str) -> str:
    """The sixth sample's time made 'nan'."""
    lines = text.split("\n")
    lines[6] = "nan" + lines[6][lines[6].index(","):]
    return "\n".join(lines)


CORRUPT = {
    "garbage line": lambda text: text + "1.0,x,y\n",
    "not a number": nan_time,
    "no header": lambda text: text.split("\n", 1)[1],
    "empty": lambda text: "",
    "binary": lambda text: "\x00\xff\x00",
}


# Each corruption once, on ports.csv and rtt.csv in turn: both files are read
# by one parser (figures.samples.read_table), and each case draws the
# figures of a sweep they feed; all ten pairs cost 30 s of the host suite
# when each drew every figure.
CORRUPT_CASES = [(file, kind, how) for (file, kind), how in zip(
    [("ports.csv", "link-util"), ("rtt.csv", "rtt")] * 3, CORRUPT)]


@pytest.mark.parametrize("name,kind,how", CORRUPT_CASES)
def test_corrupt_csv_is_skipped_with_a_note(tmp_path, capsys, name, kind, how):
    sweep(tmp_path, counts=(1, 2, 4))
    path = tmp_path / "ft4" / "one_to_one" / "flows2" / name
    path.write_text(CORRUPT[how](path.read_text()))
    # Only the figures the two files feed (link-util, queue, RTT), not every one.
    runs = plot.group(plot.load_runs(tmp_path))[("ft4", "one_to_one")]
    section = plot.Section("ft4", "one_to_one", runs)
    plot.sample_figures(section, tmp_path / "plots", None)
    drawn = section.drawn
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 1 and name in err[0] and "flows2" in err[0]
    data = drawn[kind].data["all"] if kind == "link-util" else drawn[kind].data
    assert sorted(data) == [1, 4]
    assert drawn[kind].mentions(name)
    assert sorted(drawn["queue"].data) == [1, 4]


def test_corrupt_cpu_csv_falls_back_to_run_json_or_is_skipped(tmp_path, capsys):
    sweep(tmp_path, counts=(1, 2, 4))
    for n in (2, 4):
        (tmp_path / "ft4" / "one_to_one" / f"flows{n}" / "cpu.csv").write_text("t_s,busy_pct\n1,abc\n")
    doc_path = tmp_path / "ft4" / "one_to_one" / "flows4" / "run.json"
    doc = json.loads(doc_path.read_text())
    del doc["cpu_mean_pct"]
    doc_path.write_text(json.dumps(doc))
    drawing, drawn = draw_all(tmp_path)
    err = capsys.readouterr().err
    assert "flows4 (cpu.csv line 2: busy_pct='abc' is not valid)" in err
    assert "whole-run cpu_mean_pct used for flows2" in err
    run2 = json.loads((tmp_path / "ft4" / "one_to_one" / "flows2" / "run.json").read_text())
    assert drawn["cpu"].data["by_subflows"][4] == {1: cpu_level(1, 4), 2: run2["cpu_mean_pct"]}
    (row,) = [line for line in drawing.report.read_text().splitlines() if line.startswith("| 2 |")]
    assert f"| {run2['cpu_mean_pct']} (run.json) |" in row


def test_runs_without_any_samples_still_give_throughput_and_report(tmp_path):
    sweep(tmp_path, counts=(1, 2), samples=False)
    # Older figures of the same names, now stale (a drawing that had samples).
    for stale in outputs(tmp_path)[:-1]:
        Path(stale).parent.mkdir(exist_ok=True)
        Path(stale).write_bytes(PNG_MAGIC)
    proc = run_main(tmp_path)
    assert proc.returncode == 0, proc.stderr
    plots = tmp_path / "plots"
    assert proc.stdout.splitlines() == [str(plots / "ft4-one_to_one-throughput.png"),
                                        str(plots / "one_to_one-cpu.png"), str(tmp_path / "report.md")]
    assert sorted(p.name for p in plots.iterdir()) == ["ft4-one_to_one-throughput.png", "one_to_one-cpu.png"]
    assert len(proc.stderr.splitlines()) == 3    # ports.csv, rtt.csv, cpu.csv: one line each
    report = (tmp_path / "report.md").read_text()
    assert "not drawn (no run has a usable ports.csv)" in report
    assert "not drawn (no run has a usable rtt.csv)" in report


def test_report_table_beside_the_reference(tmp_path):
    write_run(tmp_path, 1, [40, 60, 80])
    write_run(tmp_path, 2, [90, 90, 60], valid=False, flags=["drops", "cpu_saturated"])
    write_run(tmp_path, 4, [89, 90, 91])
    write_run(tmp_path, 8, [93] * 16, k=8, samples=("cpu.csv",))
    assert plot.main([str(tmp_path)]) == 0
    report = (tmp_path / "report.md").read_text()
    ft4, ft8 = report.split("## ft4 / one_to_one")[1].split("## ft8 / one_to_one")
    rows = {line.split(" | ")[0]: line for line in ft4.splitlines() if line.startswith("| ")}
    assert rows["| TCP (1)"].startswith(f"| TCP (1) | 60.0 | 44.0 | 40.0 | 60 | {cpu_level(1, 4):.1f} |")
    assert rows["| 2"].startswith(f"| 2 | 80.0 | 66.0 | 60.0 | – | {cpu_level(2, 4):.1f} |")
    assert rows["| 2"].endswith("| **NO** | drops, cpu_saturated |")
    assert rows["| 3"] == "| 3 | missing (no run) | | | – | | | | | |"
    assert rows["| 4"].startswith("| 4 | 90.0 | 89.2 | 89.0 | 89 |")
    assert "| 5 | missing (no run) | | | 89 |" in ft4           # the reference has a value there
    assert "| 8 | 93.0 | 93.0 | 93.0 | 90 |" in ft8            # the paper's 90 % for k=8
    assert "Reference mean: packet-level simulation of FatTree(4)" in ft4   # each names its source
    assert "Reference mean: paper Fig. 2" in ft8
    assert "| TCP (1) | missing (no run) | | | 50 |" in ft8     # ft8 has no TCP run
    for kind in KINDS:
        assert f"](plots/ft4-one_to_one-{kind}.png)" in ft4
    assert "](plots/ft8-one_to_one-throughput.png)" in ft8
    assert "*Rank of link utilisation (2013 Fig 4): not drawn (no run has a usable ports.csv).*" in ft8
    assert "](plots/one_to_one-cpu.png)" in report


def test_report_lists_an_unusable_run_json(tmp_path):
    sweep(tmp_path, counts=(1, 2))
    (tmp_path / "ft4" / "one_to_one" / "flows2" / "run.json").write_text("{oops")
    assert run_main(tmp_path).returncode == 0
    report = (tmp_path / "report.md").read_text()
    assert "| 2 | unusable run.json: unreadable:" in report
    assert "skipping" in report.split("## Notes")[1]


def test_invalid_runs_are_marked_in_every_figure(tmp_path):
    write_run(tmp_path, 1, [50])
    write_run(tmp_path, 4, [80], valid=False, flags=["cpu_saturated"])
    _, drawn = draw_all(tmp_path)
    assert drawn["link-util"].mentions("MPTCP-4 INVALID (cpu_saturated)")
    assert drawn["queue"].mentions("MPTCP-4 INVALID (cpu_saturated)")
    assert drawn["rtt"].mentions("INVALID\ncpu_saturated")
    assert drawn["cpu"].mentions("cpu_saturated")


@pytest.mark.parametrize("ask,shown,noted", [
    ([], [1, 8], False), ([4], [4], False), ([4, 1], [4, 1], False), ([3], [1, 8], True), ([3, 4], [4], True)])
def test_queue_runs_chosen(ask, shown, noted):
    chosen, why = plot.queue_fig.choose([1, 2, 4, 8], ask or None)
    assert chosen == shown
    assert (why is not None and "--queue-run 3: no such run" in why) == noted


def test_queue_run_option(tmp_path, monkeypatch):
    sweep(tmp_path, counts=(1, 2, 8))
    proc, drawn = run_main_seen(tmp_path, monkeypatch, "--queue-run", "2", "--queue-run", "3")
    assert proc.returncode == 0, proc.stderr
    assert "--queue-run 3: no such run with port samples; drawing 2" in proc.stderr
    assert list(drawn["queue"].data) == [2]
    assert drawn["queue"].mentions("MPTCP-2: 2 subflows per connection")


def test_backlog_rounds_bin_switches_read_apart(tmp_path):
    write_run(tmp_path, 2, [70])
    (run,) = plot.load_runs(tmp_path)
    from figures.samples import backlog, read_ports
    b = backlog(run, read_ports(run))
    assert len(b.ports) == 80 and len(b.t) == WARMUP_S + TIME_S
    assert b.busiest_mean == max(float(np.mean(p.backlog[p.t >= WARMUP_S])) for p in b.ports)


def test_ports_other_than_switch_ports_are_left_out(tmp_path):
    write_run(tmp_path, 2, [70])
    ports = tmp_path / "ft4" / "one_to_one" / "flows2" / "ports.csv"
    ports.write_text(ports.read_text() + "6.0,c0,lo,1,1,0,0\n6.0,h0_0_0,h0_0_0-eth0,1,1,0,0\n")
    (run,) = plot.load_runs(tmp_path)
    from figures.samples import read_ports
    assert len(read_ports(run)) == 80
