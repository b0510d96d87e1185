"""runc: one OCI bundle per endpoint, a read-only rootfs (the full BusyBox+engine
image, the minimal static-engine one, the tools one with testpmd, the click one…:
rootfs.py), the planned cores as a cgroup cpuset, engine processes started with
`runc exec`.

A lazy container (create(lazy=True)) is only its bundle until its first
process: that one is the container's init, started by `runc run` in one step
(no placeholder init, no `runc exec`: half the runc invocations, and ~100 ms
less before an NF is up), and the container ends with it (a foreground
`runc run` deletes it); the next process starts it anew, one started while the
init runs is a `runc exec`. The init is pid 1 of the container's pid
namespace, which ignores every signal it has no handler for: only a process
that handles SIGINT and SIGTERM itself (the engine) fits."""
from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Mapping, Sequence

from cnfperf.host import cgroups, tools
from cnfperf.host.system import CommandFailed, is_static_elf, run

from . import oci, rootfs
from .base import (Container, ContainerError, ImageInfo, Journal, Mount, Nic, Quota, Runtime,
                   check_name, check_no_nics, check_request)
from .images import ENGINE_PATH, FULL, Image

# Our own state root: `runc list` there shows only containers cnfperf started,
# so cleanup never touches anybody else's.
RUNC_ROOT = Path("/run/cnfperf/runc")
KIND = "container"


def _runc(*args: str) -> list[str]:
    return ["runc", "--root", str(RUNC_ROOT), *args]


def _gone(err: CommandFailed) -> bool:
    msg = str(err)
    return "does not exist" in msg or "not exist" in msg or "not running" in msg


def _drop_empty_root() -> None:
    # runc recreates its root on the next create; an empty one left here would
    # look like a leftover of the last run.
    with contextlib.suppress(OSError):
        RUNC_ROOT.rmdir()


class RuncContainer(Container):
    def __init__(self, journal: Journal, name: str, cpus: tuple[int, ...], netns: str,
                 bundle: Path, engine: str = ENGINE_PATH, lazy: dict | None = None):
        super().__init__(journal, name, cpus, netns, engine)
        self.bundle = bundle
        # A lazy container's config.json, its process still to be given; the
        # `runc run` that started its init (None: none yet).
        self.lazy = lazy
        self._init: subprocess.Popen | None = None
        self._pid: int | None = None

    @property
    def init_pid(self) -> int | None:
        """The init's host pid; a lazy container's is its current process's,
        None while it has none."""
        if self.lazy is not None:
            if not self._running():
                return None
            try:
                return _state_pid(self.name)
            except CommandFailed as e:
                if _gone(e):
                    return None
                raise
        if self._pid is None:
            self._pid = _state_pid(self.name)
        return self._pid

    def _running(self) -> bool:
        return self._init is not None and self._init.poll() is None

    def exec(self, argv: list[str], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
             stdin=subprocess.DEVNULL, env: Mapping[str, str] | None = None) -> subprocess.Popen:
        starts = self.lazy is not None and not self._running()
        if starts and self._init is not None and self._init.returncode < 0:
            # its `runc run` was killed: the container it ran may still be there
            _force_remove(self.name)
        proc = super().exec(argv, stdout=stdout, stderr=stderr, stdin=stdin, env=env)
        if starts:
            self._init = proc
        return proc

    def _command(self, argv: list[str], env: dict[str, str]) -> list[str]:
        # Without a terminal runc hands its own stdio to the process and forwards
        # every signal it gets, so Popen's pipe and send_signal() reach the engine.
        # The process gets the container's environment, not cnfperf's: only `env` is added.
        if self.lazy is not None and not self._running():
            cfg = json.loads(json.dumps(self.lazy))
            cfg["process"]["args"] = list(argv)
            cfg["process"]["env"] += [f"{k}={v}" for k, v in env.items()]
            (self.bundle / "config.json").write_text(json.dumps(cfg, indent=1))
            return _runc("run", "--no-new-keyring", "--bundle", str(self.bundle), self.name)
        return _runc("exec", *(f"--env={k}={v}" for k, v in env.items()), self.name, *argv)

    def destroy(self) -> None:
        if self._destroyed:
            return
        # A lazy container whose every `runc run` ended by itself is gone already.
        gone = self.lazy is not None and all(
            p.poll() is not None and p.returncode >= 0 for p in self._procs)
        errors = [] if gone else _force_remove(self.name)
        self._reap(grace=5)   # each `runc exec` ends with its container
        shutil.rmtree(self.bundle, ignore_errors=True)
        with contextlib.suppress(OSError):
            self.bundle.parent.rmdir()
        _drop_empty_root()
        if errors:
            raise ContainerError(f"destroy {self.name}: {'; '.join(errors)}")
        self._destroyed = True
        self.journal.discard(KIND, self.name)


def _state_pid(name: str) -> int:
    return int(json.loads(run(_runc("state", name), what="runc state"))["pid"])


def _force_remove(name: str) -> list[str]:
    """Kill and delete a container, and the groups a runc killed while it made
    the container left (runc makes them before it saves the container's state,
    and `runc delete` of a container without state does nothing); returns
    errors other than 'already gone'."""
    errors = []
    for args, what in ((("kill", name, "KILL"), "runc kill"),
                       (("delete", "--force", name), "runc delete")):
        try:
            run(_runc(*args), what=what)
        except CommandFailed as e:
            if not _gone(e):
                errors.append(str(e))
    return errors + cgroups.remove([d for parent in cgroups.own_parents()
                                    for d in cgroups.tree(parent / name)])


class RuncRuntime(Runtime):
    name = "runc"

    def __init__(self, journal: Journal, state_dir: Path, images_dir: Path | None = None):
        super().__init__(journal, state_dir)
        self.images_dir = rootfs.images_dir(images_dir)
        # image -> the built image and what it was built from (its program's
        # path inside and its init)
        self.images: dict[Image, tuple[ImageInfo, rootfs.ImageSpec]] = {}

    @property
    def image(self) -> ImageInfo | None:
        """The full image, once prepared."""
        return self.images[FULL][0] if FULL in self.images else None

    @classmethod
    def check(cls) -> list[str]:
        problems = cls._needs("runc", "ldd")
        if not is_static_elf(rootfs.BUSYBOX):
            problems.append(tools.not_found(f"static {rootfs.BUSYBOX}",
                                            tools.TOOLS["busybox"].package))
        v1 = Path("/sys/fs/cgroup/cpuset/cpuset.cpus")
        v2 = Path("/sys/fs/cgroup/cgroup.controllers")
        if not v1.exists() and not (v2.exists() and "cpuset" in v2.read_text().split()):
            problems.append("no cpuset cgroup controller mounted (needed to pin containers)")
        return problems

    def prepare(self, engine: Path, image: Image = FULL) -> ImageInfo:
        if image.user:
            raise ContainerError(f"image {image.name}: a user's image runs in podman "
                                 "(runtime = podman)")
        spec = rootfs.spec_for(image, Path(engine))
        info = rootfs.build(spec, self.images_dir)
        self.images[image] = (info, spec)
        return info

    def create(self, name: str, cpus: Sequence[int], netns: str,
               mounts: Sequence[Mount] = (), image: Image = FULL,
               quota: Quota | None = None, nics: Sequence[Nic] = (),
               lazy: bool = False) -> RuncContainer:
        check_no_nics(nics)
        if image not in self.images:
            raise RuntimeError(f"RuncRuntime.create(image={image.name!r}) before prepare()")
        info, spec = self.images[image]
        cpus, netns_path = check_request(name, cpus, netns, mounts, quota)
        oci.check_targets(mounts, info.path)
        bundle = self.state_dir / "bundles" / name
        if bundle.exists():
            raise ValueError(f"container name {name!r}: already used in this run ({bundle})")
        cfg = oci.config(name, info.path, cpus, str(netns_path), mounts, init=spec.init,
                         quota=quota, **oci.host_settings())
        # Write-ahead: once journaled, a run killed at any later point is undone by
        # remove(name), which copes with a container that never came to exist.
        self.journal.add(KIND, name, runtime=self.name, bundle=str(bundle))
        try:
            bundle.mkdir(parents=True)
            (bundle / "config.json").write_text(json.dumps(cfg, indent=1))
            if not lazy:
                self._run_detached(name, bundle)
        except BaseException:
            _force_remove(name)
            shutil.rmtree(bundle, ignore_errors=True)
            with contextlib.suppress(OSError):
                bundle.parent.rmdir()
            _drop_empty_root()
            self.journal.discard(KIND, name)
            raise
        return RuncContainer(self.journal, name, cpus, netns, bundle, spec.engine_path,
                             lazy=cfg if lazy else None)

    @staticmethod
    def _run_detached(name: str, bundle: Path) -> None:
        # The container's init inherits runc's stdio; a file (not a pipe) lets runc
        # return at once, and holds runc's own error message if it fails.
        run(_runc("run", "--detach", "--no-new-keyring", "--bundle", str(bundle), name),
            what=f"runc run {name}", log=bundle / "runc.log")

    @classmethod
    def _list(cls) -> list[dict]:
        if not RUNC_ROOT.is_dir():
            return []
        out = run(_runc("list", "--format", "json"), what="runc list")
        return json.loads(out or "null") or []

    @classmethod
    def leftovers(cls, prefix: str) -> list[str]:
        return sorted(c["id"] for c in cls._list() if c["id"].startswith(prefix))

    @classmethod
    def tidy(cls) -> None:
        _drop_empty_root()

    @classmethod
    def remove(cls, name: str) -> None:
        check_name(name)
        bundle = next((Path(c["bundle"]) for c in cls._list()
                       if c["id"] == name and c.get("bundle")), None)
        errors = _force_remove(name)
        if errors:
            raise ContainerError(f"remove {name}: {'; '.join(errors)}")
        # Only a directory that is plainly this container's bundle is deleted.
        if bundle and bundle.name == name and (bundle / "config.json").is_file():
            shutil.rmtree(bundle, ignore_errors=True)
        _drop_empty_root()
