"""What one namespace sends on each of its interfaces, second by second:
per-path throughput where each path has an interface of its own (a host
of dctopo.Provisioned or WiFi3G)."""
from __future__ import annotations

import time

from kernel.transport import read_dev_bytes
from monitor.sampler import Sampler


class InterfaceRates(Sampler):
    """Samples /proc/PID/net/dev every `interval_s`: `mbps()` gives each
    interface's transmitted Mb/s per interval (frames as the interface
    counts them, headers included)."""

    thread_name = "interface-rates"

    def __init__(self, ns_pid: int, interval_s: float = 1.0):
        self._init_sampler(interval_s)
        self.ns_pid = ns_pid
        self._last: dict[str, int] = {}
        self._last_t = 0.0
        self._series: dict[str, list[float]] = {}

    def _reset(self) -> None:
        self._last, self._series = {}, {}

    def _read(self) -> dict[str, int]:
        return {name: sent for name, (_, sent) in read_dev_bytes(self.ns_pid).items()}

    def _begin(self) -> None:
        self._last, self._last_t = self._read(), time.monotonic()
        self._series = {name: [] for name in self._last}

    def _sample(self) -> None:
        now, t = self._read(), time.monotonic()
        elapsed = max(t - self._last_t, 1e-6)
        for name, sent in now.items():
            self._series.setdefault(name, []).append(
                round((sent - self._last.get(name, sent)) * 8 / elapsed / 1e6, 4))
        self._last, self._last_t = now, t

    def mbps(self) -> dict[str, list[float]]:
        """interface -> Mb/s it sent in each interval since start()."""
        return {name: list(series) for name, series in self._series.items()}
