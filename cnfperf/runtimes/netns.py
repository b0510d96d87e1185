"""netns: the fallback runtime. No image and no cgroup: the host's engine binary
runs in the endpoint's network namespace, pinned to its cores with taskset."""
from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
from pathlib import Path
from typing import Sequence

from cnfperf import tools

from .base import (Container, ContainerError, ImageInfo, Journal, Mount, Runtime,
                   check_cpus, check_mounts, check_name, check_netns, cpu_list)

KIND = "container"
# Every process we start carries this in its environment, so a run killed with
# SIGKILL can still be cleaned up: remove() finds its processes by name.
TAG = "CNFPERF_CONTAINER"


def _tagged(prefix: str) -> dict[int, str]:
    """pid -> container name of the live processes tagged with a name starting with prefix."""
    found = {}
    needle = f"{TAG}={prefix}".encode()
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        with contextlib.suppress(OSError):
            with open(f"/proc/{entry}/environ", "rb") as f:
                for var in f.read().split(b"\0"):
                    if var.startswith(needle):
                        found[int(entry)] = var.split(b"=", 1)[1].decode(errors="replace")
                        break
    return found


def _kill_tagged(name: str) -> None:
    pids = [pid for pid, n in _tagged(name).items() if n == name]
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    # A killed process keeps its environ until it is reaped by its parent; wait only
    # for those that are still running.
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline and any(_running(p) for p in pids):
        time.sleep(0.02)


def _running(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] not in ("Z", "X")
    except OSError:
        return False


class NetnsContainer(Container):
    def __init__(self, journal: Journal, name: str, cpus: tuple[int, ...], netns: str,
                 engine: str):
        self.journal = journal
        self.name = name
        self.cpus = cpus
        self.netns = netns
        self.engine = engine
        self._procs: list[subprocess.Popen] = []
        self._destroyed = False

    def exec(self, argv: list[str], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
             stdin=subprocess.DEVNULL) -> subprocess.Popen:
        if self._destroyed:
            raise ContainerError(f"exec in {self.name}: container was destroyed")
        if not argv or not all(isinstance(a, str) for a in argv):
            raise ValueError(f"exec argv {argv!r}: a non-empty list of strings is needed")
        # `ip netns exec` and taskset both exec() in place: the Popen pid is the
        # engine itself, so signals reach it directly. ip also remounts /sys so the
        # process sees the namespace's interfaces there.
        cmd = ["ip", "netns", "exec", self.netns, "taskset", "-c", cpu_list(self.cpus), *argv]
        env = dict(os.environ, **{TAG: self.name})
        proc = subprocess.Popen(cmd, stdin=stdin, stdout=stdout, stderr=stderr,
                                bufsize=0, start_new_session=True, env=env)
        self._procs.append(proc)
        return proc

    def destroy(self) -> None:
        if self._destroyed:
            return
        for proc in self._procs:
            if proc.poll() is None:
                proc.kill()
            proc.wait()
        _kill_tagged(self.name)
        self._destroyed = True
        self.journal.discard(KIND, self.name)


class NetnsRuntime(Runtime):
    name = "netns"

    def __init__(self, journal: Journal, state_dir: Path):
        super().__init__(journal, state_dir)
        self.engine: str | None = None

    @classmethod
    def check(cls) -> list[str]:
        problems = []
        if os.geteuid() != 0:
            problems.append("netns runtime needs root")
        return problems + tools.problems("ip", "taskset")

    def prepare(self, engine: Path) -> ImageInfo:
        engine = Path(engine).resolve()
        if not engine.is_file() or not os.access(engine, os.X_OK):
            raise ContainerError(f"engine {engine} is not an executable file")
        self.engine = str(engine)
        return ImageInfo(name="host", path="", size_bytes=0)

    def create(self, name: str, cpus: Sequence[int], netns: str,
               mounts: Sequence[Mount] = ()) -> NetnsContainer:
        if self.engine is None:
            raise RuntimeError("NetnsRuntime.create() before prepare()")
        check_name(name)
        cpus = check_cpus(cpus)
        check_netns(netns)
        check_mounts(mounts)
        # Without a mount namespace of our own the host's paths are all we have.
        for m in mounts:
            if os.path.realpath(m.source) != os.path.realpath(m.target):
                raise ValueError(f"mount target {m.target!r}: the netns runtime can only "
                                 f"share host paths as they are (source {m.source!r})")
        self.journal.add(KIND, name, runtime=self.name)
        return NetnsContainer(self.journal, name, cpus, netns, self.engine)

    @classmethod
    def leftovers(cls, prefix: str) -> list[str]:
        return sorted(set(_tagged(prefix).values()))

    @classmethod
    def remove(cls, name: str) -> None:
        check_name(name)
        _kill_tagged(name)
