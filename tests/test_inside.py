"""Looking inside a running network: the node registry, `run_mptcp.sh exec`,
`--hold`, the `--cli` prompt driven in a pseudo-terminal, `--pcap`, and the
bad input refused before anything is built. Every real network is checked
to leave nothing behind, the registry's entry included. Each test points
the registry at a folder of its own (MPTCP_HARNESS_NODES), so that a
network another test or user runs meanwhile is not seen."""
from __future__ import annotations

import fcntl
import json
import os
import re
import select
import signal
import subprocess
import termios
import time
from pathlib import Path

import pytest

from base import noderegistry
from tests.conftest import ROOT, needs_root, nothing_left_behind

SCRIPT = str(ROOT / "run_mptcp.sh")
# reno: no coupled algorithm to register, which another test's network may hold meanwhile
SHORT_RUN = ["--subflows", "4", "--time", "2", "--warmup", "2", "--cc", "reno", "--no-plots"]


@pytest.fixture
def registry(tmp_path, monkeypatch):
    folder = tmp_path / "nodes"
    monkeypatch.setattr(noderegistry, "REGISTRY_DIR", folder)
    monkeypatch.setenv("MPTCP_HARNESS_NODES", str(folder))
    return folder


def exec_in(node: str, *cmd: str) -> subprocess.CompletedProcess:
    return subprocess.run([SCRIPT, "exec", node, "--", *cmd], capture_output=True, text=True, timeout=30)


# -- input refused before anything is built ----------------------------------
@pytest.mark.parametrize("argv, words", [
    (["4", "--cli", "--shard", "1/2"], "--cli with --shard"),
    (["4", "--cli", "--servers", "a,b"], "--cli with --servers"),
    (["4", "--pcap", ""], "name hosts"),
    (["4", "--pcap", "h0_0_0,,h0_0_1"], "name hosts"),
    (["4", "--cli", "--hold"], "give one"),
    (["4", "--hold", "--pcap", "all"], "--hold runs none"),
    (["model", "--cli"], "nothing to look inside"),
    (["4", "--cli", "sometimes"], "invalid choice"),
])
def test_bad_input_is_one_line(argv, words):
    done = subprocess.run([SCRIPT, *argv], capture_output=True, text=True, timeout=60)
    assert done.returncode == 2, done.stderr
    assert len(done.stderr.strip().splitlines()) == 1 and words in done.stderr, done.stderr


def test_exec_refuses_without_a_node_or_network(registry):
    done = exec_in("h0_0_0", "true")
    assert done.returncode == 2 and "no network is running" in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1
    done = subprocess.run([SCRIPT, "exec", "h0_0_0"], capture_output=True, text=True, timeout=30)
    assert done.returncode == 2 and "name one node and a command" in done.stderr


def test_registry_ignores_an_entry_whose_owner_died(registry):
    dead = subprocess.Popen(["true"])
    dead.wait(timeout=10)
    noderegistry.publish({"nodes": {"h1": 1}, "hosts": ["h1"], "switches": [], "addresses": {},
                          "links": [], "fabric": "l3"}, owner=dead.pid)
    assert noderegistry.running() == []
    assert len(list(registry.glob("*.json"))) == 1
    mine = noderegistry.publish({"nodes": {"h1": 1}, "hosts": ["h1"], "switches": [],
                                 "addresses": {}, "links": [], "fabric": "l3"})
    assert [e["owner"] for e in noderegistry.running()] == [os.getpid()]
    assert list(registry.glob("*.json")) == [mine]          # the dead owner's, removed
    noderegistry.withdraw(mine)
    assert not registry.exists()


# -- exec in a network built here ----------------------------------------------
@needs_root
def test_exec_runs_in_the_node_and_names_become_addresses(registry):
    from base.links import LinkParams
    from dctopo.clos import FatTree
    from emulator.network import Network
    with nothing_left_behind():
        with Network(FatTree(k=4), LinkParams(bw_mbps=10), "reno") as net:
            done = exec_in("h0_0_0", "ip", "-o", "-4", "addr", "show", "dev", "h0_0_0-eth0")
            assert done.returncode == 0 and net.fabric.host_ip("h0_0_0") in done.stdout, done
            done = exec_in("h0_0_0", "ping", "-c", "1", "-W", "2", "h3_1_1")
            assert done.returncode == 0 and net.fabric.host_ip("h3_1_1") in done.stdout, done
            done = exec_in("h9_9_9", "true")
            assert done.returncode == 2 and "no node h9_9_9" in done.stderr
            assert len(list(registry.glob("*.json"))) == 1
        assert not registry.exists() or not list(registry.glob("*.json"))
        assert exec_in("h0_0_0", "true").returncode == 2


# -- --hold ------------------------------------------------------------------------
def _read_until(proc: subprocess.Popen, words: str, timeout: float) -> str:
    """os.read, not readline: lines a buffered reader holds are invisible to select."""
    seen, deadline = b"", time.monotonic() + timeout
    while words.encode() not in seen and time.monotonic() < deadline and proc.poll() is None:
        if select.select([proc.stdout], [], [], 0.5)[0]:
            seen += os.read(proc.stdout.fileno(), 65536)
    assert words.encode() in seen, seen.decode(errors="replace")
    return seen.decode(errors="replace")


@needs_root
def test_hold_keeps_the_network_for_exec_and_the_lock(registry, tmp_path):
    with nothing_left_behind():
        proc = subprocess.Popen([SCRIPT, "4", "--hold", "--cc", "reno", "--results", str(tmp_path / "r")],
                                stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        try:
            _read_until(proc, "run_mptcp.sh exec --list", 120)
            done = exec_in("h0_0_0", "ping", "-c", "1", "-W", "2", "h3_1_1")
            assert done.returncode == 0, done
            second = subprocess.run([SCRIPT, "4", "--results", str(tmp_path / "s")],
                                    capture_output=True, text=True, timeout=60)
            assert second.returncode == 2 and "another experiment is running" in second.stderr
            proc.send_signal(signal.SIGTERM)
            out = proc.communicate(timeout=60)[0].decode(errors="replace")
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait(timeout=10)
        assert proc.returncode == 0 and "held network was removed" in out, out
        assert not list(registry.glob("*.json")) if registry.exists() else True
        assert not (tmp_path / "r").exists() or not list((tmp_path / "r").rglob("run.json"))


# -- --cli in a pseudo-terminal ------------------------------------------------
class Terminal:
    """A process on a pseudo-terminal of its own, as from a shell: its
    controlling terminal, its process group in the foreground."""

    def __init__(self, argv: list[str]):
        self.master, slave = os.openpty()

        def controlling_terminal():
            os.setsid()
            fcntl.ioctl(0, termios.TIOCSCTTY, 0)
        self.proc = subprocess.Popen(argv, stdin=slave, stdout=slave, stderr=slave,
                                     preexec_fn=controlling_terminal)
        os.close(slave)
        self.text = ""

    def expect(self, pattern: str, timeout: float) -> str:
        """Everything read until `pattern` (a regular expression) shows, after what was read."""
        start, deadline = len(self.text), time.monotonic() + timeout
        while time.monotonic() < deadline:
            found = re.search(pattern, self.text[start:])
            if found:
                return self.text[start:start + found.end()]
            if select.select([self.master], [], [], 0.5)[0]:
                try:
                    self.text += os.read(self.master, 65536).decode(errors="replace")
                except OSError:         # the process and its terminal are gone
                    break
        raise AssertionError(f"never saw {pattern!r}; read:\n{self.text[start:][-3000:]}")

    def send(self, text: str) -> None:
        os.write(self.master, text.encode())

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(timeout=10)
        os.close(self.master)


@needs_root
def test_cli_prompt_words_ctrl_c_and_exit(registry, tmp_path):
    with nothing_left_behind():
        term = Terminal([SCRIPT, "4", "--cli", "after", *SHORT_RUN, "--results", str(tmp_path / "r")])
        try:
            term.expect(r"mininet> ", 180)
            term.send("pingall\n")
            out = term.expect(r"Results: .*\n", 120)
            assert "Results: 0% dropped (240/240 received)" in out, out
            term.send("h0_0_0 ping h3_1_1\n")
            term.expect(r"bytes from 10\.3\.1\.3", 20)
            term.send("\x03")                           # Ctrl-C: the ping ends, the prompt stays
            out = term.expect(r"mininet> ", 20)
            assert "packet loss" in out and term.proc.poll() is None, out
            term.send("h0_0_0 ss -tiM\n")
            term.expect(r"mininet> ", 20)
            term.send("nodes\n")
            out = term.expect(r"mininet> ", 20)
            assert "c0" in out and "h3_1_1" in out, out
            term.send("dpctl\n")
            assert "no switch to program" in term.expect(r"mininet> ", 20)
            term.send("h9 true\n")
            assert "Unknown command" in term.expect(r"mininet> ", 20)
            term.send("exit\n")
            assert term.proc.wait(timeout=60) == 0
        finally:
            term.close()
        record = json.loads(next((tmp_path / "r").rglob("run.json")).read_text())
        assert record["config"]["subflows"] == 4 and "cli_open" not in record     # --cli after: opened after it
        assert not registry.exists() or not list(registry.glob("*.json"))


@needs_root
def test_cli_open_during_the_runs_then_ctrl_d_tears_down(registry, tmp_path):
    with nothing_left_behind():
        term = Terminal([SCRIPT, "4", "--cli", *SHORT_RUN, "--results", str(tmp_path / "r")])
        try:
            term.expect(r"mininet> ", 180)
            term.expect(r"the runs are done; the network stays up", 180)
            term.send("\x04")
            assert term.proc.wait(timeout=60) == 0
        finally:
            term.close()
        assert not registry.exists() or not list(registry.glob("*.json"))
    record = json.loads(next((tmp_path / "r").rglob("run.json")).read_text())
    assert record["cli_open"] is True and "cli_open" not in record["flags"]


@needs_root
def test_cli_on_the_first_of_several_networks_then_the_rest_run(registry, tmp_path):
    with nothing_left_behind():
        term = Terminal([SCRIPT, "4", "--cli", "--seeds", "0,1", *SHORT_RUN, "--results", str(tmp_path / "r")])
        try:
            term.expect(r"this network's runs are done", 240)
            term.send("\x04")
            assert term.proc.wait(timeout=240) == 0
        finally:
            term.close()
    records = [json.loads(p.read_text()) for p in sorted((tmp_path / "r").rglob("run.json"))]
    assert len(records) == 2 and [bool(r.get("cli_open")) for r in records].count(True) == 1, records


@needs_root
def test_cli_sigterm_tears_down(registry, tmp_path):
    with nothing_left_behind():
        term = Terminal([SCRIPT, "4", "--cli", *SHORT_RUN, "--results", str(tmp_path / "r")])
        try:
            term.expect(r"mininet> ", 180)
            term.send("h0_0_0 sleep 300\n")
            time.sleep(1)
            term.proc.send_signal(signal.SIGTERM)
            assert term.proc.wait(timeout=60) != 0
        finally:
            term.close()


# -- --pcap -----------------------------------------------------------------------
@needs_root
def test_pcap_captures_mptcp_options_and_flags_the_run(registry, tmp_path):
    with nothing_left_behind():
        done = subprocess.run([SCRIPT, "4", *SHORT_RUN, "--pcap", "h0_0_0,h0_0_1",
                               "--results", str(tmp_path / "r")],
                              capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    run_json = next((tmp_path / "r").rglob("run.json"))
    record = json.loads(run_json.read_text())
    assert "packet_capture" in record["flags"] and not record["valid"]
    assert sorted(record["capture"]) == ["h0_0_0-eth0", "h0_0_1-eth0"]
    for intf, capture in record["capture"].items():
        pcap = run_json.parent / "pcap" / f"{intf}.pcap"
        assert pcap.stat().st_size == capture["bytes"] > 0 and not capture["capped"]
        assert isinstance(capture["cpu_s"], float)
        assert int.from_bytes(pcap.read_bytes()[16:20], "little") >= 134     # the snap length
    text = subprocess.run(["tcpdump", "-r", str(run_json.parent / "pcap" / "h0_0_0-eth0.pcap"), "-n", "-v"],
                          capture_output=True, text=True, timeout=60).stdout
    # tcpdump's words for the options: "mptcp 12 capable v1", "mptcp 12 join id 0 ..."
    assert re.search(r"mptcp \d+ capable", text) and re.search(r"mptcp \d+ join", text), text[:2000]


@needs_root
@pytest.mark.parametrize("topology", [
    [],                                                         # FatTree(4): its names by arithmetic
    ["--topo", str(ROOT / "docs/examples/leafspine.py") + ":leafspine"],   # the runner's check
])
def test_pcap_of_a_host_the_topology_lacks_is_refused_before_building(registry, tmp_path, topology):
    with nothing_left_behind():
        done = subprocess.run([SCRIPT, "4", *topology, "--pcap", "h9", "--cc", "reno",
                               "--results", str(tmp_path / "r")],
                              capture_output=True, text=True, timeout=120)
    assert done.returncode == 2 and "no host h9" in done.stderr, done.stderr
    assert len(done.stderr.strip().splitlines()) == 1 and "built" not in done.stdout


@needs_root
def test_a_capture_that_reaches_its_cap_stops_and_the_run_says_so(registry, tmp_path, monkeypatch):
    from base.links import LinkParams
    from dctopo.clos import FatTree
    from emulator import capture
    from emulator.network import Network
    from experiments.inside import Inside
    monkeypatch.setattr(capture, "CAP_PACKETS", 6)
    said = []
    with nothing_left_behind():
        with Network(FatTree(k=4), LinkParams(bw_mbps=10), "reno") as net:
            inside = Inside(pcap=("h0_0_0",), say=said.append)
            with inside.run(net, tmp_path) as looked:
                done = exec_in("h0_0_0", "ping", "-c", "10", "-i", "0.2", "h0_0_1")
                assert done.returncode == 0, done
    summary = looked.record["capture"]["h0_0_0-eth0"]
    assert summary["capped"] and summary["packets"] == 6, summary
    assert looked.flags == ["packet_capture"]
    assert any("capture of h0_0_0-eth0 stopped at its cap" in line for line in said), said


@pytest.mark.parametrize("fabric, words", [
    ("l3", "Linux routers in namespaces"), ("openflow", "Open vSwitch"),
    ("openflow-reactive", "Open vSwitch"), ("model", "no switch nodes")])
def test_the_switch_words_say_what_each_fabric_has_instead(fabric, words, capsys):
    from emulator.prompt import Prompt
    hosts = ["h0_0_0", "h0_0_1"]
    switches = [] if fabric == "model" else ["e0_0"]
    prompt = Prompt({"fabric": fabric, "nodes": {n: 1 for n in hosts + switches}, "hosts": hosts,
                     "switches": switches, "addresses": {}, "links": []})
    for word in ("dpctl", "switch e0_0 stop"):
        prompt.onecmd(word)
        out = capsys.readouterr().out
        assert words in out and "{" not in out, out
