"""What every experiment's config shares: the names a user can choose
from, the defaults and why, and the checks of common settings."""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from base.errors import ConfigError
from base.links import LinkParams
from base.options import check_declared, links, one_of_list, option
from base.platform import btf_has, openvswitch_kernel_datapath
from kernel.coupled_cc import COUPLED

WORKLOADS = ("one_to_one", "one_to_several", "all_to_all")
FABRICS = ("l3", "openflow", "openflow-reactive")
# The modelled fabric (emulator/fabrics/model.py) runs the FatTree sweep only so far.
SWEEP_FABRICS = (*FABRICS, "model")
# With --fabric model: who shapes a host's egress.
HOST_NICS = ("htb", "model")
# Traffic drivers (emulator/traffic/drivers.py has the classes): iperf3 pairs, or our
# own sender and receiver that open every connection before data flows.
DRIVERS = ("iperf3", "socket")
# Coupled algorithms (BPF struct_ops from kernel/bpf, registered for the run
# by kernel/coupled_cc.py), then uncoupled ones the kernel ships.
COUPLED_CONGESTION_CONTROLS = COUPLED
CONGESTION_CONTROLS = (*COUPLED_CONGESTION_CONTROLS, "reno", "cubic", "bbr")
# The paper's MPTCP is LIA (RFC 6356); with one subflow, or on plain TCP, it
# is Reno. `--cc reno` gives the kernel's uncoupled subflows.
DEFAULT_CC = "lia"
MAX_SUBFLOWS = 8  # the kernel caps MPTCP endpoints and limits at 8
# Warm-up before goodput is counted, at 10 Mb/s; scaled with the link rate
# because what has to settle (slow start, subflow joins, queues filling) takes
# a number of packets, not of seconds.
# algorithms and hotspot (the FatTree sweep's runs with a fixed warm-up):
# MPTCP-8 on FatTree(4) at 10 Mb/s rises for about 15 s before it holds its
# rate, with either driver (docs/notebook.md, "The ramp").
SWEEP_WARMUP_S_AT_10MBPS = 15.0
# Every other experiment of long flows keeps 5 s, the length its own
# measurements were made with; how long their networks take to settle has
# not been measured again.
WARMUP_S_AT_10MBPS = 5.0
WARMUP_MIN_S, WARMUP_MAX_S = 2.0, 20.0


# The FatTree sweep without --warmup counts from when its aggregate goodput
# levels (experiments/longflows.py, levelled_at), at the latest after this
# cap: 20 s at 10 Mb/s (MPTCP-8 on FatTree(4) rises for about 15 s), times
# 10/bw, within 20..300 s. A run lasts the cap and --time.
LEVEL_CAP_S_AT_10MBPS, LEVEL_CAP_MIN_S, LEVEL_CAP_MAX_S = 20.0, 20.0, 300.0


def level_cap_s(bw_mbps: float) -> float:
    return round(min(LEVEL_CAP_MAX_S, max(LEVEL_CAP_MIN_S, LEVEL_CAP_S_AT_10MBPS * 10.0 / bw_mbps)), 1)


def default_warmup_s(bw_mbps: float, at_10mbps: float = WARMUP_S_AT_10MBPS) -> float:
    return round(min(WARMUP_MAX_S, max(WARMUP_MIN_S, at_10mbps * 10.0 / bw_mbps)), 1)


class WarmupFromRate:
    """A config's `warmup`: its `warmup_s`, or when that is None the
    default for its `link`'s rate (`warmup_at_10mbps` times 10/bw)."""
    warmup_at_10mbps = WARMUP_S_AT_10MBPS

    @property
    def warmup(self) -> float:
        if self.warmup_s is not None:
            return self.warmup_s
        return default_warmup_s(self.link.bw_mbps, self.warmup_at_10mbps)


# The FatTree sweep's counted window, in round trips rather than seconds.
# Queues are set in packets, so a round trip through full queues lasts 10/bw
# times as long as at 10 Mb/s (a 100-packet queue drains in 0.12 s at
# 10 Mb/s, 1.2 s at 1 Mb/s): below 10 Mb/s the window grows by 10/bw to hold
# as many round trips as 40 s do at 10 Mb/s, up to RUN_MAX_S (3 times, so a
# 9-run sweep at 1 Mb/s stays within about 25 minutes). Above 10 Mb/s it stays
# 40 s: more round trips, and per-second samples enough for a p10.
RUN_S_AT_10MBPS = 40.0
RUN_MAX_S = 120.0


def default_run_s(bw_mbps: float) -> float:
    return round(min(RUN_MAX_S, max(RUN_S_AT_10MBPS, RUN_S_AT_10MBPS * 10.0 / bw_mbps)), 1)


# The coupled algorithms find a subflow's MPTCP connection with this kfunc
# (kernel/bpf/mptcp_cc.bpf.c). It arrived in Linux 6.2: Debian 12's 6.1 lacks it.
COUPLED_CC_KFUNC = "bpf_rdonly_cast"
SEED_MAX = 2 ** 32 - 1   # the per-router ECMP hash seeds are u32
MAX_SEEDS = 20           # --seeds: each seed is the whole experiment again


def coupled_cc_supported() -> bool:
    return btf_has(COUPLED_CC_KFUNC)


def default_cc() -> tuple[str, str]:
    """(congestion control, note): LIA, the paper's MPTCP, where the kernel
    can run it; the kernel's uncoupled Reno, said in the note, where not."""
    if coupled_cc_supported():
        return DEFAULT_CC, ""
    return "reno", (f"default congestion control reno (uncoupled): this kernel lacks the "
                    f"{COUPLED_CC_KFUNC} kfunc (Linux 6.2 or later) that lia, olia and ewtcp need")


def machine_cc() -> str:
    """The configs' default: lia, or reno where the kernel lacks the kfunc."""
    return default_cc()[0]


def check_cc(cc: str, flag: str = "--cc") -> None:
    if cc not in CONGESTION_CONTROLS:
        raise ConfigError(f"unknown congestion control {cc!r}: choose one of "
                          f"{', '.join(CONGESTION_CONTROLS)}")
    if cc in COUPLED_CONGESTION_CONTROLS and not coupled_cc_supported():
        raise ConfigError(f"{flag} {cc}: this kernel lacks the {COUPLED_CC_KFUNC} kfunc (Linux 6.2 "
                          f"or later) that the coupled algorithms need; use --cc reno (uncoupled)")


# Why a run without --fabric gets l3. A default takes only a path tested for
# fidelity on that kind of machine: the openflow fabric has been measured
# against l3 on the userspace datapath only (docs/fabrics.md), and on the
# kernel datapath tested for function in the Debian guests (guest/README.md).
FABRIC_DEFAULT_WHY = {
    True: ("Open vSwitch's kernel datapath is available here, but the openflow fabric on it has "
           "not been shown to reach l3's fidelity; --fabric openflow to use it"),
    False: ("no openvswitch kernel module here, and Open vSwitch's userspace datapath cannot "
            "carry FatTree(4) at the fidelity target (bench/fabric_compare.py); --fabric "
            "openflow to use it anyway"),
}


def default_fabric() -> tuple[str, str]:
    """(fabric, why) for a run that does not name one."""
    return "l3", FABRIC_DEFAULT_WHY[openvswitch_kernel_datapath()]


def mptcp_subflows(default: int | None, help: str, **declared) -> Any:
    """--subflows where the experiment has no subflow axis: the one subflow
    count of its MPTCP connections (2..8); a list of more is refused."""
    return option(default, flag="--subflows", metavar="N", low=2, high=MAX_SUBFLOWS,
                  parse=one_of_list("--subflows", "MPTCP's subflow count"), help=help, **declared)


def check_subflow_counts(counts) -> None:
    """--subflows as a list of counts, 1 meaning plain TCP."""
    if not counts:
        raise ConfigError("--subflows: give at least one subflow count")
    for n in counts:
        if not 1 <= n <= MAX_SUBFLOWS:
            raise ConfigError(f"--subflows {n}: subflow counts must be within 1..{MAX_SUBFLOWS} "
                              f"(1 is plain TCP; the kernel caps MPTCP at {MAX_SUBFLOWS})")


# A link slowed mid-run (hotspot, linkfailure) is slow during the middle third
# of the counted time: before, slowed and after, each third needs a few
# seconds for the flows to settle and a few to measure.
SLOWED_MIN_TIME_S = 15.0


def middle_third(warmup: float, time_s: float) -> tuple[float, float]:
    """Seconds since the traffic started during which a slowed link is slow."""
    return warmup + time_s / 3, warmup + 2 * time_s / 3


def check_slowed_link(flag: str, share: float, time_s: float, which: str) -> None:
    """The slowed link's share of its rate, and a run long enough for its thirds."""
    if not 0.01 <= share < 1:
        raise ConfigError(f"{flag} {share:g}: the {which} link's share of its rate must be within 0.01..1")
    if time_s < SLOWED_MIN_TIME_S:
        raise ConfigError(f"--time {time_s:g}: the {which} link needs at least {SLOWED_MIN_TIME_S:g} s "
                          "(a third before, during and after)")


def check_lists_given(sweeps, *lists) -> None:
    """Every sweep asked for has at least one value in each of its lists,
    given as (sweep, flag, values)."""
    for sweep, flag, values in lists:
        if sweep in sweeps and not values:
            raise ConfigError(f"{flag}: give at least one value for the {sweep} sweep")


CC_DEFAULT_TEXT = "lia where the kernel can run it, else reno; the run says which"


def warmup_text(at_10mbps: float) -> str:
    """--warmup's default where it scales with the link rate."""
    return f"{at_10mbps:g} at 10 Mb/s, times 10/bw, within {WARMUP_MIN_S:g}..{WARMUP_MAX_S:g}"


@dataclass(frozen=True)
class Settings:
    """What every experiment that builds a network is run with: a seed, the
    congestion control and a results folder. `check_settings` checks every
    option the config declares (ranges, choices, its links) and the cc."""
    seed: int = option(0, flag="--seed", metavar="N", low=0, high=SEED_MAX,
                       help="seed of the run's random choices (traffic, hashes, losses)")
    cc: str = option(factory=machine_cc, flag="--cc", default_text=CC_DEFAULT_TEXT,
                     help=f"TCP congestion control: {', '.join(CONGESTION_CONTROLS)}")
    results: Path = Path("results")

    def check_settings(self) -> None:
        check_declared(self)
        check_cc(self.cc)


@dataclass(frozen=True)
class LongFlowSettings(Settings, WarmupFromRate):
    """What every long-flow experiment on racks is run with besides its own
    sweep: links, run length, fabric and the traffic driver."""
    link: LinkParams = links("bw_mbps", "queue_pkts", factory=LinkParams)
    time_s: float = option(20.0, flag="--time", metavar="S", low=2.0, high=3600.0, unit="s",
                           help="seconds of traffic counted per run, after the warm-up")
    warmup_s: float | None = option(None, flag="--warmup", metavar="S", low=0.0, high=600.0, unit="s",
                                    help="seconds of traffic before counting starts",
                                    default_text=warmup_text(WARMUP_S_AT_10MBPS))
    fabric: str = option("l3", flag="--fabric", choices=FABRICS, what="fabric", help=", ".join(FABRICS))
    driver: str = option("iperf3", flag="--driver", choices=DRIVERS, what="driver",
                         help=f"what sends the flows: {', '.join(DRIVERS)} (socket opens every "
                              "connection and its subflows before data flows)")
    force: bool = option(False, flag="--force", help="run even where the capacity guard says this "
                         "machine cannot keep up (the runs are flagged over_capacity)")

    def settings_record(self) -> dict:
        """These settings as a run's record has them (its config; the runner adds the driver)."""
        return {"bw_mbps": self.link.bw_mbps, "queue_pkts": self.link.queue_pkts, "time_s": self.time_s,
                "warmup_s": self.warmup, "seed": self.seed, "fabric": self.fabric, "cc": self.cc}


def check_seed_list(seeds: tuple[int, ...], seed: int) -> None:
    """--seeds: none (one run of --seed), or two or more different seeds, not with --seed."""
    if not seeds:
        return
    if seed not in (0, seeds[0]):
        raise ConfigError("--seed and --seeds: give one (--seeds 0,1,2 runs each)")
    if len(set(seeds)) != len(seeds) or len(seeds) == 1:
        raise ConfigError(f"--seeds {','.join(map(str, seeds))}: give two or more "
                          "different seeds (--seed runs one)")
    if len(seeds) > MAX_SEEDS:
        raise ConfigError(f"--seeds: at most {MAX_SEEDS} seeds ({len(seeds)} given)")


def parse_seeds(text: str) -> tuple[int, ...]:
    """--seeds' text: a comma list of whole numbers, not empty (the config checks their range)."""
    parts = [p.strip() for p in text.split(",") if p.strip()]
    if not parts:
        raise ConfigError("--seeds: give two or more seeds, e.g. 0,1,2")
    try:
        return tuple(int(p) for p in parts)
    except ValueError:
        raise ConfigError(f"--seeds {text!r}: expected a comma list of whole numbers") from None


@dataclass(frozen=True)
class SeedPoint:
    """One point of one seed's runs, in an experiment run with --seeds."""
    seed: int
    point: Any

    @property
    def field_names(self) -> list[str]:
        return ["seed", *(getattr(self.point, "field_names", None)
                          or [f.name for f in dataclasses.fields(self.point)])]

    def __getattr__(self, name: str):
        # The point's own fields and properties (its subflows, its x), for --plan.
        if name == "point":
            raise AttributeError(name)
        return getattr(self.point, name)


@dataclass(frozen=True)
class SeedsSettings:
    """--seeds for an experiment of racks: the whole experiment once per
    seed (a traffic matrix and ECMP hash each), a network each. A config
    with it names one seed's runs `seed_points()`; `points()` is every seed's."""
    seeds: tuple[int, ...] = option((), flag="--seeds", metavar="LIST", low=0, high=SEED_MAX,
                                    parse=parse_seeds, default_text="none: one run of --seed",
                                    help="comma list of two or more seeds: every point runs once per "
                                         "seed, and the figures draw the mean and each seed")

    def check_seeds(self) -> None:
        check_seed_list(self.seeds, self.seed)

    def for_seed(self, seed: int):
        """This config as one seed's runs have it."""
        return dataclasses.replace(self, seed=seed, seeds=())

    def points(self) -> list:
        if not self.seeds:
            return self.seed_points()
        return [SeedPoint(s, p) for s in self.seeds for p in self.for_seed(s).seed_points()]

    def seed_points(self) -> list:
        raise NotImplementedError
