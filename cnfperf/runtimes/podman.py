"""podman: the images runc runs (rootfs.py) imported into a podman store, or a
user's own image (a network function as shipped: nfs/image.py); one container
per endpoint made with `podman run`, joined to its netns, pinned to its cores
and held to its quota in a cgroup under CGROUP_PARENT, with a read-only root.

Processes are started in a container with `runc exec`, not `podman exec`:
podman 4's exec passes no signal on (SIGINT to it leaves the process running
inside), while runc's forwards every signal and hands the process its own
stdio, as the runc runtime's exec does (podman's containers are runc's:
`runtime = "runc"` in the configuration cnfperf writes).

Where things are. cnfperf's images and podman's container records live in a
store of cnfperf's own (STORE): `podman images` and a user's containers are
not cluttered by it, and podman's default store, where `podman build` and
`podman load` put a user's images, is added read-only (USER_STORE), so those
images are seen as they are. podman's run-time state (its runroot, tmp_dir,
the configuration files) is RUN_DIR, removed whenever no container of
cnfperf's is left: nothing of a run stays on the host. A user's image that
comes as an archive (`podman load`) goes into cnfperf's store."""
from __future__ import annotations

import contextlib
import functools
import json
import os
import shutil
import subprocess
import tarfile
from pathlib import Path
from typing import Sequence

from cnfperf.host import cgroups, journal
from cnfperf.host.system import CommandFailed, mounts, run

from . import oci, rootfs
from .base import (Container, ContainerError, ImageInfo, Journal, Mount, Nic, Quota,
                   Runtime, check_name, check_no_nics, check_request, cpu_list)
from .images import FULL, Image
from .runc import RuncRuntime

RUN_DIR = journal.RUN_DIR / "podman"
STORE = Path("/var/lib/cnfperf/podman")
USER_STORE = Path("/var/lib/containers/storage")
# The runc state root podman's containers are in (runc's default, which podman
# leaves as it is when run as root): `runc exec` finds them there by id.
RUNC_ROOT = Path("/run/runc")
# Every container's cgroup is CGROUP_PARENT/NAME/libpod-ID, and its conmon's
# CGROUP_PARENT/NAME/conmon: cleanup finds both by the container's name.
CGROUP_PARENT = "/cnfperf-podman"
KIND = "container"
IMAGE_REPO = "localhost/cnfperf-"      # + image kind, tagged with its rootfs digest
ARCHIVES = (".tar", ".tar.gz", ".tgz")

# A user's image has an init of its own, or none: its containers are kept
# alive by the host's static BusyBox, mounted read-only beside the image.
BUSYBOX_TARGET = "/.cnfperf/busybox"
USER_INIT = (BUSYBOX_TARGET, "sh", "-c",
             f"trap 'exit 0' TERM INT; {BUSYBOX_TARGET} sleep 2147483647 & wait")

# What cnfperf's configuration changes of podman's defaults. No default
# rlimits (podman raises NOFILE past a hard limit a sandbox may cap: runc then
# fails; create() sets those runc would), the cgroups cnfperf names, runc,
# no event log and no pids limit (the runc runtime has none). Locks are files
# in its tmp_dir: podman's default, a shared memory segment, is also the
# user's podman's, and podman frees every lock in it when it finds its tmp_dir
# gone (as after a reboot), which cnfperf's is after each run.
CONTAINERS_CONF = """\
[containers]
default_ulimits = []
pids_limit = 0
log_driver = "none"

[engine]
cgroup_manager = "cgroupfs"
runtime = "runc"
events_logger = "none"
tmp_dir = "{run}/libpod"
lock_type = "file"
"""
STORAGE_CONF = """\
[storage]
driver = "overlay"
graphroot = "{store}"
runroot = "{run}/storage"

[storage.options]
additionalimagestores = [{extra}]
"""


def env() -> dict[str, str]:
    """podman's environment: cnfperf's configuration files, written on first use."""
    RUN_DIR.mkdir(parents=True, exist_ok=True)
    containers, storage = RUN_DIR / "containers.conf", RUN_DIR / "storage.conf"
    if not containers.exists():
        containers.write_text(CONTAINERS_CONF.format(run=RUN_DIR))
    if not storage.exists():
        extra = f'"{USER_STORE}"' if (USER_STORE / "overlay-images").is_dir() else ""
        storage.write_text(STORAGE_CONF.format(store=STORE, run=RUN_DIR, extra=extra))
    return dict(os.environ, CONTAINERS_CONF=str(containers),
                CONTAINERS_STORAGE_CONF=str(storage))


def podman(*args: str, what: str = "podman", timeout: float = 60, check: bool = True) -> str:
    return run(["podman", *args], what=what, timeout=timeout, check=check, env=env())


def _names() -> list[str]:
    """Every container in cnfperf's store (none without a store). A query
    that fails (a store it cannot open: read-only, as an emulated host sees
    this host's) leaves none of the run-time state it made (env)."""
    if not STORE.is_dir():
        return []
    made = not RUN_DIR.exists()
    try:
        return podman("ps", "-a", "--format", "{{.Names}}", what="podman ps").split()
    except CommandFailed:
        if made:
            shutil.rmtree(RUN_DIR, ignore_errors=True)
        raise


def drop_idle(names: Sequence[str] | None = None) -> None:
    """Remove podman's run-time state once no container of cnfperf's is left
    (podman makes it again on its next call); `names`: _names(), when known."""
    if not RUN_DIR.exists() or (_names() if names is None else names):
        return
    root = str(RUN_DIR)
    for point in sorted((m.point for m in mounts()), key=len, reverse=True):
        if point.startswith(root + "/"):
            run(["umount", point], check=False)
    shutil.rmtree(RUN_DIR, ignore_errors=True)


def is_archive(ref: str) -> bool:
    return ref.endswith(ARCHIVES)


def exists(ref: str) -> bool:
    """Whether podman has the image `ref` (in cnfperf's store or the user's).
    Asked while a scenario is checked, without the host's lock: podman's run-time
    state is removed after only when this call made it (another run's may be
    there, its first container not yet made)."""
    made = not RUN_DIR.exists()
    try:
        return _exists(ref)
    finally:
        if made:
            drop_idle()


def _exists(ref: str) -> bool:
    return subprocess.run(["podman", "image", "exists", ref], env=env(), capture_output=True,
                          timeout=60).returncode == 0


@functools.cache
def image_config(ref: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(entrypoint, command) of an image, as podman would run them."""
    out = podman("image", "inspect", "--format", "{{json .Config}}", ref, what=f"image {ref}")
    config = json.loads(out) or {}
    return tuple(config.get("Entrypoint") or ()), tuple(config.get("Cmd") or ())


def command_of(ref: str, args: Sequence[str]) -> list[str]:
    """What `podman run REF ARGS` runs: the image's entrypoint, then ARGS, or
    without ARGS its command."""
    entrypoint, cmd = image_config(ref)
    argv = [*entrypoint, *(args or cmd)]
    if not argv:
        raise ContainerError(f"image {ref}: it names no entrypoint nor command: give one")
    return argv


def load(archive: Path) -> str:
    """Load an image archive (docker-archive or oci-archive) into cnfperf's
    store; the reference of the image it held."""
    out = podman("load", "-q", "-i", str(archive), what=f"image {archive}", timeout=600)
    refs = [line.split(":", 1)[1].strip() for line in out.splitlines()
            if line.startswith("Loaded image")]
    if not refs:
        raise ContainerError(f"image {archive}: podman load named no image ({out.strip()!r})")
    return refs[0].split(",")[0].strip()


def cgroup_dirs(name: str) -> list[Path]:
    """The container's parent group and what is under it, in every hierarchy,
    deepest first (what rmdir must take in that order)."""
    return [d for m in cgroups.hierarchies()
            for d in cgroups.tree(Path(m.point) / CGROUP_PARENT.lstrip("/") / name)]


def _remove_cgroups(name: str) -> list[str]:
    """rmdir the container's groups (podman leaves its conmon's, and the parent
    cnfperf named), then CGROUP_PARENT where empty; errors but 'already gone'."""
    errors = cgroups.remove(cgroup_dirs(name))
    for m in cgroups.hierarchies():
        with contextlib.suppress(OSError):
            (Path(m.point) / CGROUP_PARENT.lstrip("/")).rmdir()
    return errors


def _force_remove(name: str) -> list[str]:
    errors = []
    try:
        podman("rm", "--force", "--ignore", "--time", "0", name, what=f"podman rm {name}")
    except CommandFailed as e:
        errors.append(str(e))
    return errors + _remove_cgroups(name)


class PodmanContainer(Container):
    def __init__(self, journal: Journal, name: str, cpus: tuple[int, ...], netns: str,
                 engine: str, ident: str):
        super().__init__(journal, name, cpus, netns, engine)
        self.ident = ident      # podman's container id: runc's too

    @functools.cached_property
    def init_pid(self) -> int:
        """The container's init (not its conmon, which has a group of its own)."""
        return int(podman("inspect", "--format", "{{.State.Pid}}", self.name,
                          what="podman inspect"))

    def _command(self, argv: list[str], env: dict[str, str]) -> list[str]:
        # runc exec joins the container's namespaces and cgroup, runs argv with
        # the container's environment (and `env`) on the stdio it was given, and
        # forwards every signal it gets: podman exec forwards none.
        return ["runc", "--root", str(RUNC_ROOT), "exec",
                *(f"--env={k}={v}" for k, v in env.items()), self.ident, *argv]

    def destroy(self) -> None:
        if self._destroyed:
            return
        errors = _force_remove(self.name)
        self._reap(grace=5)   # each `runc exec` ends with its container
        drop_idle()
        if errors:
            raise ContainerError(f"destroy {self.name}: {'; '.join(errors)}")
        self._destroyed = True
        self.journal.discard(KIND, self.name)


class PodmanRuntime(Runtime):
    """Images: any declared one (images.Image, built as runc builds it), or a
    user's (images.user_image): in podman's store (NAME[:TAG]), or an archive
    of one (PATH.tar)."""

    name = "podman"

    def __init__(self, journal: Journal, state_dir: Path, images_dir: Path | None = None):
        super().__init__(journal, state_dir)
        self.images_dir = rootfs.images_dir(images_dir)
        # image -> (its reference in podman, where the engine is inside, its init)
        self.images: dict[Image, tuple[str, str, tuple[str, ...]]] = {}

    @classmethod
    def check(cls) -> list[str]:
        problems = cls._needs("podman", "conmon")
        return problems + [p for p in RuncRuntime.check() if p not in problems
                           and "needs root" not in p]

    def prepare(self, engine: Path, image: Image = FULL) -> ImageInfo:
        """cnfperf's images: the rootfs the runc runtime runs, imported once
        (tagged with its digest); a user's: found in the store, or loaded."""
        try:
            return self._prepare_user(image) if image.user else \
                self._prepare_ours(engine, image)
        finally:
            drop_idle()    # a run that fails before its first container leaves none

    def _prepare_ours(self, engine: Path, image: Image) -> ImageInfo:
        runc = RuncRuntime(self.journal, self.state_dir, self.images_dir)
        info = runc.prepare(engine, image)
        spec = runc.images[image][1]
        ref = f"{IMAGE_REPO}{image.name}:{Path(info.path).parent.name}"
        if not _exists(ref):
            _import(Path(info.path), ref, spec.init)
        self.images[image] = (ref, spec.engine_path, spec.init)
        return ImageInfo(name=info.name, path=ref, size_bytes=info.size_bytes)

    def _prepare_user(self, image: Image) -> ImageInfo:
        ref = load(Path(image.name)) if is_archive(image.name) else image.name
        if not _exists(ref):
            raise ContainerError(f"image {ref}: not in podman's store (podman images)")
        size = podman("image", "inspect", "--format", "{{.Size}}", ref, what=f"image {ref}")
        # its "engine" is the image itself: nfs/image.py runs what it holds
        self.images[image] = (ref, ref, USER_INIT)
        return ImageInfo(name=ref, path=ref, size_bytes=int(size.strip() or 0))

    def create(self, name: str, cpus: Sequence[int], netns: str,
               mounts: Sequence[Mount] = (), image: Image = FULL,
               quota: Quota | None = None, nics: Sequence[Nic] = (),
               lazy: bool = False) -> PodmanContainer:
        check_no_nics(nics)
        if image not in self.images:
            raise RuntimeError(f"PodmanRuntime.create(image={image.name!r}) before prepare()")
        ref, engine, init = self.images[image]
        cpus, netns_path = check_request(name, cpus, netns, mounts, quota)
        user = image.user
        if user:
            mounts = (*mounts, Mount(str(rootfs.BUSYBOX), BUSYBOX_TARGET, readonly=True))
        argv = run_argv(name, ref, cpus, str(netns_path), mounts, init, quota,
                        **oci.host_settings())
        # Write-ahead, as runc's: remove(name) copes with a container never made.
        self.journal.add(KIND, name, runtime=self.name)
        try:
            ident = podman(*argv, what=f"podman run {name}").strip()
        except BaseException:
            _force_remove(name)
            drop_idle()
            self.journal.discard(KIND, name)
            raise
        return PodmanContainer(self.journal, name, cpus, netns, engine, ident)

    @classmethod
    def tidy(cls) -> None:
        drop_idle()

    @classmethod
    def leftovers(cls, prefix: str) -> list[str]:
        """Containers by name, and the cgroups a container left without one."""
        every = _names()
        names = {n for n in every if n.startswith(prefix)}
        for m in cgroups.hierarchies():
            parent = Path(m.point) / CGROUP_PARENT.lstrip("/")
            with contextlib.suppress(OSError):
                names |= {d.name for d in parent.iterdir()
                          if d.is_dir() and d.name.startswith(prefix)}
        drop_idle(every)
        return sorted(names)

    @classmethod
    def remove(cls, name: str) -> None:
        check_name(name)
        errors = _force_remove(name)
        drop_idle()
        if errors:
            raise ContainerError(f"remove {name}: {'; '.join(errors)}")


def run_argv(name: str, ref: str, cpus: Sequence[int], netns_path: str,
             mounts: Sequence[Mount], init: Sequence[str], quota: Quota | None = None,
             caps: Sequence[str] = oci.CAPABILITIES, memlock: int = oci.UNLIMITED,
             nofile: int = oci.NOFILE, tun: bool = False) -> list[str]:
    """`podman run` of one container: what oci.config() gives a runc container,
    in podman's words."""
    argv = ["run", "--detach", "--name", name, "--hostname", name,
            "--network", f"ns:{netns_path}", "--cgroup-parent", f"{CGROUP_PARENT}/{name}",
            "--cpuset-cpus", cpu_list(cpus), "--read-only", "--tmpfs", "/mnt:mode=755,size=1m",
            # runc's containers have no seccomp filter nor AppArmor profile:
            # the same, so a program behaves (and costs) the same in both
            "--security-opt", "seccomp=unconfined", "--security-opt", "apparmor=unconfined",
            "--cap-drop", "all", *(f"--cap-add={c}" for c in caps),
            "--entrypoint", json.dumps(list(init[:1]))]
    # Asked for one rlimit, podman sets the others it knows too, NPROC past
    # conmon's hard limit among them: a process that may not raise limits
    # (no CAP_SYS_RESOURCE) asks for none, and its containers keep its own,
    # which are what runc's get then (oci.reachable_limit).
    if "CAP_SYS_RESOURCE" in caps:
        argv += ["--ulimit", f"memlock={_limit(memlock)}:{_limit(memlock)}",
                 "--ulimit", f"nofile={nofile}:{nofile}"]
    if quota is not None:
        argv += ["--cpu-period", str(quota.period_us), "--cpu-quota", str(quota.quota_us)]
    if tun:
        argv += ["--device", "/dev/net/tun"]
    # Parents before children, so a mount under another mount lands on top of it.
    for m in sorted(mounts, key=lambda m: m.target.count("/")):
        spec = f"type=bind,source={os.path.abspath(m.source)},destination={m.target}"
        argv += ["--mount", spec + (",ro=true" if m.readonly else "")]
    return argv + [ref, *init[1:]]


def _limit(value: int) -> str:
    return "-1" if value >= oci.UNLIMITED else str(value)


def _import(root: Path, ref: str, init: Sequence[str]) -> None:
    """A rootfs directory as a one-layer image (`podman import` of its tar),
    its init as the image's command."""
    with subprocess.Popen(["podman", "import", "--quiet", "--change",
                           f"CMD {json.dumps(list(init))}", "-", ref],
                          stdin=subprocess.PIPE, stdout=subprocess.DEVNULL,
                          stderr=subprocess.PIPE, env=env()) as proc:
        assert proc.stdin is not None
        try:
            with tarfile.open(fileobj=proc.stdin, mode="w|") as tar:
                tar.add(root, arcname=".")
        except BrokenPipeError:
            pass
        finally:
            proc.stdin.close()
        err = proc.stderr.read().decode(errors="replace") if proc.stderr else ""
    if proc.returncode != 0:
        raise ContainerError(f"image {ref}: podman import failed: {err.strip()[-300:]}")


__all__ = ["PodmanContainer", "PodmanRuntime", "command_of", "exists", "is_archive"]
