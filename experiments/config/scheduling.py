"""The scheduling experiment's config (paper Fig. 13, §4.4): closed-loop
flows of VL2-like sizes on FatTree(k) under a permutation, single-path TCP
over the controller's hash (ECMP), MPTCP over the same hash, and single-path
TCP with Hedera's first fit run at several intervals."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from base import records
from base.errors import ConfigError
from base.flowsizes import MAX_FILE_BYTES, EmpiricalSizes
from base.options import again, names, option
from experiments.config.common import LongFlowSettings, mptcp_subflows
from experiments.config.fattree import MAX_SCHEDULE_S, MIN_SCHEDULE_S

SCHEDULING_SCHEMES = ("tcp", "mptcp", "firstfit")
PAPER_INTERVALS_S = (5.0, 1.0, 0.5, 0.1)        # Fig. 13's first fit intervals
# The flows' sizes at the data centre's rate (the file says what it is) and
# that rate: sizes are scaled by link rate / DATACENTRE_MBPS, so a flow lasts
# here as long as it would there, and the scheduler's intervals keep their
# meaning against the flows' lifetimes. At 1 Gb/s "even large flows
# complete in around a second" (paper §4.4).
VL2_SIZES_FILE = Path(__file__).with_name("vl2_flow_sizes.cdf")
VL2_MAX_BYTES = 1_000_000_000
DATACENTRE_MBPS = 1000.0
# Flows below this size (at the data centre's rate) are left out of the
# closed loop: in the VL2 distribution they are 95 % of the flows and 0.5 %
# of the bytes, and at 1 Gb/s each lasts microseconds to a few ms. Here each
# would cost a connection set-up through the reactive controller and a few
# round trips of this emulation's milliseconds, turning a measure of how
# well long flows are placed into one of connection rate.
MIN_FLOW_BYTES = 1_000_000
# A sweep's first-fit networks each need the controller started with its
# interval; the counted window needs several of the longest intervals.
SCHEDULING_MIN_TIME_S = 10.0
# --dilation stretches the experiment's time: flows F times longer and first
# fit F times less often. What stays: how often the scheduler runs against
# how long a flow lives (the paper's point in Fig. 13). What changes: a flow
# lives F times more round trips. At 1 Mb/s a 1 Gb/s flow of a second lives
# a handful of this emulation's round trips (100-packet queues hold 1.2 s),
# mostly in slow start, where MPTCP's joins have not yet helped; at 1 Gb/s
# it lives thousands (docs/experiments/scheduling.md).
MAX_DILATION = 100.0


def vl2_sizes() -> EmpiricalSizes:
    return EmpiricalSizes.from_file(VL2_SIZES_FILE, VL2_MAX_BYTES)


SCHEDULING_FABRIC = "openflow-reactive"


@dataclass(frozen=True)
class SchedulingPoint:
    """One run: a scheme, and for first fit its interval."""
    scheme: str
    interval_s: float | None = None
    fabric: str = SCHEDULING_FABRIC

    @property
    def label(self) -> str:
        if self.scheme == "firstfit":
            return f"firstfit-{self.interval_s:g}s"
        return self.scheme + ("" if self.fabric == SCHEDULING_FABRIC else f"-{self.fabric}")

    def run_dir(self, results: Path, k: int, dilation: float = 1.0) -> Path:
        """Dilated runs go to scheduling<k>-x<F>/: a figure of their own,
        never mixed with runs at the paper's time."""
        return records.scheduling_run(results, k, self.label, dilation)


@dataclass(frozen=True)
class SchedulingConfig(LongFlowSettings):
    """Paper Fig. 13: Hedera's first fit at several intervals against TCP
    over ECMP and MPTCP, closed-loop flows of VL2-like sizes on FatTree(k).
    The fabric is openflow-reactive by default: first fit is its
    controller's, and TCP and MPTCP run over the same controller's hash to
    compare with it; they may run on another fabric (their records are
    labelled with it)."""
    # Its flows are the transfer driver's; the capacity guard does not judge its runs.
    HIDDEN_OPTIONS = ("driver", "force")
    k: int = option(4, flag="--k", metavar="K", help="FatTree arity, 4, 6 or 8")
    schemes: tuple[str, ...] = names(SCHEDULING_SCHEMES, flag="--schemes", what="scheme")
    intervals_s: tuple[float, ...] = option(PAPER_INTERVALS_S, flag="--schedule-interval",
                                            old=("--intervals",), metavar="S,...",
                                            help="first fit's intervals in seconds (the paper's)")
    subflows: int = mptcp_subflows(8, "MPTCP's subflows")     # Fig. 13's
    min_flow_bytes: int = MIN_FLOW_BYTES
    time_s: float = again(LongFlowSettings, "time_s", 60.0, low=SCHEDULING_MIN_TIME_S)
    fabric: str = again(LongFlowSettings, "fabric", SCHEDULING_FABRIC)
    dilation: float = option(1.0, flag="--dilation", metavar="F", low=1.0, high=MAX_DILATION,
                             help="stretch time F times: flows F times longer and first fit F times "
                                  "less often, so a flow lives F times more round trips")

    @property
    def size_scale(self) -> float:
        return self.link.bw_mbps / DATACENTRE_MBPS * self.dilation

    def schedule_interval_s(self, interval_s: float) -> float:
        """How often the controller runs first fit for the paper's `interval_s`."""
        return interval_s * self.dilation

    def sizes(self) -> EmpiricalSizes:
        """The closed loop's flow sizes at this link rate."""
        return vl2_sizes().above(self.min_flow_bytes).scaled(self.size_scale)

    def validate(self) -> None:
        if self.k not in (4, 6, 8):
            raise ConfigError(f"--k {self.k}: the scheduling experiment runs FatTree(4), (6) or (8)")
        self.check_settings()
        if "firstfit" in self.schemes:
            if not self.intervals_s:
                raise ConfigError("--schedule-interval: give at least one first fit interval")
            for t in self.intervals_s:
                if not MIN_SCHEDULE_S <= self.schedule_interval_s(t) <= MAX_SCHEDULE_S:
                    times = "" if self.dilation == 1 else f" (times --dilation {self.dilation:g})"
                    raise ConfigError(f"--schedule-interval {t:g}: first fit runs every "
                                      f"{MIN_SCHEDULE_S:g}..{MAX_SCHEDULE_S:g} s{times}")
        if "firstfit" in self.schemes and self.fabric != SCHEDULING_FABRIC:
            raise ConfigError(f"--fabric {self.fabric}: first fit runs on {SCHEDULING_FABRIC} "
                              "(it is its controller's); give --schemes tcp,mptcp for another fabric")
        largest = self.sizes().points[-1][0]
        if largest > MAX_FILE_BYTES:
            dilated = "" if self.dilation == 1 else f" --dilation {self.dilation:g}"
            raise ConfigError(f"--bw {self.link.bw_mbps:g}{dilated}: flows would reach {largest} bytes; "
                              f"at most {MAX_FILE_BYTES}")

    def points(self) -> list[SchedulingPoint]:
        """TCP and MPTCP first (one network, no scheduler), then first fit
        from the longest interval down (a network each: the controller
        starts with its interval)."""
        out = [SchedulingPoint(s, fabric=self.fabric) for s in ("tcp", "mptcp") if s in self.schemes]
        if "firstfit" in self.schemes:
            out += [SchedulingPoint("firstfit", t) for t in sorted(set(self.intervals_s), reverse=True)]
        return out
