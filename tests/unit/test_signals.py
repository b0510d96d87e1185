"""A run's signal handlers (run/teardown.py, Signals): a signal becomes an
Interrupted that unwinds the run, is held while a teardown runs, and is raised
again where the run reports its progress when Python dropped the first one
(a finalizer's exception is printed and dropped, and the run measured on)."""
from __future__ import annotations

import gc
import os
import signal
import time

import pytest

from cnfperf.run.teardown import Interrupted, Signals


@pytest.fixture
def signals():
    s = Signals()
    s.install()
    yield s
    s.restore()


def _signal_self(until=lambda: False) -> None:
    """SIGTERM to this process; Python runs the handler at its next bytecode
    (an Interrupted ends the wait, `until` a held one's)."""
    os.kill(os.getpid(), signal.SIGTERM)
    deadline = time.monotonic() + 2
    while time.monotonic() < deadline and not until():
        time.sleep(0.001)


class Finalized:
    """What the garbage collector finalizes (a Popen, a file) while the signal lands."""
    def __del__(self):
        _signal_self()


def test_a_signal_interrupts_and_check_has_nothing_more(signals):
    with pytest.raises(Interrupted, match="SIGTERM") as raised:
        _signal_self()
    assert raised.value.signum == signal.SIGTERM
    try:
        raise raised.value
    except Interrupted:
        signals.check()     # being handled: not raised twice


@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")
def test_one_a_finalizer_dropped_is_raised_where_the_run_reports(signals):
    Finalized()
    gc.collect()     # the handler's Interrupted is raised in __del__, and dropped
    with pytest.raises(Interrupted, match="SIGTERM"):
        signals.check()


def test_a_teardown_holds_the_signal_and_check_waits_for_its_end(signals):
    with signals.holding():
        _signal_self(until=lambda: signals.held)
        signals.check()
    assert signals.held == signal.SIGTERM and signals.pending is None
    signals.check()     # held signals are the runner's to raise, at the sweep's end
