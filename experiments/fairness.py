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

Every flow, the Reno ones too, runs under `mptcpize` (one subflow is TCP
Reno on the wire); one network serves every run of a case, so runs of
different algorithms can be interleaved.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from dctopo import TwoPaths
from experiments.config import LinkParams
from emulator.network import Network
from emulator.traffic.common import CLIENT_PORT_BASE, SERVER_PORT_BASE, FlowEndpoints
from kernel.transport import read_dev_bytes

CASES = ("shared", "shift")


@dataclass
class TwoPathResult:
    case: str
    cc: str
    mptcp_mbps: float
    reno_mbps: list[float]          # each cross flow's goodput
    sent_bytes: tuple[int, int]     # what h1 sent on path 0 and on path 1
    errors: list[str] = field(default_factory=list)

    @property
    def ratio(self) -> float:
        """MPTCP's goodput over the mean Reno flow's."""
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
        return (f"{self.case} {self.cc}: MPTCP {self.mptcp_mbps:.2f} Mb/s, Reno {reno} Mb/s, {what}"
                + (f"  ERRORS {self.errors}" if self.errors else ""))


class TwoPathCase:
    """One network for one case; `run(cc)` measures one algorithm on it."""

    def __init__(self, case: str, bw_mbps: float = 10, queue_pkts: int = 100, cross_flows: int = 1):
        if case not in CASES:
            raise ValueError(f"unknown case {case!r}, expected one of {CASES}")
        self.case = case
        self.cross_path = 0 if case == "shared" else 1
        self.cross_flows = cross_flows
        self.topo = TwoPaths(bottleneck=LinkParams(bw_mbps=bw_mbps, queue_pkts=queue_pkts),
                             cross_path=self.cross_path)
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
        net = self.net
        net.set_cc("h1", cc)
        src, dst = self.topo.path_addresses(0)
        mp = self._endpoints("h1", "h2", src, dst)
        net_id = self.cross_path + 1
        cross = [self._endpoints("x1", "x2", f"10.{net_id}.0.3", f"10.{net_id}.1.3")
                 for _ in range(self.cross_flows)]
        net.pm.reset()
        net.pm.expand("h1", (src, mp.client_port), (dst, mp.server_port), 2,
                      paths=None if self.case == "shared" else [self.topo.path_addresses(1)])
        before = read_dev_bytes(net.fabric.pid("h1"))
        outcomes = net.driver.run([mp, *cross], True, time_s, logdir / f"{self.case}-{mp.index}",
                                  warmup_s=warmup_s, bind_servers=False)
        after = read_dev_bytes(net.fabric.pid("h1"))
        sent = tuple(after[f"h1-eth{p}"][1] - before[f"h1-eth{p}"][1] for p in (0, 1))
        return TwoPathResult(self.case, cc, outcomes[0].goodput_mbps,
                             [o.goodput_mbps for o in outcomes[1:]], sent,
                             [o.error for o in outcomes if o.error])
