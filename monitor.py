"""Monitors that run beside the traffic.

`CpuMonitor` samples the whole machine's CPU from /proc/stat: one file read
per interval in a thread, so it costs next to nothing. Samples are written to
`cpu.csv` (percent of each core busy, and machine-wide user/system/softirq
shares) and summarised in run.json.
"""
from __future__ import annotations

import csv
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

# A run is "cpu_saturated" when every core is above SATURATED_PCT busy in more
# than SATURATED_SHARE of the samples: past that, the emulator, not the
# network, decides the results (seeds/000).
SATURATED_PCT = 90.0
SATURATED_SHARE = 0.10


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


def _busy_share(before: list[int], after: list[int]) -> tuple[float, float, float, float]:
    """(busy, user, system, softirq) percent between two counter snapshots.

    Fields: user nice system idle iowait irq softirq steal guest guest_nice;
    guest time is already counted in user, so it is left out of the total.
    """
    delta = [a - b for a, b in zip(after[:8], before[:8])]
    total = sum(delta) or 1
    idle = delta[3] + delta[4]
    user = delta[0] + delta[1]
    return (100.0 * (total - idle) / total, 100.0 * user / total,
            100.0 * (delta[2] + delta[5]) / total, 100.0 * delta[6] / total)


@dataclass
class CpuMonitor:
    interval_s: float = 1.0
    samples: list[CpuSample] = field(default_factory=list)

    def __post_init__(self):
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        self.samples = []
        self._stop.clear()
        self._thread = threading.Thread(target=self._loop, name="cpu-monitor", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread:
            self._thread.join(timeout=5)
            self._thread = None

    def _loop(self) -> None:
        t0 = time.monotonic()
        prev = read_proc_stat()
        while not self._stop.wait(self.interval_s):
            cur = read_proc_stat()
            cores = sorted(n for n in cur if n != "cpu")
            _, user, system, softirq = _busy_share(prev["cpu"], cur["cpu"])
            self.samples.append(CpuSample(
                t=round(time.monotonic() - t0, 3),
                cores_busy_pct=[round(_busy_share(prev[c], cur[c])[0], 1) for c in cores],
                user_pct=round(user, 1), system_pct=round(system, 1), softirq_pct=round(softirq, 1)))
            prev = cur

    # -- summaries ---------------------------------------------------------
    def mean_pct(self) -> float | None:
        if not self.samples:
            return None
        return round(sum(s.busy_pct for s in self.samples) / len(self.samples), 1)

    def saturated(self) -> bool:
        if not self.samples:
            return False
        hot = sum(1 for s in self.samples if min(s.cores_busy_pct) > SATURATED_PCT)
        return hot > SATURATED_SHARE * len(self.samples)

    def write_csv(self, path: Path) -> None:
        with open(path, "w", newline="") as f:
            w = csv.writer(f)
            n = len(self.samples[0].cores_busy_pct) if self.samples else 0
            w.writerow(["t_s", "busy_pct", "user_pct", "system_pct", "softirq_pct",
                        *(f"cpu{i}_busy_pct" for i in range(n))])
            for s in self.samples:
                w.writerow([s.t, round(s.busy_pct, 1), s.user_pct, s.system_pct, s.softirq_pct,
                            *s.cores_busy_pct])
