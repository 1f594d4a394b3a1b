"""`run_mptcp.sh NAME [options]`: parse, check, run, plot, for every
experiment of the catalogue (base/catalogue.py); `run_mptcp.sh K ...` is the
FatTree sweep's, `run_mptcp.sh list` lists them all, and `--plan` on any of
them says what it would run and what that costs, building nothing.

Parsing and validation use the standard library only, so `run_mptcp.sh` can
reject bad input with the system Python before it installs anything.
Every error a user can cause ends in one line on stderr and exit status 2,
before any network is built.
"""
from __future__ import annotations

import argparse
import os
import signal
import sys
from dataclasses import dataclass
from pathlib import Path

from base import catalogue
from base.errors import ConfigError
from base.files import check_folder_writable
from base.lock import ExperimentLock
from harness import inside_options
from harness.declared import row_command
from harness.shared_options import EXIT_BAD_INPUT, PROG

# What a shell reports for a program that SIGPIPE ended (128 + 13).
EXIT_BROKEN_PIPE = 141
SWEEP = "fattree"       # the experiment `run_mptcp.sh K` names


@dataclass(frozen=True)
class Command:
    """A subcommand, made from its catalogue row."""
    row: catalogue.Row

    def parser(self) -> argparse.ArgumentParser:
        return row_command(self.row)[0]()

    def config_from(self, argv: list[str]) -> tuple:
        return row_command(self.row)[1](argv)

    @property
    def delay(self) -> bool:
        return self.row.delay

    @property
    def machine(self) -> bool:
        return self.row.machine

    def run(self, cfg, shard=None, inside=None) -> None:
        """`inside`: experiments/inside.Inside (--hold, --cli, --pcap), or None."""
        target = self.row.load("run")
        if not self.row.machine:
            target(cfg)
            return
        from experiments.overseeds import experiment_for
        from experiments.runner import Runner
        experiment = experiment_for(target, cfg)
        Runner(experiment, say=experiment.say, shard=shard, inside=inside).run()

    def shard_of(self, cfg, args):
        """The `--shard` given (base/shards.Shard), checked against the
        points; None when not given."""
        from base.shards import Shard
        if getattr(args, "shard", None) is None:
            return None
        shard = Shard.parse(args.shard)
        if not self.row.machine:
            raise ConfigError(f"--shard: {self.row.name} computes without a network, in one go; "
                              "it has no shards")
        total = len(cfg.points())
        if shard.index > total:
            raise ConfigError(f"--shard {shard}: {self.row.name} has {total} point"
                              f"{'' if total == 1 else 's'} here, so shard {shard.index} would run none")
        return shard


def commands() -> dict[str | None, Command]:
    """Every subcommand by name; None is the sweep `run_mptcp.sh K` runs."""
    named = {name: Command(row) for name, row in catalogue.rows().items()}
    return {None: named[SWEEP], **named}


COMMANDS = commands()
SUBCOMMANDS = tuple(name for name in COMMANDS if name)


def _options_with_values() -> set[str]:
    """Every option of every subcommand that takes a value."""
    parsers = [command.parser() for name, command in commands().items() if name]
    return {opt for p in parsers for a in p._actions if a.option_strings and a.nargs is None
            and not isinstance(a, argparse._StoreConstAction) for opt in a.option_strings}


def split_subcommand(argv: list[str]) -> tuple[str | None, list[str]]:
    """(subcommand or None for the FatTree sweep, its arguments). The
    subcommand is the first word that is not an option or an option's value,
    wherever it stands: `--cc reno wifi3g` is `wifi3g --cc reno`."""
    takes_value = _options_with_values()
    names = set(commands()) - {None} | {"list"}
    i = 0
    while i < len(argv):
        word = argv[i]
        if word.startswith("-") and len(word) > 1:
            i += 2 if word in takes_value else 1
            continue
        if word in names:
            return word, argv[:i] + argv[i + 1:]
        break
    return None, list(argv)


def usage() -> str:
    """The one line `run_mptcp.sh` alone prints."""
    return (f"usage: {PROG} K [WORKLOAD] [options] (the FatTree sweep, e.g. 4) | {PROG} NAME "
            f"[options|--plan|--help], NAME one of {', '.join(SUBCOMMANDS)} | {PROG} list | "
            f"{PROG} exec NODE -- CMD")


def _notes(cfg, args) -> list[str]:
    notes = list(getattr(args, "notes", []))
    if getattr(cfg, "fabric_note", ""):
        notes.append(f"fabric: {cfg.fabric_note}")
    if getattr(cfg, "cc_note", ""):
        notes.append(f"cc: {cfg.cc_note}")
    if getattr(cfg, "length_note", ""):
        notes.append(cfg.length_note)
    return [n for n in notes if n]


def _take_machine(cfg, argv: list[str], command: Command) -> tuple[ExperimentLock, list[str]]:
    """The checks that need root and this machine, then the machine itself:
    the experiment lock, and a results folder proven writable. Returns the
    lock and the notes to print. Raises ConfigError (exit status 2) with
    nothing started or written."""
    from kernel import coupled_cc, preflight
    preflight.check_root()
    lock = ExperimentLock()     # first: a second run is told who runs, not what that run registered
    took_over = lock.acquire(" ".join([PROG, *argv]))
    try:
        preflight.check_all(cfg.cc, delay=command.delay, fabric=getattr(cfg, "fabric", "l3"))
        check_folder_writable(cfg.results, "--results")
    except ConfigError:
        lock.release()
        raise
    return lock, [note for note in (took_over, coupled_cc.kernel_held_note()) if note]


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    try:
        if not argv:
            print(usage(), file=sys.stderr)
            return EXIT_BAD_INPUT
        name, rest = split_subcommand(argv)
        if name == "list":
            from harness import listing
            return listing.main(rest)
        command = commands()[name]
        cfg, args = command.config_from(rest)
        shard = command.shard_of(cfg, args)
        inside_options.check(name or SWEEP, command.machine, cfg, args)
        if args.validate_only:     # run_mptcp.sh reads whether it needs root from this word
            print("network" if command.machine else "computed")
            return 0
        if args.plan:
            from harness import listing
            print(listing.plan_text(command.row, cfg, args, shard))
            return 0
        lock, machine_notes = None, []
        if command.machine:
            lock, machine_notes = _take_machine(cfg, argv, command)
        else:
            check_folder_writable(cfg.results, "--results")
    except ConfigError as exc:
        print(f"{PROG}: error: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    # Heavy imports only once the input is known to be good.
    from experiments.capacity import CalibrationError
    from experiments.runner import SweepError
    from base.ssh import SshError
    from experiments.inside import HoldEnded, Inside
    inside = Inside(cli=args.cli, hold=args.hold,
                    pcap=inside_options.pcap_hosts(args.pcap, bool(getattr(cfg, "topo", None))))
    _terminate_gracefully_on(signal.SIGTERM, signal.SIGHUP)
    try:
        for note in machine_notes + _notes(cfg, args):
            print(note)
        command.run(cfg, shard, inside)
        if args.no_plots:
            print(f"figures not drawn (--no-plots): ./plot.py {cfg.results} draws them")
            return 0
        return _plot(cfg.results)
    except ConfigError as exc:              # the capacity guard's refusal: nothing was run
        print(f"{PROG}: error: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except HoldEnded:
        print(f"{PROG}: the held network was removed, with every process of it")
        return 0
    except KeyboardInterrupt:
        print(f"{PROG}: interrupted; the network and every process of the experiment were "
              "removed, finished runs are kept", file=sys.stderr)
        return 130
    except (SweepError, CalibrationError, SshError) as exc:
        print(f"{PROG}: error: {exc}", file=sys.stderr)
        return 1
    except BrokenPipeError:
        # `run_mptcp.sh 4 | head` closed our output: the experiment has
        # unwound by now like on Ctrl-C; stop as a pipe reader expects.
        _silence_stdout()
        print(f"{PROG}: output closed (broken pipe); stopped, the network and every process "
              "of the experiment were removed, finished runs are kept", file=sys.stderr)
        return EXIT_BROKEN_PIPE
    finally:
        if lock:
            lock.release()


def _plot(results: Path) -> int:
    """Draw every figure of the results folder, owned by the invoking user."""
    import plot
    from experiments.staging import ensure_dir, give_to_invoking_user
    ensure_dir(results / "plots")
    status = plot.main([str(results)])
    give_to_invoking_user(results / "plots")
    give_to_invoking_user(results / "report.md")
    return status


def _silence_stdout() -> None:
    """Point stdout at /dev/null so that the interpreter's last flush of the
    closed pipe does not raise again at exit (Python's documented recipe)."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    os.close(devnull)


def _terminate_gracefully_on(*signals) -> None:
    def handler(signum, _frame):
        raise KeyboardInterrupt(f"signal {signum}")
    for s in signals:
        signal.signal(s, handler)


if __name__ == "__main__":
    sys.exit(main())
