"""The typed configs every experiment is run from, one module each over what
they share (common.py). Standard library only: the CLI checks its input
with them before anything is installed. Nothing here reads globals or the
command line: the CLI builds a config, the experiment derives its runs from
it, and each run's config is written verbatim into its run.json.

The names below are those the rest of the tree imports from the package; a
module's other names are imported from the module."""
from base.errors import ConfigError
from base.links import CELL, WIFI, LinkParams, buffer_pkts
from experiments.config.common import (CONGESTION_CONTROLS, COUPLED_CC_KFUNC, DRIVERS, FABRICS,
                                       FABRIC_DEFAULT_WHY, MAX_SUBFLOWS, WARMUP_S_AT_10MBPS, WORKLOADS,
                                       coupled_cc_supported, default_cc, default_fabric)
from experiments.config.fattree import RunConfig, SweepConfig
from experiments.config.wifi3g import (WIFI3G_MPTCP_SCHEMES, WIFI3G_SCHEME_CC, WIFI3G_SCHEMES,
                                       Wifi3GConfig, Wifi3GPoint)
from experiments.config.algorithms import CC_SCHEMES, CcCompareConfig
from experiments.config.dhft import DhftConfig, DhftPoint
from experiments.config.linkfailure import LinkFailureConfig, LinkFailurePoint
from experiments.config.model import ModelConfig
from experiments.config.oversub import OversubConfig, OversubPoint
from experiments.config.topologies import TopologiesConfig, TopologyPoint
from experiments.config.filesize import FilesizeConfig
from experiments.config.shortflows import ShortflowsConfig
from experiments.config.scheduling import SchedulingConfig
from experiments.config.transfers import TransfersConfig
from experiments.config.provisioned import ProvisionedConfig, ProvisionedPoint
from experiments.config.manytoone import ManyToOneConfig
