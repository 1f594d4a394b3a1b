"""The `--cli` prompt: Mininet's CLI words over a running network, as a child
process of the harness (`python -m emulator.prompt --owner PID`), which finds
the nodes in the owner's entry of base/noderegistry.py.

Mininet's own CLI class drives each node through the node's shell and its
Intf objects; the harness configures its nodes in batches and gives them no
Intf objects (emulator/fabrics/common.py), and its runs use the nodes while
the prompt is open, so this adapter runs each command as a process of its own
in the node's namespaces (mnexec -a, as every harness command) with the same
words: `h1 ping h2` (a host's name becomes its address), `pingall`, `nodes`,
`links`, `dump`, `sh CMD`, `help`, `exit`. Ctrl-C stops the command running
and returns to the prompt; `exit`, Ctrl-D, SIGTERM and SIGHUP end the prompt
and the command running, and the harness then tears the network down.
"""
from __future__ import annotations

import argparse
import cmd
import ctypes
import os
import signal
import subprocess
import sys

from base import noderegistry

PR_SET_PDEATHSIG = 1
PING_TIMEOUT_S = 3
SHORT_TIMEOUT_S = 10
STOP_GRACE_S = 3
# What the switch-side words (dpctl, switch) say on each fabric instead.
SWITCH_WORDS = {
    "l3": "the l3 fabric has no switch to program: its switches are Linux routers in namespaces, "
          "forwarding by their routes (ECMP by the kernel's hash); look at one with e.g. "
          "`{switch} ip route` or `{switch} ip -s link`",
    "openflow": "the switches are bridges of private Open vSwitch instances under the harness's "
                "controller, in namespaces that several switches share; `{switch} ip -s link` shows "
                "the switch ports of that namespace",
    "model": "the model fabric has no switch nodes: its switches are a model in the engine process "
             "(engine/), which carries every frame between the hosts' TAP interfaces; the runs' "
             "port monitors read its counters, and `{host} ip -s link` shows a host's side",
}
SWITCH_WORDS["openflow-reactive"] = SWITCH_WORDS["openflow"]


def _die_with_parent() -> None:
    ctypes.CDLL(None).prctl(PR_SET_PDEATHSIG, signal.SIGKILL)


class Stop(Exception):
    """SIGTERM or SIGHUP: leave the prompt."""


def _stop(signum, _frame):
    raise Stop(signum)


class Prompt(cmd.Cmd):
    prompt = "mininet> "
    intro = ""

    def __init__(self, entry: dict, stdin=None):
        super().__init__(stdin=stdin)
        self.entry = entry
        self.nodes: dict[str, int] = entry["nodes"]
        self.hosts: list[str] = entry["hosts"]
        self.child: subprocess.Popen | None = None
        if stdin is not None and stdin is not sys.stdin:
            self.use_rawinput = False

    # -- running in a node ---------------------------------------------------
    def _argv(self, node: str, line: str) -> list[str]:
        return ["mnexec", "-a", str(self.nodes[node]), "sh", "-c", line]

    def words_to_addresses(self, words: list[str]) -> list[str]:
        return [self.entry["addresses"][w][0] if w in self.entry["addresses"] else w for w in words]

    def run_foreground(self, argv: list[str]) -> int | None:
        """Run until it ends or Ctrl-C; in a process group of its own, so that
        Ctrl-C reaches it through us and SIGTERM takes its children too. A
        user's command has no timeout of ours: Ctrl-C ends it, and so does
        leaving the prompt."""
        sys.stdout.flush()
        self.child = subprocess.Popen(argv, stdin=subprocess.DEVNULL, process_group=0,
                                      preexec_fn=_die_with_parent)
        try:
            return self.child.wait()
        except KeyboardInterrupt:
            self._signal_child(signal.SIGINT)
            try:
                return self.child.wait(timeout=STOP_GRACE_S)
            except subprocess.TimeoutExpired:
                self.stop_child()
            print()
            return None
        finally:
            if self.child.poll() is not None:
                self.child = None

    def _signal_child(self, sig: int) -> None:
        try:
            os.killpg(self.child.pid, sig)
        except (ProcessLookupError, PermissionError):
            pass

    def stop_child(self) -> None:
        """End the command running, and its children: SIGTERM, then SIGKILL."""
        if self.child is None:
            return
        for sig in (signal.SIGTERM, signal.SIGKILL):
            self._signal_child(sig)
            try:
                self.child.wait(timeout=STOP_GRACE_S)
                break
            except subprocess.TimeoutExpired:
                continue
        self.child = None

    def default(self, line: str):
        first, _, rest = line.strip().partition(" ")
        if first not in self.nodes:
            print(f"*** Unknown command: {line.strip()} (nodes: `nodes`; words: `help`)")
            return
        if not rest.strip():
            print(f"*** Please enter a command for node: {first} <cmd>")
            return
        self.run_foreground(self._argv(first, " ".join(self.words_to_addresses(rest.split()))))

    def emptyline(self):
        pass

    # -- Mininet's words -------------------------------------------------------
    def do_nodes(self, _line):
        "List all nodes."
        print("available nodes are: \n" + " ".join(sorted(self.nodes)))

    def do_links(self, _line):
        "Report on links: each pair of interfaces and whether each is up."
        states = {}
        for node, pid in self.nodes.items():
            out = self._short(["mnexec", "-a", str(pid), "ip", "-o", "link", "show"])
            for line in out.splitlines():
                parts = line.split(": ")
                if len(parts) > 2:
                    states[parts[1].split("@")[0]] = "OK" if "state UP" in line or ",UP" in line else "DOWN"
        for a, ia, b, ib in self.entry["links"]:     # an end that is no node: a modelled switch's
            ends = [states.get(i, "MISSING") if n in self.nodes else "MODEL" for n, i in ((a, ia), (b, ib))]
            print(f"{ia}<->{ib} ({' '.join(ends)})")

    def do_dump(self, _line):
        "Dump node info."
        for node in sorted(self.nodes):
            kind = "Host" if node in self.hosts else "Switch"
            intfs = [(ia if a == node else ib) for a, ia, b, ib in self.entry["links"] if node in (a, b)]
            addrs = self.entry["addresses"].get(node, [])
            shown = ",".join(f"{i}:{addrs[n] if n < len(addrs) else 'None'}" if kind == "Host" else i
                             for n, i in enumerate(sorted(intfs)))
            print(f"<{kind} {node}: {shown} pid={self.nodes[node]}>")

    def do_pingall(self, _line):
        "Ping between all hosts (one ping each, 1 s timeout)."
        print("*** Ping: testing ping reachability")
        sent = received = 0
        for src in self.hosts:
            marks = []
            for dst in self.hosts:
                if dst == src:
                    continue
                ok = self._ping(src, self.entry["addresses"][dst][0])
                sent, received = sent + 1, received + ok
                marks.append(dst if ok else "X")
            print(f"{src} -> {' '.join(marks)}")
        lost = 100.0 * (sent - received) / sent if sent else 0.0
        print(f"*** Results: {lost:.0f}% dropped ({received}/{sent} received)")

    def _ping(self, src: str, address: str) -> bool:
        try:
            done = subprocess.run(["mnexec", "-a", str(self.nodes[src]), "ping", "-c1", "-W1", "-q",
                                   address], capture_output=True, timeout=PING_TIMEOUT_S,
                                  preexec_fn=_die_with_parent)
        except subprocess.TimeoutExpired:
            return False
        return done.returncode == 0

    def _short(self, argv: list[str]) -> str:
        try:
            return subprocess.run(argv, capture_output=True, text=True, timeout=SHORT_TIMEOUT_S,
                                  preexec_fn=_die_with_parent).stdout
        except subprocess.TimeoutExpired:
            return ""

    def do_sh(self, line):
        "Run an external shell command in the root namespace: sh CMD"
        if line.strip():
            self.run_foreground(["sh", "-c", line])

    def _no_switch(self, word: str) -> None:
        switch = self.entry["switches"][0] if self.entry["switches"] else "a switch"
        text = SWITCH_WORDS.get(self.entry["fabric"], "this fabric's switches are not nodes here: "
                                "`nodes` lists what can be looked into")
        print(f"*** {word}: " + text.format(switch=switch, host=self.hosts[0] if self.hosts else "h1"))

    def do_dpctl(self, _line):
        "Mininet's dpctl: here, what the fabric's switches are and how to look at one."
        self._no_switch("dpctl")

    def do_switch(self, _line):
        "Mininet's switch start/stop: here, what the fabric's switches are."
        self._no_switch("switch")

    def do_link(self, _line):
        "Mininet's link up/down: not offered (a run's links belong to its experiment)."
        print("*** link: not offered here: a link taken down would change the experiment's runs "
              "unrecorded; the experiments that fail a link (linkfailure, hotspot) record it")

    def do_exit(self, _line):
        "Exit: the harness then tears the network down."
        return True

    do_quit = do_exit

    def do_EOF(self, _line):
        "Exit (Ctrl-D)."
        print()
        return True

    def do_help(self, line):
        "Describe the words."
        if line:
            return super().do_help(line)
        h = self.hosts
        a, b = (h[0], h[1]) if len(h) > 1 else ("h1", "h2")
        print(f"""Words, as in Mininet's CLI:
  nodes, links, dump      the nodes, the links and whether their ends are up, each node's interfaces
  pingall                 one ping between every pair of hosts
  <node> <cmd>            run cmd in a node: `{a} ping {b}` ({b} becomes its address),
                          `{a} ss -tiM` (MPTCP sockets and subflows), `{a} tcpdump -c 5 -i any`
  sh <cmd>                run cmd in the root namespace
  dpctl, switch, link     what this fabric's switches are instead
  help, exit (or Ctrl-D)  this text; leave, and the harness tears the network down
Ctrl-C stops the command running and returns here.""")


def loop(prompt: Prompt) -> None:
    """Mininet's CLI loop: Ctrl-C at the prompt is not an exit."""
    while True:
        try:
            prompt.cmdloop()
            return
        except KeyboardInterrupt:
            print("\nInterrupt")


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(prog="emulator.prompt")
    p.add_argument("--owner", type=int, required=True, help="the PID of the harness that built the network")
    args = p.parse_args(argv)
    entries = [e for e in noderegistry.running() if e["owner"] == args.owner]
    if not entries:
        print(f"prompt: no network of PID {args.owner} is running", file=sys.stderr)
        return 1
    prompt = Prompt(entries[0])
    signal.signal(signal.SIGTERM, _stop)
    signal.signal(signal.SIGHUP, _stop)
    try:
        loop(prompt)
    except Stop:
        pass
    finally:
        prompt.stop_child()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
