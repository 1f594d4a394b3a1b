"""The FatTree sweep's config (`SweepConfig`) and one run's (`RunConfig`,
written verbatim into its run.json)."""
from __future__ import annotations

import dataclasses
import os
from dataclasses import dataclass
from pathlib import Path

from base import records
from base.errors import ConfigError, clipped
from base.links import LinkParams
from base.options import again, links, option
from dctopo.fattree_shape import FatTreeShape
from dctopo.placement import parse_servers, place_by_pod, plan_lines
from dctopo.custom_spec import split_spec
from dctopo.matrix_file import read_matrix
from dctopo.workloads import flow_count
from experiments.config.common import (LEVEL_CAP_MAX_S, LEVEL_CAP_MIN_S, LEVEL_CAP_S_AT_10MBPS, MAX_SUBFLOWS,
                                       RUN_MAX_S, RUN_S_AT_10MBPS, WORKLOADS, LongFlowSettings,
                                       SeedsSettings, check_seed_list, check_subflow_counts,
                                       default_fabric, default_run_s, level_cap_s, HOST_NICS,
                                       SWEEP_FABRICS)

# The controller's first fit: the paper's Fig. 13 runs it every 5 s down to
# 100 ms. Half that is the shortest allowed: nothing shorter was tried here,
# and a round must have the switches' flow statistics back before the next.
MIN_SCHEDULE_S, MAX_SCHEDULE_S = 0.05, 60.0
MAX_NOTSENT_LOWAT = 2 ** 31 - 1
# --wmem-max keeps tcp_wmem's minimum and default as the kernel sets them.
WMEM_MIN_DEFAULT = "4096 16384"
MAX_K = 16
# A run drives one iperf3 client and one server per flow; beyond this many
# flows the machine spends itself on processes (all_to_all at k=6: 2862).
MAX_FLOWS_PER_RUN = 1024


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
    wmem_max: int | None = None        # bytes: the hosts' net.ipv4.tcp_wmem maximum (None: the kernel's)
    host_nic: str = "htb"              # --fabric model: who shapes a host's egress
    sim_acks: bool = False             # --fabric model: pure ACKs through no queue (the paper's simulator)
    random_drop: bool = False          # --fabric model: the simulator's random drop near a full queue
    topo: str = ""                     # --topo FILE.py:NAME, a user's topology instead of FatTree(k)
    matrix_file: str = ""              # --matrix FILE: the flows, instead of a workload's draw

    @property
    def topology(self) -> str:
        return custom_name(self.topo) if self.topo else f"ft{self.k}"

    def run_dir(self, results: Path) -> Path:
        return records.fattree_run(results, self.topology, self.workload, self.subflows,
                                   self.seed if self.seeds else None)

    def workload_dir(self, results: Path) -> Path:
        """Where this run's traffic matrix is kept (one per seed)."""
        return self.run_dir(results).parent

    def as_record(self) -> dict:
        """The `config` object of run.json (flat, as docs/results-format.md documents it)."""
        return {
            "topology": self.topology,
            "k": self.k,
            "workload": self.workload,
            "subflows": self.subflows,
            "bw_mbps": self.link.bw_mbps,
            "queue_pkts": self.link.queue_pkts,
            "offload": self.link.offload,
            **({"queue_bytes": True} if self.link.queue_bytes else {}),
            **({"ack_lane": True} if self.link.ack_lane else {}),
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
            **({"wmem_max": self.wmem_max} if self.wmem_max is not None else {}),
            **(self.fabric_options() if self.fabric == "model" else {}),
            **({"topo_file": self.topo} if self.topo else {}),
            **({"matrix_file": self.matrix_file} if self.matrix_file else {}),
        }

    def fabric_options(self) -> dict:
        """Keyword arguments of the fabric's class that this run sets."""
        if self.fabric == "model":
            return {"host_nic": self.host_nic,
                    "acks": "sim" if self.sim_acks else "lane" if self.link.ack_lane else "data",
                    "random_drop": self.random_drop}
        if self.schedule_interval_s is not None:
            return {"schedule_interval_s": self.schedule_interval_s}
        return {}



def host_sysctls(cfg) -> dict[str, str]:
    """The hosts' settings a sweep or run changes from the kernel's
    (--notsent-lowat, --wmem-max), as every host gets them."""
    return {**({"net.ipv4.tcp_notsent_lowat": str(cfg.notsent_lowat)} if cfg.notsent_lowat else {}),
            **({"net.ipv4.tcp_wmem": f"{WMEM_MIN_DEFAULT} {cfg.wmem_max}"} if cfg.wmem_max else {})}


def custom_name(spec: str) -> str:
    """A --topo's results folder: its NAME."""
    return spec.rpartition(":")[2]


def parse_subflows(text: str) -> tuple[int, ...]:
    """--subflows: a comma list of counts or ranges, "1,4-6,8"."""
    counts: list[int] = []
    for part in text.split(","):
        lo, _, hi = part.strip().partition("-")
        try:
            lo_n, hi_n = int(lo), int(hi or lo)
        except ValueError:
            raise ConfigError(f"--subflows {text!r}: expected numbers like 1,4,8 or 1-8") from None
        # Checked before the range is expanded: 1-999999999999 is not a list to build.
        check_subflow_counts((lo_n, hi_n))
        if hi_n < lo_n:
            raise ConfigError(f"--subflows {part.strip()}: a range goes from low to high")
        counts += range(lo_n, hi_n + 1)
    return tuple(dict.fromkeys(counts))


def parse_arity(text: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise ConfigError(f"k={text!r}: the FatTree arity must be an even number >= 4") from None


def parse_workloads(text: str) -> tuple[str, ...]:
    """The workload, or "all" of them."""
    return WORKLOADS if text == "all" else tuple(w.strip() for w in text.split(",") if w.strip())


@dataclass(frozen=True)
class SweepConfig(LongFlowSettings):
    """FatTree sweep: TCP vs MPTCP with 2..8 subflows."""
    POSITIONALS = {"k": "K", "workloads": "WORKLOAD"}   # `run_mptcp.sh 8 all` (class constants)
    k: int = option(4, flag="--k", metavar="K", parse=parse_arity,
                    help="FatTree arity, even (also the first word: run_mptcp.sh 8)")
    workloads: tuple[str, ...] = option(("one_to_one",), flag="--workload", metavar="WORKLOAD",
                                        parse=parse_workloads, choices=WORKLOADS, what="workload",
                                        default_text="one_to_one",
                                        help=f"{', '.join(WORKLOADS)} or all (also the word after K)")
    subflows: tuple[int, ...] = option(tuple(range(1, MAX_SUBFLOWS + 1)), flag="--subflows", metavar="LIST",
                                       parse=parse_subflows, default_text="1-8",
                                       help="subflow counts, comma list or ranges, e.g. 1,4,8 or 1-8; 1 is plain TCP")
    link: LinkParams = links("bw_mbps", "queue_pkts", "offload", "queue_bytes", "ack_lane",
                             factory=LinkParams)
    time_s: float | None = again(LongFlowSettings, "time_s", None, default_text=(
        f"{RUN_S_AT_10MBPS:g} at 10 Mb/s and above; below, {RUN_S_AT_10MBPS:g} x 10/bw up to {RUN_MAX_S:g}"))
    warmup_s: float | None = again(LongFlowSettings, "warmup_s", None, default_text=(
        f"until the aggregate goodput levels, within {LEVEL_CAP_S_AT_10MBPS:g} s at 10 Mb/s times "
        f"10/bw, {LEVEL_CAP_MIN_S:g}..{LEVEL_CAP_MAX_S:g} s"))
    fabric: str = again(LongFlowSettings, "fabric", "l3", default_text="l3; the run says why",
                        choices=SWEEP_FABRICS, help=", ".join(SWEEP_FABRICS) + " (model: the switches "
                        "modelled by one process, the hosts real; docs/fabrics.md)")
    host_nic: str = option("htb", flag="--host-nic", choices=HOST_NICS, what="host NIC",
                           help="with --fabric model, who shapes a host's egress: htb (the kernel, "
                                "as on l3: TCP Small Queues keep a sender's backlog in its socket) or "
                                "model (the engine: a FIFO of the TAP's 1000 frames)")
    sim_acks: bool = option(False, flag="--sim-acks", help="with --fabric model, pure ACKs cross the "
                            "switches through no queue, after the links' delay only, as the paper's "
                            "simulator returns them (--ack-lane gives them a queue of their own)")
    random_drop: bool = option(False, flag="--random-drop", help="with --fabric model, drop 1 in 10 "
                               "arrivals at a switch queue's last 3 packets, as the paper's simulator's "
                               "switch queues do (htsim's RandomQueue)")
    seeds: tuple[int, ...] = again(SeedsSettings, "seeds", (), help=(
        "run the sweep once per seed, e.g. 0,1,2 (each its matrix and hash, a network each); "
        "the figure's bar is their mean, each seed marked"))
    recalibrate: bool = option(False, flag="--recalibrate", help="measure this machine's forwarding "
                               "cost for the capacity guard again")
    monitor_interval_s: float = option(1.0, flag="--monitor-interval", metavar="S", low=0.1, high=60.0,
                                       unit="s", help="seconds between monitor samples: CPU, switch "
                                                      "ports, subflow RTT")
    notsent_lowat: int | None = option(
        None, flag="--notsent-lowat", metavar="BYTES", low=1, high=MAX_NOTSENT_LOWAT, unit="bytes",
        default_text="the kernel's, no limit", help="net.ipv4.tcp_notsent_lowat in every host: an "
        "MPTCP socket then takes no more from the application while this much is unsent (a subflow's "
        "own queue is not bounded by it; docs/experiments/fattree.md)")
    wmem_max: int | None = option(
        None, flag="--wmem-max", metavar="BYTES", low=16384, high=MAX_NOTSENT_LOWAT, unit="bytes",
        default_text="the kernel's, 4 MiB", help="the largest send buffer in every host "
        "(net.ipv4.tcp_wmem's maximum): it bounds what the MPTCP scheduler can queue on one subflow "
        "(docs/experiments/fattree.md)")
    schedule_interval_s: float | None = option(
        None, flag="--schedule-interval", metavar="S", low=MIN_SCHEDULE_S, high=MAX_SCHEDULE_S, unit="s",
        default_text="off", help="with --fabric openflow-reactive: the controller also runs Hedera's "
        "first fit this often (paper Fig. 13: 5, 1, 0.5, 0.1)")
    servers: tuple[str, ...] = option(
        (), flag="--servers", metavar="LIST", parse=parse_servers, default_text="none: this machine",
        help="comma list of ssh destinations to spread the network over, by pods (l3 fabric, socket "
             "driver; docs/fabrics.md); --plan shows the placement and the links that cross")
    topo: str | None = option(
        None, flag="--topo", metavar="FILE.py:NAME", default_text="FatTree(K)",
        help="your own topology: a Mininet Topo in FILE.py, as for mn --custom (the file's "
             "topos = {'NAME': cls} or the class NAME); docs/custom.md")
    matrix: str | None = option(
        None, flag="--matrix", metavar="FILE", default_text="the workload's draw",
        help="the flows from a CSV file, one src,dst per line (instead of --workload); docs/custom.md")
    ssh_config: str | None = option(
        None, flag="--ssh-config", metavar="FILE", default_text="ssh's own",
        help="an ssh client configuration for reaching --servers (ssh -F)")
    fabric_note: str = ""             # why this fabric, when chosen by default
    cc_note: str = ""                 # why this congestion control, when the default fell back

    @classmethod
    def resolve(cls, given: dict) -> list[str]:
        """The fabric this machine defaults to, with why, and the first of
        --seeds as the seed."""
        if "topo" in given and "fabric" not in given:
            given["fabric"], given["fabric_note"] = "l3", "fabric l3: the one a custom topology is tested on"
        if "fabric" not in given and not given.get("servers"):
            given["fabric"], why = default_fabric()
            given["fabric_note"] = f"default fabric {given['fabric']}: {why}"
        if given.get("servers"):    # what runs over servers (docs/fabrics.md)
            given.setdefault("driver", "socket")
            if "fabric" not in given:
                given["fabric"], given["fabric_note"] = "l3", "fabric l3: the one that runs over servers"
        if "matrix" in given and "workloads" in given:
            raise ConfigError("--matrix with a workload: the matrix file is the workload")
        if given.get("seeds") and "seed" not in given:
            given["seed"] = given["seeds"][0]
        return []

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
        if self.k % 2 or not 4 <= self.k <= MAX_K:
            raise ConfigError(f"k={self.k}: the FatTree arity must be an even number within 4..{MAX_K} "
                              f"(k={MAX_K} has {MAX_K ** 3 // 4} hosts)")
        self.check_settings()
        if self.topo is not None:
            self.check_custom()
        check_subflow_counts(self.subflows)
        check_seed_list(self.seeds, self.seed)
        if self.schedule_interval_s is not None and self.fabric != "openflow-reactive":
            raise ConfigError(f"--schedule-interval with --fabric {self.fabric}: first fit "
                              "re-points the controller's per-flow entries, which only "
                              "--fabric openflow-reactive installs")
        if self.fabric != "model" and (self.host_nic != "htb" or self.sim_acks or self.random_drop):
            raise ConfigError(f"--host-nic, --sim-acks and --random-drop with --fabric {self.fabric}: they choose how "
                              "--fabric model models the hosts' queues and the ACKs")
        if self.sim_acks and self.link.ack_lane:
            raise ConfigError("--ack-lane with --sim-acks: ACKs either queue in a lane of their own or in none")
        if self.servers:
            self.placement()
            if self.fabric != "l3" or self.driver != "socket":
                raise ConfigError(f"--servers with --fabric {self.fabric} --driver {self.driver}: over "
                                  "servers the network runs on --fabric l3 with --driver socket")
        if self.ssh_config is not None:
            shown = clipped(self.ssh_config)
            if not self.servers:
                raise ConfigError(f"--ssh-config {shown} without --servers: it configures ssh to the servers")
            if not os.path.isfile(self.ssh_config):
                raise ConfigError(f"--ssh-config {shown}: no such file")
        known = self.custom_hosts() if self.topo is not None else FatTreeShape(self.k).hosts()
        if self.matrix is not None:
            flows = read_matrix(self.matrix, known)
            if flows[0].start_s is not None:
                raise ConfigError(f"--matrix {clipped(self.matrix)}: the sweep runs long-lived flows "
                                  "(src,dst rows); finite flows (start_s,bytes) are not run yet")
            if len(flows) > MAX_FLOWS_PER_RUN:
                raise ConfigError(f"--matrix {clipped(self.matrix)}: {len(flows)} flows; a run is "
                                  f"capped at {MAX_FLOWS_PER_RUN}")
            return
        for w in self.workloads if known is not None else ():
            if (n := flow_count(w, len(known))) > MAX_FLOWS_PER_RUN:
                raise ConfigError(f"{w} on {self.shape_name} has {n} flows; a run is capped at "
                                  f"{MAX_FLOWS_PER_RUN} (use a smaller k)")

    @property
    def shape_name(self) -> str:
        return f"--topo {clipped(self.topo)}" if self.topo is not None else f"FatTree({self.k})"

    def custom_hosts(self) -> list[str] | None:
        """The --topo's hosts, checked (dctopo/custom.py); None without
        Mininet (a check before the set-up): the run's own check, before
        anything is built, then reads the file."""
        split_spec(self.topo)
        try:
            from dctopo.custom import load
        except ImportError:
            return None
        return load(self.topo, self.link).hosts(sort=True)

    def check_custom(self) -> None:
        """What --topo does not go with."""
        if self.servers:
            raise ConfigError("--topo with --servers: a network over servers is spread by FatTree pods")
        if self.fabric not in ("l3", "model"):
            raise ConfigError(f"--topo with --fabric {self.fabric}: a custom topology runs on "
                              "--fabric l3 or model")

    fabric_options = RunConfig.fabric_options      # the same fields by the same names

    def placement(self):
        return place_by_pod(FatTreeShape(self.k), self.servers)

    @property
    def ssh_options(self) -> tuple[str, ...]:
        return ("-F", self.ssh_config) if self.ssh_config else ()

    def plan_lines(self) -> list[str]:
        """What --plan adds for this sweep: the placement over --servers."""
        return plan_lines(self.placement()) if self.servers else []

    def runs(self) -> list[RunConfig]:
        """Seed by seed (a network each), then workloads and subflow counts."""
        return [RunConfig(k=self.k, workload=w, subflows=n, link=self.link, time_s=self.counted,
                          seed=s, fabric=self.fabric, cc=self.cc,
                          warmup_s=self.warmup, warmup_levelled=self.levelled,
                          monitor_interval_s=self.monitor_interval_s,
                          fabric_note=self.fabric_note, cc_note=self.cc_note, driver=self.driver,
                          schedule_interval_s=self.schedule_interval_s, seeds=self.seeds,
                          notsent_lowat=self.notsent_lowat, wmem_max=self.wmem_max,
                          host_nic=self.host_nic, sim_acks=self.sim_acks, random_drop=self.random_drop,
                          topo=self.topo or "", matrix_file=self.matrix or "")
                for s in self.seed_list for w in self.run_workloads for n in self.subflows]

    @property
    def run_workloads(self) -> tuple[str, ...]:
        """With --matrix, its one workload, "matrix"."""
        return ("matrix",) if self.matrix is not None else self.workloads

    def points(self) -> list[RunConfig]:
        return self.runs()

    def replace(self, **changes) -> "SweepConfig":
        return dataclasses.replace(self, **changes)
