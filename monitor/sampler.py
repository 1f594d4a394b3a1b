"""The sampling thread every monitor runs on: a fixed cadence, its own CPU
time counted, failures counted and the first few kept."""
from __future__ import annotations

import csv
import math
import threading
import time
from pathlib import Path
from typing import Iterable


MAX_ERRORS_KEPT = 10   # a failing sampler keeps the first few messages, counts the rest


# --- the sampling thread ------------------------------------------------------

class Sampler:
    """A daemon thread calling `_sample()` every `interval_s` seconds.

    start() opens what the monitor needs (sockets) and starts the thread;
    stop() joins it and closes them. A sample that raises is counted in
    `errors` (reported in the summary) and the next one is tried: a monitor
    must not end a run, and it must not fail unseen either.
    """

    thread_name = "monitor"

    def _init_sampler(self, interval_s: float) -> None:
        if not interval_s > 0:
            raise ValueError(f"interval_s={interval_s}: must be positive")
        self.interval_s = interval_s
        self.cpu_s = 0.0          # CPU time of the thread plus open(), seconds
        self.wall_s = 0.0         # from start() to stop()
        self.errors: list[str] = []
        self.error_count = 0
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._t0 = 0.0
        self._started = 0.0
        self._thread_cpu_s = 0.0

    # hooks for subclasses
    def open(self) -> None:
        """Acquire what sampling needs (e.g. sockets); start() calls it."""

    def close(self) -> None:
        """Release it; stop() calls it. Idempotent."""

    def _reset(self) -> None:
        """Forget the previous run's samples."""

    def _begin(self) -> None:
        """First thing the thread does (e.g. a reference reading)."""

    def _sample(self) -> None:
        raise NotImplementedError

    # lifecycle
    def start(self, t0: float | None = None) -> None:
        """Start sampling. `t0` (a time.monotonic() value) lets several
        monitors share one time origin."""
        if self._thread is not None:
            raise RuntimeError(f"{self.thread_name} is already running")
        self._reset()
        self.errors, self.error_count, self._thread_cpu_s = [], 0, 0.0
        c0 = time.thread_time()
        self.open()
        self.cpu_s = time.thread_time() - c0      # set-up counts as cost too
        self._t0 = time.monotonic() if t0 is None else t0
        self._started = time.monotonic()
        self._stop.clear()
        self._thread = threading.Thread(target=self._loop, name=self.thread_name, daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        try:
            if self._thread:
                self._thread.join(timeout=5)
                self.wall_s = time.monotonic() - self._started
                self.cpu_s += self._thread_cpu_s
                self._thread = None
        finally:
            self.close()

    def now(self) -> float:
        """Seconds since the time origin."""
        return time.monotonic() - self._t0

    def _loop(self) -> None:
        c0 = time.thread_time()
        try:
            try:
                self._begin()
            except Exception as exc:
                self._error(exc)
            n = 1
            while not self._stop.wait(max(0.0, self._t0 + n * self.interval_s - time.monotonic())):
                try:
                    self._sample()
                except Exception as exc:
                    self._error(exc)
                # The next slot after now: a late sample skips slots rather
                # than bunching the following ones together.
                n = max(n + 1, math.floor(self.now() / self.interval_s) + 1)
        finally:
            self._thread_cpu_s = time.thread_time() - c0

    def _error(self, exc: Exception) -> None:
        self.error_count += 1
        if len(self.errors) < MAX_ERRORS_KEPT:
            self.errors.append(f"t={self.now():.1f}: {type(exc).__name__}: {exc}")


def write_rows(path: Path, header: list[str], rows: Iterable[list]) -> None:
    """A monitor's samples as CSV: a header line, then a row per sample."""
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(header)
        w.writerows(rows)
