"""`--topo FILE.py:NAME` as text: split and checked in one line, without
Mininet (the input check runs before anything is installed;
dctopo/custom.py reads the file)."""
from __future__ import annotations

from base.errors import ConfigError, clipped


def split_spec(spec: str) -> tuple[str, str]:
    """'FILE.py:NAME' -> (file, name), refused in one line otherwise."""
    path, sep, name = spec.rpartition(":")
    if not sep or not path.endswith(".py") or not name:
        raise ConfigError(f"--topo {clipped(spec)}: expected FILE.py:NAME (mn --custom's file and topology name)")
    return path, name
