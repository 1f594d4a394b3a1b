"""--topo FILE.py:NAME and --matrix FILE on the FatTree sweep: the docs'
leaf-spine loaded with its addresses, router ids, roles and TCLink
parameters; the optimum from the fluid model; each bad input refused in
one line before anything is built; and the example swept TCP against
MPTCP-4 in real namespaces, its flows spread over every spine, its figure
drawn, nothing left behind."""
from __future__ import annotations

import csv
import json
import subprocess
from collections import defaultdict

import pytest

from base.errors import clipped
from dctopo.custom import load
from dctopo.workloads import Flow, TrafficMatrix
from experiments.fattree import matrix_from_file, optimum_shares
from tests.conftest import ROOT, needs_root, set_guard_calibration
from tests.subflows import assert_subflows
from tests.test_inputs import validate

SCRIPT = str(ROOT / "run_mptcp.sh")
EXAMPLE = "docs/examples/leafspine.py:leafspine"
MATRIX = "docs/examples/leafspine.csv"
SPINES = ("s0", "s1", "s2", "s3")


def user_file(tmp_path, body: str, name: str = "mytopo.py") -> str:
    path = tmp_path / name
    path.write_text("from mininet.topo import Topo\n\n" + body)
    return str(path)


def test_the_example_is_given_what_the_fabrics_need():
    topo = load(f"{ROOT}/{EXAMPLE}")
    assert len(topo.hosts()) == 16 and len(topo.switches()) == 8
    addresses = [a for h in topo.hosts() for a in topo.host_addresses(h)]
    router_ids = [topo.nodeInfo(s)["router_id"] for s in topo.switches()]
    assert len(set(addresses)) == 16 and len(set(router_ids)) == 8
    assert not set(addresses) & set(router_ids)
    assert {topo.role(s) for s in SPINES} == {"agg"} and topo.role("l0") == "edge"
    assert topo.racks()["h2_3"] == "l2"
    # Each leaf's uplinks carry the TCLink arguments; its host links the sweep's.
    [uplink] = [i for i in topo.interfaces("l0") if i.peer == "s0"]
    assert uplink.link.bw_mbps == 10 and uplink.link.queue_pkts == 100
    assert all(i.link is None for i in topo.interfaces("l0") if i.peer.startswith("h"))
    # Four equal-cost next hops from a leaf towards another leaf's host.
    hops = topo.next_hops()["l0"][topo.host_addresses("h1_0")[0]]
    assert sorted(i.peer for i in hops) == list(SPINES)


def test_tclink_arguments_map_to_link_parameters(tmp_path):
    spec = user_file(tmp_path, """
class T(Topo):
    def build(self):
        a, b = self.addSwitch("a"), self.addSwitch("b")
        self.addLink(self.addHost("h1"), a)
        self.addLink(self.addHost("h2"), b)
        self.addLink(a, b, bw=2.5, delay="500us", loss=1, max_queue_size=30)
""") + ":T"
    [between] = [i for i in load(spec).interfaces("a") if i.peer == "b"]
    assert (between.link.bw_mbps, between.link.delay_ms, between.link.loss_pct,
            between.link.queue_pkts) == (2.5, 0.5, 1.0, 30)


def test_the_optimum_comes_from_the_fluid_model(tmp_path):
    """On the example every flow can have its host link; with the uplinks at
    a quarter of the rate, a leaf's 4 flows share one link's worth."""
    topo = load(f"{ROOT}/{EXAMPLE}")
    matrix = matrix_from_file(str(ROOT / MATRIX), topo.hosts(), 0)
    full = optimum_shares(topo, matrix, 10.0)
    assert full["basis"].startswith("fluid model") and full["shares"] == [1.0] * 16
    slow = user_file(tmp_path, (ROOT / "docs/examples/leafspine.py").read_text()
                     .replace("from mininet.topo import Topo\n", "")
                     .replace("def build(self, uplink_mbps=10)", "def build(self, uplink_mbps=2.5)"))
    thin = optimum_shares(load(f"{slow}:leafspine"), matrix, 10.0)
    assert thin["shares"] == pytest.approx([0.25] * 16)
    # A host sending two flows: each gets half of its host link.
    pair = TrafficMatrix("matrix", 0, (Flow("h0_0", "h1_0"), Flow("h0_0", "h2_0")))
    assert optimum_shares(topo, pair, 10.0)["shares"] == pytest.approx([0.5, 0.5])


def bad_cases(tmp_path) -> list[tuple[list[str], str]]:
    broken = user_file(tmp_path, "import no_such_module_here\n", "broken.py")
    sixteen = user_file(tmp_path, """
class T(Topo):
    def build(self):
        s = self.addSwitch("s1")
        self.addLink(self.addHost("h1"), s)
        self.addLink(self.addHost("host_name_1"), s)
""", "sixteen.py")
    apart = user_file(tmp_path, """
class T(Topo):
    def build(self):
        self.addLink(self.addHost("h1"), self.addSwitch("s1"))
        self.addLink(self.addHost("h2"), self.addSwitch("s2"))
""", "apart.py")
    bad_matrix = tmp_path / "bad.csv"
    bad_matrix.write_text("src,dst\nh0_0,h1_0\nh0_0,h9_9\nh1_1,h1_1\nh2_0\n")
    finite = tmp_path / "finite.csv"
    finite.write_text("h0_0,h1_0,0.5,100000\n")
    on_fattree = tmp_path / "ft.csv"
    on_fattree.write_text("h0_0_0,h1_0_0\nh0_0,h1_0\n")
    return [
        (["--topo", f"{broken}:T"], "the file does not import: ModuleNotFoundError"),
        (["--topo", f"{sixteen}:T"], "interface name host_name_1-eth0 has 16 characters"),
        (["--topo", f"{apart}:T"], "not connected: h2, s2 cannot be reached from h1"),
        (["--topo", f"{apart}:Other"], "the file has no topology Other"),
        (["--topo", "leafspine"], "expected FILE.py:NAME"),
        (["--topo", "/" + "x" * 5000 + ".py:T"], "no such file"),
        (["--topo", EXAMPLE, "--fabric", "openflow"], "a custom topology runs on --fabric l3 or model"),
        (["--topo", EXAMPLE, "--matrix", MATRIX, "--workload", "all_to_all"], "the matrix file is the workload"),
        (["--topo", EXAMPLE, "--matrix", str(finite)], "finite flows (start_s,bytes) are not run yet"),
        (["--matrix", str(on_fattree)], "row 2: 'h0_0' is not a host of the topology"),
        (["--matrix", "/" + "x" * 5000], "no such file"),
    ]


def test_bad_input_is_refused_in_one_line(tmp_path):
    for argv, said in bad_cases(tmp_path):
        status, err = validate(argv)
        lines = err.strip().splitlines()
        assert status == 2 and len(lines) == 1 and lines[0].startswith("run_mptcp.sh: error: "), (argv, err)
        assert said in lines[0], (said, lines[0])
        assert len(lines[0]) < 300, lines[0]


def test_a_bad_matrix_gets_one_line_per_error(tmp_path):
    bad = tmp_path / "bad.csv"
    bad.write_text("src,dst\nh0_0,h1_0\nh0_0,h9_9\nh1_1,h1_1\nh2_0\nh0_1,h1_1,x,1\n")
    status, err = validate(["--topo", EXAMPLE, "--matrix", str(bad)])
    bad = clipped(str(bad))
    assert status == 2 and err.strip().splitlines() == [
        f"run_mptcp.sh: error: --matrix {bad}: row 3: 'h9_9' is not a host of the topology",
        f"--matrix {bad}: row 4: h1_1 sends to itself",
        f"--matrix {bad}: row 5: 1 fields; expected src,dst or src,dst,start_s,bytes",
        f"--matrix {bad}: row 6: start_s and bytes are numbers (seconds, whole bytes)"]


@pytest.fixture
def guard_calibration(tmp_path_factory, monkeypatch):
    """Not consulted for a custom topology; set so that no suite state is read."""
    set_guard_calibration(monkeypatch, tmp_path_factory.mktemp("guard-cache"), 1.38,
                          "tests/test_custom_topo.py")


@needs_root
def test_the_example_runs_tcp_against_mptcp4(tmp_path, no_leftovers, guard_calibration):
    done = subprocess.run([SCRIPT, "--topo", EXAMPLE, "--matrix", MATRIX, "--subflows", "1,4",
                           "--time", "8", "--warmup", "6", "--results", str(tmp_path)],
                          capture_output=True, text=True, timeout=600, cwd=ROOT)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    assert "capacity guard: not judged for a custom topology" in done.stdout
    aggregate = {}
    for n in (1, 4):
        run = tmp_path / "leafspine" / "matrix" / f"flows{n}"
        rec = json.loads((run / "run.json").read_text())
        assert rec["config"]["topology"] == "leafspine" and rec["config"]["topo_file"] == EXAMPLE
        assert rec["config"]["optimum"].startswith("fluid model")
        assert [(f["src"], f["dst"]) for f in rec["flows"]] == [
            tuple(row) for row in csv.reader((ROOT / MATRIX).read_text().splitlines())
            if row and not row[0].startswith(("#", "src"))]
        assert all(f["goodput_mbps"] > 0 for f in rec["flows"]), rec["flows"]
        aggregate[n] = rec["summary"]["aggregate_mbps"]
        assert_subflows(rec, n)
        if n == 4:
            # ECMP by the router ids: every spine carried a share of the 16 flows.
            sent = defaultdict(int)
            rows = list(csv.DictReader((run / "ports.csv").open()))
            last = {(r["node"], r["intf"]): int(r["tx_bytes"]) for r in rows}
            first = {}
            for r in rows:
                first.setdefault((r["node"], r["intf"]), int(r["tx_bytes"]))
            for (node, intf), value in last.items():
                sent[node] += value - first[(node, intf)]
            total = sum(sent[s] for s in SPINES)
            assert all(sent[s] > 0.1 * total for s in SPINES), dict(sent)
    # 16 flows over 4 spines: TCP's hashing puts some on one spine together;
    # MPTCP-4's subflows fill the rest (the docs' run: 76 against 132 Mb/s).
    assert aggregate[4] > 1.1 * aggregate[1], aggregate
    plotted = subprocess.run([str(ROOT / "plot.py"), str(tmp_path)], capture_output=True, text=True,
                             timeout=300, cwd=ROOT)
    assert plotted.returncode == 0, plotted.stderr[-2000:]
    assert (tmp_path / "plots" / "leafspine-matrix-throughput.png").stat().st_size > 10_000


@needs_root
def test_topologies_runs_a_custom_topology_beside_fattree(tmp_path, no_leftovers, guard_calibration):
    done = subprocess.run([SCRIPT, "topologies", "--topologies", "fattree", "--topo", EXAMPLE,
                           "--subflows", "4", "--time", "5", "--warmup", "5", "--results", str(tmp_path)],
                          capture_output=True, text=True, timeout=600, cwd=ROOT)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    rec = json.loads((tmp_path / "topologies" / "leafspine" / "permutation" / "flows4" / "run.json").read_text())
    assert rec["config"]["topology"] == "leafspine" and rec["config"]["network"] == "leafspine"
    assert len(rec["flows"]) == 16 and all(f["goodput_mbps"] > 0 for f in rec["flows"]), rec["flows"]
    assert (tmp_path / "topologies" / "fattree" / "permutation" / "flows4" / "run.json").exists()
    rank = tmp_path / "plots" / "topologies-rank.png"
    assert rank.stat().st_size > 10_000, done.stdout[-1000:]
