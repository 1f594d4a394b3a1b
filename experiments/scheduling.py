"""First fit against MPTCP (paper Fig. 13, §4.4): Hedera's centralized
scheduler, run at several intervals, against single-path TCP over the hash
(ECMP) and MPTCP over the same hash, with closed-loop flows.

On FatTree(k) every host sends to one other (a random permutation, seeded).
Each sender runs a closed loop: one flow at a time, and when it ends the
next, on a new connection (a new 5-tuple, so hashed and scheduled afresh),
with a size drawn from a VL2-like distribution (experiments/config/
vl2_flow_sizes.cdf, its flows of 1 MB and more, scaled to the link rate).
The flows are the transfer driver's (emulator/traffic/transfers.py): one
process, a connection per flow. What is measured: the bytes every receiver
had during the counted window, over what every host's link could carry.

The fabric is openflow-reactive: a flow's first packet goes to the
controller, which hashes it onto a shortest path; with first fit, the
controller also reads the flows' counters every interval and moves those
above a tenth of the link rate (controller/firstfit.py). TCP and MPTCP share
one network without the scheduler; each first fit interval gets a network
whose controller runs at that interval. TCP and MPTCP alone may run on
another fabric (--fabric l3: the kernel's ECMP), labelled with it.

--dilation F stretches the experiment's time: flows F times larger, first
fit F times less often (experiments/config/scheduling.py says why).

Results: results/scheduling<k>[-x<F>]/<tcp|mptcp|firstfit-<T>s>[-<fabric>]/run.json,
with cpu.csv and the transfer driver's log; the fabric's logs (the
controller's schedule.jsonl among them) in results/scheduling<k>[-x<F>]/fabric/<network>/.
"""
from __future__ import annotations

import random
import statistics
import time
from pathlib import Path

from base import records
from dctopo import FatTree
from emulator.network import Network
from emulator.traffic.transfers import STOPPED, TRANSFER_TIMEOUT_S, Transfer, TransferOutcome
from experiments.config.scheduling import SCHEDULING_FABRIC, SchedulingConfig, SchedulingPoint
from experiments.longflows import PAYLOAD_PER_FRAME, first_fit_record
from experiments.runner import Experiment
from kernel import transport
from monitor import CpuMonitor
from dctopo.workloads import derangement

SERVER_PORT = 7000
SAMPLE_S = 1.0
# At most this many flows per sender are drawn ahead; the loop stops at the
# end of the counted window long before (every flow lasts at least its
# size over the link rate, and the chain covers the window at that rate).
MAX_FLOWS_PER_SENDER = 5000
# A transfer of an MPTCP run that lasted this long has had time for all its
# joins; one with fewer subflows then is a missing subflow, not a short flow.
JOINS_SETTLED_S = 1.0
LABELS = {"tcp": "TCP / ECMP", "mptcp": "MPTCP"}


def scheme_label(scheme: str, interval_s: float | None, subflows: int) -> str:
    if scheme == "firstfit":
        return f"first fit {interval_s:g} s"
    return f"MPTCP-{subflows}" if scheme == "mptcp" else LABELS[scheme]


class SchedulingExperiment(Experiment):
    name = "scheduling"

    def __init__(self, cfg: SchedulingConfig, say=print):
        super().__init__(cfg, say)
        self.sizes = cfg.sizes()

    def points(self) -> list[SchedulingPoint]:
        return self.cfg.points()

    def network_key(self, p: SchedulingPoint) -> float | None:
        return p.interval_s

    def network(self, interval_s: float | None) -> Network:
        cfg = self.cfg
        name = (f"firstfit-{interval_s:g}s" if interval_s is not None
                else "hash" if cfg.fabric == SCHEDULING_FABRIC else cfg.fabric)
        options = {} if interval_s is None else {"schedule_interval_s": cfg.schedule_interval_s(interval_s)}
        return Network(FatTree(k=cfg.k), cfg.link, cfg.cc, seed=cfg.seed, fabric=cfg.fabric,
                       log_dir=records.scheduling_run(cfg.results, cfg.k, "fabric", cfg.dilation) / name,
                       fabric_options=options)

    def prepare(self, net: Network) -> None:
        first_fit = getattr(net.fabric, "schedule_interval_s", None)
        self.say(f"built FatTree({self.cfg.k}) on {net.fabric.name}: {len(net.fabric.hosts())} hosts"
                 + (f", first fit every {first_fit:g} s" if first_fit else ", hash only"))

    def introduce(self) -> str:
        return (f"closed-loop flows, {self.sizes.describe()} (VL2-like, flows of "
                f"{self.cfg.min_flow_bytes / 1e6:g} MB and more at 1 Gb/s, scaled by "
                f"{self.cfg.size_scale:g})" + ("" if self.cfg.dilation == 1 else
                f"; time dilated {self.cfg.dilation:g} times: flows {self.cfg.dilation:g} times longer, "
                f"first fit {self.cfg.dilation:g} times less often"))

    def describe(self, p: SchedulingPoint) -> str:
        cfg = self.cfg
        on = "" if p.fabric == SCHEDULING_FABRIC else f" on {p.fabric}"
        every = ("" if p.interval_s is None or cfg.dilation == 1
                 else f" (run every {cfg.schedule_interval_s(p.interval_s):g} s)")
        return (f"scheduling{cfg.k} {scheme_label(p.scheme, p.interval_s, cfg.subflows)}{every}{on}, "
                f"{cfg.time_s:g} s after {cfg.warmup:g} s warm-up")

    def run_dir(self, p: SchedulingPoint) -> Path:
        return p.run_dir(self.cfg.results, self.cfg.k, self.cfg.dilation)

    def run_point(self, net: Network, p: SchedulingPoint, folder: Path) -> dict:
        cfg = self.cfg
        subflows = cfg.subflows if p.scheme == "mptcp" else 1
        hosts = sorted(net.fabric.hosts())
        pairs = derangement(hosts, random.Random(f"scheduling:{cfg.seed}"))
        transfers = self.closed_loops(net, pairs)
        net.pm.reset()
        net.pm.forget_expansions()
        if subflows > 1:
            for f in pairs:
                # Local port 0: every connection of the sender's loop to its receiver.
                net.pm.expand(f.src, (net.fabric.host_ip(f.src), 0),
                              (net.fabric.host_ip(f.dst), SERVER_PORT), subflows)
        cpu = CpuMonitor(interval_s=1.0)
        stop_s = cfg.warmup + cfg.time_s
        counters = net.kernel_counters()
        started_at = time.time()
        cpu.start()
        try:
            # A closed loop's flow may rightly last the whole run (a large one
            # on a crowded path, or any of --dilation's longer flows): the
            # stop ends it, not the driver's timeout for a hung transfer.
            outcomes = net.transfers.run(transfers, subflows > 1, folder / "transfers",
                                         timeout_s=max(TRANSFER_TIMEOUT_S, stop_s),
                                         stop_s=stop_s, sample_s=SAMPLE_S)
        finally:
            cpu.stop()
        cpu.write_csv(folder / "cpu.csv")
        record = self._record(net, p, pairs, outcomes, subflows, cpu, net.transfers.received_samples)
        # the run's MPTCP MIB counts over every host, e.g. why a connection fell back
        record["kernel_counters"] = transport.counter_delta(counters, net.kernel_counters())
        if p.interval_s is not None:
            record["first_fit"] = first_fit_record(net.fabric, cfg.schedule_interval_s(p.interval_s),
                                                   started_at + cfg.warmup, started_at + stop_s)
        return record

    def closed_loops(self, net: Network, pairs) -> list[Transfer]:
        """Each sender's chain of flows to its receiver, drawn (seeded) until
        the chain at the link's full rate would outlast the run."""
        cfg = self.cfg
        rng = random.Random(f"scheduling-sizes:{cfg.seed}")
        rate_bytes_s = cfg.link.bw_mbps * 1e6 / 8 * PAYLOAD_PER_FRAME
        transfers: list[Transfer] = []
        for f in pairs:
            src_ip, dst_ip = net.fabric.host_ip(f.src), net.fabric.host_ip(f.dst)
            covered, previous = 0.0, None
            for _ in range(MAX_FLOWS_PER_SENDER):
                size = self.sizes.draw(rng)
                t = Transfer(len(transfers), f.src, f.dst, src_ip, dst_ip, 0, SERVER_PORT, 0.0, size,
                             after=previous)
                transfers.append(t)
                previous = t.index
                covered += size / rate_bytes_s
                if covered > cfg.warmup + cfg.time_s:
                    break
        return transfers

    def _record(self, net: Network, p: SchedulingPoint, pairs, outcomes: list[TransferOutcome],
                subflows: int, cpu: CpuMonitor, samples: list[tuple[float, int]]) -> dict:
        cfg = self.cfg
        hosts = len(net.fabric.hosts())
        link_mbps = cfg.link.bw_mbps * PAYLOAD_PER_FRAME
        w0, w1 = cfg.warmup, cfg.warmup + cfg.time_s
        counted = bytes_at(samples, w1) - bytes_at(samples, w0)
        goodput = 8 * counted / cfg.time_s / 1e6
        started = [o for o in outcomes if o.started]
        completed = [o for o in started if o.completion_s is not None]
        cut = [o for o in started if o.error == STOPPED]
        failed = [o for o in started if o.error and o.error != STOPPED]
        flags = []
        if failed:
            flags.append("transfers_failed")
        if not completed:
            flags.append("no_transfer_completed")
        if counted <= 0:
            flags.append("zero_goodput")
        fell_back, short_of_joins = subflow_shortfalls(completed, subflows)
        if fell_back:
            flags.append("mptcp_fallback")
        if short_of_joins:
            flags.append("subflows_missing")
        if cpu.saturated():
            flags.append("cpu_saturated")
        flags += net.health_flags()
        seconds = per_second_mbps(samples)
        return {
            "config": {
                "k": cfg.k, "scheme": p.scheme, "interval_s": p.interval_s, "label": p.label,
                # the paper's interval above; how often first fit ran, and by how much
                # the experiment's time was stretched (flows and intervals alike)
                "schedule_interval_s": (None if p.interval_s is None
                                        else cfg.schedule_interval_s(p.interval_s)),
                "dilation": cfg.dilation,
                "subflows": subflows, "cc": cfg.cc, "bw_mbps": cfg.link.bw_mbps,
                "queue_pkts": cfg.link.queue_pkts, "time_s": cfg.time_s, "warmup_s": cfg.warmup,
                "seed": cfg.seed, "fabric": cfg.fabric, "workload": "permutation, closed loop",
                "flow_sizes": self.sizes.to_record(), "min_flow_bytes_at_1gbps": cfg.min_flow_bytes,
                "size_scale": cfg.size_scale,
            },
            "hosts": hosts,
            "pairs": [[f.src, f.dst] for f in pairs],
            "link_mbps": round(link_mbps, 4),
            "goodput_mbps": round(goodput, 3),
            # What every receiver had in the window over what every host's
            # link carries at its payload rate: 100 % is the perfect switch.
            "pct_of_optimal": round(100.0 * goodput / (hosts * link_mbps), 2),
            "per_second_mbps": seconds,
            "flows": {
                "drawn": len(outcomes), "started": len(started), "completed": len(completed),
                "cut_at_end": len(cut), "failed": len(failed),
                "errors": sorted({o.error for o in failed})[:10],
                "completed_bytes": sum(o.transfer.size for o in completed),
                "completion_s_median": (round(statistics.median(o.completion_s for o in completed), 3)
                                        if completed else None),
                "subflows_at_answer": _counts(o.subflows for o in completed),
                "short_of_joins": len(short_of_joins),
                "fell_back_to_tcp": len(fell_back),
            },
            "driver_cpu_s": net.transfers.cpu_s,
            "cpu_mean_pct": cpu.mean_pct(),
            "flags": flags,
        }

    def summarise(self, record: dict) -> str:
        fl = record["flows"]
        first_fit = record.get("first_fit")
        moved = f", first fit moved {first_fit['moves']} in {first_fit['rounds']} rounds" if first_fit else ""
        return (f"{record['pct_of_optimal']:.1f} % of optimal ({record['goodput_mbps']:.1f} Mb/s); "
                f"{fl['completed']} flows completed{moved}; cpu {record['cpu_mean_pct']} %")


def subflow_shortfalls(completed: list[TransferOutcome], subflows: int
                       ) -> tuple[list[TransferOutcome], list[TransferOutcome]]:
    """(fell back, short of joins) among an MPTCP run's completed flows. 0
    subflows: the kernel gave no MPTCP_INFO, the connection fell back to TCP
    (transfergen). Fewer than asked, in a flow that lasted JOINS_SETTLED_S:
    a join that did not happen. A TCP run (subflows 1) has neither."""
    if subflows <= 1:
        return [], []
    fell_back = [o for o in completed if o.subflows == 0]
    short = [o for o in completed if o.completion_s >= JOINS_SETTLED_S and 0 < (o.subflows or 0) < subflows]
    return fell_back, short


def bytes_at(samples: list[tuple[float, int]], t: float) -> float:
    """The bytes received by time t, interpolated between samples (the
    first sample's count before it, the last's after it)."""
    if not samples:
        return 0.0
    previous = samples[0]
    if t <= previous[0]:
        return float(previous[1])
    for sample in samples[1:]:
        if t <= sample[0]:
            (t0, n0), (t1, n1) = previous, sample
            return n0 + (n1 - n0) * (t - t0) / (t1 - t0) if t1 > t0 else float(n1)
        previous = sample
    return float(previous[1])


def per_second_mbps(samples: list[tuple[float, int]]) -> list[float]:
    """Goodput of all receivers in each whole second since the release."""
    if not samples:
        return []
    end = int(samples[-1][0])
    return [round(8 * (bytes_at(samples, i + 1) - bytes_at(samples, i)) / 1e6, 3) for i in range(end)]


def _counts(values) -> dict[str, int]:
    out: dict[str, int] = {}
    for v in values:
        out[str(v)] = out.get(str(v), 0) + 1
    return dict(sorted(out.items()))
