"""What the controller knows of the TCP flows it routed, for first fit
(controller/firstfit.py decides; this keeps the measurements it decides
on): each flow's path from its first switch, and the byte counts of its
entry there as they changed. Times are passed in (monotonic seconds), so
it can be tested on numbers alone.

A flow is forgotten once nothing has been heard of it for `forget_after_s`:
no routing and no growing byte count. Its entry has then gone idle at the
switch (the controller's idle timeout) and a packet of it would come back
as a packet-in and be routed afresh. Without forgetting, a closed loop
(experiments/scheduling.py) adds flows with every transfer and every round
walks them all: 575 rounds at 0.1 s had grown a round's decision to 16 ms.
Forgetting holds it to about the flows of the last idle timeout (30 s): at
most 814 in a first-fit run at 0.1 s (`run_mptcp.sh scheduling --schemes
firstfit --schedule-interval 0.1 --time 60 --bw 1`, 581 rounds, longest decision
8.6 ms).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from controller.paths import Path

FlowKey = tuple     # (src, dst, proto, sport, dport), as the controller matches it


@dataclass
class _Flow:
    path: Path
    heard: float                                   # routed, or its count last grew
    counts: list[tuple[float, int]] = field(default_factory=list)   # the newest two (time, bytes)


class FlowCounts:
    def __init__(self, forget_after_s: float):
        self.forget_after_s = forget_after_s
        self._flows: dict[FlowKey, _Flow] = {}

    def __len__(self) -> int:
        return len(self._flows)

    def routed(self, key: FlowKey, path: Path, now: float) -> None:
        """The flow was (re-)routed from its first switch: its counts start afresh."""
        self._flows[key] = _Flow(path, now)

    def moved(self, key: FlowKey, path: Path) -> None:
        """First fit moved the flow; its entry, and so its counts, stay."""
        if key in self._flows:
            self._flows[key].path = path

    def path(self, key: FlowKey) -> Path | None:
        flow = self._flows.get(key)
        return flow.path if flow else None

    def count(self, key: FlowKey, now: float, byte_count: int) -> None:
        """A byte count of the flow's entry at its first switch; kept only if it grew."""
        flow = self._flows.get(key)
        if flow is None:
            return
        if not flow.counts or byte_count > flow.counts[-1][1]:
            flow.counts.append((now, byte_count))
            del flow.counts[:-2]
            flow.heard = now

    def rates(self, live_after: float) -> dict[FlowKey, float]:
        """Bits per second between each flow's newest two counts, for the
        flows whose newest count is from `live_after` on."""
        out = {}
        for key, flow in self._flows.items():
            if len(flow.counts) == 2:
                (t0, b0), (t1, b1) = flow.counts
                if t1 > t0 and t1 >= live_after:
                    out[key] = (b1 - b0) * 8 / (t1 - t0)
        return out

    def first_switches(self) -> set[str]:
        return {flow.path[0][0] for flow in self._flows.values()}

    def forget_quiet(self, now: float) -> int:
        """Forget the flows not heard of for forget_after_s; how many."""
        quiet = [k for k, f in self._flows.items() if now - f.heard > self.forget_after_s]
        for key in quiet:
            del self._flows[key]
        return len(quiet)
