"""Teardown: every step's undo is registered on an ExitStack the moment the step
is taken, so teardown runs in reverse on success, error, SIGINT and SIGTERM
alike. Its steps are named (the run's outcome lists what was cleaned and what
was left) and never stop each other.

SIGINT, SIGTERM and SIGHUP become an exception (Interrupted) that unwinds the
stacks, except while a teardown runs: a second Ctrl-C must not cut it short,
so the signal is held until it ends and the run reports itself interrupted.
An Interrupted that Python drops (raised in a finalizer) is raised again
where the run next reports its progress (Signals.check).
"""
from __future__ import annotations

import contextlib
import signal
import sys
from collections.abc import Callable, Iterator
from typing import Any

from cnfperf import SystemFailure


class Interrupted(Exception):
    def __init__(self, signum: int):
        super().__init__(f"interrupted by {signal.Signals(signum).name}")
        self.signum = signum


class Signals:
    """The run's signal handlers, installed for its length."""

    def __init__(self) -> None:
        self.held: int | None = None
        self.pending: Interrupted | None = None   # the last one a handler raised
        self._holding = 0
        self._saved: dict[int, Any] = {}

    def install(self) -> None:
        for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
            self._saved[sig] = signal.signal(sig, self._handle)

    def restore(self) -> None:
        for sig, handler in self._saved.items():
            signal.signal(sig, handler)

    def _handle(self, signum: int, _frame: Any) -> None:
        if self._holding:
            self.held = self.held or signum
            return
        self.pending = Interrupted(signum)
        raise self.pending

    def check(self) -> None:
        """The signal's Interrupted again, where the one its handler raised was
        dropped: Python prints and drops what a finalizer (a __del__ the
        garbage collector runs) raises, and a signal that lands in one would
        otherwise let the run measure on. Where the run reports its progress;
        not while a teardown holds signals, nor while that Interrupted is
        being handled."""
        exc = self.pending
        if exc is None or self._holding or sys.exc_info()[1] is exc:
            return
        raise exc

    @contextlib.contextmanager
    def holding(self) -> Iterator[None]:
        self._holding += 1
        try:
            yield
        finally:
            self._holding -= 1


class Teardown:
    """An ExitStack whose steps are named, never stop each other, and are recorded."""

    def __init__(self, signals: Signals):
        self.signals = signals
        self.stack = contextlib.ExitStack()
        self.cleaned: list[str] = []
        self.failed: list[str] = []

    def push(self, what: str | None, undo: Callable[[], Any]) -> None:
        """`what` names a resource for the report; None for housekeeping. An
        undo may say what it did instead: a str names what it removed (the
        kept switch, stopped at the run's end), False that it left the
        resource up on purpose (a switch kept for the next point): not listed."""
        def step() -> None:
            try:
                done = undo()
                name = done if isinstance(done, str) else what
                if name and done is not False:
                    self.cleaned.append(name)
            except Exception as e:  # every other step must still run
                self.failed.append(f"{what or undo}: {e}")
        self.stack.callback(step)

    def close(self) -> None:
        with self.signals.holding():
            self.stack.close()


def until_signal(what: str, start: Callable[[contextlib.ExitStack], object],
                 say: Callable[[str], None], stopping: str) -> int:
    """`start` (what it makes entered on the stack it is given), kept until
    SIGINT, SIGTERM or SIGHUP, then the stack closed with signals held;
    returns the signal's number. A failed start is one line (SystemFailure:
    `what` did not start), after the stack took everything down; so is a
    teardown that left something."""
    signals = Signals()
    signals.install()
    stack = contextlib.ExitStack()
    try:
        start(stack)
        while True:
            signal.pause()
    except Interrupted as e:
        say(stopping)
        return e.signum
    except Exception as e:      # what failed as it started: one line, all of it taken down
        raise SystemFailure(f"{what} did not start: {e}") from None
    finally:
        try:
            with signals.holding():
                stack.close()
        except Exception as e:
            raise SystemFailure(f"{what}'s teardown left something: {e}; `cnfperf cleanup` "
                                "removes the rest") from None
        finally:
            signals.restore()
