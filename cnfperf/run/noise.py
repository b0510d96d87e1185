"""A noisy neighbour: stress-ng in a container of its own, on chosen cores, for
as long as a trial sends (warm-up and measurement), so that a point measures
what a neighbour costs the switch or the network functions (paper 000's TC3).

Its cores are `noise_on`'s (plan.noise_cores); one stressor worker per core.

`noise = traffic` is a second stream through the switch, not a process: plan.py
adds its pair, and this module is not involved.
"""
from __future__ import annotations

import contextlib
import re
import signal
import subprocess
from pathlib import Path
from typing import Sequence

from cnfperf import SystemFailure, UserError
from cnfperf.host import tools
from cnfperf.fields import NOISE_PLACES as PLACES
from cnfperf.plan import TestPoint, noise_cores
from cnfperf.runtimes.base import Container
from cnfperf.scenario import parse_cpus

# stress-ng's stressor classes, one worker per core: cpu (arithmetic, stays in
# L1), cache (thrashes the shared last-level cache), memory (STREAM: memory
# bandwidth), io (writes and syncs files on a disk, not the container's tmpfs).
STRESSORS = {
    "cpu": ("--cpu", "--cpu-method", "matrixprod"),
    "cache": ("--cache",),
    "memory": ("--stream",),
    "io": ("--hdd", "--hdd-bytes", "64M"),
}
IO_TARGET = "/mnt/io"     # where the io stressor's files go, inside the container
STOP_TIMEOUT = 10.0
_BOGO = re.compile(r"stress-ng: (?:info|metrc):\s+\[\d+\]\s+(\w+)\s+(\d+)\s+([\d.]+)")


def check_place(noise_on: str) -> None:
    """UserError unless noise_on is same, other or a CPU list."""
    if noise_on in PLACES:
        return
    try:
        parse_cpus(noise_on)
    except ValueError:
        raise UserError("noise_on", f"{noise_on!r}: same, other, or a CPU list such as "
                                    "\"1\" or \"0-1\"") from None


def cores(point: TestPoint, switch_cpus: Sequence[int]) -> tuple[int, ...]:
    """The neighbour's cores for the point (plan.noise_cores), once the switch
    has its poll cores."""
    return noise_cores(point.scenario.noise_on, point.cpus, [ep.cpu for ep in point.engines],
                       [c for nf in point.nfs for c in nf.cores], tuple(switch_cpus))


def argv(kind: str, n: int, io_dir: str = IO_TARGET) -> list[str]:
    """stress-ng with `n` workers of the kind's class, until it is interrupted.
    Every class wants a writable working directory: the io one on disk, the
    others the container's /tmp."""
    first, *rest = STRESSORS[kind]
    return [tools.STRESS_NG, first, str(n), *rest, "--temp-path", io_dir if kind == "io" else "/tmp",
            "--metrics-brief", "--timeout", "0"]


def bogo_ops(text: str) -> dict[str, float]:
    """stress-ng's --metrics-brief: bogo operations per stressor, what the
    neighbour got done (less when the point's nodes took its cores)."""
    return {m[1]: float(m[2]) for m in _BOGO.finditer(text)}


class Noise:
    """The neighbour's process in its container; start() and stop() bracket a trial."""

    def __init__(self, container: Container, kind: str, cores: tuple[int, ...],
                 io_dir: str | None = None):
        """`io_dir`: where the io stressor writes as the container sees it, when
        not IO_TARGET (the netns runtime sees the host's directory itself)."""
        self.container = container
        self.kind = kind
        self.cores = cores
        self.io_dir = io_dir or IO_TARGET
        self.proc: subprocess.Popen | None = None
        self._out: Path | None = None

    def start(self, out: Path) -> None:
        """Start stress-ng; its output goes to `out` (the trial's directory)."""
        self._out = out / "noise.out"
        with open(self._out, "wb") as f:
            self.proc = self.container.exec(argv(self.kind, len(self.cores), self.io_dir), stdout=f,
                                            stderr=subprocess.STDOUT)

    def stop(self) -> dict[str, float]:
        """SIGINT: stress-ng stops its workers and prints its metrics; returns
        them. A neighbour that died early fails the point: it was not there."""
        proc, self.proc = self.proc, None
        if proc is None:
            return {}
        early = proc.poll()
        if early is None:
            proc.send_signal(signal.SIGINT)
        try:
            proc.wait(timeout=STOP_TIMEOUT)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
            raise SystemFailure(f"noise {self.kind}: stress-ng did not stop within "
                                f"{STOP_TIMEOUT:g} s of SIGINT") from None
        text = ""
        with contextlib.suppress(OSError):
            text = self._out.read_text(errors="replace") if self._out else ""
        if early is not None:
            tail = " | ".join(l for l in text.splitlines() if l.strip())[-300:]
            raise SystemFailure(f"noise {self.kind}: stress-ng exited with code {early} "
                                f"before the trial ended: {tail or '(no output)'}")
        return bogo_ops(text)
