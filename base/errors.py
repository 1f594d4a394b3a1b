"""Errors a user can cause."""


class ConfigError(ValueError):
    """Bad input: reported in one line, exit status 2, nothing started."""
