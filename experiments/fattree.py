"""A sweep: one network, built once and reconfigured per run, many runs
(workloads x subflow counts), each in its own folder through `RunStage`;
whatever happens, `finally` stops exactly what this sweep created."""
from __future__ import annotations

import json
import os
import platform
import shutil
import statistics
import subprocess
import time
from pathlib import Path

import mininet.net

from dctopo import FatTree
from experiments.config import RunConfig, SweepConfig
from experiments.config.fattree import host_sysctls
from experiments.config.common import SWEEP_WARMUP_S_AT_10MBPS, default_warmup_s
from emulator.network import Network
from base.files import atomic_write_text
from experiments.staging import ensure_dir, give_to_invoking_user
from experiments.longflows import (PAYLOAD_PER_FRAME, client_connections, counted_rise_pct,
                                   first_fit_record, still_rising, levelled_outcomes,
                                   flow_key, flow_mptcp_fields, run_flags,
                                   subflows_ready)
from experiments.runner import Experiment, Runner, SweepError, minutes  # noqa: F401  (SweepError re-exported)
from experiments.startup import PhaseClock, clients_started_late, startup_record
from emulator.traffic.common import FlowEndpoints, FlowOutcome
from kernel import transport
from monitor import CpuMonitor
from dctopo.fluid_model import EcmpModel
from dctopo.matrix_file import read_matrix
from dctopo.workloads import Flow, TrafficMatrix, load_or_make

# The baseline is one TCP flow alone: it is at its steady rate within a
# second, so a short measurement after a short warm-up is exact enough.
BASELINE_S = 5.0
BASELINE_WARMUP_S = 1.0
BASELINE_ATTEMPTS = 3
BASELINE_GOOD = 0.97
# In kernel_counters beside the MPTCP MIB: windows the coupled algorithms
# found corrupted and repaired during the run (kernel/bpf/mptcp_cc.bpf.c).
WINDOW_REPAIRS = "CoupledCcWindowRepairs"


class Sweep:
    def __init__(self, cfg: SweepConfig, say=print, capacity=None, guard_servers: bool = False):
        """`capacity`: the capacity guard's verdict, recorded in every run;
        over servers, with `guard_servers`, judged once their workers answer."""
        self.cfg = cfg
        self.say = say
        self.capacity = capacity
        if cfg.servers:     # spread over them by a worker each (emulator/spread.py)
            from emulator.spread import SpreadNetwork, remote_of
            from experiments.capacity.servers import admit_servers

            def admit(kernels) -> None:
                self.capacity = admit_servers(cfg, kernels, say)
            self.net = SpreadNetwork(FatTree(k=cfg.k), cfg.link, cfg.cc, cfg.seed, cfg.fabric,
                                     cfg.placement(), [remote_of(s) for s in cfg.servers],
                                     cfg.ssh_options, host_settings=host_sysctls(cfg), say=say,
                                     guard=admit if guard_servers else None)
        else:
            self.net = Network(sweep_topology(cfg), cfg.link, cfg.cc, seed=cfg.seed, fabric=cfg.fabric,
                               log_dir=cfg.results / self.topology_name / "fabric", driver=cfg.driver,
                               fabric_options=cfg.fabric_options(),
                               host_settings=host_sysctls(cfg))
        self.topo, self.fabric, self.procs = self.net.topo, self.net.fabric, self.net.procs
        self.pm, self.driver = self.net.pm, self.net.driver
        self.baseline_mbps: float | None = None
        self.baseline_attempts: list[float] = []
        self.wall_s = 0.0          # run()'s wall time (bench/fidelity.py prints it)
        self.environment: dict = {}
        # Something done to the network during every run (`hotspot`'s hot link):
        # start() when the traffic starts, stop() -> what it did, for run.json.
        self.during_runs = None

    # -- the whole sweep -----------------------------------------------------
    def run(self) -> list[Path]:
        """Every run of the config through the runner (FatTreeExperiment)."""
        runner = Runner(FatTreeExperiment(self, guard=False), say=self.say)
        written = runner.run()
        self.wall_s = runner.wall_s
        return written

    def __enter__(self) -> "Sweep":
        try:
            self.open()
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def open(self) -> None:
        """Build the network and make every host ready for MPTCP runs."""
        t0 = time.monotonic()
        self.net.start()
        self.environment = self._environment()
        self.say(f"built {self.shape} on fabric "
                 f"{self.fabric.name}: {len(self.fabric.hosts())} hosts, "
                 f"{len(self.topo.switches())} switches in {time.monotonic() - t0:.1f} s"
                 + (f"; ECMP hash: {self.fabric.ecmp_hash}" if self.fabric.ecmp_hash else ""))

    def close(self) -> None:
        """Remove what this sweep created (Network.close says in which order)."""
        self.net.close()

    # -- set-up ----------------------------------------------------------------
    def _environment(self) -> dict:
        return {
            "kernel": platform.release(),
            "versions": {
                "iperf3": _first_line(["iperf3", "--version"]),
                "mininet": mininet.net.VERSION,
                "python": platform.python_version(),
                "harness": _first_line(["git", "-C", str(Path(__file__).parent), "rev-parse",
                                        "--short", "HEAD"]),
            },
            "host_sysctls": self.net.host_sysctls(),
            "ecmp_hash": self.fabric.ecmp_hash,
            **self.net.environment(),
        }

    def measure_baseline(self) -> float:
        """The optimal rate as the 2013 harness defined it: one TCP flow alone
        on an idle path, across the core, measured with this sweep's links.

        A baseline measured low (a busy moment of the machine) would inflate
        every "% of optimal", so it is measured again, up to BASELINE_ATTEMPTS
        times, until it reaches BASELINE_GOOD of what the link can carry
        (TCP payload per frame: 1448 of 1514 bytes); the best one is kept."""
        hosts = self.fabric.hosts()
        attainable = self.cfg.link.bw_mbps * PAYLOAD_PER_FRAME
        attempts = []
        seconds = min(BASELINE_S, self.cfg.counted)
        for _ in range(BASELINE_ATTEMPTS):
            flow = self.driver.endpoints([Flow(hosts[0], hosts[-1])])
            logdir = ensure_dir(self.cfg.results / self.topology_name) / f".baseline-{os.getpid()}"
            try:
                [outcome] = self.driver.run(flow, mptcp=False, time_s=seconds, logdir=logdir,
                                            warmup_s=BASELINE_WARMUP_S)
            finally:
                shutil.rmtree(logdir, ignore_errors=True)
            if outcome.error or outcome.goodput_mbps <= 0:
                raise SweepError(f"baseline flow {hosts[0]} -> {hosts[-1]} failed: "
                                 f"{outcome.error or 'no data arrived'}")
            attempts.append(outcome.goodput_mbps)
            if outcome.goodput_mbps >= BASELINE_GOOD * attainable:
                break
        best = max(attempts)
        self.baseline_attempts = attempts
        self.say(f"baseline: one TCP flow on an idle path carries {best:.2f} Mb/s "
                 f"on {self.cfg.link.bw_mbps:g} Mb/s links ({100 * best / attainable:.0f} % of "
                 f"the {attainable:.2f} Mb/s a link can carry"
                 + (f"; best of {len(attempts)} measurements)" if len(attempts) > 1 else ")"))
        return best

    @property
    def topology_name(self) -> str:
        return self.cfg.runs()[0].topology

    @property
    def shape(self) -> str:
        return f"--topo {self.cfg.topo}" if self.cfg.topo else f"FatTree({self.cfg.k})"

    # -- one run ---------------------------------------------------------------
    def run_one(self, rc: RunConfig) -> Path:
        """One run, staged and committed (the calibration runs them alone)."""
        return Runner(FatTreeExperiment(self, guard=False), say=self.say).run_one(self, rc)

    def measure(self, rc: RunConfig, folder: Path) -> dict:
        """One run's traffic, monitors and record, its files in `folder`."""
        workload_dir = ensure_dir(rc.workload_dir(self.cfg.results))
        if rc.matrix_file:
            matrix = matrix_from_file(rc.matrix_file, self.fabric.hosts(), rc.seed)
            atomic_write_text(workload_dir / "matrix.json", json.dumps(matrix.to_record(), indent=1))
        else:
            matrix = load_or_make(workload_dir / "matrix.json", rc.workload, self.fabric.hosts(), rc.seed)
        give_to_invoking_user(workload_dir / "matrix.json")
        flows = self.driver.endpoints(list(matrix.flows))
        mptcp = rc.subflows > 1
        clock = PhaseClock()
        clock.mark("begin")
        self.fabric.prepare_run(say=self.say)
        self.arm_path_manager(flows, rc.subflows)
        clock.mark("reconfigure_hosts")
        before = self.net.kernel_counters()
        repairs_before = self.net.coupled_cc.window_repairs()
        log_before = self.net.coupled_cc.repair_log()
        monitors = self.net.monitors(rc.monitor_interval_s)
        monitors.watch(flows, subflows=rc.subflows)
        fabric_before = self.fabric.run_counters()
        clock.mark("bookkeeping")

        def traffic_started():
            clock.mark("start_clients")
            monitors.start()
            if self.during_runs:
                self.during_runs.start()
        traffic_from = time.time()
        try:
            outcomes = self.driver.run(flows, mptcp, rc.time_s, folder / "iperf",
                                       on_started=traffic_started, warmup_s=rc.warmup_s,
                                       on_starting=lambda: clock.mark("start_servers"),
                                       ready=subflows_ready(self.pm, flows, rc.subflows))
        finally:
            monitors.stop()
            event = self.during_runs.stop() if self.during_runs else None
        fabric_run, fabric_flags = self.fabric.run_summary(fabric_before)
        deltas = transport.counter_delta(before, self.net.kernel_counters())
        repairs_after = self.net.coupled_cc.window_repairs()
        if repairs_before is not None and repairs_after is not None:
            deltas[WINDOW_REPAIRS] = repairs_after - repairs_before
        repair_log = (self.net.coupled_cc.repair_log(since=log_before[0])
                      if log_before is not None else None)
        monitors.write(folder)
        startup = startup_record(clock, client_connections(self.pm), [flow_key(f) for f in flows],
                                 rc.subflows, monitors.cpu.samples, monitors.started_at)
        warmup, level = rc.warmup_s, None
        if rc.warmup_levelled:
            # Not before the fixed warm-up measured for FatTree(4) (config.common), nor
            # before every subflow is up: the levelling can only lengthen it.
            floor = max(default_warmup_s(rc.link.bw_mbps, SWEEP_WARMUP_S_AT_10MBPS), startup["complete_s"] or 0)
            outcomes, level = levelled_outcomes(outcomes, rc.warmup_s, rc.time_s, rc.link.bw_mbps, floor)
            warmup = level["levelled_at_s"]
        record = self._record(rc, matrix, outcomes, monitors.cpu, deltas, warmup)
        record["startup"] = startup
        if level is not None:
            record["warmup"] = level
        if clients_started_late(startup, warmup, self.driver.clients_send_at_start):
            record["flags"].append("clients_started_late")
        record["monitors"] = monitors.summary(from_s=warmup)
        if fabric_run:
            record["fabric_engine"] = fabric_run
            record["flags"] += fabric_flags
        if rc.schedule_interval_s is not None:
            record["first_fit"] = first_fit_record(self.fabric, rc.schedule_interval_s,
                                                   traffic_from, time.time())
        if repair_log is not None:
            # Every corrupted window of this run, with the state around it
            # (kernel/bpf/repair_log.h): the first ones since the programs
            # were loaded are kept, later ones only counted.
            record["window_repairs"] = {"seen": repair_log[0] - log_before[0],
                                        "records": repair_log[1]}
        if event is not None:
            record["event"] = event
            if event.get("errors"):
                record["flags"].append("event_failed")
        return record

    def arm_path_manager(self, flows: list[FlowEndpoints], subflows: int) -> None:
        """Forget the previous run's connections and have each of these flows'
        data connections opened with `subflows` subflows (1: none added)."""
        self.net.arm(flows, subflows)

    def _record(self, rc: RunConfig, matrix: TrafficMatrix, outcomes: list[FlowOutcome],
                cpu: CpuMonitor, counters: dict[str, int], warmup: float) -> dict:
        """`warmup`: where counting started (a levelled warm-up's end)."""
        mptcp = rc.subflows > 1
        mptcp_fields = flow_mptcp_fields(self.pm, rc.subflows)
        optimum = optimum_shares(self.topo, matrix, rc.link.bw_mbps) if rc.topo else None
        flows = []
        for o in outcomes:
            f = o.endpoints
            share = optimum["shares"][f.index] if optimum else matrix.share(Flow(f.src, f.dst))
            optimal = self.baseline_mbps * share
            flows.append({
                "src": f.src, "dst": f.dst, "src_ip": f.src_ip, "dst_ip": f.dst_ip,
                "client_port": f.client_port, "server_port": f.server_port,
                "goodput_mbps": o.goodput_mbps, "seconds": o.seconds,
                "whole_run_mbps": o.whole_mbps, "first_data_s": o.first_data_s,
                "per_second_mbps": o.per_second_mbps,
                "optimal_mbps": round(optimal, 4),
                "pct_optimal": round(100.0 * o.goodput_mbps / optimal, 2),
                "mptcp": mptcp,
                "subflows_requested": rc.subflows,
                **mptcp_fields(o),
                "error": o.error,
            })
        problems = self.net.health_problems()
        flags = run_flags(rc.subflows, flows, outcomes, cpu, counters,
                          window=(warmup, warmup + rc.time_s)) + list(problems)
        flags += list(self.environment.get("servers", {}).get("tunnel_flags", {}))
        if self.capacity is not None and not self.capacity.fits:
            flags.append("over_capacity")
        rise = counted_rise_pct(outcomes, warmup, rc.time_s)
        if still_rising(rise):
            flags.append("still_rising")
        pcts = sorted(fl["pct_optimal"] for fl in flows)
        return {
            "config": {**rc.as_record(), "warmup_s": warmup,
                       **({"optimum": optimum["basis"]} if optimum else {})},
            **self.environment,
            "baseline_mbps": self.baseline_mbps,
            "baseline_attempts_mbps": self.baseline_attempts,
            "matrix": matrix.to_record(),
            "flows": flows,
            "summary": {
                "mean_pct": round(statistics.fmean(pcts), 2),
                "p10_pct": round(_percentile(pcts, 10), 2),
                "min_pct": round(pcts[0], 2),
                "aggregate_mbps": round(sum(fl["goodput_mbps"] for fl in flows), 3),
                "rise_pct": rise,
            },
            "cpu_mean_pct": cpu.mean_pct(),
            "capacity": self.capacity.as_record() if self.capacity is not None else None,
            "kernel_counters": counters,
            "flags": flags,
            "health": problems,
        }


class FatTreeExperiment(Experiment):
    """The FatTree sweep as an experiment: one network per seed for all its
    runs (workloads x subflow counts), the optimal rate measured once on
    each, and the capacity guard's verdict before anything is built."""
    name = "fattree"

    def __init__(self, sweep: "Sweep | SweepConfig", say=print, guard: bool = True):
        """From the command line's config, guarded; or around a Sweep that
        a test, benchmark or the calibration built (`guard=False`)."""
        if isinstance(sweep, SweepConfig):
            sweep = Sweep(sweep, say=say, guard_servers=guard)
        super().__init__(sweep.cfg, sweep.say)
        self.sweep = sweep
        self.guard = guard
        self.calibration = None

    def admit(self) -> None:
        """The capacity guard (experiments/capacity/guard.py), judged on what
        this machine's FatTree runs cost."""
        if not self.guard or self.cfg.servers:    # over servers: once they answer (Sweep.open)
            return
        if self.cfg.topo:       # calibrated on FatTree(k)'s runs only
            self.say("capacity guard: not judged for a custom topology (it is calibrated on FatTree runs)")
            return
        from experiments import capacity
        from experiments.capacity.guard import admit
        cfg = self.cfg
        self.sweep.capacity, self.calibration = admit(
            cfg.fabric, cfg.force, lambda cal: capacity.judge(cfg, cal), self.say, cfg.recalibrate)

    def after(self) -> None:
        """What the sweep's valid MPTCP-8 runs cost, for the guard's next
        verdict; not over servers, whose CPU is not this machine's."""
        if self.calibration is not None and not self.cfg.servers and not self.cfg.topo:
            from experiments import capacity
            capacity.learn(self.cfg.fabric, capacity.observed_costs(self.cfg, self.calibration.idle_pct))

    def points(self) -> list[RunConfig]:
        return self.cfg.runs()

    def network_key(self, rc: RunConfig) -> int:
        return rc.seed

    def network(self, seed: int) -> Sweep:
        """The sweep's own network, or for another of its --seeds one with
        that seed's hash (its matrix comes with its runs)."""
        if seed == self.sweep.cfg.seed:
            return self.sweep
        return Sweep(self.cfg.replace(seed=seed), say=self.say, capacity=self.sweep.capacity)

    def prepare(self, sweep: Sweep) -> None:
        sweep.baseline_mbps = sweep.measure_baseline()

    def describe(self, rc: RunConfig) -> str:
        label = "TCP" if rc.subflows == 1 else f"MPTCP-{rc.subflows}"
        warmup = (f"the goodput levels (at most {rc.warmup_s:g} s)" if rc.warmup_levelled
                  else f"{rc.warmup_s:g} s warm-up")
        return f"{rc.topology} {rc.workload} {label}, {rc.time_s:g} s after {warmup}"

    def run_dir(self, rc: RunConfig) -> Path:
        return rc.run_dir(self.cfg.results)

    def run_point(self, sweep: Sweep, rc: RunConfig, folder: Path) -> dict:
        return sweep.measure(rc, folder)

    def summarise(self, record: dict) -> str:
        return run_summary(record)

    def finished(self, runs: int, wall_s: float) -> str:
        """The sweep's wall time against its traffic time."""
        traffic, counted = traffic_seconds(self.points())
        return (f"sweep: {runs} runs in {minutes(wall_s)}; traffic {minutes(traffic)} "
                f"({minutes(counted)} counted after warm-ups): wall / traffic = {wall_s / traffic:.2f}, "
                f"wall / counted = {wall_s / counted:.2f}")


def sweep_topology(cfg: SweepConfig):
    """FatTree(k), or the user's --topo (dctopo/custom.py), checked again."""
    if cfg.topo:
        from dctopo.custom import load
        return load(cfg.topo, cfg.link)
    return FatTree(k=cfg.k)


def matrix_from_file(path: str, hosts: list[str], seed: int) -> TrafficMatrix:
    """--matrix's flows (checked by the config against the same hosts)."""
    rows = read_matrix(path, hosts)
    return TrafficMatrix("matrix", seed, tuple(Flow(r.src, r.dst) for r in rows))


def optimum_shares(topo, matrix: TrafficMatrix, link_mbps: float) -> dict:
    """Each flow's optimum on a custom topology, in host links: the fluid
    model's pooled max-min rate (dctopo/fluid_model.py), or, where its
    pooling is not exact, the non-blocking share; `basis` says which."""
    try:
        shares = EcmpModel(topo, link_mbps).pooled_rates(matrix.pairs())
        return {"shares": shares, "basis": "fluid model: pooled max-min rate over the shortest paths"}
    except ValueError as exc:
        return {"shares": [matrix.share(f) for f in matrix.flows],
                "basis": f"non-blocking: each flow's share of its host links (the fluid model: {exc})"}


def traffic_seconds(runs: list[RunConfig]) -> tuple[float, float]:
    """(seconds of traffic, of which counted) over a sweep's runs."""
    return sum(rc.warmup_s + rc.time_s for rc in runs), sum(rc.time_s for rc in runs)


def run_summary(record: dict) -> str:
    """A FatTree run's one line: how close to optimal its flows came."""
    s = record["summary"]
    rise, level = s.get("rise_pct"), record.get("warmup")
    counted = (f"counted from {level['levelled_at_s']} s ("
               + ("levelled" if level["levelled"] else "the cap: not levelled") + "), ") if level else ""
    return (counted + f"mean {s['mean_pct']:.1f} % of optimal, p10 {s['p10_pct']:.1f} %, "
            f"min {s['min_pct']:.1f} %, cpu {record['cpu_mean_pct']} %"
            + (f", last third {rise:+.1f} % on the first" if rise is not None else ""))


def _percentile(sorted_values: list[float], pct: float) -> float:
    """Nearest-rank percentile (p10 of 16 flows is the 2nd lowest)."""
    rank = max(1, -(-len(sorted_values) * pct // 100))
    return sorted_values[int(rank) - 1]


def _first_line(argv: list[str]) -> str | None:
    try:
        out = subprocess.run(argv, capture_output=True, text=True, timeout=10)
        return out.stdout.splitlines()[0].strip() if out.returncode == 0 and out.stdout else None
    except (OSError, subprocess.TimeoutExpired):
        return None
