"""The machine's CPU from /proc/stat -> cpu.csv; the saturation verdict."""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import NamedTuple

from monitor.sampler import Sampler, write_rows


# A run is "cpu_saturated" when every core is above SATURATED_PCT busy in more
# than SATURATED_SHARE of the counted window's samples: past that, the
# emulator, not the network, decides the results (the CS244 '13 reproduction).
SATURATED_PCT = 90.0
SATURATED_SHARE = 0.10

# --- CPU ------------------------------------------------------------------------

@dataclass
class CpuSample:
    t: float                  # seconds since the monitor started
    cores_busy_pct: list[float]
    user_pct: float           # machine-wide shares of all cores' time
    system_pct: float
    softirq_pct: float

    @property
    def busy_pct(self) -> float:
        return sum(self.cores_busy_pct) / len(self.cores_busy_pct)


def read_proc_stat(path: str = "/proc/stat") -> dict[str, list[int]]:
    """Jiffy counters of every `cpuN` line (and the `cpu` total)."""
    counters = {}
    with open(path) as f:
        for line in f:
            if not line.startswith("cpu"):
                break
            name, *values = line.split()
            counters[name] = [int(v) for v in values]
    return counters


class CpuTimes(NamedTuple):
    """Jiffies one `cpu` line of /proc/stat advanced between two snapshots.
    Only the first 8 fields: guest time is already counted in user."""
    user: int
    nice: int
    system: int
    idle: int
    iowait: int
    irq: int
    softirq: int
    steal: int

    @classmethod
    def between(cls, before: list[int], after: list[int]) -> "CpuTimes":
        return cls(*(a - b for a, b in zip(after[:8], before[:8])))

    @property
    def total(self) -> int:
        return sum(self)

    @property
    def busy(self) -> int:
        """All but idle and iowait (steal included: the core was not ours to idle)."""
        return self.total - self.idle - self.iowait

    def pct(self, jiffies: int) -> float:
        """`jiffies` as a percent of all the time that passed."""
        return 100.0 * jiffies / (self.total or 1)


def _busy_share(before: list[int], after: list[int]) -> tuple[float, float, float, float]:
    """(busy, user, system, softirq) percent between two counter snapshots."""
    d = CpuTimes.between(before, after)
    return d.pct(d.busy), d.pct(d.user + d.nice), d.pct(d.system + d.irq), d.pct(d.softirq)


@dataclass
class CpuMonitor(Sampler):
    """The whole machine's CPU: one /proc/stat read per interval."""
    interval_s: float = 1.0
    samples: list[CpuSample] = field(default_factory=list)

    thread_name = "cpu-monitor"

    def __post_init__(self):
        self._init_sampler(self.interval_s)
        self._prev: dict[str, list[int]] = {}

    def _reset(self) -> None:
        self.samples = []

    def _begin(self) -> None:
        self._prev = read_proc_stat()

    def _sample(self) -> None:
        cur, prev = read_proc_stat(), self._prev
        cores = sorted(n for n in cur if n != "cpu")
        _, user, system, softirq = _busy_share(prev["cpu"], cur["cpu"])
        self.samples.append(CpuSample(
            t=round(self.now(), 3),
            cores_busy_pct=[round(_busy_share(prev[c], cur[c])[0], 1) for c in cores],
            user_pct=round(user, 1), system_pct=round(system, 1), softirq_pct=round(softirq, 1)))
        self._prev = cur

    # -- summaries ---------------------------------------------------------
    def mean_pct(self) -> float | None:
        if not self.samples:
            return None
        return round(sum(s.busy_pct for s in self.samples) / len(self.samples), 1)

    def saturated(self, window: tuple[float, float] | None = None) -> bool:
        """`window`: (from_s, to_s) since the traffic started, the counted
        window; outside it the clients' start and their reports can keep
        every core busy for seconds without touching what is counted."""
        samples = [s for s in self.samples if window is None or window[0] <= s.t <= window[1]]
        if not samples:
            return False
        hot = sum(1 for s in samples if min(s.cores_busy_pct) > SATURATED_PCT)
        return hot > SATURATED_SHARE * len(samples)

    def write_csv(self, path: Path) -> None:
        n = len(self.samples[0].cores_busy_pct) if self.samples else 0
        write_rows(path, ["t_s", "busy_pct", "user_pct", "system_pct", "softirq_pct",
                          *(f"cpu{i}_busy_pct" for i in range(n))],
                   ([s.t, round(s.busy_pct, 1), s.user_pct, s.system_pct, s.softirq_pct, *s.cores_busy_pct]
                    for s in self.samples))
