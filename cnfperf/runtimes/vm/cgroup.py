"""A VM's cgroup: QEMU and all its threads, held to the VM's cores (cpuset)
and quota (cpu), its CPU time counted (cpuacct: run/cpu.py reads it through
QEMU's pid). runc makes its containers' groups; this one is ours, in every
hierarchy of those controllers (v1: a directory per mount; v2: one), named
NAME.vm at the top, where no container's group is."""
from __future__ import annotations

import errno
import time
from pathlib import Path
from typing import Sequence

from cnfperf.host import cgroups

from ..base import ContainerError, Quota, cpu_list

SUFFIX = ".vm"
USED = ("cpuset", "cpu", "cpuacct")


def _mounts(layout: cgroups.Layout | None = None) -> dict[str, cgroups.Controller]:
    layout = layout or cgroups.layout()
    return {name: c for name, c in layout.controllers.items() if name in USED}


def dirs(name: str, layout: cgroups.Layout | None = None) -> list[Path]:
    """The VM's group in each hierarchy (a v2 host, or v1 controllers mounted
    together, have one for several)."""
    return list(dict.fromkeys(Path(c.mount) / f"{name}{SUFFIX}" for c in _mounts(layout).values()))


def names(prefix: str) -> set[str]:
    """The VMs whose groups exist, by name."""
    found = set()
    for c in _mounts().values():
        for d in Path(c.mount).glob(f"{prefix}*{SUFFIX}"):
            found.add(d.name.removesuffix(SUFFIX))
    return found


def _write(path: Path, value: str) -> None:
    try:
        path.write_text(value)
    except OSError as e:
        raise ContainerError(f"cgroup: writing {value!r} to {path}: {e.strerror}") from None


def create(name: str, cpus: Sequence[int], quota: Quota | None,
           layout: cgroups.Layout | None = None) -> list[Path]:
    """The VM's groups, made and set; ContainerError when a controller is missing."""
    found = _mounts(layout)
    missing = [c for c in ("cpuset", "cpuacct") + (("cpu",) if quota else ()) if c not in found]
    if missing:
        raise ContainerError(f"cgroup: no {', '.join(missing)} controller mounted")
    made = []
    try:
        for c in found.values():
            group = Path(c.mount) / f"{name}{SUFFIX}"
            if group not in made:
                if c.version == 2:
                    _enable_v2(Path(c.mount))
                try:
                    group.mkdir()
                except FileExistsError:
                    raise ContainerError(f"cgroup {group} exists: a VM of that name is left "
                                         "from a run that died (cnfperf cleanup removes it)") from None
                made.append(group)
            _set(c, group, cpus, quota)
    except BaseException:
        remove(made)
        raise
    return made


def _enable_v2(root: Path) -> None:
    """A v2 group has a controller's files only where its parent enabled it."""
    enabled = (root / "cgroup.subtree_control").read_text().split()
    for ctl in ("cpuset", "cpu"):
        if ctl not in enabled:
            _write(root / "cgroup.subtree_control", f"+{ctl}")


def _set(c: cgroups.Controller, group: Path, cpus: Sequence[int], quota: Quota | None) -> None:
    if c.name == "cpuset":
        if c.version == 1:   # a new v1 cpuset has no memory nodes: the parent's
            _write(group / "cpuset.mems", (group.parent / "cpuset.mems").read_text().strip())
        _write(group / "cpuset.cpus", cpu_list(cpus))
    elif c.name == "cpu" and quota is not None:
        if c.version == 1:
            _write(group / "cpu.cfs_period_us", str(quota.period_us))
            _write(group / "cpu.cfs_quota_us", str(quota.quota_us))
        else:
            _write(group / "cpu.max", f"{quota.quota_us} {quota.period_us}")


def add(groups: Sequence[Path], pid: int) -> None:
    """The process and all its threads, now and later."""
    for group in groups:
        _write(group / "cgroup.procs", str(pid))


def remove(groups: Sequence[Path], timeout: float = 5.0) -> None:
    """rmdir each once its processes are gone (a killed one takes a moment)."""
    for group in groups:
        deadline = time.monotonic() + timeout
        while True:
            try:
                group.rmdir()
                break
            except FileNotFoundError:
                break
            except OSError as e:
                if e.errno != errno.EBUSY or time.monotonic() >= deadline:
                    raise ContainerError(f"cgroup {group}: cannot remove it: {e.strerror}") from None
                time.sleep(0.02)

