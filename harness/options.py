"""The command line's options: one parser per experiment and the typed
config each one builds. The FatTree sweep's parser is written here over the
options they all share (shared_options.py); every other experiment's comes
from the options its config declares (harness/declared.py). Standard library
only (with the configs): run_mptcp.sh checks input with the system Python
before anything is installed."""
from __future__ import annotations

import argparse
from pathlib import Path

from base.files import check_folder_path
from experiments.config import (MAX_SUBFLOWS, WORKLOADS, ConfigError, DhftConfig, FilesizeConfig,
                                LinkFailureConfig, LinkParams, ManyToOneConfig, ModelConfig,
                                OversubConfig, ProvisionedConfig, SchedulingConfig, ShortflowsConfig,
                                SweepConfig, TopologiesConfig, TransfersConfig, Wifi3GConfig,
                                default_fabric)
from experiments.config.algorithms import AlgorithmsConfig, HotspotConfig
from experiments.config.flowlevel import FlowLevelConfig
from harness.declared import command
from harness.shared_options import (PROG, OneLineParser, add_cc_option, add_driver_option,
                                    add_fabric_option, add_link_options, add_results_options,
                                    add_seed_option, add_timing_options, finite, number_list,
                                    resolve_cc)
from experiments.config.common import LEVEL_CAP_MAX_S, LEVEL_CAP_MIN_S, LEVEL_CAP_S_AT_10MBPS

LEVELLED_WARMUP_HELP = (
    "seconds of traffic before counting starts (default: until the aggregate goodput levels, "
    f"within {LEVEL_CAP_S_AT_10MBPS:g} s at 10 Mb/s times 10/bw, {LEVEL_CAP_MIN_S:g}..{LEVEL_CAP_MAX_S:g} s)")
# A run drives one iperf3 client and one server per flow; beyond this many
# flows the machine spends itself on processes (all_to_all at k=6: 2862).
MAX_FLOWS_PER_RUN = 1024


def parser() -> argparse.ArgumentParser:
    p = OneLineParser(prog=PROG, description="FatTree sweep: TCP vs MPTCP with 2..8 subflows.",
                      epilog=_experiments_epilog(),
                      formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("k", nargs="?", default=None, help="FatTree arity (even, >= 4); or --k")
    p.add_argument("--k", dest="k_option", default=None, metavar="K",
                   help="FatTree arity, as the positional K (default: 4 with `fattree`)")
    p.add_argument("workload", nargs="?", default="one_to_one",
                   help=f"{', '.join(WORKLOADS)} or all (default one_to_one)")
    p.add_argument("--subflows", default=",".join(map(str, range(1, MAX_SUBFLOWS + 1))),
                   help="comma list or ranges, e.g. 1,4,8 or 1-8; 1 is plain TCP (default 1-8)")
    add_timing_options(p, None, "seconds of traffic counted per run, after the warm-up "
                                "(40 at 10 Mb/s and above; below, 40 x 10/bw up to 120)",
                       warmup_help=LEVELLED_WARMUP_HELP)
    add_link_options(p)
    add_seed_option(p, 0)
    p.add_argument("--seeds", default=None, metavar="LIST",
                   help="run the sweep once per seed, e.g. 0,1,2 (each its matrix and hash, a network "
                        "each); the figure's bar is their mean, each seed marked")
    add_cc_option(p)
    add_fabric_option(p, None)
    add_driver_option(p, "iperf3")
    p.add_argument("--offload", action="store_true",
                   help="leave TSO/GSO on at the hosts (switch queue limits then count superpackets)")
    p.add_argument("--monitor-interval", type=finite, default=1.0,
                   help="seconds between monitor samples: CPU, switch ports, subflow RTT (1)")
    p.add_argument("--notsent-lowat", type=int, default=None, metavar="BYTES",
                   help="set net.ipv4.tcp_notsent_lowat in every host: a subflow then holds at most "
                        "this much unsent data, and the MPTCP scheduler gives the rest to subflows "
                        "that can send (default: the kernel's, no limit; results/README.md, \"FatTree(8)\")")
    p.add_argument("--schedule-interval", type=finite, default=None,
                   help="with --fabric openflow-reactive: the controller also runs Hedera's first "
                        "fit this often, in seconds (paper Fig. 13: 5, 1, 0.5, 0.1)")
    p.add_argument("--force", action="store_true",
                   help="run even where the capacity guard says this machine cannot keep up "
                        "(the runs are flagged over_capacity)")
    p.add_argument("--recalibrate", action="store_true",
                   help="measure this machine's forwarding cost for the capacity guard again")
    add_results_options(p)
    return p


def parse_subflows(text: str) -> tuple[int, ...]:
    counts: list[int] = []
    for part in text.split(","):
        lo, _, hi = part.strip().partition("-")
        try:
            lo_n, hi_n = int(lo), int(hi or lo)
        except ValueError:
            raise ConfigError(f"--subflows {text!r}: expected numbers like 1,4,8 or 1-8") from None
        # Checked before the range is expanded: 1-999999999999 is not a list to build.
        for n in (lo_n, hi_n):
            if not 1 <= n <= MAX_SUBFLOWS:
                raise ConfigError(f"--subflows {n}: subflow counts must be within 1..{MAX_SUBFLOWS} "
                                  f"(1 is plain TCP; the kernel caps MPTCP at {MAX_SUBFLOWS})")
        if hi_n < lo_n:
            raise ConfigError(f"--subflows {part.strip()}: a range goes from low to high")
        counts += range(lo_n, hi_n + 1)
    return tuple(dict.fromkeys(counts))


def _experiments_epilog() -> str:
    """The other experiments, for `run_mptcp.sh --help`, from the catalogue."""
    from base import catalogue
    names = [f"  {PROG} {r.command:34} {r.reproduces}: {r.purpose}" for r in catalogue.rows().values()]
    return ("experiments (`%(prog)s list` adds runs and time; NAME --help its options):\n"
            + "\n".join(names)).replace("%", "%%").replace("%%(prog)s", "%(prog)s")


def config_from_args(argv: list[str]) -> tuple[SweepConfig, argparse.Namespace]:
    args = parser().parse_args(argv)
    if args.k is not None and args.k_option is not None and args.k != args.k_option:
        raise ConfigError(f"K {args.k} and --k {args.k_option}: give the arity once")
    args.k = args.k if args.k is not None else args.k_option if args.k_option is not None else "4"
    try:
        k = int(args.k)
    except ValueError:
        raise ConfigError(f"k={args.k!r}: the FatTree arity must be an even number >= 4") from None
    workloads = WORKLOADS if args.workload == "all" else (args.workload,)
    fabric, fabric_note = args.fabric, ""
    if fabric is None:
        fabric, why = default_fabric()
        fabric_note = f"default fabric {fabric}: {why}"
    cc, cc_note = resolve_cc(args.cc)
    check_folder_path(args.results, "--results")
    seeds = number_list(args.seeds, "--seeds", int) if args.seeds is not None else ()
    if seeds and args.seed != 0:
        raise ConfigError("--seed and --seeds: give one (--seeds 0,1,2 runs each)")
    if args.seeds is not None and not seeds:
        raise ConfigError("--seeds: give two or more seeds, e.g. 0,1,2")
    cfg = SweepConfig(seeds=seeds, fabric_note=fabric_note, cc_note=cc_note, k=k, workloads=workloads, subflows=parse_subflows(args.subflows),
                      link=LinkParams(bw_mbps=args.bw, queue_pkts=args.queue, offload=args.offload),
                      time_s=args.time, seed=seeds[0] if seeds else args.seed, fabric=fabric, cc=cc,
                      results=Path(args.results), warmup_s=args.warmup, force=args.force,
                      recalibrate=args.recalibrate, driver=args.driver,
                      monitor_interval_s=args.monitor_interval,
                      schedule_interval_s=args.schedule_interval, notsent_lowat=args.notsent_lowat)
    cfg.validate()
    check_size(cfg)
    return cfg, args


fattree_parser, fattree_config_from_args = parser, config_from_args


def check_size(cfg: SweepConfig) -> None:
    from dctopo.workloads import flow_count  # stdlib only
    hosts = cfg.k ** 3 // 4
    for w in cfg.workloads:
        n = flow_count(w, hosts)
        if n > MAX_FLOWS_PER_RUN:
            raise ConfigError(f"{w} on FatTree({cfg.k}) has {n} flows; a run is capped at "
                              f"{MAX_FLOWS_PER_RUN} (use a smaller k)")


# -- every other experiment: its options declared on its config, its --help's
# description the config's docstring; the catalogue names them NAME_parser and
# NAME_config_from_args.

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
