"""The options every experiment's parser is built from, declared once: the
parser class whose errors are one line, the shared options (link, timing,
seed, cc, fabric, results) and list parsing. Standard library only (with the
configs), as options.py."""
from __future__ import annotations

import argparse
import math

from experiments.config import (CONGESTION_CONTROLS, DRIVERS, FABRICS, WARMUP_S_AT_10MBPS,
                                ConfigError, default_cc)
from experiments.config.common import warmup_text

PROG = "run_mptcp.sh"
EXIT_BAD_INPUT = 2



class OneLineParser(argparse.ArgumentParser):
    def error(self, message: str):
        raise ConfigError(message)


def subcommand_parser(name: str, description: str) -> OneLineParser:
    """The parser of `run_mptcp.sh NAME`."""
    return OneLineParser(prog=f"{PROG} {name}", description=description)


def finite(text: str) -> float:
    """argparse type: a float that is a number (float() also takes nan and inf)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"{text!r} is not a finite number")
    return value


def cc_help() -> str:
    return f"TCP congestion control: {', '.join(CONGESTION_CONTROLS)} (default lia where the kernel can run it, else reno)"


def resolve_cc(given: str | None) -> tuple[str, str]:
    """(cc, note): what --cc said, or the default for this kernel and why."""
    return (given, "") if given is not None else default_cc()


# -- options every experiment shares, declared once -------------------------

def scaled_warmup_help(at_10mbps: float) -> str:
    """--warmup's help where its default scales with the link rate (the
    declared options' text, experiments.config.common.warmup_text)."""
    return f"seconds of traffic before counting starts (default: {warmup_text(at_10mbps)})"


WARMUP_SCALED_HELP = scaled_warmup_help(WARMUP_S_AT_10MBPS)


def add_link_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--bw", type=finite, default=10.0, help="link rate in Mb/s (10)")
    p.add_argument("--queue", type=int, default=100,
                   help="queue length in packets; a host's in 1514-byte frames' worth of bytes (100)")


def add_timing_options(p: argparse.ArgumentParser, time_default: float | None, time_help: str,
                       warmup_default: float | None = None,
                       warmup_help: str = WARMUP_SCALED_HELP) -> None:
    if time_help:
        p.add_argument("--time", type=finite, default=time_default, help=time_help)
    p.add_argument("--warmup", type=finite, default=warmup_default, help=warmup_help)


def add_seed_option(p: argparse.ArgumentParser, default: int, what: str = "traffic matrix and hash seed") -> None:
    p.add_argument("--seed", type=int, default=default, help=f"{what} ({default})")


def add_cc_option(p: argparse.ArgumentParser) -> None:
    p.add_argument("--cc", default=None, help=cc_help())


def add_fabric_option(p: argparse.ArgumentParser, default: str | None) -> None:
    p.add_argument("--fabric", default=default,
                   help=f"{', '.join(FABRICS)} (default " + ("l3; the run says why)" if default is None
                                                              else f"{default})"))


def add_driver_option(p: argparse.ArgumentParser, default: str) -> None:
    p.add_argument("--driver", default=default,
                   help=f"what sends the flows: {', '.join(DRIVERS)} (default %(default)s; socket "
                        "opens every connection and its subflows before data flows)")


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


def number_list(text: str, flag: str, kind=float) -> tuple:
    try:
        values = tuple(kind(x) for x in text.split(",") if x.strip())
    except ValueError:
        raise ConfigError(f"{flag} {text!r}: expected a comma list of numbers") from None
    if not all(math.isfinite(v) for v in values):
        raise ConfigError(f"{flag} {text!r}: expected finite numbers")
    return values
