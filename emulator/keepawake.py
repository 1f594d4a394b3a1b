"""Keep a VM's vCPUs from idling while a rate is measured.

Measured on this platform (Firecracker VM, 2 vCPUs, a busy host): an idle
vCPU halts, and the host takes up to tens of ms to run it again when a
timer or an interrupt needs it (select() with a 10 ms timeout: p99 8-52 ms
late). Packet forwarding between namespaces then stalls: one TCP flow through
a 20 Mb/s shaped router got 8-17 Mb/s in 8 tries; with one busy loop per CPU
at SCHED_IDLE priority it got the full rate in 3 of 3.

A SCHED_IDLE loop runs only when nothing else wants the CPU, so it takes no
time from real work, but it does show up as busy CPU in /proc/stat: use it
only where rates and delays, not the CPU, are being measured (`wifi3g` and the
rate and delay tests).
"""
from __future__ import annotations

import os
import sys

from base.procs import ProcessTracker

_LOOP = ("import os\n"
         "os.sched_setscheduler(0, os.SCHED_IDLE, os.sched_param(0))\n"
         "while True:\n"
         "    pass\n")


class KeepAwake:
    """`with KeepAwake():` one lowest-priority busy loop per CPU, stopped by PID."""

    def __init__(self, cpus: int | None = None):
        self.cpus = cpus or os.cpu_count() or 1
        self.procs = ProcessTracker()

    def start(self) -> None:
        for i in range(self.cpus):
            self.procs.spawn(f"keep-awake {i}", [sys.executable, "-c", _LOOP])

    def stop(self) -> None:
        self.procs.stop_all()

    def __enter__(self) -> "KeepAwake":
        self.start()
        return self

    def __exit__(self, *exc) -> None:
        self.stop()
