"""What coupling does on two paths: fairness at a shared bottleneck and
moving traffic off a loaded path (RFC 6356's goals 1 and 3), measured on
dctopo.TwoPaths. Used by bench/fairness.py and tests/test_fairness.py.

    h1 ==path 0==> h2     MPTCP, 2 subflows, the algorithm under test
    h1 ==path 1==> h2
    x1 ==path c==> x2     `cross_flows` Reno flows on one path

* `shared`: both subflows on path 0, beside the Reno flows (c = 0). What
  counts is MPTCP's goodput over one Reno flow's: uncoupled subflows take
  two flows' worth, coupled ones one.
* `shift`: one subflow per path, the Reno flows on path 1 (c = 1). What
  counts is the share of MPTCP's bytes sent on the free path 0: coupled
  algorithms that move traffic off congestion (LIA, OLIA) put more there
  than uncoupled Reno, and leave more to the Reno flows.
* `run_two_flows()` (shared case): h1 opens two single-subflow Reno
  connections instead of one MPTCP connection with two subflows: what
  "two flows' worth" measures to on this network, beside which uncoupled
  subflows are judged.

Each result carries h1's and x1's retransmitted share of the segments they
sent (Tcp RetransSegs over OutSegs), over warm-up and run: about the
share of their packets the queue dropped (bench/diagnosis/send_bursts.py counts
those at the receivers: 0.1-0.9 percentage points fewer, in the same
order between flows), and a Reno flow's rate follows it.

Every flow, the Reno ones too, runs under `mptcpize` (one subflow is TCP
Reno on the wire); one network serves every run of a case, so runs of
different algorithms can be interleaved.
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path

from dctopo import TwoPaths
from base.links import ACCESS
from experiments.config import LinkParams
from emulator.delayline import stats_delta
from emulator.network import Network
from emulator.traffic.common import CLIENT_PORT_BASE, SERVER_PORT_BASE, FlowEndpoints
from kernel.transport import counter_delta, read_dev_bytes, read_snmp

CASES = ("shared", "shift")
TWO_FLOWS = "2 flows"   # the `cc` of run_two_flows()'s results


@dataclass
class TwoPathResult:
    case: str
    cc: str
    mptcp_mbps: float
    reno_mbps: list[float]          # each cross flow's goodput
    sent_bytes: tuple[int, int]     # what h1 sent on path 0 and on path 1
    errors: list[str] = field(default_factory=list)
    retrans_pct: dict[str, float] = field(default_factory=dict)   # h1's and x1's
    # What the delay line did in the run, where the access links have one
    # (emulator.delayline.stats_delta): packets, and how many it released late.
    delay_line: dict = field(default_factory=dict)

    @property
    def ratio(self) -> float:
        """MPTCP's goodput (h1's total) over the mean Reno flow's."""
        reno = sum(self.reno_mbps) / len(self.reno_mbps)
        return self.mptcp_mbps / reno if reno else float("nan")

    @property
    def free_share(self) -> float:
        """The share of MPTCP's bytes sent on path 0."""
        total = sum(self.sent_bytes)
        return self.sent_bytes[0] / total if total else float("nan")

    def line(self) -> str:
        what = (f"ratio {self.ratio:.2f}" if self.case == "shared"
                else f"share on the free path {self.free_share:.2f}")
        reno = " ".join(f"{r:.2f}" for r in self.reno_mbps)
        lost = ", ".join(f"{h} {pct:.2f} %" for h, pct in self.retrans_pct.items())
        who = "h1's two flows" if self.cc == TWO_FLOWS else "MPTCP"
        line = self.delay_line
        late = (f"; delay line: {line['packets']} packets, {line['late_over_ms']['1']} released over "
                f"1 ms late, {line['late_over_ms']['5']} over 5 ms" if line else "")
        return (f"{self.case} {self.cc}: {who} {self.mptcp_mbps:.2f} Mb/s, Reno {reno} Mb/s, {what}"
                + (f"; retransmitted {lost}" if lost else "") + late
                + (f"  ERRORS {self.errors}" if self.errors else ""))


class TwoPathCase:
    """One network for one case; `run(cc)` measures one algorithm on it."""

    def __init__(self, case: str, bw_mbps: float = 10, queue_pkts: int = 100, cross_flows: int = 1,
                 access: LinkParams = ACCESS):
        if case not in CASES:
            raise ValueError(f"unknown case {case!r}, expected one of {CASES}")
        self.case = case
        self.cross_path = 0 if case == "shared" else 1
        self.cross_flows = cross_flows
        self.topo = TwoPaths(bottleneck=LinkParams(bw_mbps=bw_mbps, queue_pkts=queue_pkts),
                             access=access, cross_path=self.cross_path)
        # lia registers the coupled algorithms for the network's lifetime
        self.net = Network(self.topo, LinkParams(), cc="lia")
        self._next_index = 0

    def __enter__(self) -> "TwoPathCase":
        self.net.start()
        self.net.set_cc("x1", "reno")
        return self

    def __exit__(self, *exc) -> None:
        self.net.close()

    def _endpoints(self, src: str, dst: str, src_ip: str, dst_ip: str) -> FlowEndpoints:
        i = self._next_index
        self._next_index += 1
        return FlowEndpoints(i, src, dst, src_ip, dst_ip, CLIENT_PORT_BASE + i, SERVER_PORT_BASE + i)

    def run(self, cc: str, time_s: float, warmup_s: float, logdir: Path) -> TwoPathResult:
        """One MPTCP connection with two subflows from h1 under `cc`."""
        return self._run(cc, 1, 2, time_s, warmup_s, logdir)

    def run_two_flows(self, time_s: float, warmup_s: float, logdir: Path) -> TwoPathResult:
        """Two single-subflow Reno connections from h1 on path 0 (shared case
        only): the reference for two uncoupled subflows."""
        if self.case != "shared":
            raise ValueError("two single-path flows are the shared case's reference")
        return self._run("reno", 2, 1, time_s, warmup_s, logdir, label=TWO_FLOWS)

    def _run(self, cc: str, connections: int, subflows: int, time_s: float, warmup_s: float,
             logdir: Path, label: str | None = None) -> TwoPathResult:
        net = self.net
        net.set_cc("h1", cc)
        src, dst = self.topo.path_addresses(0)
        mine = [self._endpoints("h1", "h2", src, dst) for _ in range(connections)]
        net_id = self.cross_path + 1
        cross = [self._endpoints("x1", "x2", f"10.{net_id}.0.3", f"10.{net_id}.1.3")
                 for _ in range(self.cross_flows)]
        net.pm.reset()
        if subflows > 1:
            mp = mine[0]
            net.pm.expand("h1", (src, mp.client_port), (dst, mp.server_port), subflows,
                          paths=None if self.case == "shared" else [self.topo.path_addresses(1)])
        pids = {h: net.fabric.pid(h) for h in ("h1", "x1")}
        before = read_dev_bytes(pids["h1"])
        mib_before = {h: read_snmp(pid) for h, pid in pids.items()}
        line_before = net.delay_line_snapshot()
        outcomes = net.driver.run([*mine, *cross], True, time_s, logdir / f"{self.case}-{mine[0].index}",
                                  warmup_s=warmup_s, bind_servers=False)
        after = read_dev_bytes(pids["h1"])
        sent = tuple(after[f"h1-eth{p}"][1] - before[f"h1-eth{p}"][1] for p in (0, 1))
        return TwoPathResult(self.case, label or cc,
                             sum(o.goodput_mbps for o in outcomes[:connections]),
                             [o.goodput_mbps for o in outcomes[connections:]], sent,
                             [o.error for o in outcomes if o.error],
                             {h: _retransmitted_pct(mib_before[h], read_snmp(pid)) for h, pid in pids.items()},
                             stats_delta(line_before, net.delay_line_snapshot()) if line_before else {})


def jittered_access(jitter_ms: float) -> LinkParams:
    """Access links with `jitter_ms` of one-way delay, give or take
    `jitter_ms` (uniform, never reordering): what takes the drop-tail
    queue's phase effect out of the shared case (docs/congestion-control.md). 0: exact timing."""
    return replace(ACCESS, delay_ms=jitter_ms, jitter_ms=jitter_ms)


def _retransmitted_pct(before: dict[str, int], after: dict[str, int]) -> float:
    delta = counter_delta(before, after)
    sent = delta.get("TcpOutSegs", 0)
    return round(100.0 * delta.get("TcpRetransSegs", 0) / sent, 3) if sent else float("nan")
