"""Every process the harness starts: started with a timeout or tracked by PID.

Rules this module enforces:
  * `run()` always has a timeout and raises with the command's stderr on
    failure (no "log and go on").
  * `ProcessTracker.spawn()` starts a long-lived process in its own session,
    with PR_SET_PDEATHSIG so that the kernel kills it if the harness dies
    without cleaning up (SIGKILL, crash in C code). `stop_all()` ends exactly
    the processes it started, by PID, never by name.
  * Spawn only from the main thread: PDEATHSIG fires when the *thread* that
    forked the child exits.
"""
from __future__ import annotations

import ctypes
import os
import select
import signal
import subprocess
import time
from dataclasses import dataclass, field

PR_SET_PDEATHSIG = 1
_libc = ctypes.CDLL(None, use_errno=True)


class CommandError(RuntimeError):
    pass


def in_netns(ns_pid: int | None, argv: list[str]) -> list[str]:
    """The argv that runs `argv` in the network namespace of process ns_pid
    (Mininet's mnexec attaches to the namespaces of a running node)."""
    return argv if ns_pid is None else ["mnexec", "-a", str(ns_pid), *argv]


def run(argv: list[str], timeout: float, ns_pid: int | None = None,
        input: str | None = None, check: bool = True) -> subprocess.CompletedProcess:
    """Run a short command to completion; raise CommandError on failure."""
    full = in_netns(ns_pid, argv)
    try:
        done = subprocess.run(full, input=input, capture_output=True, text=True,
                              timeout=timeout, preexec_fn=_die_with_parent)
    except subprocess.TimeoutExpired as exc:
        raise CommandError(f"timed out after {timeout:g} s: {' '.join(full)}") from exc
    if check and done.returncode != 0:
        detail = (done.stderr or done.stdout).strip().splitlines()
        raise CommandError(f"{' '.join(full[:6])}... exited {done.returncode}: "
                           f"{detail[-1] if detail else 'no output'}")
    return done


def wait_readable(fd: int, timeout: float) -> bool:
    """Whether `fd` has something to read (or EOF) within `timeout` seconds.
    poll(), not select(): select() takes no descriptor above 1023, and a
    harness holding a FatTree(8) 4:1 network (512 hosts) has more open."""
    poller = select.poll()
    poller.register(fd, select.POLLIN)
    return bool(poller.poll(max(0.0, timeout) * 1000.0))


def _die_with_parent(sig: int = signal.SIGKILL) -> None:
    _libc.prctl(PR_SET_PDEATHSIG, sig)


def _new_session_and_die_with_parent(sig: int = signal.SIGKILL):
    def setup() -> None:
        os.setsid()
        _die_with_parent(sig)
    return setup


@dataclass
class Tracked:
    label: str
    proc: subprocess.Popen


@dataclass
class ProcessTracker:
    """The processes of one sweep, by PID."""
    procs: list[Tracked] = field(default_factory=list)

    def spawn(self, label: str, argv: list[str], ns_pid: int | None = None,
              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
              env: dict | None = None, stdin=subprocess.DEVNULL,
              death_signal: int = signal.SIGKILL) -> subprocess.Popen:
        """Start a process; it runs until it exits or `stop()` ends it.
        `death_signal`: what the kernel sends it if the harness dies first
        (SIGTERM for a process that must clean up after itself)."""
        proc = subprocess.Popen(in_netns(ns_pid, argv), stdin=stdin,
                                stdout=stdout, stderr=stderr, env=env,
                                preexec_fn=_new_session_and_die_with_parent(death_signal))
        self.procs.append(Tracked(label, proc))
        return proc

    def running(self) -> bool:
        """Whether any tracked process is still running."""
        return any(t.proc.poll() is None for t in self.procs)

    def wait(self, procs: list[subprocess.Popen], deadline: float) -> list[subprocess.Popen]:
        """Wait until every process exits or the deadline passes; return the
        ones still running at the deadline (the caller decides what that means)."""
        pending = list(procs)
        while pending and time.monotonic() < deadline:
            pending = [p for p in pending if p.poll() is None]
            if pending:
                time.sleep(0.1)
        return pending

    def stop(self, procs: list[subprocess.Popen], grace: float = 2.0) -> None:
        """SIGTERM the process groups, then SIGKILL what is left after `grace`."""
        live = [p for p in procs if p.poll() is None]
        for p in live:
            signal_group(p, signal.SIGTERM)
        for p in self.wait(live, time.monotonic() + grace):
            signal_group(p, signal.SIGKILL)
        for p in live:
            try:
                p.wait(timeout=5)
            except subprocess.TimeoutExpired:
                pass  # unkillable (D state): nothing more we can do by PID
        ids = {id(p) for p in procs}
        self.procs = [t for t in self.procs if id(t.proc) not in ids]

    def stop_all(self) -> None:
        self.stop([t.proc for t in self.procs])


def signal_group(proc: subprocess.Popen, sig: int) -> None:
    """Signal the process group `proc` leads (it was started in a session of
    its own, so the group id is its PID): its children too, nothing else.
    A group already gone is not an error."""
    try:
        os.killpg(proc.pid, sig)
    except (ProcessLookupError, PermissionError):
        pass
