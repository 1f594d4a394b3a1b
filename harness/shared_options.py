"""What every experiment's parser shares: the parser class whose errors are
one line, and the options about where results go and what to run (results,
--plan, --shard). Standard library only, as options.py."""
from __future__ import annotations

import argparse

from base.errors import ConfigError
from harness.inside_options import add_inside_options

PROG = "run_mptcp.sh"
EXIT_BAD_INPUT = 2


class OneLineParser(argparse.ArgumentParser):
    def error(self, message: str):
        raise ConfigError(message)


def subcommand_parser(name: str, description: str, prog: str | None = None,
                      epilog: str | None = None) -> OneLineParser:
    """The parser of `run_mptcp.sh NAME` (or of `prog`); an epilog keeps its lines."""
    return OneLineParser(prog=prog or f"{PROG} {name}", description=description, epilog=epilog,
                         formatter_class=(argparse.RawDescriptionHelpFormatter if epilog
                                          else argparse.HelpFormatter))


def add_results_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--results", default="results", metavar="DIR", help="results folder (default: results)")
    p.add_argument("--no-plots", action="store_true",
                   help="runs only, no figures (./plot.py RESULTS draws them later)")
    p.add_argument("--plan", action="store_true",
                   help="print the runs, their traffic, the estimated wall time and the capacity "
                        "verdict, then stop: builds nothing, needs no root")
    p.add_argument("--shard", default=None, metavar="I/N",
                   help="run only the I-th of N shares of the points (round robin), e.g. for N "
                        "machines; ./plot.py A B --into C brings the folders together")
    p.add_argument("--validate-only", action="store_true", help=argparse.SUPPRESS)
    add_inside_options(p)
