"""Servers on one machine to try `--servers` on, and for the ssh tests: the
namespaces of emulator/tunnels.local_servers, each running an sshd of its
own (openssh-server, installed by bootstrap.sh) that lets root in with a key
made for the occasion."""
from __future__ import annotations

import contextlib
import time
from pathlib import Path

from base.procs import ProcessTracker, run

SSHD = "/usr/sbin/sshd"          # sshd re-executes itself, so by its full path
PRIVSEP_DIR = Path("/run/sshd")  # Debian's sshd will not start without it


def _config(folder: Path, address: str) -> Path:
    path = folder / f"sshd-{address}.conf"
    path.write_text("\n".join([
        f"ListenAddress {address}", f"HostKey {folder / 'host_key'}", "PidFile none",
        f"AuthorizedKeysFile {folder / 'client_key.pub'}", "PermitRootLogin prohibit-password",
        "StrictModes no", "UsePAM no", "PasswordAuthentication no",
        "KbdInteractiveAuthentication no", ""]))
    return path


def _listening(ns_pid: int, address: str) -> bool:
    out = run(["ss", "-Hltn", f"src {address}:22"], 10, ns_pid=ns_pid).stdout
    return bool(out.strip())


@contextlib.contextmanager
def sshd_on(servers, folder: Path):
    """sshd in every server namespace; yields the ssh options a client needs
    (its key, a known-hosts file of its own). Every sshd is stopped by PID."""
    for name in ("host_key", "client_key"):
        run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(folder / name)], 30)
    made_privsep = not PRIVSEP_DIR.exists()
    if made_privsep:
        PRIVSEP_DIR.mkdir(mode=0o755)
    tracker = ProcessTracker()
    try:
        for s in servers:
            tracker.spawn(f"sshd {s.name}", [SSHD, "-D", "-e", "-f", str(_config(folder, s.address))],
                          ns_pid=s.ns_pid)
        deadline = time.monotonic() + 10
        for s in servers:
            while not _listening(s.ns_pid, s.address):
                assert time.monotonic() < deadline, f"sshd in {s.name} did not listen"
                time.sleep(0.05)
        yield ("-i", str(folder / "client_key"), "-o", f"UserKnownHostsFile={folder / 'known_hosts'}",
               "-o", "StrictHostKeyChecking=accept-new")
    finally:
        tracker.stop_all()
        if made_privsep:
            with contextlib.suppress(OSError):
                PRIVSEP_DIR.rmdir()


def ssh_config_file(folder: Path, options: tuple[str, ...]) -> Path:
    """sshd_on's client options as an ssh configuration file (--ssh-config)."""
    lines = ["Host *", f"  IdentityFile {options[options.index('-i') + 1]}"]
    lines += [f"  {value.replace('=', ' ', 1)}" for flag, value in zip(options, options[1:])
              if flag == "-o"]
    path = folder / "ssh_config"
    path.write_text("\n".join(lines) + "\n")
    return path
