"""The FatTree sweep's command line, which is also `run_mptcp.sh K`: its
--help is the main one, with the other experiments listed from the
catalogue. Every other experiment's parser is made from its config class by
harness/declared.py. Standard library only (with the configs):
run_mptcp.sh checks input with the system Python before anything is
installed."""
from __future__ import annotations

from experiments.config import SweepConfig
from experiments.config.fattree import parse_subflows  # noqa: F401  (the benchmarks take it from here)
from harness.declared import command
from harness.shared_options import PROG


def _experiments_epilog() -> str:
    """The other experiments, for `run_mptcp.sh --help`, from the catalogue."""
    from base import catalogue
    names = [f"  {PROG} {r.command:34} {r.reproduces}: {r.purpose}" for r in catalogue.rows().values()]
    return ("experiments (`run_mptcp.sh list` adds runs and time; NAME --help its options):\n"
            + "\n".join(names)).replace("%", "%%")


fattree_parser, fattree_config_from_args = command("fattree", SweepConfig, prog=PROG, epilog=_experiments_epilog)
config_from_args, parser = fattree_config_from_args, fattree_parser
