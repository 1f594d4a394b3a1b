"""Errors a user can cause."""


class ConfigError(ValueError):
    """Bad input: reported in one line, exit status 2, nothing started."""


def clipped(text: str, width: int = 60) -> str:
    """What a user typed, cut to `width` characters for a one-line error."""
    return text if len(text) <= width else text[:width] + "..."
