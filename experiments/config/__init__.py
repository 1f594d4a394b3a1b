"""The typed configs every experiment is run from, one module each over what
they share (common.py). Standard library only: the CLI checks its input
with them before anything is installed. Nothing here reads globals or the
command line: the CLI builds a config, the experiment derives its runs from
it, and each run's config is written verbatim into its run.json."""
from base.errors import ConfigError
from base.links import ACCESS, CELL, WIFI, LinkParams, buffer_pkts
from experiments.config.common import (WORKLOADS, FABRICS, DRIVERS, COUPLED_CONGESTION_CONTROLS,
                                       CONGESTION_CONTROLS, DEFAULT_CC, MAX_SUBFLOWS,
                                       WARMUP_S_AT_10MBPS, default_warmup_s, RUN_S_AT_10MBPS,
                                       RUN_MAX_S, default_run_s, COUPLED_CC_KFUNC, SEED_MAX,
                                       coupled_cc_supported, default_cc, machine_cc, check_cc,
                                       FABRIC_DEFAULT_WHY, default_fabric, check_lists_given,
                                       check_seed, check_run_settings, WARMUP_MIN_S, WARMUP_MAX_S)
from experiments.config.fattree import (RunConfig, SweepConfig)
from experiments.config.wifi3g import (WIFI3G_SCHEMES, WIFI3G_SWEEPS, WIFI3G_MPTCP_SCHEMES,
                                       WIFI3G_SCHEME_CC, Wifi3GPoint, Wifi3GConfig)
from experiments.config.dhft import (DHFT_SCHEMES, DHFT_SWEEPS, DHFT_TOPOLOGY_OF_SCHEME,
                                     DHFT_MAX_FLOWS, DhftPoint, DhftConfig)
from experiments.config.linkfailure import (LINKFAILURE_SCHEMES, LinkFailureConfig,
                                            LinkFailurePoint)
from experiments.config.algorithms import (CC_SCHEMES, CC_EXPERIMENTS, CcCompareConfig)
from experiments.config.model import ModelConfig
from experiments.config.oversub import (OVERSUB_SWEEPS, OVERSUB_MATRICES, OVERSUB_SCHEMES,
                                        OversubPoint, OversubConfig)
from experiments.config.topologies import TOPOLOGY_NAMES, TopologyPoint, TopologiesConfig
from experiments.config.filesize import FILESIZE_SCHEMES, FilesizeConfig, FilesizePoint
from experiments.config.shortflows import SHORTFLOWS_SCHEMES, ShortflowsConfig, ShortflowsPoint
from experiments.config.scheduling import (SCHEDULING_SCHEMES, SchedulingConfig,
                                           SchedulingPoint)
from experiments.config.transfers import TRANSFERS_SWEEPS, TransfersConfig, TransfersPoint
from experiments.config.provisioned import (PROVISIONED_SCHEMES, ProvisionedConfig,
                                            ProvisionedPoint)
from experiments.config.manytoone import (MANYTOONE_DEFAULT, MANYTOONE_SCHEMES, ManyToOneConfig,
                                          ManyToOnePoint)

__all__ = [
    "SCHEDULING_SCHEMES", "SchedulingConfig", "SchedulingPoint",
    "WARMUP_MIN_S", "WARMUP_MAX_S", "ConfigError", "ACCESS", "CELL", "WIFI", "LinkParams",
    "buffer_pkts", "WORKLOADS", "FABRICS", "DRIVERS", "COUPLED_CONGESTION_CONTROLS",
    "CONGESTION_CONTROLS", "DEFAULT_CC", "MAX_SUBFLOWS", "WARMUP_S_AT_10MBPS",
    "default_warmup_s", "RUN_S_AT_10MBPS", "RUN_MAX_S", "default_run_s", "COUPLED_CC_KFUNC",
    "SEED_MAX", "coupled_cc_supported", "default_cc", "machine_cc", "check_cc",
    "FABRIC_DEFAULT_WHY", "default_fabric", "check_lists_given", "check_seed",
    "check_run_settings", "RunConfig", "SweepConfig", "WIFI3G_SCHEMES", "WIFI3G_SWEEPS",
    "Wifi3GPoint", "Wifi3GConfig", "DHFT_SCHEMES", "DHFT_SWEEPS", "DHFT_TOPOLOGY_OF_SCHEME",
    "DHFT_MAX_FLOWS", "DhftPoint", "DhftConfig", "CC_SCHEMES", "CC_EXPERIMENTS",
    "CcCompareConfig", "ModelConfig", "OVERSUB_SWEEPS", "OVERSUB_MATRICES", "OVERSUB_SCHEMES",
    "OversubPoint", "OversubConfig", "TOPOLOGY_NAMES", "TopologyPoint", "TopologiesConfig",
    "FILESIZE_SCHEMES", "FilesizeConfig", "FilesizePoint",
    "SHORTFLOWS_SCHEMES", "ShortflowsConfig", "ShortflowsPoint",
    "TRANSFERS_SWEEPS", "TransfersConfig", "TransfersPoint",
    "MANYTOONE_DEFAULT", "MANYTOONE_SCHEMES", "ManyToOneConfig", "ManyToOnePoint",
    "LINKFAILURE_SCHEMES", "LinkFailureConfig", "LinkFailurePoint",
    "WIFI3G_MPTCP_SCHEMES", "WIFI3G_SCHEME_CC",
    "PROVISIONED_SCHEMES", "ProvisionedConfig", "ProvisionedPoint",
]
