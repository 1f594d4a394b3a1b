"""guest/run.sh boots a guest once more only when it stopped before the
command started (guest_init.sh had not reached it), never after: a command
that ran, even partly, is never run twice. qemu itself is replaced here by
a stand-in for boot.run_command; the boots are guest/'s own code paths."""
from __future__ import annotations

from types import SimpleNamespace

import pytest

from guest import boot, cli


def boots(monkeypatch, answers: list[int]) -> tuple[int, list[float]]:
    """cli's exit status when the boots answer `answers` in turn, and the
    time limit each boot was given."""
    given: list[float] = []

    def run_command(guest_dir, manifest, argv, timeout, keep_output, accel, repo):
        given.append(timeout)
        return answers[len(given) - 1]
    monkeypatch.setattr(boot, "run_command", run_command)
    opts = SimpleNamespace(timeout=100.0, command=["true"], keep_output=None)
    return cli.run_booting_again_once("/nonexistent", {}, opts, boot.TCG), given


@pytest.mark.parametrize("answers, status", [
    ([0], 0),
    ([3], 3),                                        # the command's own status
    ([boot.EXIT_GUEST_FAILED], boot.EXIT_GUEST_FAILED),   # stopped after it started
    ([boot.EXIT_TIMEOUT], boot.EXIT_TIMEOUT),
    ([boot.NOT_STARTED, 0], 0),
    ([boot.NOT_STARTED, 5], 5),
    ([boot.NOT_STARTED, boot.NOT_STARTED], boot.EXIT_GUEST_FAILED),
])
def test_only_a_guest_that_never_started_the_command_boots_again(monkeypatch, answers, status):
    got, given = boots(monkeypatch, answers)
    assert (got, len(given)) == (status, len(answers))
    assert all(0 < t <= 100.0 for t in given) and given == sorted(given, reverse=True)
