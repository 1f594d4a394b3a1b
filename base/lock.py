"""One experiment per machine at a time.

Experiments measure what two cores can forward; two at once spoil each
other's figures without either record knowing. So a run takes an exclusive
flock(2) on one file before it builds anything, and holds it until it exits.
The kernel drops a flock when its holder dies, however it dies (SIGKILL
included): a lock left by a killed run is never in force, and the next run
takes it over. The file names its holder (PID and command), so a refused run
can say whom it waited for.
"""
from __future__ import annotations

import fcntl
import json
import os
import time
from pathlib import Path

from base.errors import ConfigError

LOCK_PATH = Path("/run/mptcp-dc-harness.lock")


class ExperimentLockHeld(ConfigError):
    """Another experiment holds the machine (exit status 2)."""


def _alive(pid: int) -> bool:
    return pid > 0 and Path(f"/proc/{pid}").exists()


class ExperimentLock:
    def __init__(self, path: Path = LOCK_PATH):
        self.path = Path(path)
        self.fd: int | None = None

    def holder(self) -> dict:
        """What the file says of the run that holds (or last held) it."""
        try:
            return json.loads(self.path.read_text() or "{}")
        except (OSError, ValueError):
            return {}

    def acquire(self, command: str) -> str:
        """Take the lock for `command`, or raise ExperimentLockHeld naming the
        holder. Returns a note where a killed run's lock was taken over."""
        # O_CLOEXEC: the daemons a run starts must not inherit, and so keep, the lock.
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            h = self.holder()
            who = f"PID {h.get('pid', '?')}: {h.get('command', 'unknown command')}"
            raise ExperimentLockHeld(f"another experiment is running on this machine ({who}), "
                                     "started " + h.get("started", "at an unknown time")
                                     + "; one at a time: wait for it to end or stop it") from None
        previous = self.holder()
        os.ftruncate(fd, 0)
        os.pwrite(fd, json.dumps({"pid": os.getpid(), "command": command,
                                  "started": time.strftime("%Y-%m-%d %H:%M:%S")}).encode(), 0)
        self.fd = fd
        pid = previous.get("pid")
        if isinstance(pid, int) and pid != os.getpid() and not _alive(pid):
            return (f"took over the lock of a run that was killed (PID {pid}: "
                    f"{previous.get('command', '?')})")
        return ""

    def release(self) -> None:
        if self.fd is not None:
            os.ftruncate(self.fd, 0)     # an empty file: no holder, nothing stale
            os.close(self.fd)            # closing drops the flock
            self.fd = None
