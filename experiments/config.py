"""The typed description of a sweep and of one run, passed down to every stage.

Nothing below reads globals or the command line: the CLI builds a
`SweepConfig`, the sweep derives one `RunConfig` per subflow count, and each
`RunConfig` is written verbatim into its run.json.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from pathlib import Path

from base import records
from base.errors import ConfigError  # noqa: F401  (re-exported: the CLI's error type)
from base.links import ACCESS, CELL, WIFI, LinkParams, buffer_pkts  # noqa: F401  (re-exported)
from base.platform import btf_has, openvswitch_kernel_datapath
from kernel.coupled_cc import COUPLED

WORKLOADS = ("one_to_one", "one_to_several", "all_to_all")
FABRICS = ("l3", "openflow", "openflow-reactive")
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
# a number of packets, not of seconds. At 10 Mb/s MPTCP-8 on FatTree(4) needs
# about 5 s to reach its steady rate (results/README.md has the measurement).
WARMUP_S_AT_10MBPS = 5.0
WARMUP_MIN_S, WARMUP_MAX_S = 2.0, 20.0


def default_warmup_s(bw_mbps: float) -> float:
    return round(min(WARMUP_MAX_S, max(WARMUP_MIN_S, WARMUP_S_AT_10MBPS * 10.0 / bw_mbps)), 1)


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
# against l3 on the userspace datapath only (README, "Fabrics"), and on the
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


def check_lists_given(sweeps, lists: dict) -> None:
    """Every sweep asked for has at least one value to run."""
    for sweep in sweeps:
        if sweep in lists and not lists[sweep][1]:
            raise ConfigError(f"{lists[sweep][0]}: give at least one value for the {sweep} sweep")


def check_seed(seed: int) -> None:
    if not 0 <= seed <= SEED_MAX:
        raise ConfigError(f"--seed {seed}: must be within 0..{SEED_MAX}")


def check_run_settings(time_s: float, warmup_s: float | None, fabric: str, cc: str,
                       seed: int = 0) -> None:
    """What every experiment of long flows checks the same way."""
    check_seed(seed)
    if not 2 <= time_s <= 3600:
        raise ConfigError(f"--time {time_s}: run length must be within 2..3600 s")
    if warmup_s is not None and not 0 <= warmup_s <= 600:
        raise ConfigError(f"--warmup {warmup_s}: warm-up must be within 0..600 s")
    if fabric not in FABRICS:
        raise ConfigError(f"unknown fabric {fabric!r}: choose one of {', '.join(FABRICS)}")
    check_cc(cc)




@dataclass(frozen=True)
class RunConfig:
    """One run: one topology, one workload, one subflow count."""
    k: int
    workload: str
    subflows: int              # 1 means plain TCP, 2..8 MPTCP
    link: LinkParams
    time_s: float              # seconds of traffic counted, after the warm-up
    seed: int
    fabric: str
    cc: str
    warmup_s: float = 0.0      # seconds of traffic before counting starts
    monitor_interval_s: float = 1.0
    fabric_note: str = ""      # why this fabric, when it was chosen by default
    cc_note: str = ""          # why this congestion control, when the default fell back
    driver: str = "iperf3"     # what sends the flows (DRIVERS)

    @property
    def topology(self) -> str:
        return f"ft{self.k}"

    def run_dir(self, results: Path) -> Path:
        return records.fattree_run(results, self.topology, self.workload, self.subflows)

    def as_record(self) -> dict:
        """The `config` object of run.json (flat, as the README documents it)."""
        return {
            "topology": self.topology,
            "k": self.k,
            "workload": self.workload,
            "subflows": self.subflows,
            "bw_mbps": self.link.bw_mbps,
            "queue_pkts": self.link.queue_pkts,
            "offload": self.link.offload,
            "time_s": self.time_s,
            "warmup_s": self.warmup_s,
            "monitor_interval_s": self.monitor_interval_s,
            "seed": self.seed,
            "fabric": self.fabric,
            **({"fabric_note": self.fabric_note} if self.fabric_note else {}),
            "cc": self.cc,
            **({"cc_note": self.cc_note} if self.cc_note else {}),
            "driver": self.driver,
        }


@dataclass(frozen=True)
class SweepConfig:
    """Everything `run_mptcp.sh` was asked to do."""
    k: int
    workloads: tuple[str, ...] = ("one_to_one",)
    subflows: tuple[int, ...] = tuple(range(1, MAX_SUBFLOWS + 1))
    link: LinkParams = field(default_factory=LinkParams)
    time_s: float | None = None       # None: default_run_s(link rate)
    seed: int = 0
    fabric: str = "l3"
    cc: str = field(default_factory=machine_cc)
    results: Path = Path("results")
    warmup_s: float | None = None     # None: default_warmup_s(link rate)
    force: bool = False               # go on where the capacity guard refuses
    recalibrate: bool = False         # measure the capacity guard's cost again first
    monitor_interval_s: float = 1.0   # sampling period of every monitor
    fabric_note: str = ""             # why this fabric, when chosen by default
    cc_note: str = ""                 # why this congestion control, when the default fell back
    driver: str = "iperf3"            # what sends the flows (DRIVERS)

    @property
    def warmup(self) -> float:
        return default_warmup_s(self.link.bw_mbps) if self.warmup_s is None else self.warmup_s

    @property
    def counted(self) -> float:
        """Seconds of traffic counted per run, after the warm-up."""
        return default_run_s(self.link.bw_mbps) if self.time_s is None else self.time_s

    @property
    def length_note(self) -> str:
        """What the run lengths are and why, where a default chose them."""
        if self.time_s is not None and self.warmup_s is not None:
            return ""
        drain_ms = self.link.queue_pkts * 1514 * 8 / (self.link.bw_mbps * 1e3)
        return (f"run length: {self.counted:g} s counted after {self.warmup:g} s warm-up, "
                f"scaled to the link rate to hold about as many round trips as at 10 Mb/s "
                f"({RUN_S_AT_10MBPS:g} s after {WARMUP_S_AT_10MBPS:g} s, times 10/bw, capped at "
                f"{RUN_MAX_S:g} s and {WARMUP_MAX_S:g} s); a full {self.link.queue_pkts}-packet "
                f"queue drains in {drain_ms:.0f} ms here")

    def validate(self) -> None:
        self.link.validate()    # first: the default run lengths divide by its rate
        if self.k < 4 or self.k % 2:
            raise ConfigError(f"k={self.k}: the FatTree arity must be an even number >= 4")
        if self.k > 16:
            raise ConfigError(f"k={self.k}: at most k=16 ({16**3 // 4} hosts) is supported")
        for w in self.workloads:
            if w not in WORKLOADS:
                raise ConfigError(f"unknown workload {w!r}: choose one of {', '.join(WORKLOADS)} or all")
        if not self.subflows:
            raise ConfigError("--subflows: give at least one subflow count")
        for n in self.subflows:
            if not 1 <= n <= MAX_SUBFLOWS:
                raise ConfigError(f"--subflows {n}: subflow counts must be within 1..{MAX_SUBFLOWS} "
                                  f"(1 is plain TCP; the kernel caps MPTCP at {MAX_SUBFLOWS})")
        check_run_settings(self.counted, self.warmup_s, self.fabric, self.cc, self.seed)
        if self.driver not in DRIVERS:
            raise ConfigError(f"unknown driver {self.driver!r}: choose one of {', '.join(DRIVERS)}")
        if not 0.1 <= self.monitor_interval_s <= 60:
            raise ConfigError(f"--monitor-interval {self.monitor_interval_s}: "
                              "sampling period must be within 0.1..60 s")
        self.link.validate()

    def runs(self) -> list[RunConfig]:
        return [RunConfig(k=self.k, workload=w, subflows=n, link=self.link, time_s=self.counted,
                          seed=self.seed, fabric=self.fabric, cc=self.cc,
                          warmup_s=self.warmup, monitor_interval_s=self.monitor_interval_s,
                          fabric_note=self.fabric_note, cc_note=self.cc_note, driver=self.driver)
                for w in self.workloads for n in self.subflows]

    def replace(self, **changes) -> "SweepConfig":
        return dataclasses.replace(self, **changes)


# -- E4: WiFi + 3G -------------------------------------------------------------

WIFI3G_SCHEMES = ("tcp_wifi", "tcp_3g", "mptcp")
WIFI3G_SWEEPS = ("buffer", "loss", "rtt")


@dataclass(frozen=True)
class Wifi3GPoint:
    """One run of E4: a scheme, a receive buffer and the two paths."""
    sweep: str            # which sweep it belongs to: its x axis
    scheme: str           # tcp_wifi, tcp_3g or mptcp
    buffer_kb: int        # the receiver's receive buffer
    wifi: LinkParams
    cell: LinkParams

    @property
    def x(self) -> float:
        """The point's value on its sweep's axis."""
        return {"buffer": self.buffer_kb, "loss": self.wifi.loss_pct,
                "rtt": 2 * self.wifi.delay_ms}[self.sweep]

    @property
    def label(self) -> str:
        return {"buffer": f"{self.buffer_kb}kb", "loss": f"{self.wifi.loss_pct:g}pct",
                "rtt": f"{2 * self.wifi.delay_ms:g}ms"}[self.sweep]

    def run_dir(self, results: Path) -> Path:
        return records.wifi3g_run(results, self.sweep, self.scheme, self.label)


@dataclass(frozen=True)
class Wifi3GConfig:
    """Everything `run_mptcp.sh wifi3g` was asked to do."""
    sweeps: tuple[str, ...] = WIFI3G_SWEEPS
    # Up to 8 MB: with the 3G path's 2 s of buffer, MPTCP needs megabytes of
    # receive buffer before it gets both paths (results/README.md).
    buffers_kb: tuple[int, ...] = (50, 100, 150, 200, 300, 400, 500, 750, 1000, 2000, 4000, 8000)
    fixed_buffer_kb: int = 500              # the receive buffer of the loss and RTT sweeps
    wifi_loss_pcts: tuple[float, ...] = (0.0, 0.5, 1.0, 2.0, 5.0)
    wifi_rtts_ms: tuple[float, ...] = (10.0, 20.0, 50.0, 100.0, 200.0)
    samples: int = 10                       # one-second goodput samples per point
    warmup_s: float = 10.0
    seed: int = 0
    cc: str = field(default_factory=machine_cc)
    results: Path = Path("results")
    wifi: LinkParams = WIFI
    cell: LinkParams = CELL

    def validate(self) -> None:
        if not self.sweeps:
            raise ConfigError("--sweeps: give at least one of " + ", ".join(WIFI3G_SWEEPS))
        for s in self.sweeps:
            if s not in WIFI3G_SWEEPS:
                raise ConfigError(f"unknown sweep {s!r}: choose from {', '.join(WIFI3G_SWEEPS)}")
        for kb in (*self.buffers_kb, self.fixed_buffer_kb):
            if not 4 <= kb <= 65536:
                raise ConfigError(f"receive buffer {kb} KB: must be within 4..65536 KB")
        if not 1 <= self.samples <= 600:
            raise ConfigError(f"--samples {self.samples}: must be within 1..600")
        if not 0 <= self.warmup_s <= 600:
            raise ConfigError(f"--warmup {self.warmup_s}: warm-up must be within 0..600 s")
        check_cc(self.cc)
        check_seed(self.seed)
        check_lists_given(self.sweeps, {"buffer": ("--buffers", self.buffers_kb),
                                       "loss": ("--losses", self.wifi_loss_pcts),
                                       "rtt": ("--rtts", self.wifi_rtts_ms)})
        for p in self.points():
            p.wifi.validate()
            p.cell.validate()

    def points(self) -> list[Wifi3GPoint]:
        """Every run, grouped so that runs on the same paths are adjacent
        (the network is built once per pair of paths)."""
        pts = []
        if "buffer" in self.sweeps:
            pts += [Wifi3GPoint("buffer", s, kb, self.wifi, self.cell)
                    for kb in self.buffers_kb for s in WIFI3G_SCHEMES]
        if "loss" in self.sweeps:
            pts += [Wifi3GPoint("loss", s, self.fixed_buffer_kb,
                                dataclasses.replace(self.wifi, loss_pct=loss), self.cell)
                    for loss in self.wifi_loss_pcts for s in WIFI3G_SCHEMES]
        if "rtt" in self.sweeps:
            pts += [Wifi3GPoint("rtt", s, self.fixed_buffer_kb,
                                dataclasses.replace(self.wifi, delay_ms=rtt / 2), self.cell)
                    for rtt in self.wifi_rtts_ms for s in WIFI3G_SCHEMES]
        return pts


# -- E7: dual-homed FatTree ----------------------------------------------------

DHFT_SCHEMES = ("tcp_dhft", "mptcp_dhft", "tcp_perfect")
DHFT_SWEEPS = ("locality", "load")
DHFT_TOPOLOGY_OF_SCHEME = {"tcp_dhft": "dhft", "mptcp_dhft": "dhft", "tcp_perfect": "perfect"}
DHFT_MAX_FLOWS = 512


@dataclass(frozen=True)
class DhftPoint:
    """One run of E7: a scheme on a traffic matrix."""
    sweep: str            # "locality" (x: fraction of rack-local flows) or "load" (x: connections per host)
    scheme: str           # tcp_dhft, mptcp_dhft or tcp_perfect
    x: float

    @property
    def topology(self) -> str:
        return DHFT_TOPOLOGY_OF_SCHEME[self.scheme]

    @property
    def workload(self) -> str:
        return "locality" if self.sweep == "locality" else "random"

    @property
    def label(self) -> str:
        return f"{round(100 * self.x)}pct" if self.sweep == "locality" else f"{self.x:g}conn"

    def run_dir(self, results: Path, k: int) -> Path:
        return records.dhft_run(results, k, self.sweep, self.scheme, self.label)


@dataclass(frozen=True)
class DhftConfig:
    """Everything `run_mptcp.sh dhft` was asked to do."""
    k: int = 4
    hosts_per_rack: int | None = None          # None: the paper's round(2k/3)
    sweeps: tuple[str, ...] = DHFT_SWEEPS
    localities: tuple[float, ...] = (0.0, 0.25, 0.5, 0.75, 1.0)
    # Connections per host; below 1 only that share of the hosts sends (the
    # paper's light loads, where the core is not yet the bottleneck).
    loads: tuple[float, ...] = (0.25, 0.5, 1, 2, 4)
    subflows: int = 8                          # MPTCP's subflows, over both interfaces
    link: LinkParams = field(default_factory=LinkParams)
    time_s: float = 20.0
    warmup_s: float | None = None              # None: default_warmup_s(link rate)
    seed: int = 0
    fabric: str = "l3"
    cc: str = field(default_factory=machine_cc)
    results: Path = Path("results")

    @property
    def warmup(self) -> float:
        return default_warmup_s(self.link.bw_mbps) if self.warmup_s is None else self.warmup_s

    @property
    def rack_size(self) -> int:
        if self.hosts_per_rack is None:
            return max(1, round(2 * self.k / 3))
        return self.hosts_per_rack

    @property
    def n_hosts(self) -> int:
        return self.k * (self.k // 2) * self.rack_size

    def racks(self) -> dict[str, str]:
        """host -> rack of DHFT(k) as dctopo names them, computed here without
        Mininet so that bad input is refused before anything is imported."""
        return {f"h{p}_{r}_{i}": f"{p}_{r}" for p in range(self.k) for r in range(self.k // 2)
                for i in range(self.rack_size)}

    def validate(self) -> None:
        from workloads import make_rack_matrix   # stdlib only
        if self.k < 4 or self.k % 4 or self.k > 8:
            raise ConfigError(f"--k {self.k}: DHFT needs k divisible by 4, 4 or 8")
        if not 2 <= self.rack_size <= 16:
            raise ConfigError(f"--hosts-per-rack {self.rack_size}: must be within 2..16")
        for s in self.sweeps:
            if s not in DHFT_SWEEPS:
                raise ConfigError(f"unknown sweep {s!r}: choose from {', '.join(DHFT_SWEEPS)}")
        if not self.sweeps:
            raise ConfigError("--sweeps: give at least one of " + ", ".join(DHFT_SWEEPS))
        check_lists_given(self.sweeps, {"locality": ("--localities", self.localities),
                                       "load": ("--loads", self.loads)})
        racks = self.racks()
        for x in self.localities:
            if not 0 <= x <= 1:
                raise ConfigError(f"--localities {x:g}: a locality is a fraction within 0..1")
            try:
                make_rack_matrix("locality", list(racks), racks, x, self.seed)
            except ValueError as exc:
                raise ConfigError(f"--localities: {exc} (racks of {self.rack_size})") from None
        for c in self.loads:
            if not 1 <= round(c * self.n_hosts) <= DHFT_MAX_FLOWS:
                raise ConfigError(f"--loads {c:g}: connections per host must be within "
                                  f"{1 / self.n_hosts:.2g}..{DHFT_MAX_FLOWS // self.n_hosts} on "
                                  f"DHFT({self.k}) ({self.n_hosts} hosts, at most "
                                  f"{DHFT_MAX_FLOWS} flows)")
        if not 2 <= self.subflows <= MAX_SUBFLOWS:
            raise ConfigError(f"--subflows {self.subflows}: MPTCP on DHFT needs 2..{MAX_SUBFLOWS} "
                              "subflows (at least one per interface)")
        check_run_settings(self.time_s, self.warmup_s, self.fabric, self.cc, self.seed)
        self.link.validate()

    def points(self) -> list[DhftPoint]:
        """Every run; those on the same topology are adjacent (one network
        is built per topology)."""
        xs = {"locality": self.localities, "load": self.loads}
        return [DhftPoint(sweep, scheme, float(x))
                for topology in ("dhft", "perfect")
                for sweep in self.sweeps for x in xs[sweep]
                for scheme in DHFT_SCHEMES if DHFT_TOPOLOGY_OF_SCHEME[scheme] == topology]


# -- E5 and E6: congestion controls on the permutation, without and with a hot spot

# The paper's algorithms (Section 3, Fig. 9-11) as (congestion control,
# subflows): "tcp" is single-path TCP; the others are MPTCP with the chosen
# subflow count, "uncoupled" running plain Reno on every subflow.
CC_SCHEMES = {"tcp": ("reno", 1), "uncoupled": ("reno", None), "ewtcp": ("ewtcp", None),
              "lia": ("lia", None), "olia": ("olia", None)}
CC_EXPERIMENTS = ("algorithms", "hotspot")


@dataclass(frozen=True)
class CcCompareConfig:
    """Everything `run_mptcp.sh algorithms` (E5) or `run_mptcp.sh hotspot`
    (E6) was asked to do: one FatTree one_to_one run per scheme, the same
    traffic matrix for all. For `hotspot`, one core link runs at
    `hot_factor` of its rate during the middle third of the counted time."""
    experiment: str = "algorithms"
    k: int = 4
    schemes: tuple[str, ...] = tuple(CC_SCHEMES)
    subflows: int = 8
    link: LinkParams = field(default_factory=LinkParams)
    time_s: float = 40.0
    warmup_s: float | None = None
    seed: int = 0
    fabric: str = "l3"
    hot_factor: float = 0.1
    results: Path = Path("results")

    @property
    def warmup(self) -> float:
        return default_warmup_s(self.link.bw_mbps) if self.warmup_s is None else self.warmup_s

    @property
    def cc(self) -> str:
        """The congestion control the preflight checks: a coupled one if any
        scheme uses one (they are built and registered together)."""
        coupled = [CC_SCHEMES[s][0] for s in self.schemes if CC_SCHEMES[s][0] in COUPLED_CONGESTION_CONTROLS]
        return coupled[0] if coupled else "reno"

    @property
    def hot_window(self) -> tuple[float, float]:
        """Seconds since traffic started during which the hot link is slow."""
        return self.warmup + self.time_s / 3, self.warmup + 2 * self.time_s / 3

    def validate(self) -> None:
        if self.experiment not in CC_EXPERIMENTS:
            raise ConfigError(f"unknown experiment {self.experiment!r}")
        if self.k not in (4, 6, 8):
            raise ConfigError(f"--k {self.k}: the comparison runs on FatTree(4), (6) or (8)")
        if not self.schemes:
            raise ConfigError("--schemes: give at least one of " + ", ".join(CC_SCHEMES))
        for s in self.schemes:
            if s not in CC_SCHEMES:
                raise ConfigError(f"unknown scheme {s!r}: choose from {', '.join(CC_SCHEMES)}")
        if not 2 <= self.subflows <= MAX_SUBFLOWS:
            raise ConfigError(f"--subflows {self.subflows}: MPTCP schemes need 2..{MAX_SUBFLOWS} "
                              "subflows")
        if not 0.01 <= self.hot_factor < 1:
            raise ConfigError(f"--hot-factor {self.hot_factor}: the hot link's share of its rate "
                              "must be within 0.01..1")
        for s in self.schemes:
            if CC_SCHEMES[s][0] in COUPLED_CONGESTION_CONTROLS:
                check_cc(CC_SCHEMES[s][0], flag="--schemes")
        check_run_settings(self.time_s, self.warmup_s, self.fabric, "reno", self.seed)
        if self.experiment == "hotspot" and self.time_s < 15:
            raise ConfigError(f"--time {self.time_s:g}: the hot spot needs at least 15 s "
                              "(5 s before, during and after)")
        self.link.validate()

    def sweep_config(self, scheme: str) -> "SweepConfig":
        """The one-run FatTree sweep of a scheme."""
        cc, subflows = CC_SCHEMES[scheme]
        return SweepConfig(k=self.k, workloads=("one_to_one",), subflows=(subflows or self.subflows,),
                           link=self.link, time_s=self.time_s, warmup_s=self.warmup, seed=self.seed,
                           fabric=self.fabric, cc=cc, results=self.scheme_dir(scheme))

    def scheme_dir(self, scheme: str) -> Path:
        return records.cc_compare_scheme(self.results, self.experiment, self.k, scheme)
