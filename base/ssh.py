"""Commands on other servers over ssh, one multiplexed connection per server.

As Mininet's cluster edition does (mininet/examples/cluster.py), each server
gets one OpenSSH master connection (ControlMaster) and every command rides
on it, so a command costs no new handshake. The cluster edition's classes
are not used: its module imports `distutils`, which Python 3.12 and later
lack, and its nodes are Mininet's, not the harness's own namespaces. The
master is our child process, tracked by PID like every other (base/procs.py),
so Ctrl-C or the harness's death ends it, and with it every session on it.
"""
from __future__ import annotations

import shlex
import shutil
import signal
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from base.procs import ProcessTracker

CONNECT_TIMEOUT_S = 10
# A server that stops answering is noticed within 3 x 5 s (ssh's keep-alives).
KEEPALIVE = ("-o", "ServerAliveInterval=5", "-o", "ServerAliveCountMax=3")
SSH_FAILED = 255            # ssh's own exit status when the connection fails


class SshError(RuntimeError):
    """One line, starting with the server's name."""


@dataclass
class SshServer:
    """One server reached over ssh. `destination` as ssh takes it (host or
    user@host); `options`: more ssh options (a key, a known-hosts file)."""
    destination: str
    options: tuple[str, ...] = ()
    _folder: Path | None = field(default=None, repr=False)
    _master: subprocess.Popen | None = field(default=None, repr=False)

    def _argv(self, *more: str) -> list[str]:
        return ["ssh", "-o", "BatchMode=yes", "-o", f"ConnectTimeout={CONNECT_TIMEOUT_S}",
                "-S", str(self._folder / "master"), *KEEPALIVE, *self.options, *more,
                self.destination]

    def _remote(self, argv: list[str]) -> list[str]:
        """The local command that runs `argv` on the server over the master."""
        return [*self._argv("-T"), "--", shlex.join(argv)]

    def open(self, tracker: ProcessTracker, timeout_s: float = CONNECT_TIMEOUT_S + 5) -> None:
        """Start the master connection; SshError if it is not up in time."""
        # A folder of our own for the control socket: its path must stay
        # under the 108 bytes of a Unix socket address.
        self._folder = Path(tempfile.mkdtemp(prefix="mpdc-ssh-"))
        self._master = tracker.spawn(f"ssh {self.destination}", self._argv("-M", "-N"),
                                     stderr=subprocess.PIPE, death_signal=signal.SIGTERM)
        deadline = time.monotonic() + timeout_s
        while not self._master_ready():
            if self._master.poll() is not None:
                self._fail(tracker, f"ssh exited {self._master.returncode}: {self._stderr()}")
            if time.monotonic() > deadline:
                self._fail(tracker, f"no ssh connection within {timeout_s:g} s")
            time.sleep(0.1)

    def _master_ready(self) -> bool:
        done = subprocess.run(self._argv("-O", "check"), capture_output=True, timeout=5)
        return done.returncode == 0

    def _stderr(self) -> str:
        lines = self._master.stderr.read().decode(errors="replace").strip().splitlines()
        return lines[-1] if lines else "no output"

    def _fail(self, tracker: ProcessTracker, why: str) -> None:
        self.close(tracker)
        raise SshError(f"{self.destination}: {why}")

    def run(self, argv: list[str], timeout: float, input: str | None = None,
            check: bool = True) -> subprocess.CompletedProcess:
        """Run `argv` on the server over the master connection. SshError
        (one line, naming the server) if the connection fails, the command
        times out, or with `check` it exits non-zero."""
        if self.closed():
            raise SshError(f"{self.destination}: the ssh connection is closed")
        try:
            done = subprocess.run(self._remote(argv), input=input,
                                  capture_output=True, text=True, timeout=timeout)
        except subprocess.TimeoutExpired as exc:
            raise SshError(f"{self.destination}: timed out after {timeout:g} s: "
                           f"{shlex.join(argv)[:80]}") from exc
        if done.returncode == SSH_FAILED or (check and done.returncode != 0):
            detail = (done.stderr or done.stdout).strip().splitlines()
            raise SshError(f"{self.destination}: {shlex.join(argv)[:60]} exited {done.returncode}: "
                           f"{detail[-1] if detail else 'no output'}")
        return done

    def closed(self) -> bool:
        """Whether the master connection is down (or was never opened)."""
        return self._master is None or self._master.poll() is not None

    def spawn(self, tracker: ProcessTracker, label: str, argv: list[str], **popen) -> subprocess.Popen:
        """Start `argv` on the server over the master connection, tracked
        here like a local process (`popen`: its stdin, stdout, stderr). It
        ends when its ssh session does, whichever side ends it."""
        if self.closed():
            raise SshError(f"{self.destination}: the ssh connection is closed")
        return tracker.spawn(label, self._remote(argv), death_signal=signal.SIGTERM, **popen)

    def close(self, tracker: ProcessTracker) -> None:
        """End the master connection (and every session on it). Idempotent."""
        if self._master is not None:
            tracker.stop([self._master])
            self._master = None
        if self._folder is not None:
            shutil.rmtree(self._folder, ignore_errors=True)
            self._folder = None
