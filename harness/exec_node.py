"""`run_mptcp.sh exec NODE -- CMD`: run CMD in a node of the network that is
running now (built by a run, `--hold` or `--cli`), from another terminal.
It takes no experiment lock: it looks, it does not run an experiment. A
word of CMD that names a host becomes its address, as in Mininet's CLI
(`exec h0_0_0 -- ping -c 3 h1_0_0`). `exec --list` names the nodes.
Standard library only."""
from __future__ import annotations

import os
import sys

from base import noderegistry
from base.errors import ConfigError

PROG = "run_mptcp.sh exec"
USAGE = f"usage: {PROG} NODE -- CMD [ARG...]   |   {PROG} --list"


def with_addresses(words: list[str], entry: dict) -> list[str]:
    """Each word that is a host's name replaced by its first address."""
    return [entry["addresses"][w][0] if w in entry.get("addresses", {}) else w for w in words]


def parse(argv: list[str]) -> tuple[str, list[str]]:
    if argv in (["-h"], ["--help"]):
        print(__doc__.split("Standard library")[0].strip() + "\n" + USAGE)
        raise SystemExit(0)
    if "--" in argv:
        i = argv.index("--")
        node, cmd = argv[:i], argv[i + 1:]
    else:
        node, cmd = argv[:1], argv[1:]
    if len(node) != 1 or not node[0] or node[0].startswith("-") or not cmd:
        raise ConfigError(f"name one node and a command: {USAGE}")
    return node[0], cmd


def listing() -> str:
    entries = noderegistry.running()
    if not entries:
        raise ConfigError("no network is running on this machine")
    return "\n".join(f"PID {e['owner']} ({e['fabric']} fabric, since {e['published']}): "
                     f"hosts {' '.join(e['hosts'])}; switches {' '.join(e['switches']) or 'none'}"
                     for e in entries)


def main(argv: list[str]) -> int:
    try:
        if argv == ["--list"]:
            print(listing())
            return 0
        node, cmd = parse(argv)
        if os.geteuid() != 0:
            raise ConfigError("must be run as root (it enters the node's namespaces): try sudo")
        entry, pid = noderegistry.find(node)
    except ConfigError as exc:
        print(f"{PROG}: error: {exc}", file=sys.stderr)
        return 2
    # mnexec -a: the node's network and mount namespaces, as every harness
    # command in a node (base/procs.in_netns); the command replaces this process.
    try:
        os.execvp("mnexec", ["mnexec", "-a", str(pid), *with_addresses(cmd, entry)])
    except OSError as exc:
        print(f"{PROG}: error: cannot run mnexec: {exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
