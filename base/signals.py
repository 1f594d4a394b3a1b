"""Signals held back while something must not be cut short."""
from __future__ import annotations

import contextlib
import signal
import threading

# What stops an experiment: Ctrl-C, and a supervisor's or a closing
# terminal's request (harness/cli.py turns the last two into KeyboardInterrupt).
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


@contextlib.contextmanager
def deferred(signals=STOP_SIGNALS):
    """Hold `signals` back inside the block and deliver the first that came
    to the handler that was there before, once the block has ended. Outside
    the main thread, where Python cannot set handlers, nothing is held."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    arrived: list[int] = []
    previous = {s: signal.signal(s, lambda signum, _frame: arrived.append(signum)) for s in signals}
    try:
        yield
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)
    if arrived:
        handler = previous[arrived[0]]
        if handler is signal.SIG_DFL:
            signal.raise_signal(arrived[0])     # what would have happened then happens now
        elif callable(handler):
            handler(arrived[0], None)
