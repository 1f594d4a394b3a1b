"""Child processes with a time limit each, and cleanup that always runs.

Every child is started in a session of its own, so that Ctrl-C on the
terminal reaches only us, and we decide what to stop: the child's process
group, by its PID (never by name: another user's qemu may run on the host).
SIGTERM and SIGHUP are turned into an exception so that the `finally` blocks
that stop children and remove temporary folders run for them as for Ctrl-C.
"""
import os
import shutil
import signal
import subprocess
import sys
import threading
import time

from base.procs import signal_group


class GuestError(Exception):
    """A failure worth one line to the user (no traceback)."""


class Interrupted(BaseException):
    """SIGTERM/SIGHUP; BaseException so that `except Exception` lets it pass."""

    def __init__(self, signum: int):
        super().__init__(signal.Signals(signum).name)
        self.exit_status = 128 + signum


_live: dict[int, subprocess.Popen] = {}
# Set once we stop everything: a child's death is then our doing, not a
# result (the KVM probe must not record it as KVM failing).
stopping = threading.Event()


def _raise_interrupted(signum, _frame):
    raise Interrupted(signum)


def install_signal_handlers() -> None:
    for signum in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(signum, _raise_interrupted)
    # Also when started in the background by a script (SIGINT then comes
    # ignored): an interrupt must always stop the guest and clean up.
    signal.signal(signal.SIGINT, signal.default_int_handler)


def say(message: str) -> None:
    """Progress and verdicts go to stderr, so stdout is the command's alone."""
    print(f"guest: {message}", file=sys.stderr, flush=True)


def start(argv: list[str], **popen_args) -> subprocess.Popen:
    proc = subprocess.Popen(argv, start_new_session=True, **popen_args)
    _live[proc.pid] = proc
    return proc


def stop(proc: subprocess.Popen, grace: float = 10.0) -> None:
    """SIGTERM the child's group (mmdebstrap unmounts its chroot on it), then
    SIGKILL what is left after `grace` seconds."""
    for signum, wait_for in ((signal.SIGTERM, grace), (signal.SIGKILL, 10.0)):
        if proc.poll() is not None:
            break
        signal_group(proc, signum)
        try:
            proc.wait(timeout=wait_for)
        except subprocess.TimeoutExpired:
            continue
    # The leader may be gone while members of its group linger.
    signal_group(proc, signal.SIGKILL)
    _live.pop(proc.pid, None)


def stop_all() -> None:
    stopping.set()
    for proc in list(_live.values()):
        stop(proc, grace=5.0)


def run(argv: list[str], timeout: float, what: str, log_path: str | None = None,
        **popen_args) -> str:
    """Runs argv to completion within `timeout` seconds; returns its output
    (stdout and stderr together), or raises GuestError with the tail of it.
    With log_path the output goes to that file instead (long logs)."""
    log = open(log_path, "ab") if log_path else None
    try:
        proc = start(argv, stdin=subprocess.DEVNULL,
                     stdout=log or subprocess.PIPE, stderr=subprocess.STDOUT,
                     **popen_args)
        try:
            out, _ = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            stop(proc)
            raise GuestError(f"{what}: no result after {timeout:.0f} s, stopped")
        finally:
            if proc.poll() is None:
                stop(proc)
            _live.pop(proc.pid, None)
    finally:
        if log:
            log.close()
    text = (out or b"").decode(errors="replace")
    if proc.returncode != 0:
        if log_path:
            with open(log_path, "rb") as f:
                f.seek(max(0, os.path.getsize(log_path) - 3000))
                text = f.read().decode(errors="replace")
        tail = "\n".join(text.strip().splitlines()[-15:])
        raise GuestError(f"{what} failed (exit status {proc.returncode}):\n{tail}")
    return text


def _mount_points_under(path: str) -> list[str]:
    path = os.path.realpath(path)
    points = []
    with open("/proc/self/mountinfo") as f:
        for line in f:
            point = line.split()[4].encode().decode("unicode_escape")
            if point == path or point.startswith(path + "/"):
                points.append(point)
    return sorted(points, key=len, reverse=True)


def remove_tree(path: str) -> None:
    """rm -rf that first unmounts what is mounted below `path`: a chroot's
    /dev or /proc left mounted by a killed build must not be emptied."""
    if not os.path.lexists(path):
        return
    for point in _mount_points_under(path):
        subprocess.run(["umount", "-l", point], stderr=subprocess.DEVNULL, timeout=60)
    if _mount_points_under(path):
        raise GuestError(f"{path} still has mounts below it; left in place")
    shutil.rmtree(path, ignore_errors=True)


class Deadline:
    """A time limit shared by several steps."""

    def __init__(self, seconds: float):
        self.end = time.monotonic() + seconds

    def left(self) -> float:
        return max(0.0, self.end - time.monotonic())
