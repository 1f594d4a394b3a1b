"""`provisioned`, provisioned paths (van der Pol et al., TNC 2013, in
README's sources): MPTCP over four paths that a controller provisioned
between two servers, two of them link-disjoint, over two long links.
The paths are computed from the testbed's links, link-disjoint ones first
(base.provisioning.choose_paths: the four below), or given with --paths.

    h1 -- a1 ==long 0== b1 -- h2      path 1: a1 b1      (disjoint)
          |            |              path 2: a2 b2      (disjoint)
    h1 -- a2 ==long 1== b2 -- h2      path 3: a1 a2 b2   (long 1, beside path 2)
                                      path 4: a2 a1 b1   (long 0, beside path 1)

Every path has an address pair and an interface on each server of its own
(dctopo.Provisioned), so what h1 sends on interface h1-eth{i} is what path
i+1 carries: per-path throughput over time comes from h1's interface
counters, one sample a second (monitor/interface_rates.py).

Schemes, one long flow each, on one network:
* `mptcp`: one connection, its initial subflow on path 1 and one subflow
  per other path (the userspace path manager, by address pair), the sender
  on --cc (LIA by default);
* `uncoupled`: the same with the kernel's reno on every subflow;
* `mptcp_disjoint`: --cc on paths 1 and 2 only; its record gives the time
  to reach 90 % of its final rate;
* `tcp`: single-path TCP (reno), one run per path.

The initial subflow opens on the first path of `order` (1 by default) and the
joins follow in that order: with coupled congestion control which path
starts first turned out to matter (docs/experiments/provisioned.md).

The testbed saw MPTCP with coupled congestion control settle on the two
link-disjoint paths after a while. What each run measures towards that:
the share of h1's bytes on the disjoint paths after `settle_s`.

Results: results/provisioned-<fabric>/<scheme>/run.json (tcp: tcp_p1..p4);
another order or path set: results/provisioned-<fabric>-<variant>/
(config.provisioned.variant_label).
"""
from __future__ import annotations

import statistics
from pathlib import Path

from dctopo import Provisioned
from emulator.delayline import stats_delta
from emulator.network import Network
from emulator.traffic.common import CLIENT_PORT_BASE, SERVER_PORT_BASE, FlowEndpoints
from experiments.config.provisioned import ProvisionedConfig, ProvisionedPoint
from experiments.longflows import client_connections, flow_key
from experiments.runner import Experiment
from kernel.transport import read_dev_bytes
from monitor.interface_rates import InterfaceRates

SCHEME_LABELS = {"tcp": "TCP", "mptcp": "MPTCP, 4 paths", "uncoupled": "uncoupled MPTCP, 4 paths",
                 "mptcp_disjoint": "MPTCP, the 2 disjoint paths"}
# A run's final rate is its mean over the last third; it "reached" it at the
# first second at or above this share of it.
REACHED = 0.9
# A run is flagged delay_line_late when more than this share (%) of its
# packets left the delay line over 10 ms late (host contention): a quarter of
# the paths' 40 ms round trip, as `wifi3g` flags at half its WiFi RTT.
LATE_PCT_FLAG = 1.0


class ProvisionedNetwork(Network):
    def __init__(self, cfg: ProvisionedConfig):
        super().__init__(Provisioned(long=cfg.long, local=cfg.local, paths=cfg.paths), cfg.long, cfg.cc,
                         seed=cfg.seed, fabric=cfg.fabric)

    def sent_bytes(self) -> dict[str, int]:
        """What h1 has sent on each interface: one per path."""
        return {name: sent for name, (_, sent) in read_dev_bytes(self.fabric.pid("h1")).items()}


class ProvisionedExperiment(Experiment):
    name = "provisioned"

    def __init__(self, cfg: ProvisionedConfig, say=print):
        super().__init__(cfg, say)
        self.runs_done = 0      # each run's client port is a new one

    def points(self) -> list[ProvisionedPoint]:
        return self.cfg.points()

    def network_key(self, p: ProvisionedPoint) -> str:
        return "provisioned"

    def network(self, key: str) -> ProvisionedNetwork:
        return ProvisionedNetwork(self.cfg)

    def introduce(self) -> str:
        cfg = self.cfg
        return (f"provisioned: 4 paths over 2 long links of {cfg.long.bw_mbps:g} Mb/s, "
                f"{cfg.long.delay_ms:g} ms one way; local links {cfg.local.bw_mbps:g} Mb/s; "
                f"fabric {cfg.fabric}; {cfg.run_s:g} s per run, path shares after {cfg.settle_s:g} s; "
                f"MPTCP opens its subflows on paths {','.join(str(i + 1) for i in cfg.order)} in turn\n"
                f"  paths ({'computed: link-disjoint first' if cfg.paths is None else 'as given'}): "
                + ", ".join(f"{i + 1} {'-'.join(path)}" for i, path in enumerate(cfg.switch_paths))
                + f"; link-disjoint: {', '.join(str(i + 1) for i in cfg.disjoint)}")

    def describe(self, p: ProvisionedPoint) -> str:
        where = f" on path {p.path + 1}" if p.scheme == "tcp" else ""
        return f"provisioned {SCHEME_LABELS[p.scheme]}{where}, cc {self.sender_cc(p)}"

    def run_dir(self, p: ProvisionedPoint) -> Path:
        return p.run_dir(self.cfg.results, self.cfg.fabric)

    def sender_cc(self, p: ProvisionedPoint) -> str:
        return self.cfg.cc if p.scheme in ("mptcp", "mptcp_disjoint") else "reno"

    def run_point(self, net: ProvisionedNetwork, p: ProvisionedPoint, folder: Path) -> dict:
        cfg, topo = self.cfg, net.topo
        mptcp = p.scheme != "tcp"
        # A connection iperf3 has closed still sends what its buffers hold (the
        # first runs here: 4 Mb/s on paths 3 and 4 in the next run's first
        # second); that is not the next run's.
        quiet = net.wait_quiet(net.sent_bytes)
        net.set_cc("h1", self.sender_cc(p))
        src, dst = topo.path_addresses(p.paths[0])
        port = CLIENT_PORT_BASE + self.runs_done
        self.runs_done += 1
        flow = FlowEndpoints(0, "h1", "h2", src, dst, port, SERVER_PORT_BASE)
        net.pm.reset()
        net.pm.forget_expansions()
        if mptcp:
            net.pm.expand("h1", (src, port), (dst, SERVER_PORT_BASE), len(p.paths),
                          paths=[topo.path_addresses(i) for i in p.paths[1:]])
        rates = InterfaceRates(net.fabric.pid("h1"))
        line_before = net.delay_line_snapshot()
        try:
            [outcome] = net.driver.run([flow], mptcp, cfg.run_s, folder, on_started=rates.start,
                                       warmup_s=0.0, bind_servers=False)
        finally:
            rates.stop()
        conn = client_connections(net.pm).get(flow_key(flow))
        established = conn.subflows_established if conn else (1 if outcome.goodput_mbps else 0)
        record = self._record(net, p, outcome, rates, established, quiet)
        # Where the links' delay comes from the userspace delay line (no
        # sch_netem), how late it released packets.
        record["delay_line"] = stats_delta(line_before, net.delay_line_snapshot())
        if record["delay_line"]["late_over_10ms_pct"] > LATE_PCT_FLAG:
            record["flags"].append("delay_line_late")
        return record

    def _record(self, net: ProvisionedNetwork, p: ProvisionedPoint, outcome, rates: InterfaceRates,
                established: int, quiet: bool) -> dict:
        cfg = self.cfg
        sent = rates.mbps()
        per_path = {f"p{i + 1}": sent.get(f"h1-eth{i}", []) for i in range(4)}
        settled = {name: series[int(cfg.settle_s):] for name, series in per_path.items()}
        settled_total = sum(sum(s) for s in settled.values())
        disjoint = sum(sum(settled[f"p{i + 1}"]) for i in p.disjoint)
        # iperf3's last interval is the part-second after the run's length
        goodput = (outcome.per_second_mbps or [])[:int(cfg.run_s)]
        flags = net.health_flags()
        if outcome.error:
            flags.append("handshake_failed" if not outcome.timed_out else "timed_out")
        if not outcome.goodput_mbps:
            flags.append("zero_goodput_flow")
        if established < len(p.paths):
            flags.append("subflows_missing")
        if rates.error_count:
            flags.append("monitor_failed")
        if not quiet:
            flags.append("previous_run_still_sending")
        return {
            "config": {
                "scheme": p.scheme, "path": p.path, "paths": [i + 1 for i in p.paths],
                "order": [i + 1 for i in p.order],
                # Each path's switches from h1's side, whether the controller
                # computed them, and which of them are link-disjoint (1-based).
                "switch_paths": ["-".join(path) for path in net.topo.paths],
                "paths_computed": net.topo.paths_computed,
                "disjoint_paths": [i + 1 for i in p.disjoint],
                "cc": self.sender_cc(p), "fabric": cfg.fabric, "bw_mbps": cfg.long.bw_mbps,
                "delay_ms": cfg.long.delay_ms, "queue_pkts": cfg.long.queue_pkts,
                "local_bw_mbps": cfg.local.bw_mbps, "time_s": cfg.time_s, "run_s": cfg.run_s,
                "settle_s": cfg.settle_s, "seed": cfg.seed,
            },
            "goodput_mbps": round(outcome.goodput_mbps, 4),
            "per_second_mbps": goodput,
            # What h1 sent on each path's interface per second, frames counted
            # by the interface (headers and retransmissions included).
            "path_sent_mbps": per_path,
            "settled_path_mbps": {name: round(statistics.fmean(s), 4) if s else None
                                  for name, s in settled.items()},
            "disjoint_share": round(disjoint / settled_total, 4) if settled_total else None,
            "time_to_90pct_s": time_to_reach(goodput, REACHED),
            "subflows_established": established,
            "monitor_errors": rates.errors,
            "errors": [outcome.error] if outcome.error else [],
            "flags": flags,
        }

    def summarise(self, record: dict) -> str:
        paths = record["settled_path_mbps"]
        shares = " ".join(f"{n} {v:.2f}" for n, v in paths.items() if v is not None)
        share = record["disjoint_share"]
        reached = record["time_to_90pct_s"]
        return (f"{record['goodput_mbps']:.2f} Mb/s; after {record['config']['settle_s']:g} s, "
                f"per path (Mb/s sent) {shares}; disjoint share "
                + ("–" if share is None else f"{share:.0%}")
                + ("" if reached is None else f"; 90 % of its final rate after {reached} s"))


def time_to_reach(per_second: list[float], share: float) -> int | None:
    """Seconds from the start until the first one-second goodput at or above
    `share` of the final rate (the mean over the last third of the run);
    None without a final rate."""
    last = per_second[len(per_second) * 2 // 3:]
    final = statistics.fmean(last) if last else 0.0
    if final <= 0:
        return None
    return next((i + 1 for i, x in enumerate(per_second) if x >= share * final), None)
