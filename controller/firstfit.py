"""Hedera's Global First Fit (Al-Fares et al., NSDI 2010), as the paper's
Fig. 13 compares MPTCP against it (Raiciu et al., SIGCOMM 2011, §4.4): a
central scheduler measures the flows and places every flow above a
threshold (10 % of the link rate) on the first of its shortest paths whose
links all have room for it; the other flows stay where ECMP put them.

This module is the decision only: no OpenFlow, no clock. The controller
feeds it each round's measured flow rates and the candidate paths, and
carries out the moves it returns by re-pointing the flow's entries (so it
can be tested on numbers alone). A link is one switch port's egress,
(switch, out_port), the unit a path is made of (controller/paths.py).

What the scheduler keeps between rounds, as Hedera's does:
  * a flow it placed keeps its path, and the path keeps the flow's rate
    reserved on every link, updated each round to what the flow sends;
  * a flow that is gone (not in the round's measurements) frees its links;
  * a flow newly above the threshold is placed on the first candidate path
    (in the order given) on which every link's reservations plus its rate
    stay within the link's capacity. If no path has room, it stays where it
    is and is tried again next round. Flows that cross the threshold in the
    same round are placed largest first (ties by key, so a round is
    repeatable); Hedera takes them as its measurements find them.
Flows below the threshold are not reserved for: Hedera leaves small flows
to ECMP and does not count them.

What a large flow reserves is its *demand*, not its measured rate: two flows
sharing a link each measure half of it and would fit together on it again.
Hedera estimates the rate each large flow would get if only the hosts'
interfaces limited it (`estimate_demands`, its demand estimator: senders
share their interface equally among their flows, receivers cap what they
take, repeated until nothing changes). With one flow per host pair, as in a
permutation, every demand is the link rate.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:     # a type only: the decision needs neither Mininet nor the topology
    from controller.paths import Path

Link = tuple[str, int]          # (switch, out_port): one direction of a link
FlowKey = tuple                 # the controller's match of a flow (its 5-tuple)
LARGE_SHARE = 0.10              # Hedera's threshold: 10 % of the link rate


def links_of(path: Path) -> list[Link]:
    return [(switch, out_port) for switch, _in_port, out_port in path]


def estimate_demands(ends: dict[FlowKey, tuple[str, str]], capacity_bps: float,
                     rounds: int = 100) -> dict[FlowKey, float]:
    """Hedera's demand estimator (Al-Fares et al. 2010, §4.2): each flow's
    max-min fair rate when only its sender's and receiver's interfaces (all
    at `capacity_bps`) limit it. `ends`: flow -> (sender, receiver)."""
    demand = {f: 0.0 for f in ends}
    receiver_limited: set[FlowKey] = set()
    by_sender: dict[str, list[FlowKey]] = {}
    by_receiver: dict[str, list[FlowKey]] = {}
    for f, (src, dst) in sorted(ends.items()):
        by_sender.setdefault(src, []).append(f)
        by_receiver.setdefault(dst, []).append(f)
    for _ in range(rounds):
        before = dict(demand)
        # Senders: what the receiver-limited flows do not take, shared equally.
        for flows in by_sender.values():
            fixed = sum(demand[f] for f in flows if f in receiver_limited)
            free = [f for f in flows if f not in receiver_limited]
            for f in free:
                demand[f] = max(0.0, capacity_bps - fixed) / len(free)
        # Receivers over their interface: flows above the fair share are cut
        # to it (the share grows by what the smaller flows leave).
        for flows in by_receiver.values():
            if sum(demand[f] for f in flows) <= capacity_bps:
                continue
            big, left = list(flows), capacity_bps
            while True:
                share = left / len(big)
                small = [f for f in big if demand[f] < share]
                if not small:
                    break
                left -= sum(demand[f] for f in small)
                big = [f for f in big if f not in small]
            for f in big:
                demand[f] = share
                receiver_limited.add(f)
        if all(abs(demand[f] - before[f]) <= 1e-9 * capacity_bps for f in demand):
            break
    return demand


@dataclass
class Move:
    """A flow to re-point: from `old` (None: where ECMP put it) to `new`."""
    flow: FlowKey
    old: Path | None
    new: Path
    rate_bps: float


@dataclass
class FirstFit:
    capacity_bps: float                   # every link's rate
    large_share: float = LARGE_SHARE
    placed: dict[FlowKey, Path] = field(default_factory=dict)
    rates: dict[FlowKey, float] = field(default_factory=dict)

    def __post_init__(self):
        if not self.capacity_bps > 0:
            raise ValueError(f"capacity {self.capacity_bps}: a link rate must be positive")
        if not 0 < self.large_share <= 1:
            raise ValueError(f"large_share {self.large_share}: a share within (0, 1]")

    @property
    def threshold_bps(self) -> float:
        return self.large_share * self.capacity_bps

    def reserved(self) -> dict[Link, float]:
        """Each link's reservations: the rates of the flows placed on it."""
        out: dict[Link, float] = {}
        for flow, path in self.placed.items():
            for link in links_of(path):
                out[link] = out.get(link, 0.0) + self.rates.get(flow, 0.0)
        return out

    def round(self, rates_bps: dict[FlowKey, float], candidates: dict[FlowKey, list[Path]],
              current: dict[FlowKey, Path | None] | None = None,
              demands_bps: dict[FlowKey, float] | None = None) -> list[Move]:
        """One scheduling round: the measured rate of every live flow, each
        flow's candidate paths (in the order first fit tries them) and,
        optionally, the path each flow is on now and each flow's demand
        (`estimate_demands`; without, the measured rate is the demand).
        A flow is large by its measured rate and reserves its demand.
        Returns the moves to make, in the order they were decided."""
        current = current or {}
        if demands_bps is not None:
            rates_bps, measured = {f: demands_bps.get(f, r) for f, r in rates_bps.items()}, rates_bps
        else:
            measured = rates_bps
        for gone in [f for f in self.placed if f not in rates_bps]:
            del self.placed[gone]
        self.rates = {f: r for f, r in rates_bps.items() if f in self.placed}
        reserved = self.reserved()
        moves = []
        large = sorted((f for f, r in measured.items()
                        if r >= self.threshold_bps and f not in self.placed),
                       key=lambda f: (-rates_bps[f], f))
        for flow in large:
            rate = rates_bps[flow]
            for path in candidates.get(flow, []):
                if all(reserved.get(link, 0.0) + rate <= self.capacity_bps for link in links_of(path)):
                    for link in links_of(path):
                        reserved[link] = reserved.get(link, 0.0) + rate
                    self.placed[flow] = path
                    self.rates[flow] = rate
                    old = current.get(flow)
                    if old != path:
                        moves.append(Move(flow, old, path, rate))
                    break
        return moves
