"""Signals held back while a network is torn down (base/signals.py,
Network.close): a Ctrl-C, SIGTERM or SIGHUP then waits until the teardown is
done and takes effect after it, never lost and never cutting it short."""
from __future__ import annotations

import os
import signal
import threading

import pytest

from base.signals import deferred
from tests.conftest import needs_root


def test_a_ctrl_c_inside_waits_for_the_block_and_is_raised_after_it():
    done = []
    with pytest.raises(KeyboardInterrupt):
        with deferred():
            os.kill(os.getpid(), signal.SIGINT)
            done.append("the block went on")
    assert done == ["the block went on"]
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler


def test_the_first_signal_goes_to_the_handler_that_was_there_before():
    heard = []
    previous = signal.signal(signal.SIGTERM, lambda signum, _frame: heard.append(signum))
    try:
        with deferred():
            os.kill(os.getpid(), signal.SIGTERM)
            os.kill(os.getpid(), signal.SIGTERM)
            assert heard == []
        assert heard == [signal.SIGTERM]
    finally:
        signal.signal(signal.SIGTERM, previous)


def test_nothing_happens_without_a_signal_and_outside_the_main_thread():
    with deferred():
        pass
    seen = []

    def in_thread():
        with deferred():
            seen.append(signal.getsignal(signal.SIGINT))
    t = threading.Thread(target=in_thread)
    t.start()
    t.join()
    assert seen == [signal.default_int_handler]


@needs_root
def test_a_ctrl_c_during_a_networks_teardown_is_raised_after_it(no_leftovers):
    """The Ctrl-C arrives as the fabric is about to be stopped: the fabric
    is stopped all the same, nothing is left, and the interrupt is raised."""
    from dctopo import TwoPaths
    from emulator.network import Network
    from experiments.config import LinkParams

    net = Network(TwoPaths(bottleneck=LinkParams(bw_mbps=10)), LinkParams(), "reno")
    net.start()
    stop = net.fabric.stop
    stopped = []

    def interrupted_stop():
        os.kill(os.getpid(), signal.SIGINT)
        stop()
        stopped.append(True)
    net.fabric.stop = interrupted_stop
    with pytest.raises(KeyboardInterrupt):
        net.close()
    assert stopped == [True]
