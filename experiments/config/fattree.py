"""The FatTree sweep's config (`SweepConfig`) and one run's (`RunConfig`,
written verbatim into its run.json)."""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from pathlib import Path

from base import records
from base.errors import ConfigError
from base.links import LinkParams
from experiments.config.common import (WORKLOADS, MAX_SUBFLOWS,
                                       RUN_S_AT_10MBPS, RUN_MAX_S, default_run_s,
                                       machine_cc, check_run_settings, check_subflow_counts, check_driver,
                                       check_seed_list, level_cap_s,
                                       LEVEL_CAP_S_AT_10MBPS, LEVEL_CAP_MIN_S, LEVEL_CAP_MAX_S)

# The controller's first fit: the paper's Fig. 13 runs it every 5 s down to
# 100 ms. Half that is the shortest allowed: nothing shorter was tried here,
# and a round must have the switches' flow statistics back before the next.
MIN_SCHEDULE_S, MAX_SCHEDULE_S = 0.05, 60.0
MAX_NOTSENT_LOWAT = 2 ** 31 - 1


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
    warmup_s: float = 0.0      # seconds of traffic before counting starts (levelled: at most)
    warmup_levelled: bool = False   # counting starts when the goodput levels, by warmup_s
    monitor_interval_s: float = 1.0
    fabric_note: str = ""      # why this fabric, when it was chosen by default
    cc_note: str = ""          # why this congestion control, when the default fell back
    driver: str = "iperf3"     # what sends the flows (DRIVERS)
    schedule_interval_s: float | None = None   # the controller's first fit, that often
    seeds: tuple[int, ...] = ()  # the sweep's --seeds, when it has several: a folder per seed
    notsent_lowat: int | None = None   # bytes: the hosts' net.ipv4.tcp_notsent_lowat (None: the kernel's)

    @property
    def topology(self) -> str:
        return f"ft{self.k}"

    def run_dir(self, results: Path) -> Path:
        return records.fattree_run(results, self.topology, self.workload, self.subflows,
                                   self.seed if self.seeds else None)

    def workload_dir(self, results: Path) -> Path:
        """Where this run's traffic matrix is kept (one per seed)."""
        return self.run_dir(results).parent

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
            **({"warmup_cap_s": self.warmup_s} if self.warmup_levelled else {}),
            "monitor_interval_s": self.monitor_interval_s,
            "seed": self.seed,
            "fabric": self.fabric,
            **({"fabric_note": self.fabric_note} if self.fabric_note else {}),
            "cc": self.cc,
            **({"cc_note": self.cc_note} if self.cc_note else {}),
            "driver": self.driver,
            **({"schedule_interval_s": self.schedule_interval_s}
               if self.schedule_interval_s is not None else {}),
            **({"seeds": list(self.seeds)} if self.seeds else {}),
            **({"notsent_lowat": self.notsent_lowat} if self.notsent_lowat is not None else {}),
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
    warmup_s: float | None = None     # None: levelled, within level_cap_s(link rate)
    force: bool = False               # go on where the capacity guard refuses
    recalibrate: bool = False         # measure the capacity guard's cost again first
    monitor_interval_s: float = 1.0   # sampling period of every monitor
    fabric_note: str = ""             # why this fabric, when chosen by default
    cc_note: str = ""                 # why this congestion control, when the default fell back
    driver: str = "iperf3"            # what sends the flows (DRIVERS)
    schedule_interval_s: float | None = None   # Hedera's first fit that often (openflow-reactive)
    seeds: tuple[int, ...] = ()       # --seeds: each a matrix and hash of its own; () is (seed,)
    notsent_lowat: int | None = None  # --notsent-lowat: bytes a subflow may hold unsent (None: the kernel's)

    @property
    def seed_list(self) -> tuple[int, ...]:
        return self.seeds or (self.seed,)

    @property
    def levelled(self) -> bool:
        """Without --warmup, counting starts when the goodput levels."""
        return self.warmup_s is None

    @property
    def warmup(self) -> float:
        """The fixed warm-up, or the levelled one's cap."""
        return level_cap_s(self.link.bw_mbps) if self.warmup_s is None else self.warmup_s

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
        warmup = (f"a warm-up that ends when the goodput levels, within {self.warmup:g} s "
                  f"({LEVEL_CAP_S_AT_10MBPS:g} s at 10 Mb/s, times 10/bw, within "
                  f"{LEVEL_CAP_MIN_S:g}..{LEVEL_CAP_MAX_S:g} s)" if self.levelled
                  else f"{self.warmup:g} s warm-up")
        return (f"run length: {self.counted:g} s counted after {warmup}; the counted time is "
                f"scaled to the link rate to hold about as many round trips as at 10 Mb/s "
                f"({RUN_S_AT_10MBPS:g} s, times 10/bw, capped at {RUN_MAX_S:g} s); a full "
                f"{self.link.queue_pkts}-packet queue drains in {drain_ms:.0f} ms here")

    def validate(self) -> None:
        self.link.validate()    # first: the default run lengths divide by its rate
        if self.k < 4 or self.k % 2:
            raise ConfigError(f"k={self.k}: the FatTree arity must be an even number >= 4")
        if self.k > 16:
            raise ConfigError(f"k={self.k}: at most k=16 ({16**3 // 4} hosts) is supported")
        for w in self.workloads:
            if w not in WORKLOADS:
                raise ConfigError(f"unknown workload {w!r}: choose one of {', '.join(WORKLOADS)} or all")
        check_subflow_counts(self.subflows)
        for seed in self.seed_list:
            check_run_settings(self.counted, self.warmup_s, self.fabric, self.cc, seed)
        check_seed_list(self.seeds, self.seed)
        if self.notsent_lowat is not None and not 1 <= self.notsent_lowat <= MAX_NOTSENT_LOWAT:
            raise ConfigError(f"--notsent-lowat {self.notsent_lowat}: must be within 1..{MAX_NOTSENT_LOWAT} bytes")
        check_driver(self.driver)
        if not 0.1 <= self.monitor_interval_s <= 60:
            raise ConfigError(f"--monitor-interval {self.monitor_interval_s}: "
                              "sampling period must be within 0.1..60 s")
        if self.schedule_interval_s is not None:
            if not MIN_SCHEDULE_S <= self.schedule_interval_s <= MAX_SCHEDULE_S:
                raise ConfigError(f"--schedule-interval {self.schedule_interval_s}: first fit runs "
                                  f"every {MIN_SCHEDULE_S:g}..{MAX_SCHEDULE_S:g} s")
            if self.fabric != "openflow-reactive":
                raise ConfigError(f"--schedule-interval with --fabric {self.fabric}: first fit "
                                  "re-points the controller's per-flow entries, which only "
                                  "--fabric openflow-reactive installs")
        self.link.validate()

    def runs(self) -> list[RunConfig]:
        """Seed by seed (a network each), then workloads and subflow counts."""
        return [RunConfig(k=self.k, workload=w, subflows=n, link=self.link, time_s=self.counted,
                          seed=s, fabric=self.fabric, cc=self.cc,
                          warmup_s=self.warmup, warmup_levelled=self.levelled,
                          monitor_interval_s=self.monitor_interval_s,
                          fabric_note=self.fabric_note, cc_note=self.cc_note, driver=self.driver,
                          schedule_interval_s=self.schedule_interval_s, seeds=self.seeds,
                          notsent_lowat=self.notsent_lowat)
                for s in self.seed_list for w in self.workloads for n in self.subflows]

    def points(self) -> list[RunConfig]:
        return self.runs()

    def replace(self, **changes) -> "SweepConfig":
        return dataclasses.replace(self, **changes)
