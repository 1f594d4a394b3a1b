"""Files written whole or not at all."""
from __future__ import annotations

import os
import tempfile
from pathlib import Path


def atomic_write_text(path: Path, text: str) -> None:
    """Write `text` to `path` through a temporary file of a unique name in
    the same folder, then rename it into place: a reader sees the old file or
    the new one, never a half-written one, and two writers (two harnesses,
    or two threads) never write into each other's temporary file."""
    path = Path(path)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w") as f:
            f.write(text)
        os.chmod(tmp, 0o644)   # mkstemp makes it 0600; results are read by the invoking user
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise


def _nearest_existing(path: Path) -> Path:
    p = path
    while not p.exists() and p != p.parent:
        p = p.parent
    return p


def check_folder_path(path: Path | str, flag: str) -> None:
    """Refuse, without writing anything, a folder that cannot be one: a path
    that is a file, or one below a file."""
    from base.errors import ConfigError
    if not str(path).strip():
        raise ConfigError(f"{flag}: give a folder")
    path = Path(path)
    try:
        if path.exists() and not path.is_dir():
            raise ConfigError(f"{flag} {path}: is a file, not a folder")
        anchor = _nearest_existing(path.absolute())
    except PermissionError:
        return   # not ours to see as this user; the check as root decides (check_folder_writable)
    if not anchor.is_dir():
        raise ConfigError(f"{flag} {path}: {anchor} is a file, not a folder")


def check_folder_writable(path: Path, flag: str) -> None:
    """Refuse a folder this process cannot create or write into, by trying:
    make the missing folders, write and remove a file, then remove the
    folders it made, so that a refused run leaves nothing behind."""
    from base.errors import ConfigError
    path = Path(path).absolute()
    check_folder_path(path, flag)
    made: list[Path] = []
    p = path
    try:
        while not p.exists():       # raises where this user may not look
            made.append(p)
            p = p.parent
        for d in reversed(made):
            d.mkdir()
        fd, probe = tempfile.mkstemp(dir=path, prefix=".write-probe-")
        os.close(fd)
        os.unlink(probe)
    except OSError as exc:
        raise ConfigError(f"{flag} {path}: cannot write there ({exc.strerror})") from None
    finally:
        for d in made:
            try:
                d.rmdir()
            except OSError:
                pass
