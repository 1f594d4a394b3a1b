"""The command line's options: one parser per experiment, over the options
they all share (shared_options.py), and the typed config each one builds.
Standard library only (with the configs): run_mptcp.sh checks input with the
system Python before anything is installed."""
from __future__ import annotations

import argparse
from pathlib import Path

from base.files import check_folder_path
from base.flowsizes import EmpiricalSizes
from experiments.config import (CC_SCHEMES, COUPLED_CONGESTION_CONTROLS, DHFT_SWEEPS,
                                MAX_SUBFLOWS, WIFI3G_SCHEMES, WIFI3G_SWEEPS, LINKFAILURE_SCHEMES,
                                WORKLOADS, CcCompareConfig, ConfigError, DhftConfig, LinkParams, ModelConfig,
                                LinkFailureConfig, OVERSUB_MATRICES, OVERSUB_SWEEPS, OversubConfig,
                                TOPOLOGY_NAMES, TopologiesConfig, FILESIZE_SCHEMES, FilesizeConfig,
                                SHORTFLOWS_SCHEMES, ShortflowsConfig, TRANSFERS_SWEEPS, TransfersConfig,
                                SCHEDULING_SCHEMES, SchedulingConfig,
                                MANYTOONE_DEFAULT, MANYTOONE_SCHEMES, ManyToOneConfig,
                                PROVISIONED_SCHEMES, ProvisionedConfig,
                                SweepConfig, Wifi3GConfig, coupled_cc_supported, default_cc,
                                default_fabric)
from experiments.config.oversub import OVERSUB_KS, arity_words
from experiments.config.scheduling import MAX_DILATION
from experiments.config.shortflows import FILE_BYTES
from harness.shared_options import (PROG, OneLineParser, add_cc_option, add_delayed_link_options,
                                    add_driver_option, add_fabric_option, add_link_options, add_long_flow_options,
                                    add_name_list, add_number_list, add_rack_sweep_options,
                                    add_results_options, add_seed_option, add_timing_options,
                                    scaled_warmup_help,
                                    delayed_link,
                                    finite, long_flow_command, name_list, number_list,
                                    resolve_cc, shared_config, subcommand_parser)

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


def model_parser() -> argparse.ArgumentParser:
    d = ModelConfig()
    p = subcommand_parser("model", "Paper Fig. 6: the subflow model's load variance, computed (no network).")
    p.add_argument("--k", default=",".join(map(str, d.ks)),
                   help="comma list of FatTree arities (default %(default)s)")
    p.add_argument("--subflows-max", type=int, default=d.max_subflows,
                   help="subflows m = 1..this (%(default)s)")
    add_results_options(p)
    return p


def model_config_from_args(argv: list[str]) -> tuple[ModelConfig, argparse.Namespace]:
    args = model_parser().parse_args(argv)
    check_folder_path(args.results, "--results")
    cfg = ModelConfig(ks=number_list(args.k, "--k", int), max_subflows=args.subflows_max,
                      results=Path(args.results))
    cfg.validate()
    return cfg, args


def dhft_parser() -> argparse.ArgumentParser:
    d = DhftConfig()
    p = subcommand_parser("dhft", "E7: dual-homed FatTree, throughput against locality and load.")
    p.add_argument("--hosts-per-rack", type=int, default=None,
                   help="hosts on each pair of edge switches (default the paper's 2k/3, rounded)")
    add_rack_sweep_options(p, d, DHFT_SWEEPS, ", split over both interfaces")
    return p


def oversub_parser() -> argparse.ArgumentParser:
    d = OversubConfig()
    p = subcommand_parser("oversub", "E8: 4:1 oversubscribed FatTree, MPTCP's gain over TCP "
                          "against load and locality (paper Fig. 7-8).")
    p.add_argument("--ratio", type=int, default=d.ratio,
                   help="oversubscription: hosts per rack over its k/2 uplinks, as a multiple "
                        "(%(default)s)")
    add_name_list(p, "--matrices", d.matrices, OVERSUB_MATRICES, "the load sweep's matrices, ")
    add_rack_sweep_options(p, d, OVERSUB_SWEEPS, arities=arity_words(OVERSUB_KS))
    return p


def topologies_parser() -> argparse.ArgumentParser:
    d = TopologiesConfig()
    p = subcommand_parser("topologies", "E9: FatTree, VL2 and BCube under a permutation, TCP against "
                          "MPTCP (paper Fig. 4-5).")
    add_name_list(p, "--topologies", d.topologies, TOPOLOGY_NAMES)
    p.add_argument("--subflows", default=",".join(map(str, d.subflows)),
                   help="comma list of subflow counts, 1 = TCP (default %(default)s)")
    add_long_flow_options(p, d)
    return p


# The long-flow experiments' `argv -> (config, args)`, each from its parser.
dhft_config_from_args = long_flow_command(dhft_parser, DhftConfig, lambda a: dict(
    k=a.k, hosts_per_rack=a.hosts_per_rack, sweeps=name_list(a.sweeps),
    localities=number_list(a.localities, "--localities"), loads=number_list(a.loads, "--loads"),
    subflows=a.subflows))
oversub_config_from_args = long_flow_command(oversub_parser, OversubConfig, lambda a: dict(
    k=a.k, ratio=a.ratio, sweeps=name_list(a.sweeps), matrices=name_list(a.matrices),
    loads=number_list(a.loads, "--loads"), localities=number_list(a.localities, "--localities"),
    subflows=a.subflows))
topologies_config_from_args = long_flow_command(topologies_parser, TopologiesConfig, lambda a: dict(
    topologies=name_list(a.topologies), subflows=number_list(a.subflows, "--subflows", int)))


def linkfailure_parser() -> argparse.ArgumentParser:
    d = LinkFailureConfig()
    p = subcommand_parser("linkfailure", "Fig. 19: a DHFT core link at a tenth of its rate mid-run, "
                                         "TCP against MPTCP.")
    p.add_argument("--k", type=int, default=d.k, help="DHFT arity, 4 or 8 (%(default)s)")
    p.add_argument("--hosts-per-rack", type=int, default=None,
                   help="hosts on each pair of edge switches (default the paper's 2k/3, rounded)")
    add_name_list(p, "--schemes", d.schemes, LINKFAILURE_SCHEMES)
    p.add_argument("--subflows", type=int, default=d.subflows,
                   help="MPTCP subflows per connection, split over both interfaces (%(default)s)")
    p.add_argument("--factor", type=finite, default=d.factor,
                   help="the degraded link's share of its rate (%(default)s)")
    add_long_flow_options(p, d)
    return p


linkfailure_config_from_args = long_flow_command(linkfailure_parser, LinkFailureConfig, lambda a: dict(
    k=a.k, hosts_per_rack=a.hosts_per_rack, schemes=name_list(a.schemes), subflows=a.subflows,
    factor=a.factor))


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


def shortflows_parser() -> argparse.ArgumentParser:
    d = ShortflowsConfig()
    p = subcommand_parser("shortflows", f"Paper Fig. 12: {FILE_BYTES // 1000} KB files by TCP beside long flows of each "
                                        "scheme on the 4:1 oversubscribed FatTree.")
    p.add_argument("--k", type=int, default=d.k, help=f"switch arity, {arity_words(OVERSUB_KS)} (%(default)s)")
    p.add_argument("--ratio", type=int, default=d.ratio,
                   help="oversubscription: hosts per rack over its k/2 uplinks (%(default)s)")
    p.add_argument("--schemes", default=None,
                   help=f"the long flows': comma list of {', '.join(SHORTFLOWS_SCHEMES)} "
                        "(default all that this kernel can run)")
    p.add_argument("--subflows", type=int, default=d.subflows,
                   help="subflows of a multipath long flow (%(default)s)")
    p.add_argument("--long-share", type=finite, default=d.long_share,
                   help="share of the hosts that send a long flow (a third)")
    p.add_argument("--file-bytes", type=int, default=None, help=f"short file size ({FILE_BYTES})")
    p.add_argument("--file-cdf", default=None, metavar="FILE",
                   help="draw the short files' sizes from a CDF file instead: lines "
                        "'<size bytes> <cumulative fraction>' (README)")
    p.add_argument("--interval", type=finite, default=None,
                   help="mean seconds between one host's files (the paper's 0.2 at 100 Mb/s, "
                        f"times 100/bw, times the files' mean size over {FILE_BYTES // 1000} KB)")
    add_long_flow_options(p, d, cc=False)
    return p


def shortflows_config_from_args(argv: list[str]) -> tuple[ShortflowsConfig, argparse.Namespace]:
    args = shortflows_parser().parse_args(argv)
    schemes, note = kernel_schemes(args.schemes, SHORTFLOWS_SCHEMES)
    cfg, args = shared_config(ShortflowsConfig, args, k=args.k, ratio=args.ratio, schemes=schemes,
                              subflows=args.subflows, long_share=args.long_share,
                              file_bytes=args.file_bytes, interval_s=args.interval,
                              file_cdf=EmpiricalSizes.from_option(args.file_cdf))
    args.notes = [note]     # the long flows' cc is each scheme's, not the default
    return cfg, args


def scheduling_parser() -> argparse.ArgumentParser:
    d = SchedulingConfig()
    p = subcommand_parser("scheduling", "Paper Fig. 13: Hedera's first fit at several intervals against "
                                        "TCP over ECMP and MPTCP, closed-loop flows of VL2-like sizes "
                                        "on FatTree(k), openflow-reactive fabric.")
    p.add_argument("--k", type=int, default=d.k, help="FatTree arity, 4, 6 or 8 (%(default)s)")
    add_name_list(p, "--schemes", d.schemes, SCHEDULING_SCHEMES)
    p.add_argument("--intervals", default=",".join(f"{t:g}" for t in d.intervals_s),
                   help="first fit's intervals in seconds, comma list (the paper's %(default)s)")
    p.add_argument("--subflows", type=int, default=d.subflows, help="MPTCP's subflows (%(default)s)")
    p.add_argument("--dilation", type=float, default=d.dilation,
                   help="stretch time F times: flows F times longer and first fit F times less "
                        "often, so a flow lives F times more round trips (1..%g; %%(default)g)"
                        % MAX_DILATION)
    add_long_flow_options(p, d, driver=False)   # its flows are the transfer driver's
    return p


scheduling_config_from_args = long_flow_command(scheduling_parser, SchedulingConfig, lambda a: dict(
    k=a.k, schemes=name_list(a.schemes), intervals_s=number_list(a.intervals, "--intervals"),
    subflows=a.subflows, dilation=a.dilation))


def kernel_schemes(given: str | None, choices: tuple[str, ...]) -> tuple[tuple[str, ...], str]:
    """(schemes, note): the schemes asked for, refused in one line if this
    kernel cannot run a coupled one of them; or by default every scheme it
    can run, the note saying which were left out and why."""
    coupled = lambda s: CC_SCHEMES.get(s, ("",))[0] in COUPLED_CONGESTION_CONTROLS  # noqa: E731
    if given is None:
        if coupled_cc_supported():
            return choices, ""
        schemes = tuple(s for s in choices if not coupled(s))
        return schemes, f"default schemes {','.join(schemes)}: " + default_cc()[1].split(": ", 1)[1]
    schemes = name_list(given)
    asked = [s for s in schemes if coupled(s)]
    if asked and not coupled_cc_supported():
        raise ConfigError(f"--schemes {','.join(asked)}: " + default_cc()[1].split(": ", 1)[1])
    return schemes, ""


def manytoone_parser() -> argparse.ArgumentParser:
    d = ManyToOneConfig()
    p = subcommand_parser("manytoone", "BCube many-to-one (paper §4.3.1): every host reads from its "
                                       "neighbours, TCP against EWTCP and LIA.")
    p.add_argument("--schemes", default=None,
                   help=f"comma list of {', '.join(MANYTOONE_SCHEMES)} (default "
                        f"{','.join(MANYTOONE_DEFAULT)}, the paper's, where this kernel can run them)")
    p.add_argument("--n", type=int, default=d.n, help="BCube(n, k): switch ports (%(default)s)")
    p.add_argument("--k", type=int, default=d.k,
                   help="BCube(n, k): levels above the first (%(default)s)")
    p.add_argument("--subflows", type=int, default=None,
                   help="subflows of a multipath scheme (default one per level, k+1)")
    add_long_flow_options(p, d, cc=False)
    return p


def manytoone_config_from_args(argv: list[str]) -> tuple[ManyToOneConfig, argparse.Namespace]:
    args = manytoone_parser().parse_args(argv)
    schemes, note = kernel_schemes(args.schemes, MANYTOONE_DEFAULT)
    cfg, args = shared_config(ManyToOneConfig, args, schemes=schemes, n=args.n, k=args.k,
                              subflows_given=args.subflows)
    args.notes = [note]     # each scheme names its own cc
    return cfg, args


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


def cc_compare_parser(experiment: str) -> argparse.ArgumentParser:
    d = CcCompareConfig(experiment=experiment)
    hot = experiment == "hotspot"
    p = subcommand_parser(experiment,
                          "E6: a core link at a tenth of its rate mid-run, per congestion control."
                          if hot else "E5: congestion controls compared on FatTree one_to_one.")
    p.add_argument("--k", type=int, default=d.k, help="FatTree arity, 4, 6 or 8 (%(default)s)")
    p.add_argument("--schemes", default=None,
                   help=f"comma list of {', '.join(CC_SCHEMES)} (default all that this kernel can run)")
    p.add_argument("--subflows", type=int, default=d.subflows,
                   help="subflows of the MPTCP schemes (%(default)s)")
    add_timing_options(p, 60.0 if hot else d.time_s,
                       "seconds of traffic counted, after the warm-up (%(default)s)"
                       + ("; the link is slow during its middle third" if hot else ""),
                       warmup_help=scaled_warmup_help(d.warmup_at_10mbps))
    add_link_options(p)
    add_seed_option(p, d.seed)
    add_fabric_option(p, d.fabric)
    if hot:
        p.add_argument("--hot-factor", type=finite, default=d.hot_factor,
                       help="the hot link's share of its rate while slowed (%(default)s)")
    add_results_options(p)
    return p


def cc_compare_config_from(experiment: str):
    def config_from(argv: list[str]) -> tuple[CcCompareConfig, argparse.Namespace]:
        args = cc_compare_parser(experiment).parse_args(argv)
        schemes, note = _default_schemes() if args.schemes is None else (name_list(args.schemes), "")
        check_folder_path(args.results, "--results")
        cfg = CcCompareConfig(
            experiment=experiment, k=args.k, schemes=schemes,
            subflows=args.subflows, link=LinkParams(bw_mbps=args.bw, queue_pkts=args.queue),
            time_s=args.time, warmup_s=args.warmup, seed=args.seed, fabric=args.fabric,
            hot_factor=getattr(args, "hot_factor", CcCompareConfig.hot_factor),
            results=Path(args.results))
        cfg.validate()
        args.notes = [note]
        return cfg, args
    return config_from


algorithms_parser, hotspot_parser = (lambda: cc_compare_parser("algorithms"),
                                     lambda: cc_compare_parser("hotspot"))
algorithms_config_from_args = cc_compare_config_from("algorithms")
hotspot_config_from_args = cc_compare_config_from("hotspot")


def _default_schemes() -> tuple[tuple[str, ...], str]:
    """Every scheme, less the coupled ones where the kernel cannot run them."""
    if coupled_cc_supported():
        return tuple(CC_SCHEMES), ""
    kept = tuple(s for s in CC_SCHEMES if CC_SCHEMES[s][0] not in COUPLED_CONGESTION_CONTROLS)
    return kept, (f"default schemes {','.join(kept)}: " + default_cc()[1].split(": ", 1)[1])
