"""One self-describing folder per run, replaced atomically.

A run writes into a hidden staging folder beside its final place
(`.flows8.partial-<pid>`); only when run.json is complete does the staging
folder take the place of the old run, in one `renameat2(RENAME_EXCHANGE)`
(in three renames on a filesystem without it, see `exchange`).
A run that is interrupted or crashes leaves its staging folder, which the
`RunStage` context removes, and the earlier run stays exactly as it was.
Plotting ignores hidden folders, so a half-written run is never plotted.
"""
from __future__ import annotations

import ctypes
import errno
import json
import os
import shutil
from pathlib import Path

from base.files import atomic_write_text

AT_FDCWD = -100
RENAME_EXCHANGE = 2
_libc = ctypes.CDLL(None, use_errno=True)


# What renameat2 answers where the filesystem cannot exchange (9p, which the
# guests' shared folders are; vfat, minix; NFS before v4.2 servers that can).
NO_EXCHANGE = {errno.EINVAL, errno.ENOTSUP, errno.ENOSYS}


def renameat2_exchange(a: Path, b: Path) -> int:
    """0, or the errno of renameat2(RENAME_EXCHANGE); the standard library
    has no call for it."""
    if _libc.renameat2(AT_FDCWD, os.fsencode(a), AT_FDCWD, os.fsencode(b), RENAME_EXCHANGE) != 0:
        return ctypes.get_errno()
    return 0


def exchange(a: Path, b: Path) -> None:
    """Swap two paths (both must exist): atomically where the filesystem
    can; elsewhere in three renames, with `b` moved aside to a hidden name
    (`.NAME.old-<pid>`) that the next RunStage puts back if we die between
    them (RunStage._remove_stale_stages)."""
    err = renameat2_exchange(a, b)
    if err in NO_EXCHANGE:
        aside = aside_name(b, os.getpid())
        os.rename(b, aside)
        os.rename(a, b)
        os.rename(aside, a)
    elif err:
        raise OSError(err, os.strerror(err), f"{a} <-> {b}")


def aside_name(final: Path, pid: int) -> Path:
    return final.with_name(f".{final.name}.old-{pid}")


def write_json(path: Path, data) -> None:
    atomic_write_text(path, json.dumps(data, indent=1, sort_keys=False) + "\n")


def give_to_invoking_user(path: Path) -> None:
    """Under sudo, hand what we wrote back to the user, so that plot.py can
    redraw without root."""
    uid, gid = os.environ.get("SUDO_UID"), os.environ.get("SUDO_GID")
    if os.geteuid() != 0 or not uid or not gid or not path.exists():
        return
    for p in [path, *path.rglob("*")] if path.is_dir() else [path]:
        os.lchown(p, int(uid), int(gid))


def ensure_dir(path: Path) -> Path:
    """mkdir -p, giving every folder it creates to the invoking user."""
    missing = []
    p = path
    while not p.exists():
        missing.append(p)
        p = p.parent
    path.mkdir(parents=True, exist_ok=True)
    for p in reversed(missing):
        give_to_invoking_user(p)
    return path


class RunStage:
    """`with RunStage(final_dir) as stage:` write files into `stage.path`,
    then `stage.commit(record)`; leaving without commit discards them."""

    def __init__(self, final: Path):
        self.final = final
        self.path = final.with_name(f".{final.name}.partial-{os.getpid()}")
        self.committed = False

    def __enter__(self) -> "RunStage":
        ensure_dir(self.final.parent)
        self._remove_stale_stages()
        if self.path.exists():
            shutil.rmtree(self.path)
        self.path.mkdir()
        return self

    def _remove_stale_stages(self) -> None:
        """Staging folders of this run left by a harness that was killed
        (SIGKILL gives no chance to clean up); a live one is not ours to touch.
        An old run a killed harness had moved aside (`exchange` without
        RENAME_EXCHANGE) goes back to its place if nothing took it."""
        for stale in self.final.parent.glob(f".{self.final.name}.*-*"):
            kind, pid = stale.name.rsplit("-", 1)
            if not pid.isdigit() or Path(f"/proc/{pid}").exists():
                continue
            if kind.endswith(".old") and not self.final.exists():
                os.rename(stale, self.final)
            elif kind.endswith((".old", ".partial")):
                shutil.rmtree(stale, ignore_errors=True)

    def commit(self, record: dict) -> None:
        write_json(self.path / "run.json", record)
        give_to_invoking_user(self.path)
        if self.final.exists():
            exchange(self.path, self.final)   # self.path now holds the old run
            shutil.rmtree(self.path)
        else:
            os.rename(self.path, self.final)
        self.committed = True

    def __exit__(self, *exc) -> None:
        if not self.committed and self.path.exists():
            shutil.rmtree(self.path, ignore_errors=True)
