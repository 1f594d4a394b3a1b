"""What the ssh tests look at besides the servers (emulator/local_sshd.py)."""
from __future__ import annotations

import os
import signal
import subprocess

from base.ssh import SshServer


def ssh_sessions_to(address: str) -> int:
    """Established TCP connections from this namespace to address:22."""
    out = subprocess.run(["ss", "-Htn", "state", "established", f"dst {address}:22"],
                         capture_output=True, text=True, timeout=10).stdout
    return len(out.strip().splitlines())


def kill_master(server: SshServer) -> None:
    """SIGKILL one server's ssh master, as a crash would."""
    os.kill(server._master.pid, signal.SIGKILL)
    server._master.wait(timeout=5)
