"""Short flows beside long ones (paper Fig. 12, §4.3.3): on the 4:1
oversubscribed FatTree, every host sends to one other (a random
permutation, seeded). A third of the hosts send one long flow with the
scheme under test: single-path TCP, uncoupled subflows (reno), EWTCP or LIA;
the others send 70 KB files by single-path TCP (reno), one host's files
arriving as a Poisson process (by default one every 200 ms at 100 Mb/s,
scaled to the link rate). What is measured: the short files' completion
times, and the long flows' rates.

The long flows are the driver's (iperf3 by default) and start first; the
files start after the warm-up and arrive during the counted window, from
the transfer driver (emulator/traffic/transfers.py), started from the same
thread when the long flows' clients are up. The congestion control is a
host default, so each is a network of its own (built once per algorithm).

Results: results/shortflows<k>/<scheme>/run.json, with cpu.csv and the
drivers' logs.
"""
from __future__ import annotations

import random
import statistics
from pathlib import Path

from dctopo import FatTree
from emulator.traffic.transfers import Transfer
from experiments.config.shortflows import ShortflowsPoint
from experiments.longflows import subflows_ready
from experiments.racknet import RackExperiment, RackNetwork
from kernel import transport
from monitor import CpuMonitor
from dctopo.workloads import TrafficMatrix, derangement, poisson_starts

SCHEME_LABELS = {"tcp": "TCP", "uncoupled": "UNCOUPLED", "ewtcp": "EWTCP", "lia": "LIA (MPTCP)"}
# Short files' ports: servers below the ephemeral range and above the long
# flows' (5201 + at most 512), clients above the long flows' blocks (40000-64999).
SHORT_SERVER_PORT = 7000
SHORT_CLIENT_PORT_BASE = 65000
SHORT_CC = "reno"               # the paper's short flows are single-path TCP


class ShortflowsExperiment(RackExperiment):
    name = "shortflows"
    MPTCP_SCHEMES = ("uncoupled", "ewtcp", "lia")
    network_per_cc = True

    def topology(self, cc: str) -> FatTree:
        return FatTree(k=self.cfg.k, oversubscription=self.cfg.ratio)

    def built_notes(self, net: RackNetwork) -> list[str]:
        return [f"oversubscribed {self.cfg.ratio}:1"]

    def describe(self, p: ShortflowsPoint) -> str:
        cfg = self.cfg
        return (f"shortflows{cfg.k} long flows {SCHEME_LABELS[p.scheme]}, {cfg.sizes.describe()} "
                f"every {cfg.interval:g} s per host, {cfg.time_s:g} s after {cfg.warmup:g} s warm-up")

    def split(self, hosts: list[str]) -> tuple[TrafficMatrix, list, random.Random]:
        """(the long flows' matrix, the short flows' pairs, the generator
        that goes on to draw their files): a derangement of the hosts, a
        `long_share` of them sending long flows."""
        cfg = self.cfg
        hosts = sorted(hosts)
        rng = random.Random(f"shortflows:{cfg.seed}")
        pairs = derangement(hosts, rng)
        senders = set(rng.sample(hosts, round(cfg.long_share * len(hosts))))
        matrix = TrafficMatrix("shortflows_long", cfg.seed, tuple(f for f in pairs if f.src in senders))
        return matrix, [f for f in pairs if f.src not in senders], rng

    def matrix_on(self, topo: FatTree, p: ShortflowsPoint) -> TrafficMatrix:
        return self.split(topo.hosts())[0]

    def run_point(self, net: RackNetwork, p: ShortflowsPoint, folder: Path) -> dict:
        cfg = self.cfg
        matrix, short_pairs, rng = self.split(net.fabric.hosts())
        files = self._files(net, short_pairs, rng)
        flows = net.endpoints(matrix, cfg.seed)
        subflows = self.subflows_of(p)
        net.arm(flows, subflows)
        cpu = CpuMonitor(interval_s=1.0)
        counters, sent = net.kernel_counters(), net.sent_by_interface()
        running = []

        def started() -> None:
            cpu.start()
            running.append(net.transfers.start(files, False, folder / "transfers", cc=SHORT_CC))
        try:
            outcomes = net.driver.run(flows, subflows > 1, cfg.time_s, folder / "iperf",
                                      on_started=started, warmup_s=cfg.warmup,
                                      bind_servers=subflows == 1,
                                      ready=subflows_ready(net.pm, flows, subflows))
            done = running[0].finish() if running else []
        finally:
            cpu.stop()
        counters = transport.counter_delta(counters, net.kernel_counters())
        sent = {port: n - sent.get(port, 0) for port, n in net.sent_by_interface().items()}
        cpu.write_csv(folder / "cpu.csv")
        record = self._record(net, p, matrix, outcomes, subflows, cpu, counters, sent)
        record["short"] = _short_record(done, net.transfers.cpu_s)
        if record["short"]["failed"]:
            record["flags"].append("short_flows_failed")
        if not record["short"]["completed"]:
            record["flags"].append("no_short_flow")
        return record

    def _files(self, net: RackNetwork, pairs, rng: random.Random) -> list[Transfer]:
        """Each short host's files to its one receiver, arriving within the
        counted window as a Poisson process."""
        cfg = self.cfg
        files = []
        for pair in pairs:
            for i, at in enumerate(poisson_starts(1 / cfg.interval, cfg.time_s, rng)):
                files.append(Transfer(len(files), pair.src, pair.dst, net.fabric.host_ip(pair.src),
                                      net.fabric.host_ip(pair.dst), SHORT_CLIENT_PORT_BASE + i,
                                      SHORT_SERVER_PORT, cfg.warmup + at, cfg.sizes.draw(rng)))
        return files

    def config_record(self, net: RackNetwork, p: ShortflowsPoint, subflows: int) -> dict:
        cfg = self.cfg
        return {
            **cfg.settings_record(),
            "k": cfg.k, "ratio": cfg.ratio, "scheme": p.scheme, "cc": p.cc, "subflows": subflows,
            "multipath_subflows": cfg.subflows,
            "long_share": round(cfg.long_share, 4),
            "file_bytes": cfg.sizes.size_bytes if cfg.file_cdf is None else None,
            "file_sizes": cfg.sizes.to_record(),
            "interval_s": cfg.interval, "short_cc": SHORT_CC, "workload": "shortflows",
        }

    def summarise(self, record: dict) -> str:
        short = record["short"]
        median = f"{short['median_ms']:.0f} ms" if short["median_ms"] is not None else "none"
        return (f"long flows {record['mean_flow_mbps']:.2f} Mb/s each on average; "
                f"{short['completed']} of {short['files']} files, median {median}, "
                f"cpu {record['cpu_mean_pct']} %")


def _short_record(outcomes, driver_cpu_s: float | None) -> dict:
    done = sorted((1000 * o.completion_s, o.transfer.size) for o in outcomes if o.completion_s is not None)
    times = [t for t, _ in done]
    q = statistics.quantiles(times, n=100, method="inclusive") if len(times) > 1 else times * 99
    return {
        "files": len(outcomes),
        "completed": len(times),
        "failed": sum(1 for o in outcomes if o.error),
        "errors": sorted({o.error for o in outcomes if o.error})[:10],
        "completion_ms": [round(t, 3) for t in times],
        "size_bytes": [size for _, size in done],      # each completed file's, in completion_ms's order
        "median_ms": round(statistics.median(times), 3) if times else None,
        "p90_ms": round(q[89], 3) if times else None,
        "p99_ms": round(q[98], 3) if times else None,
        "driver_cpu_s": driver_cpu_s,
    }

