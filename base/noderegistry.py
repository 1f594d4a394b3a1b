"""Where the nodes of the networks now running are, for `run_mptcp.sh exec`
and the `--cli` prompt: one small file per network under /run, written by
the process that built it (emulator/network.py) and removed at its teardown.
A file whose owner has died (SIGKILL leaves it) is ignored, never trusted:
its namespaces died with the owner's nodes; the next network removes it. Standard library only."""
from __future__ import annotations

import json
import os
import time
from pathlib import Path

from base.errors import ConfigError
from base.files import atomic_write_text

REGISTRY_DIR = Path(os.environ.get("MPTCP_HARNESS_NODES", "/run/mptcp-dc-harness-nodes"))


def _started(pid: int) -> str | None:
    """When `pid` started (clock ticks since boot), to tell it from a later
    process given the same PID; None if it is gone."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[19]
    except (OSError, IndexError):
        return None


def publish(network: dict, owner: int | None = None) -> Path:
    """Write one network's entry: `network` holds "nodes" (name -> the PID
    whose namespaces are the node's), "hosts", "switches", "addresses"
    (host -> its addresses), "links" ([node, interface, node, interface])
    and "fabric". Returns the file, for withdraw()."""
    owner = os.getpid() if owner is None else owner
    REGISTRY_DIR.mkdir(mode=0o755, parents=True, exist_ok=True)
    for stale in REGISTRY_DIR.glob("*.json"):     # a killed harness's: its nodes died with it
        if read(stale) is None:
            stale.unlink(missing_ok=True)
    path = REGISTRY_DIR / f"{owner}-{time.monotonic_ns()}.json"
    entry = {**network, "owner": owner, "owner_started": _started(owner),
             "published": time.strftime("%Y-%m-%d %H:%M:%S")}
    atomic_write_text(path, json.dumps(entry))
    return path


def withdraw(path: Path | None) -> None:
    """Remove one entry; the folder too once it holds none."""
    if path is None:
        return
    Path(path).unlink(missing_ok=True)
    try:
        REGISTRY_DIR.rmdir()
    except OSError:
        pass        # another network's entry is there, or it is already gone


def read(path: Path) -> dict | None:
    """One entry, or None where it is unreadable or its owner is dead."""
    try:
        entry = json.loads(Path(path).read_text())
    except (OSError, ValueError):
        return None
    owner = entry.get("owner")
    started = _started(owner) if isinstance(owner, int) else None
    if started is None or started != entry.get("owner_started"):
        return None
    return entry


def running() -> list[dict]:
    """Every live network's entry, the newest first."""
    try:
        paths = sorted(REGISTRY_DIR.glob("*.json"), key=lambda p: p.stat().st_mtime, reverse=True)
    except OSError:
        return []
    return [e for e in (read(p) for p in paths) if e is not None]


def find(node: str) -> tuple[dict, int]:
    """(the entry, the PID) of `node` in a running network: the newest that
    has it. Raises ConfigError saying what runs instead."""
    entries = running()
    if not entries:
        raise ConfigError("no network is running on this machine (start one, e.g. "
                          "`run_mptcp.sh 4 --hold`, then run this from another terminal)")
    for entry in entries:
        if node in entry["nodes"]:
            return entry, entry["nodes"][node]
    names = entries[0]["hosts"][:4]
    raise ConfigError(f"no node {node} in the running network ({len(entries[0]['nodes'])} nodes; "
                      f"hosts e.g. {', '.join(names)}; `run_mptcp.sh exec --list` names them all)")
