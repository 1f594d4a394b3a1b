"""The command line's options: one parser per experiment, over the options
they all share (shared_options.py), and the typed config each one builds.
Standard library only (with the configs): run_mptcp.sh checks input with the
system Python before anything is installed."""
from __future__ import annotations

import argparse
from pathlib import Path

from base.files import check_folder_path
from experiments.config import (FILESIZE_SCHEMES, MAX_SUBFLOWS, PROVISIONED_SCHEMES,
                                TRANSFERS_SWEEPS, WIFI3G_SCHEMES, WIFI3G_SWEEPS, WORKLOADS,
                                ConfigError, DhftConfig, FilesizeConfig, LinkFailureConfig,
                                LinkParams, ManyToOneConfig, ModelConfig, OversubConfig,
                                ProvisionedConfig, SchedulingConfig, ShortflowsConfig, SweepConfig,
                                TopologiesConfig, TransfersConfig, Wifi3GConfig, default_fabric)
from experiments.config.algorithms import AlgorithmsConfig, HotspotConfig
from experiments.config.flowlevel import FlowLevelConfig
from experiments.config.shortflows import FILE_BYTES
from harness.declared import command
from harness.shared_options import (PROG, OneLineParser, add_cc_option, add_delayed_link_options,
                                    add_driver_option, add_fabric_option, add_link_options,
                                    add_name_list, add_number_list, add_results_options,
                                    add_seed_option, add_timing_options, delayed_link, finite,
                                    name_list, number_list, resolve_cc, scaled_warmup_help,
                                    subcommand_parser)

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
                       warmup_help=scaled_warmup_help(SweepConfig.warmup_at_10mbps))
    add_link_options(p)
    add_seed_option(p, 0)
    add_cc_option(p)
    add_fabric_option(p, None)
    add_driver_option(p, "iperf3")
    p.add_argument("--offload", action="store_true",
                   help="leave TSO/GSO on at the hosts (switch queue limits then count superpackets)")
    p.add_argument("--monitor-interval", type=finite, default=1.0,
                   help="seconds between monitor samples: CPU, switch ports, subflow RTT (1)")
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
    cfg = SweepConfig(fabric_note=fabric_note, cc_note=cc_note, k=k, workloads=workloads, subflows=parse_subflows(args.subflows),
                      link=LinkParams(bw_mbps=args.bw, queue_pkts=args.queue, offload=args.offload),
                      time_s=args.time, seed=args.seed, fabric=fabric, cc=cc,
                      results=Path(args.results), warmup_s=args.warmup, force=args.force,
                      recalibrate=args.recalibrate, driver=args.driver,
                      monitor_interval_s=args.monitor_interval,
                      schedule_interval_s=args.schedule_interval)
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


def wifi3g_parser() -> argparse.ArgumentParser:
    d = Wifi3GConfig()
    p = subcommand_parser("wifi3g", "E4: WiFi + 3G, goodput against receive buffer, WiFi loss and RTT.")
    add_name_list(p, "--sweeps", d.sweeps, WIFI3G_SWEEPS)
    p.add_argument("--schemes", default=None, help=f"comma list of {', '.join(WIFI3G_SCHEMES)} (default all "
                   "but mptcp_penalized and mptcp_hold without a coupled --cc the kernel can run)")
    p.add_argument("--buffers", default=",".join(map(str, d.buffers_kb)),
                   help="receive buffers of the buffer sweep, KB (default %(default)s)")
    p.add_argument("--buffer", type=int, default=d.fixed_buffer_kb,
                   help="receive buffer of the loss and RTT sweeps, KB (%(default)s)")
    add_number_list(p, "--losses", d.wifi_loss_pcts, "WiFi loss rates of the loss sweep, %%")
    add_number_list(p, "--rtts", d.wifi_rtts_ms, "WiFi RTTs of the RTT sweep, ms")
    p.add_argument("--samples", type=int, default=d.samples,
                   help="one-second goodput samples per point; the point is their median (%(default)s)")
    p.add_argument("--repeats", type=int, default=d.repeats,
                   help="runs per point; the figure shows the median of their medians (%(default)s)")
    add_timing_options(p, None, "", d.warmup_s, "seconds of traffic before sampling starts (%(default)s)")
    add_seed_option(p, d.seed, "loss and jitter seed")
    add_cc_option(p)
    add_results_options(p)
    return p


def wifi3g_config_from_args(argv: list[str]) -> tuple[Wifi3GConfig, argparse.Namespace]:
    args = wifi3g_parser().parse_args(argv)
    cc, cc_note = resolve_cc(args.cc)
    check_folder_path(args.results, "--results")
    schemes, schemes_note = (Wifi3GConfig.default_schemes(cc) if args.schemes is None
                             else (name_list(args.schemes), ""))
    cfg = Wifi3GConfig(
        sweeps=name_list(args.sweeps), schemes=schemes,
        buffers_kb=number_list(args.buffers, "--buffers", int), fixed_buffer_kb=args.buffer,
        wifi_loss_pcts=number_list(args.losses, "--losses"), wifi_rtts_ms=number_list(args.rtts, "--rtts"),
        samples=args.samples, repeats=args.repeats, warmup_s=args.warmup, seed=args.seed, cc=cc,
        results=Path(args.results))
    cfg.validate()
    args.notes = [cc_note, schemes_note]
    return cfg, args


flowlevel_parser, flowlevel_config_from_args = command(
    "flowlevel", FlowLevelConfig, "Paper Fig. 2-3 computed by a flow-level model: FatTree(k) up "
    "to k=32 (8192 hosts), TCP against MPTCP with 1..8 subflows on random paths (no network).")
model_parser, model_config_from_args = command(
    "model", ModelConfig, "Paper Fig. 6: the subflow model's load variance, computed (no network).")
dhft_parser, dhft_config_from_args = command(
    "dhft", DhftConfig, "E7: dual-homed FatTree, throughput against locality and load.")
oversub_parser, oversub_config_from_args = command(
    "oversub", OversubConfig, "E8: 4:1 oversubscribed FatTree, MPTCP's gain over TCP against load "
    "and locality (paper Fig. 7-8).")
linkfailure_parser, linkfailure_config_from_args = command(
    "linkfailure", LinkFailureConfig, "Fig. 19: a DHFT core link at a tenth of its rate mid-run, "
    "TCP against MPTCP.")
topologies_parser, topologies_config_from_args = command(
    "topologies", TopologiesConfig, "E9: FatTree, VL2 and BCube under a permutation, TCP against "
    "MPTCP (paper Fig. 4-5).")


def filesize_parser() -> argparse.ArgumentParser:
    d = FilesizeConfig()
    p = subcommand_parser("filesize", "Paper Fig. 17: time to open a connection and move one file, "
                                      "TCP against MPTCP over two paths, against file size.")
    p.add_argument("--sizes", default=",".join(map(str, d.sizes_pkts)),
                   help="file sizes in packets of 1448 bytes (default %(default)s)")
    add_name_list(p, "--schemes", d.schemes, FILESIZE_SCHEMES)
    p.add_argument("--repeats", type=int, default=d.repeats,
                   help="transfers per size and scheme, one at a time; the point is their median "
                        "(%(default)s)")
    add_delayed_link_options(p, d.link, "each path")
    add_seed_option(p, d.seed, "seed")
    add_cc_option(p)
    add_results_options(p)
    return p


def _own_config_command(make_parser, build):
    """`argv -> (config, args)` for an experiment with a config of its own:
    `build(args, cc)` makes it from the parsed options and the resolved cc."""
    def config_from(argv: list[str]):
        args = make_parser().parse_args(argv)
        cc, cc_note = resolve_cc(args.cc)
        check_folder_path(args.results, "--results")
        cfg = build(args, cc)
        cfg.validate()
        args.notes = [cc_note]
        return cfg, args
    return config_from


filesize_config_from_args = _own_config_command(filesize_parser, lambda a, cc: FilesizeConfig(
    sizes_pkts=number_list(a.sizes, "--sizes", int), schemes=name_list(a.schemes), repeats=a.repeats,
    seed=a.seed, cc=cc, results=Path(a.results),
    link=delayed_link(a)))


def provisioned_parser() -> argparse.ArgumentParser:
    d = ProvisionedConfig()
    p = subcommand_parser("provisioned", "E10 (van der Pol et al., TNC 2013): MPTCP over four provisioned paths, two of "
                                         "them link-disjoint, over two long links.")
    add_name_list(p, "--schemes", d.schemes, PROVISIONED_SCHEMES)
    add_delayed_link_options(p, d.long, "each long link", " of the long and local links")
    p.add_argument("--local-bw", type=finite, default=None,
                   help="rate of the link between a site's two switches in Mb/s (that of the long links)")
    p.add_argument("--time", type=finite, default=d.time_s, help="seconds per run (%(default)s)")
    p.add_argument("--settle", type=finite, default=d.settle_s,
                   help="seconds before the paths' shares are counted (%(default)s)")
    p.add_argument("--order", default="1,2,3,4",
                   help="the order MPTCP opens its subflows on the paths, the first one the "
                        "initial subflow's (%(default)s; another order goes to a folder of its own)")
    p.add_argument("--paths", default="computed",
                   help="the four paths by switch from h1's side, as a1-b1,a2-b2,a1-a2-b2,a2-a1-b1; "
                        "'computed' (the default): the controller's choice, link-disjoint paths "
                        "first (another set goes to a folder of its own)")
    add_seed_option(p, d.seed, "seed")
    add_cc_option(p)
    add_fabric_option(p, d.fabric)
    add_results_options(p)
    return p


provisioned_config_from_args = _own_config_command(provisioned_parser, lambda a, cc: ProvisionedConfig(
    schemes=name_list(a.schemes), long=delayed_link(a),
    local_bw_mbps=a.local_bw, time_s=a.time, settle_s=a.settle, seed=a.seed, fabric=a.fabric, cc=cc,
    order=tuple(i - 1 for i in number_list(a.order, "--order", int)), paths=switch_paths(a.paths),
    results=Path(a.results)))


def switch_paths(text: str) -> tuple[tuple[str, ...], ...] | None:
    """--paths: "computed" -> None; "a1-b1,a2-b2" -> (("a1", "b1"), ("a2", "b2")).
    The config checks them against the testbed's links."""
    if text.strip() == "computed":
        return None
    return tuple(tuple(hop.strip() for hop in path.split("-")) for path in text.split(",") if path.strip())


shortflows_parser, shortflows_config_from_args = command(
    "shortflows", ShortflowsConfig, f"Paper Fig. 12: {FILE_BYTES // 1000} KB files by TCP beside "
    "long flows of each scheme on the 4:1 oversubscribed FatTree.")
scheduling_parser, scheduling_config_from_args = command(
    "scheduling", SchedulingConfig, "Paper Fig. 13: Hedera's first fit at several intervals against "
    "TCP over ECMP and MPTCP, closed-loop flows of VL2-like sizes on FatTree(k), "
    "openflow-reactive fabric.")


manytoone_parser, manytoone_config_from_args = command(
    "manytoone", ManyToOneConfig, "BCube many-to-one (paper §4.3.1): every host reads from its "
    "neighbours, TCP against EWTCP and LIA.")


def transfers_parser() -> argparse.ArgumentParser:
    d = TransfersConfig()
    p = subcommand_parser("transfers", "Distributed file transfers (CS536 '13): time until every "
                                       "receiver has its data, TCP against MPTCP, on N switches and "
                                       "FatTree(4).")
    add_name_list(p, "--sweeps", d.sweeps, TRANSFERS_SWEEPS)
    add_number_list(p, "--switches", d.switches, "nswitch: switches between the two hosts; "
                                                 "subflows run 1..N on each")
    add_number_list(p, "--senders", d.senders, "fattree: senders, from pods 0 and 2")
    add_number_list(p, "--receivers", d.receivers, "fattree: receivers, from pods 1 and 3")
    add_number_list(p, "--subflows", d.subflows, "fattree: subflow counts, 1 = TCP")
    p.add_argument("--file-mb", type=finite, default=d.file_mb,
                   help="each sender's file in MB, split among the receivers (%(default)s)")
    add_link_options(p)
    add_seed_option(p, d.seed, "seed of the senders and receivers drawn")
    add_cc_option(p)
    add_results_options(p)
    return p


transfers_config_from_args = _own_config_command(transfers_parser, lambda a, cc: TransfersConfig(
    sweeps=name_list(a.sweeps), switches=number_list(a.switches, "--switches", int),
    senders=number_list(a.senders, "--senders", int), receivers=number_list(a.receivers, "--receivers", int),
    subflows=number_list(a.subflows, "--subflows", int), file_mb=a.file_mb,
    link=LinkParams(bw_mbps=a.bw, queue_pkts=a.queue), seed=a.seed, cc=cc, results=Path(a.results)))


algorithms_parser, algorithms_config_from_args = command(
    "algorithms", AlgorithmsConfig, "E5: congestion controls compared on FatTree one_to_one.")
hotspot_parser, hotspot_config_from_args = command(
    "hotspot", HotspotConfig, "E6: a core link at a tenth of its rate mid-run, per congestion "
    "control; the link is slow during the counted time's middle third.")
