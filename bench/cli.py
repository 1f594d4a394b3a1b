"""What bench scripts' command lines share: the options of a run at the
TwoPaths shared bottleneck, and how a long benchmark's main() is run."""
from __future__ import annotations

import argparse
import sys
import time
from typing import Callable, NoReturn


def add_shared_bottleneck_options(ap: argparse.ArgumentParser) -> None:
    """--queue, --time, --warmup and --cc of an MPTCP-2 run against two
    single-path flows at the shared bottleneck."""
    ap.add_argument("--queue", type=int, default=25)
    ap.add_argument("--time", type=float, default=30.0)
    ap.add_argument("--warmup", type=float, default=5.0)
    ap.add_argument("--cc", default="reno", help="the MPTCP connection's (reno)")


def exit_timed(main: Callable[[], int], interrupted: str) -> NoReturn:
    """Exit with main()'s status, or 130 on Ctrl-C after printing
    `interrupted`; either way print the benchmark's wall time first."""
    started = time.monotonic()
    try:
        status = main()
    except KeyboardInterrupt:
        print(interrupted, file=sys.stderr)
        status = 130
    print(f"benchmark wall time {time.monotonic() - started:.0f} s")
    sys.exit(status)
