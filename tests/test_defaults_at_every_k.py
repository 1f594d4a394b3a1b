"""Every subcommand's defaults hold at every --k it accepts: a k is either
refused for itself (its message names --k or k=), or runs with the other
options at their defaults. Standard library only, as the input check."""
from __future__ import annotations

import pytest

from base.errors import ConfigError
from harness import cli

KS = range(2, 50, 2)


def with_k() -> list[str]:
    return [name for name, command in cli.commands().items() if name
            and any(a.option_strings[:1] == ["--k"] for a in command.parser()._actions)]


@pytest.mark.parametrize("name", with_k())
def test_defaults_hold_at_every_k_the_subcommand_accepts(name):
    accepted = []
    for k in KS:
        try:
            cli.commands()[name].config_from(["--k", str(k)])
        except ConfigError as exc:
            assert "--k" in str(exc) or f"k={k}" in str(exc), f"{name} --k {k}: a default refused: {exc}"
            continue
        accepted.append(k)
    assert 4 in accepted, name
