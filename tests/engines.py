"""Engine processes in tests: started in a namespace (or not), their JSON lines
read on a thread so every wait can time out, and none outliving its test.

Engines that share a link are stopped the way the runner stops them (a
two-phase stop): started with --hold, each prints its summary and keeps its
port open until `release()`; `release_all()` releases them only once all have
stopped polling, so no engine tears down a link its peer still polls.
"""
from __future__ import annotations

import contextlib
import json
import queue
import re
import signal
import subprocess
import threading
import time
from typing import Iterator

import pytest

from harness import REPO

# the engine's pacer owes at most this many bursts after a stall, and releases
# them back to back (engine/src/core/pacer.h), also across the warm-up's end
PACER_CATCHUP = int(re.search(r"#define PACER_CATCHUP (\d+)",
                              (REPO / "engine/src/core/pacer.h").read_text())[1])


def most_sent(rate: float, duration: float, burst: int) -> float:
    """The most a paced sender may count in its measured window: the window's
    bursts, one due on its first tick, and the catch-up it may start with."""
    return rate * duration + (PACER_CATCHUP + 1) * burst


class EngineProcess:
    """One engine. Its stdout must be JSON lines only (anything else is a bug)."""

    def __init__(self, argv: list, netns: str | None = None):
        prefix = ["ip", "netns", "exec", netns] if netns else []
        self.argv = prefix + [str(a) for a in argv]
        self.held = "--hold" in self.argv or "--keep" in self.argv
        self.proc = subprocess.Popen(
            self.argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
            stdin=subprocess.PIPE if self.held else subprocess.DEVNULL)
        self.records: list[dict] = []
        self._lines: queue.Queue = queue.Queue()
        self._stderr: list[str] = []
        self._reader = threading.Thread(target=self._pump, daemon=True)
        self._reader.start()
        threading.Thread(target=lambda: self._stderr.extend(self.proc.stderr), daemon=True).start()

    def _pump(self) -> None:
        for line in self.proc.stdout:
            rec = json.loads(line)
            self.records.append(rec)
            self._lines.put(rec)
        self._lines.put(None)

    @property
    def stderr(self) -> str:
        return "".join(self._stderr)

    def _next(self, kind: str, timeout: float) -> dict:
        deadline = time.monotonic() + timeout
        while True:
            try:
                rec = self._lines.get(timeout=max(0.01, deadline - time.monotonic()))
            except queue.Empty:
                pytest.fail(f"no {kind} record within {timeout} s from {' '.join(self.argv)}")
            if rec is None:
                self.proc.wait(timeout=10)
                pytest.fail(f"engine exited {self.proc.returncode} before its {kind} record:"
                            f"\n{self.stderr}")
            if rec["type"] == kind:
                return rec

    def ready(self, timeout: float = 30) -> dict:
        return self._next("ready", timeout)

    def summary(self, timeout: float = 30) -> dict:
        """The summary record. An engine without --hold must also have exited 0."""
        if self.held:
            return self._next("summary", timeout)
        self._exit(timeout)
        found = [r for r in self.records if r["type"] == "summary"]
        assert len(found) == 1, f"{len(found)} summary records:\n{self.stderr}"
        return found[0]

    def interrupt(self, timeout: float = 30) -> dict:
        """SIGINT, as the orchestrator stops receivers; the summary must still come."""
        self.proc.send_signal(signal.SIGINT)
        return self.summary(timeout)

    def again(self, rate: float, duration: float = 0, warmup: float = 0) -> None:
        """--keep: the next trial on the open ports (a generator's rate, duration
        and warm-up; the others' pace)."""
        self.proc.stdin.write(f"{rate:g} {duration:g} {warmup:g}\n")
        self.proc.stdin.flush()

    def release(self, timeout: float = 30) -> None:
        """A held engine closes its port and exits 0 when its stdin ends."""
        self.proc.stdin.close()
        self._exit(timeout)

    def _exit(self, timeout: float) -> None:
        try:
            self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            pytest.fail(f"engine still running after {timeout} s: {' '.join(self.argv)}")
        self._reader.join(timeout=5)
        assert self.proc.returncode == 0, f"engine exited {self.proc.returncode}:\n{self.stderr}"

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(timeout=10)


@contextlib.contextmanager
def engines() -> Iterator:
    """start(argv, netns=None) -> EngineProcess; whatever happens, none outlives
    the block (a passing test has already stopped them)."""
    started: list[EngineProcess] = []

    def start(argv: list, netns: str | None = None) -> EngineProcess:
        e = EngineProcess(argv, netns)
        started.append(e)
        return e
    try:
        yield start
    finally:
        for e in started:
            e.kill()


def release_all(*held: EngineProcess) -> None:
    """Second phase of the stop: every one of them has printed its summary and
    polls no more; release them one after the other, as the runner does."""
    for e in held:
        e.release()
