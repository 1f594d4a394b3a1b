"""The command line's options: one parser per experiment, over the options
they all share (declared once here), and the typed config each one builds.
Standard library only (with the configs): run_mptcp.sh checks input with the
system Python before anything is installed."""
from __future__ import annotations

import argparse
from pathlib import Path

import math

from base.files import check_folder_path
from experiments.config import (CC_SCHEMES, COUPLED_CONGESTION_CONTROLS, CONGESTION_CONTROLS,
                                DHFT_SWEEPS, DRIVERS, FABRICS, MAX_SUBFLOWS, WIFI3G_SWEEPS,
                                WORKLOADS, CcCompareConfig, ConfigError, DhftConfig, LinkParams, ModelConfig,
                                OVERSUB_MATRICES, OVERSUB_SWEEPS, OversubConfig,
                                TOPOLOGY_NAMES, TopologiesConfig,
                                SweepConfig, Wifi3GConfig, coupled_cc_supported, default_cc,
                                default_fabric)

PROG = "run_mptcp.sh"
EXIT_BAD_INPUT = 2
# A run drives one iperf3 client and one server per flow; beyond this many
# flows the machine spends itself on processes (all_to_all at k=6: 2862).
MAX_FLOWS_PER_RUN = 1024


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


def _cc_help() -> str:
    return f"TCP congestion control: {', '.join(CONGESTION_CONTROLS)} (default lia where the kernel can run it, else reno)"


def _resolve_cc(given: str | None) -> tuple[str, str]:
    """(cc, note): what --cc said, or the default for this kernel and why."""
    return (given, "") if given is not None else default_cc()


# -- options every experiment shares, declared once -------------------------

WARMUP_SCALED_HELP = "seconds of traffic before counting starts (5 at 10 Mb/s, scaled with 10/bw)"


def add_link_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--bw", type=finite, default=10.0, help="link rate in Mb/s (10)")
    p.add_argument("--queue", type=int, default=100, help="queue length in packets (100)")


def add_timing_options(p: argparse.ArgumentParser, time_default: float | None, time_help: str,
                       warmup_default: float | None = None,
                       warmup_help: str = WARMUP_SCALED_HELP) -> None:
    if time_help:
        p.add_argument("--time", type=finite, default=time_default, help=time_help)
    p.add_argument("--warmup", type=finite, default=warmup_default, help=warmup_help)


def add_seed_option(p: argparse.ArgumentParser, default: int, what: str = "traffic matrix and hash seed") -> None:
    p.add_argument("--seed", type=int, default=default, help=f"{what} ({default})")


def add_cc_option(p: argparse.ArgumentParser) -> None:
    p.add_argument("--cc", default=None, help=_cc_help())


def add_fabric_option(p: argparse.ArgumentParser, default: str | None) -> None:
    p.add_argument("--fabric", default=default,
                   help=f"{', '.join(FABRICS)} (default " + ("l3; the run says why)" if default is None
                                                              else f"{default})"))


def add_name_list(p: argparse.ArgumentParser, flag: str, names, choices, what: str = "") -> None:
    """A comma list of names from `choices`; by default the names given."""
    p.add_argument(flag, default=",".join(names),
                   help=f"{what}comma list of {', '.join(choices)} (default all)")


def add_number_list(p: argparse.ArgumentParser, flag: str, values, what: str) -> None:
    """A comma list of numbers: a sweep's points."""
    p.add_argument(flag, default=",".join(f"{x:g}" for x in values), help=f"{what} (default %(default)s)")


def add_results_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--results", default="results", help="results folder (results)")
    p.add_argument("--validate-only", action="store_true", help=argparse.SUPPRESS)


def add_rack_sweep_options(p: argparse.ArgumentParser, d, sweeps: tuple[str, ...],
                           subflows_where: str = "") -> None:
    """The arity, the locality and load sweeps of E7 and E8, then the long-flow options."""
    p.add_argument("--k", type=int, default=d.k, help="switch arity, 4 or 8 (%(default)s)")
    add_name_list(p, "--sweeps", d.sweeps, sweeps)
    add_number_list(p, "--localities", d.localities, "fractions of rack-local flows of the locality sweep")
    add_number_list(p, "--loads", d.loads, "connections per host of the load sweep")
    p.add_argument("--subflows", type=int, default=d.subflows,
                   help=f"MPTCP subflows per connection{subflows_where} (%(default)s)")
    add_long_flow_options(p, d)


def add_long_flow_options(p: argparse.ArgumentParser, d) -> None:
    """The options of LongFlowSettings (E7, E8, E9), with config `d`'s defaults."""
    add_timing_options(p, d.time_s, "seconds of traffic counted per run, after the warm-up (%(default)s)")
    p.add_argument("--bw", type=finite, default=d.link.bw_mbps, help="host link rate in Mb/s (%(default)s)")
    p.add_argument("--queue", type=int, default=d.link.queue_pkts,
                   help="queue length in packets (%(default)s)")
    add_seed_option(p, d.seed)
    add_cc_option(p)
    add_fabric_option(p, d.fabric)
    add_results_options(p)


def parser() -> argparse.ArgumentParser:
    p = OneLineParser(prog=PROG, description="FatTree sweep: TCP vs MPTCP with 2..8 subflows.")
    p.add_argument("k", help="FatTree arity (even, >= 4)")
    p.add_argument("workload", nargs="?", default="one_to_one",
                   help=f"{', '.join(WORKLOADS)} or all (default one_to_one)")
    p.add_argument("--subflows", default=",".join(map(str, range(1, MAX_SUBFLOWS + 1))),
                   help="comma list or ranges, e.g. 1,4,8 or 1-8; 1 is plain TCP (default 1-8)")
    add_timing_options(p, None, "seconds of traffic counted per run, after the warm-up "
                                "(40 at 10 Mb/s and above; below, 40 x 10/bw up to 120)")
    add_link_options(p)
    add_seed_option(p, 0)
    add_cc_option(p)
    add_fabric_option(p, None)
    p.add_argument("--driver", default="iperf3",
                   help=f"what sends the flows: {', '.join(DRIVERS)} (default %(default)s; socket "
                        "opens every connection and its subflows before data flows)")
    p.add_argument("--offload", action="store_true",
                   help="leave TSO/GSO on at the hosts (queue limits then count superpackets)")
    p.add_argument("--monitor-interval", type=finite, default=1.0,
                   help="seconds between monitor samples: CPU, switch ports, subflow RTT (1)")
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


def config_from_args(argv: list[str]) -> tuple[SweepConfig, argparse.Namespace]:
    args = parser().parse_args(argv)
    try:
        k = int(args.k)
    except ValueError:
        raise ConfigError(f"k={args.k!r}: the FatTree arity must be an even number >= 4") from None
    workloads = WORKLOADS if args.workload == "all" else (args.workload,)
    fabric, fabric_note = args.fabric, ""
    if fabric is None:
        fabric, why = default_fabric()
        fabric_note = f"default fabric {fabric}: {why}"
    cc, cc_note = _resolve_cc(args.cc)
    check_folder_path(args.results, "--results")
    cfg = SweepConfig(fabric_note=fabric_note, cc_note=cc_note, k=k, workloads=workloads, subflows=parse_subflows(args.subflows),
                      link=LinkParams(bw_mbps=args.bw, queue_pkts=args.queue, offload=args.offload),
                      time_s=args.time, seed=args.seed, fabric=fabric, cc=cc,
                      results=Path(args.results), warmup_s=args.warmup, force=args.force,
                      recalibrate=args.recalibrate, driver=args.driver,
                      monitor_interval_s=args.monitor_interval)
    cfg.validate()
    check_size(cfg)
    return cfg, args


def check_size(cfg: SweepConfig) -> None:
    from workloads import flow_count  # stdlib only
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
    p.add_argument("--buffers", default=",".join(map(str, d.buffers_kb)),
                   help="receive buffers of the buffer sweep, KB (default %(default)s)")
    p.add_argument("--buffer", type=int, default=d.fixed_buffer_kb,
                   help="receive buffer of the loss and RTT sweeps, KB (%(default)s)")
    add_number_list(p, "--losses", d.wifi_loss_pcts, "WiFi loss rates of the loss sweep, %%")
    add_number_list(p, "--rtts", d.wifi_rtts_ms, "WiFi RTTs of the RTT sweep, ms")
    p.add_argument("--samples", type=int, default=d.samples,
                   help="one-second goodput samples per point; the point is their median (%(default)s)")
    add_timing_options(p, None, "", d.warmup_s, "seconds of traffic before sampling starts (%(default)s)")
    add_seed_option(p, d.seed, "loss and jitter seed")
    add_cc_option(p)
    add_results_options(p)
    return p


def _numbers(text: str, flag: str, kind=float) -> tuple:
    try:
        values = tuple(kind(x) for x in text.split(",") if x.strip())
    except ValueError:
        raise ConfigError(f"{flag} {text!r}: expected a comma list of numbers") from None
    if not all(math.isfinite(v) for v in values):
        raise ConfigError(f"{flag} {text!r}: expected finite numbers")
    return values


def _names(text: str) -> tuple[str, ...]:
    return tuple(s.strip() for s in text.split(",") if s.strip())


def _shared_config(cls, args: argparse.Namespace, **specific):
    """A config from the options every long-flow experiment shares (link,
    timing, seed, cc, fabric, results) and its own (`specific`), checked."""
    cc, cc_note = _resolve_cc(args.cc)
    check_folder_path(args.results, "--results")
    cfg = cls(link=LinkParams(bw_mbps=args.bw, queue_pkts=args.queue), time_s=args.time,
              warmup_s=args.warmup, seed=args.seed, fabric=args.fabric, cc=cc,
              results=Path(args.results), **specific)
    cfg.validate()
    args.notes = [cc_note]
    return cfg, args


def _long_flow_command(make_parser, cls, own_fields):
    """`argv -> (config, args)` for a long-flow experiment: its parser, its
    config class, and `own_fields(args)`, the fields only it has."""
    def config_from(argv: list[str]):
        args = make_parser().parse_args(argv)
        return _shared_config(cls, args, **own_fields(args))
    return config_from


def wifi3g_config_from_args(argv: list[str]) -> tuple[Wifi3GConfig, argparse.Namespace]:
    args = wifi3g_parser().parse_args(argv)
    cc, cc_note = _resolve_cc(args.cc)
    check_folder_path(args.results, "--results")
    cfg = Wifi3GConfig(
        sweeps=_names(args.sweeps),
        buffers_kb=_numbers(args.buffers, "--buffers", int), fixed_buffer_kb=args.buffer,
        wifi_loss_pcts=_numbers(args.losses, "--losses"), wifi_rtts_ms=_numbers(args.rtts, "--rtts"),
        samples=args.samples, warmup_s=args.warmup, seed=args.seed, cc=cc,
        results=Path(args.results))
    cfg.validate()
    args.notes = [cc_note]
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
    cfg = ModelConfig(ks=_numbers(args.k, "--k", int), max_subflows=args.subflows_max,
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
    add_rack_sweep_options(p, d, OVERSUB_SWEEPS)
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
dhft_config_from_args = _long_flow_command(dhft_parser, DhftConfig, lambda a: dict(
    k=a.k, hosts_per_rack=a.hosts_per_rack, sweeps=_names(a.sweeps),
    localities=_numbers(a.localities, "--localities"), loads=_numbers(a.loads, "--loads"),
    subflows=a.subflows))
oversub_config_from_args = _long_flow_command(oversub_parser, OversubConfig, lambda a: dict(
    k=a.k, ratio=a.ratio, sweeps=_names(a.sweeps), matrices=_names(a.matrices),
    loads=_numbers(a.loads, "--loads"), localities=_numbers(a.localities, "--localities"),
    subflows=a.subflows))
topologies_config_from_args = _long_flow_command(topologies_parser, TopologiesConfig, lambda a: dict(
    topologies=_names(a.topologies), subflows=_numbers(a.subflows, "--subflows", int)))


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
                       + ("; the link is slow during its middle third" if hot else ""))
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
        schemes, note = _default_schemes() if args.schemes is None else (_names(args.schemes), "")
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


def _default_schemes() -> tuple[tuple[str, ...], str]:
    """Every scheme, less the coupled ones where the kernel cannot run them."""
    if coupled_cc_supported():
        return tuple(CC_SCHEMES), ""
    kept = tuple(s for s in CC_SCHEMES if CC_SCHEMES[s][0] not in COUPLED_CONGESTION_CONTROLS)
    return kept, (f"default schemes {','.join(kept)}: " + default_cc()[1].split(": ", 1)[1])
