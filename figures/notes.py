"""The notes of a plot.py invocation: each a line on stderr as it is made,
all of them kept for the report."""
from __future__ import annotations

import sys

NOTES: list[str] = []   # every note of this invocation, for the report


def note(msg: str) -> None:
    """One line on stderr (and kept for the report's notes)."""
    NOTES.append(msg)
    print(f"plot.py: {msg}", file=sys.stderr)
