"""A noisy neighbour: stress-ng in a container of its own, or a command of the
user's (`noise = "cmd:COMMAND"`: a web server under a load generator, paper
000's Apache case), on chosen cores, for as long as a trial sends (warm-up and
measurement), so that a point measures what a neighbour costs the switch or the
network functions (paper 000's TC3).

Its cores are `noise_on`'s (plan.noise_cores); one stressor worker per core. A
command runs from the host's own file system (its programs are the host's, no
image holds them) under `sh -c`, in a network namespace of its own (its
loopback only) and the netns runtime's container: pinned to the cores with
taskset, every process it forks tagged, so that the container's destroy (and
`cnfperf cleanup` after a killed run) finds them all. It is stopped with
SIGTERM to its process group; what is left of the group once its shell has
ended (or STOP_TIMEOUT later) is killed.

`noise = traffic` is a second stream through the switch, not a process: plan.py
adds its pair, and this module is not involved.
"""
from __future__ import annotations

import contextlib
import os
import re
import shlex
import shutil
import signal
import subprocess
import time
from pathlib import Path
from typing import Sequence

from cnfperf import SystemFailure, UserError
from cnfperf.host import tools
from cnfperf.fields import NOISE_PLACES as PLACES, NOISES
from cnfperf.host.system import signal_group
from cnfperf.plan import TestPoint, noise_cores
from cnfperf.runtimes.base import Container
from cnfperf.runtimes.images import Image

# The neighbour's image: the full one and stress-ng.
IMAGE = Image("noise", "a noisy neighbour: the full image and stress-ng",
              tools=(tools.STRESS_NG,), budget_mb=96)
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
CMD = "cmd:"          # noise = "cmd:COMMAND": the user's own neighbour
TAIL_LINES = 5        # of a command's output, in its record
SHELL_WORDS = {"while", "until", "for", "if", "case", "{", "(", "!", "exec", "trap", "set",
               "cd", "export", "ulimit", "."}
_BOGO = re.compile(r"stress-ng: (?:info|metrc):\s+\[\d+\]\s+(\w+)\s+(\d+)\s+([\d.]+)")


def command(noise: str) -> str | None:
    """The user's command of a `cmd:` noise, None for the others."""
    return noise[len(CMD):].strip() if noise.startswith(CMD) else None


def check_kind(noise: str) -> None:
    """UserError unless noise is one of NOISES or cmd:COMMAND with a command."""
    if noise in NOISES:
        return
    if command(noise) == "":
        raise UserError("noise", "cmd: needs a command, e.g. \"cmd:nginx -g 'daemon off;'\"")
    if command(noise) is None:
        raise UserError("noise", f"{noise!r}: one of {', '.join(NOISES)}, or cmd:COMMAND")


def missing_program(noise: str) -> str | None:
    """The program a `cmd:` noise starts with when the host's PATH lacks it
    (a shell word, `while` or `{`, starts no program: None)."""
    cmd = command(noise)
    if not cmd:
        return None
    try:
        first = shlex.split(cmd)[0]
    except (ValueError, IndexError):
        return None
    if first in SHELL_WORDS or "=" in first or shutil.which(first) is not None:
        return None
    return first


def runs_process(noise: str) -> bool:
    """Whether the neighbour is a process of its own (stress-ng or a command),
    not none nor a traffic stream."""
    return noise in STRESSORS or command(noise) is not None


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
    ends = [c for ep in point.engines for c in ep.all_cores]
    return noise_cores(point.scenario.noise_on, point.cpus, ends,
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
        """`kind`: a stressor class (STRESSORS) or cmd:COMMAND. `io_dir`: where
        the io stressor writes as the container sees it, when not IO_TARGET
        (the netns runtime sees the host's directory itself)."""
        self.container = container
        self.kind = kind
        self.command = command(kind)
        self.cores = cores
        self.io_dir = io_dir or IO_TARGET
        self.proc: subprocess.Popen | None = None
        self._out: Path | None = None

    @property
    def what(self) -> str:
        """How messages name it: `noise cpu`, `noise cmd:nginx…`."""
        return f"noise {self.kind if self.command is None else CMD + self.command.split()[0] + '…'}"

    def start(self, out: Path) -> None:
        """Start it; its output goes to `out` (the trial's directory)."""
        self._out = out / "noise.out"
        args = ["sh", "-c", self.command] if self.command is not None else \
            argv(self.kind, len(self.cores), self.io_dir)
        with open(self._out, "wb") as f:
            self.proc = self.container.exec(args, stdout=f, stderr=subprocess.STDOUT)

    def stop(self) -> dict | None:
        """stress-ng: SIGINT, and it stops its workers and prints its metrics;
        a command: its process group stopped (_stop_group). Returns its record
        (record()). A neighbour that ended early fails the point: it was not there."""
        proc, self.proc = self.proc, None
        if proc is None:
            return None
        early = proc.poll()
        if early is None and self.command is not None:
            self._stop_group(proc)
        elif early is None:
            proc.send_signal(signal.SIGINT)
            try:
                proc.wait(timeout=STOP_TIMEOUT)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
                raise SystemFailure(f"{self.what}: stress-ng did not stop within "
                                    f"{STOP_TIMEOUT:g} s of SIGINT") from None
        text = self.output()
        if early is not None:
            tail = " | ".join(l for l in text.splitlines() if l.strip())[-300:]
            raise SystemFailure(f"{self.what}: exited with code {early} before the trial "
                                f"ended: {tail or '(no output)'}")
        return self.record(text)

    def output(self) -> str:
        """What it printed (its `noise.out`); "" before it started."""
        with contextlib.suppress(OSError):
            return self._out.read_text(errors="replace") if self._out else ""
        return ""

    @staticmethod
    def _stop_group(proc: subprocess.Popen) -> None:
        """SIGTERM to the command's process group (spawn() made its shell the
        leader of one); once the shell has ended, or STOP_TIMEOUT later, SIGKILL
        to what is left of the group. The shell is reaped only then: until it
        is, its pid and so its group's id cannot be another process's."""
        signal_group(proc.pid, signal.SIGTERM)
        deadline = time.monotonic() + STOP_TIMEOUT
        while time.monotonic() < deadline:
            with contextlib.suppress(ChildProcessError):
                if os.waitid(os.P_PID, proc.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT):
                    break
            time.sleep(0.02)
        signal_group(proc.pid, signal.SIGKILL)
        proc.wait()

    def record(self, text: str) -> dict:
        """What it did, stored with the point (noise_facts): its kind and cores,
        and stress-ng's bogo operations, or a command's last lines of output;
        all of it is in the trial directory's `noise.out`."""
        found: dict = {"kind": self.kind if self.command is None else "cmd",
                       "cores": list(self.cores), "output": "noise.out"}
        if self.command is None:
            found["bogo_ops"] = bogo_ops(text)
        else:
            found["command"] = self.command
            found["tail"] = [l for l in text.splitlines() if l.strip()][-TAIL_LINES:]
        return found
