"""`run_mptcp.sh K [WORKLOAD|all] [options]` (the FatTree sweep),
`run_mptcp.sh wifi3g [options]` (E4), `run_mptcp.sh algorithms|hotspot
[options]` (E5, E6), `run_mptcp.sh dhft [options]` (E7),
`run_mptcp.sh linkfailure [options]` (Fig. 19),
`run_mptcp.sh oversub [options]` (E8), `run_mptcp.sh topologies [options]`
(E9), `run_mptcp.sh manytoone [options]` (BCube many-to-one),
`run_mptcp.sh provisioned [options]` (E10, provisioned paths),
`run_mptcp.sh scheduling [options]` (paper Fig. 13, first fit) and
`run_mptcp.sh model [options]` (paper Fig. 6, computed): parse,
check, run, plot.

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
from typing import Callable

from base.files import check_folder_writable
from base.lock import ExperimentLock
from experiments.config import ConfigError, SweepConfig
# Parsers and configs: the command line's options (standard library only).
from harness.shared_options import EXIT_BAD_INPUT, PROG
from harness.options import (cc_compare_config_from, cc_compare_parser,
                             filesize_config_from_args, filesize_parser,
                             shortflows_config_from_args, shortflows_parser,
                             scheduling_config_from_args, scheduling_parser,
                             transfers_config_from_args, transfers_parser,
                             config_from_args, dhft_config_from_args, dhft_parser,
                             linkfailure_config_from_args, linkfailure_parser,
                             manytoone_config_from_args, manytoone_parser,
                             provisioned_config_from_args, provisioned_parser,
                             model_config_from_args, model_parser, oversub_config_from_args,
                             oversub_parser, parser, topologies_config_from_args,
                             topologies_parser, wifi3g_config_from_args,
                             wifi3g_parser)

# What a shell reports for a program that SIGPIPE ended (128 + 13).
EXIT_BROKEN_PIPE = 141


# -- running: one shape for every experiment -----------------------------------

@dataclass(frozen=True)
class Command:
    """A subcommand: its parser, how it reads its options, what its preflight
    checks, and how it runs once the machine is ours (its runs only: main()
    draws the figures afterwards, unless --no-plots)."""
    parser: Callable[[], argparse.ArgumentParser]
    config_from: Callable[[list[str]], tuple]
    run: Callable[[object], None]
    delay: bool = False                     # its links have delay or loss
    machine: bool = True                    # builds networks: needs root, the lock, the preflight


def _run_fattree(cfg: SweepConfig) -> None:
    from experiments import capacity
    from experiments.fattree import Sweep
    cal = capacity.calibration_for(cfg.fabric, fresh=cfg.recalibrate)
    verdict = capacity.judge(cfg, cal)
    if not verdict.fits and not cfg.force:
        raise ConfigError(f"capacity: {verdict.reason()}")
    print(f"capacity: {verdict.reason()}" + ("; going on (--force), runs flagged over_capacity"
                                              if not verdict.fits else ""))
    Sweep(cfg, capacity=verdict).run()
    capacity.learn(cfg.fabric, capacity.observed_costs(cfg, cal.idle_pct))


def _run_model(cfg) -> None:
    from experiments.model import write_model
    write_model(cfg)


def _run_experiment(module: str, cls: str) -> Callable[[object], None]:
    def run(cfg) -> None:
        import importlib
        from experiments.runner import Runner
        experiment = getattr(importlib.import_module(module), cls)(cfg)
        Runner(experiment, say=experiment.say).run()
    return run


COMMANDS = {
    None: Command(parser, config_from_args, _run_fattree),
    "wifi3g": Command(wifi3g_parser, wifi3g_config_from_args,
                      _run_experiment("experiments.wifi3g", "Wifi3GExperiment"), delay=True),
    "dhft": Command(dhft_parser, dhft_config_from_args,
                    _run_experiment("experiments.dhft", "DhftExperiment")),
    "linkfailure": Command(linkfailure_parser, linkfailure_config_from_args,
                           _run_experiment("experiments.linkfailure", "LinkFailureExperiment")),
    "oversub": Command(oversub_parser, oversub_config_from_args,
                       _run_experiment("experiments.oversub", "OversubExperiment")),
    "topologies": Command(topologies_parser, topologies_config_from_args,
                          _run_experiment("experiments.topologies", "TopologiesExperiment")),
    "algorithms": Command(lambda: cc_compare_parser("algorithms"), cc_compare_config_from("algorithms"),
                          _run_experiment("experiments.algorithms", "CcCompareExperiment")),
    "hotspot": Command(lambda: cc_compare_parser("hotspot"), cc_compare_config_from("hotspot"),
                       _run_experiment("experiments.algorithms", "CcCompareExperiment")),
    "filesize": Command(filesize_parser, filesize_config_from_args,
                        _run_experiment("experiments.filesize", "FilesizeExperiment"), delay=True),
    "shortflows": Command(shortflows_parser, shortflows_config_from_args,
                          _run_experiment("experiments.shortflows", "ShortflowsExperiment")),
    "scheduling": Command(scheduling_parser, scheduling_config_from_args,
                          _run_experiment("experiments.scheduling", "SchedulingExperiment")),
    "transfers": Command(transfers_parser, transfers_config_from_args,
                         _run_experiment("experiments.transfers", "TransfersExperiment")),
    "manytoone": Command(manytoone_parser, manytoone_config_from_args,
                         _run_experiment("experiments.manytoone", "ManyToOneExperiment")),
    "provisioned": Command(provisioned_parser, provisioned_config_from_args,
                           _run_experiment("experiments.provisioned", "ProvisionedExperiment"),
                           delay=True),
    "model": Command(model_parser, model_config_from_args, _run_model, machine=False),
}
SUBCOMMANDS = tuple(name for name in COMMANDS if name)


def _options_with_values() -> set[str]:
    """Every option of every subcommand that takes a value."""
    parsers = [command.parser() for command in COMMANDS.values()]
    return {opt for p in parsers for a in p._actions if a.option_strings and a.nargs is None
            and not isinstance(a, argparse._StoreConstAction) for opt in a.option_strings}


def split_subcommand(argv: list[str]) -> tuple[str | None, list[str]]:
    """(subcommand or None for the FatTree sweep, its arguments). The
    subcommand is the first word that is not an option or an option's value,
    wherever it stands: `--cc reno wifi3g` is `wifi3g --cc reno`."""
    takes_value = _options_with_values()
    i = 0
    while i < len(argv):
        word = argv[i]
        if word.startswith("-") and len(word) > 1:
            i += 2 if word in takes_value else 1
            continue
        if word in SUBCOMMANDS:
            return word, argv[:i] + argv[i + 1:]
        break
    return None, list(argv)


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
        name, rest = split_subcommand(argv)
        command = COMMANDS[name]
        cfg, args = command.config_from(rest)
        if args.validate_only:
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
    _terminate_gracefully_on(signal.SIGTERM, signal.SIGHUP)
    try:
        for note in machine_notes + _notes(cfg, args):
            print(note)
        command.run(cfg)
        if args.no_plots:
            print(f"figures not drawn (--no-plots): ./plot.py {cfg.results} draws them")
            return 0
        return _plot(cfg.results)
    except ConfigError as exc:              # the capacity guard's refusal: nothing was run
        print(f"{PROG}: error: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except KeyboardInterrupt:
        print(f"{PROG}: interrupted; the network and every process of the experiment were "
              "removed, finished runs are kept", file=sys.stderr)
        return 130
    except (SweepError, CalibrationError) as exc:
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
