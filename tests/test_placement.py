"""--servers: a FatTree placed over several servers by pods, what crosses
between them, and what --plan says of it. No network is built."""
import subprocess

import pytest

from base.errors import ConfigError
from dctopo.clos import FatTree
from dctopo.fattree_shape import FatTreeShape
from dctopo.placement import MAX_SERVERS, parse_servers, place_by_pod
from tests.conftest import ROOT

SCRIPT = str(ROOT / "run_mptcp.sh")


@pytest.mark.parametrize("k", [4, 6, 8])
def test_the_shape_names_the_nodes_and_links_the_topology_builds(k):
    topo, shape = FatTree(k=k), FatTreeShape(k)
    assert sorted(shape.hosts()) == sorted(topo.hosts())
    assert sorted(shape.switches()) == sorted(topo.switches())
    assert {frozenset(link) for link in shape.links()} == {frozenset(link) for link in topo.links()}
    assert len(shape.links()) == len(topo.links())


def test_two_servers_share_the_pods_and_only_core_links_cross():
    placed = place_by_pod(FatTreeShape(4), ("a", "b"))
    assert {h: placed.where[h] for h in ("h0_0_0", "h1_1_1", "h2_0_0", "h3_1_1")} == {
        "h0_0_0": "a", "h1_1_1": "a", "h2_0_0": "b", "h3_1_1": "b"}
    assert [placed.where[c] for c in ("c0", "c1", "c2", "c3")] == ["a", "a", "b", "b"]
    crossing = placed.crossing()
    assert all(lo.startswith("a") and hi.startswith("c") for lo, hi in crossing)
    # Each pod's second aggregation switch reaches the other server's two cores.
    assert len(crossing) == 8 and len(placed.links) == 48
    assert dict(placed.tunnels_between()) == {("a", "b"): 8}


def test_fattree8_over_four_servers_puts_32_hosts_on_each():
    shape = FatTreeShape(8)
    placed = place_by_pod(shape, ("s1", "s2", "s3", "s4"))
    for server in placed.servers:
        assert sum(n.startswith("h") for n in placed.nodes_on(server)) == 32
        assert sum(n.startswith("c") for n in placed.nodes_on(server)) == 4
    assert len(placed.crossing()) == 96     # 3/4 of the 128 agg-core links
    assert sorted(placed.where) == sorted(shape.hosts() + shape.switches())


@pytest.mark.parametrize("text,words", [
    ("a", "give 2..64 servers"),
    ("a,a", "a is named twice"),
    ("a,,b", "ssh destination"),
    ("a,b c", "ssh destination"),
    ("a,$(reboot)", "ssh destination"),
    ("a," + "x" * 300, "at most 255"),
    (",".join(f"s{i}" for i in range(MAX_SERVERS + 1)), "give 2..64"),
])
def test_a_bad_server_list_is_one_clear_line(text, words):
    with pytest.raises(ConfigError) as exc:
        parse_servers(text)
    assert words in str(exc.value) and len(str(exc.value)) < 300


def test_more_servers_than_pods_are_refused():
    with pytest.raises(ConfigError, match="at most 4 servers"):
        place_by_pod(FatTreeShape(4), tuple("abcde"))


def test_plan_shows_the_placement_and_what_cannot_run_over_servers_is_refused(tmp_path):
    planned = subprocess.run([SCRIPT, "4", "--servers", "alice@lab1,lab2", "--plan"],
                             capture_output=True, text=True, timeout=60)
    assert planned.returncode == 0, planned.stderr
    lines = planned.stdout.splitlines()
    assert "  alice@lab1: pods 0-1, 8 hosts, 10 switches (2 core)" in lines
    assert "  lab2: pods 2-3, 8 hosts, 10 switches (2 core)" in lines
    assert "links between servers: 8 of 48, each a tunnel shaped like a local link" in lines
    for more, line in [
            (["--driver", "iperf3"], "--servers with --fabric l3 --driver iperf3: over servers the "
                                     "network runs on --fabric l3 with --driver socket"),
            (["--ssh-config", "/nonexistent/ssh_config"], "--ssh-config /nonexistent/ssh_config: no such file"),
            (["--ssh-config", "/x" * 200], f"--ssh-config {('/x' * 30)}...: no such file"),
            (["--servers", "lab1," + "x" * 300], f"--servers {'x' * 60 + '...'!r}: a server is an ssh "
                                                  "destination, [user@]host, of letters, digits and "
                                                  ". _ - : @ [ ] (at most 255)")]:
        refused = subprocess.run([SCRIPT, "4", "--servers", "lab1,lab2", "--results", str(tmp_path),
                                  *more], capture_output=True, text=True, timeout=60)
        assert refused.returncode == 2
        assert refused.stderr.strip().splitlines() == [f"run_mptcp.sh: error: {line}"]
    alone = subprocess.run([SCRIPT, "4", "--ssh-config", "/etc/hostname", "--results", str(tmp_path)],
                           capture_output=True, text=True, timeout=60)
    assert alone.returncode == 2
    assert alone.stderr.strip().splitlines() == [
        "run_mptcp.sh: error: --ssh-config /etc/hostname without --servers: it configures ssh to the servers"]
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("k,servers", [(4, "ab"), (8, "abcd")])
def test_each_server_forwards_its_share_and_a_tunnelled_hop_costs_more(monkeypatch, k, servers):
    from dctopo.workloads import make_matrix
    from experiments.capacity import demand_gbit_hops, servers as guard
    shape = FatTreeShape(k)
    placed = place_by_pod(shape, tuple(servers))
    matrix = make_matrix("one_to_one", shape.hosts(), 0)
    total = demand_gbit_hops(shape, matrix, 10.0)
    weighted = guard.demand_by_server(shape, placed, matrix, 10.0)
    monkeypatch.setattr(guard, "TUNNEL_COST", 1.0)
    plain = guard.demand_by_server(shape, placed, matrix, 10.0)
    assert sum(plain.values()) == pytest.approx(total)        # every hop counted once
    assert sum(weighted.values()) > total
    assert all(d > 0 for d in plain.values())


def test_plan_judges_each_server_as_this_machine_until_it_answers():
    planned = subprocess.run([SCRIPT, "8", "--bw", "10", "--servers", "a,b,c,d", "--plan"],
                             capture_output=True, text=True, timeout=60)
    assert planned.returncode == 0, planned.stderr
    from harness.listing import unwrapped
    [line] = [ln for ln in unwrapped(planned.stdout) if ln.startswith("capacity")]
    assert line.startswith("capacity, each server judged as if it were this machine until its "
                           "worker says what it is: ")
    for server in "abcd":
        assert f"; {server} about " in line or f": {server} about " in line
