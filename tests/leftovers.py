"""What a run could leave on the machine, and a comparison of two snapshots.

Processes are found by their network namespace: anything running outside the
root namespace that was not there before belongs to a network we built.
"""
from __future__ import annotations

import json
import os
import subprocess
import time
from dataclasses import dataclass


def _root_netns() -> str:
    return os.readlink("/proc/self/ns/net")  # the tests run in the root namespace


def _processes_in_other_netns() -> set[tuple[int, str]]:
    root = _root_netns()
    found = set()
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            ns = os.readlink(f"/proc/{pid}/ns/net")
            if ns != root:
                comm = open(f"/proc/{pid}/comm").read().strip()
                found.add((int(pid), f"{comm} {ns}"))
        except OSError:
            continue
    return found


def _json(argv: list[str]) -> list:
    out = subprocess.run(argv, capture_output=True, text=True, timeout=10)
    return json.loads(out.stdout or "[]") if out.returncode == 0 else []


@dataclass
class Snapshot:
    processes: set
    links: set
    qdiscs: set
    netns: set

    @classmethod
    def take(cls) -> "Snapshot":
        return cls(
            processes=_processes_in_other_netns(),
            links={l["ifname"] for l in _json(["ip", "-j", "link", "show"])},
            qdiscs={(q["dev"], q["kind"]) for q in _json(["tc", "-j", "qdisc", "show"])},
            netns={n["name"] for n in _json(["ip", "-j", "netns", "list"])},
        )

    def new_since(self, before: "Snapshot") -> dict:
        diff = {}
        for field in ("processes", "links", "qdiscs", "netns"):
            extra = getattr(self, field) - getattr(before, field)
            if extra:
                diff[field] = sorted(map(str, extra))
        return diff

    @classmethod
    def wait_clean(cls, before: "Snapshot", timeout: float) -> "Snapshot":
        """Namespaces die a moment after their last process: poll, don't sleep."""
        deadline = time.monotonic() + timeout
        while True:
            now = cls.take()
            if not now.new_since(before) or time.monotonic() > deadline:
                return now
            time.sleep(0.2)
