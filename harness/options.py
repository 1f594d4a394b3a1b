"""The command line's options: one parser per experiment and the typed
config each one builds, from the options its config declares
(harness/declared.py). Standard library only (with the configs):
run_mptcp.sh checks input with the system Python before anything is
installed. The catalogue names them NAME_parser and NAME_config_from_args."""
from __future__ import annotations

from experiments.config import (DhftConfig, FilesizeConfig, LinkFailureConfig, ManyToOneConfig, ModelConfig,
                                OversubConfig, ProvisionedConfig, SchedulingConfig, ShortflowsConfig,
                                SweepConfig, TopologiesConfig, TransfersConfig, Wifi3GConfig)
from experiments.config.algorithms import AlgorithmsConfig, HotspotConfig
from experiments.config.fattree import parse_subflows  # noqa: F401  (the benchmarks take it from here)
from experiments.config.flowlevel import FlowLevelConfig
from harness.declared import command
from harness.shared_options import PROG


def _experiments_epilog() -> str:
    """The other experiments, for `run_mptcp.sh --help`, from the catalogue."""
    from base import catalogue
    names = [f"  {PROG} {r.command:34} {r.reproduces}: {r.purpose}" for r in catalogue.rows().values()]
    return ("experiments (`run_mptcp.sh list` adds runs and time; NAME --help its options):\n"
            + "\n".join(names)).replace("%", "%%")


# The FatTree sweep is also `run_mptcp.sh K`: its --help is the main one.
fattree_parser, fattree_config_from_args = command("fattree", SweepConfig, prog=PROG, epilog=_experiments_epilog)
config_from_args, parser = fattree_config_from_args, fattree_parser
wifi3g_parser, wifi3g_config_from_args = command("wifi3g", Wifi3GConfig)
algorithms_parser, algorithms_config_from_args = command("algorithms", AlgorithmsConfig)
hotspot_parser, hotspot_config_from_args = command("hotspot", HotspotConfig)
dhft_parser, dhft_config_from_args = command("dhft", DhftConfig)
linkfailure_parser, linkfailure_config_from_args = command("linkfailure", LinkFailureConfig)
oversub_parser, oversub_config_from_args = command("oversub", OversubConfig)
topologies_parser, topologies_config_from_args = command("topologies", TopologiesConfig)
manytoone_parser, manytoone_config_from_args = command("manytoone", ManyToOneConfig)
filesize_parser, filesize_config_from_args = command("filesize", FilesizeConfig)
shortflows_parser, shortflows_config_from_args = command("shortflows", ShortflowsConfig)
scheduling_parser, scheduling_config_from_args = command("scheduling", SchedulingConfig)
transfers_parser, transfers_config_from_args = command("transfers", TransfersConfig)
provisioned_parser, provisioned_config_from_args = command("provisioned", ProvisionedConfig)
model_parser, model_config_from_args = command("model", ModelConfig)
flowlevel_parser, flowlevel_config_from_args = command("flowlevel", FlowLevelConfig)
