"""A context manager over an object's start() and close()."""
from __future__ import annotations


class Started:
    """`with Thing(...) as thing:` starts it and closes it whatever happens;
    start() itself closes what it began if it fails."""

    def __enter__(self):
        self.start()
        return self

    def __exit__(self, *exc) -> None:
        self.close()
