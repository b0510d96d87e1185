"""netns: the fallback runtime. No image and no cgroup: the host's engine binary
runs in the endpoint's network namespace, pinned to its cores with taskset."""
from __future__ import annotations

import contextlib
import os
from pathlib import Path
from typing import Sequence

from cnfperf.host.system import kill_tagged, tagged

from .base import (Container, ImageInfo, Journal, Mount, Nic, Quota, Runtime, check_name,
                   check_no_nics, check_request, cpu_list, host_engine)
from .images import FULL, Image

KIND = "container"
# Every process we start carries this in its environment, so a run killed with
# SIGKILL can still be cleaned up: remove() finds its processes by name.
TAG = "CNFPERF_CONTAINER"


class NetnsContainer(Container):
    def _command(self, argv: list[str], env: dict[str, str]) -> list[str]:
        # `ip netns exec` and taskset both exec() in place: the Popen pid is the
        # engine itself, so signals reach it directly. ip also remounts /sys so the
        # process sees the namespace's interfaces there.
        return ["ip", "netns", "exec", self.netns, "taskset", "-c", cpu_list(self.cpus), *argv]

    def _env(self, env: dict[str, str]) -> dict[str, str]:
        return dict(os.environ, **env, **{TAG: self.name})

    @property
    def pids(self) -> list[int]:
        """What exec() started that still runs, and every process they forked
        (a `cmd:` neighbour's shell and its programs): without a cgroup, these
        are what its CPU use is read from. An engine forks none."""
        found: list[int] = []
        todo = super().pids
        while todo:
            pid = todo.pop()
            found.append(pid)
            with contextlib.suppress(OSError, ValueError):
                for task in Path(f"/proc/{pid}/task").iterdir():
                    todo.extend(int(c) for c in (task / "children").read_text().split())
        return found

    def destroy(self) -> None:
        if self._destroyed:
            return
        self._reap()
        kill_tagged(TAG, self.name)
        self._destroyed = True
        self.journal.discard(KIND, self.name)


class NetnsRuntime(Runtime):
    name = "netns"
    quotas = False   # no cgroup of its own: run/checks/ refuses a quota before a run
    host_files = True

    def __init__(self, journal: Journal, state_dir: Path):
        super().__init__(journal, state_dir)
        self.engines: dict[Image, str] = {}      # image -> the host's program it runs

    @classmethod
    def check(cls) -> list[str]:
        return cls._needs("ip", "taskset")

    def prepare(self, engine: Path, image: Image = FULL) -> ImageInfo:
        """No image: a container of this kind runs `engine` from the host, the
        same program runc would put in the image (the static engine for the
        minimal one, Click for the click ones: the declaration's program)."""
        engine = host_engine(engine, image)
        self.engines[image] = engine
        return ImageInfo(name="host", path="", size_bytes=0)

    def create(self, name: str, cpus: Sequence[int], netns: str,
               mounts: Sequence[Mount] = (), image: Image = FULL,
               quota: Quota | None = None, nics: Sequence[Nic] = (),
               lazy: bool = False) -> NetnsContainer:
        check_no_nics(nics)
        if image not in self.engines:
            raise RuntimeError(f"NetnsRuntime.create(image={image.name!r}) before prepare()")
        if quota is not None:
            raise ValueError("the netns runtime cannot enforce a CPU quota (no cgroup): use runc")
        cpus, _ = check_request(name, cpus, netns, mounts)
        # Without a mount namespace of our own the host's paths are all we have.
        for m in mounts:
            if os.path.realpath(m.source) != os.path.realpath(m.target):
                raise ValueError(f"mount target {m.target!r}: the netns runtime can only "
                                 f"share host paths as they are (source {m.source!r})")
        self.journal.add(KIND, name, runtime=self.name)
        return NetnsContainer(self.journal, name, cpus, netns, self.engines[image])

    @classmethod
    def leftovers(cls, prefix: str) -> list[str]:
        return sorted(set(tagged(TAG, prefix).values()))

    @classmethod
    def remove(cls, name: str) -> None:
        check_name(name)
        kill_tagged(TAG, name)
