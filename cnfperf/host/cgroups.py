"""The host's control groups: which version (v1, v2, or both: hybrid) and where
each controller cnfperf uses is mounted, and what a group's files say.

  cpuset   pins a container to its cores (runc writes cpuset.cpus)
  cpu      CFS quotas: at most quota µs per period µs of CPU
           (v1 cpu.cfs_quota_us and cpu.cfs_period_us, v2 cpu.max)
  cpuacct  CPU time used, user and system (v1 cpuacct.usage_user and
           cpuacct.usage_sys in ns, or cpuacct.stat in USER_HZ ticks; v2
           cpu.stat, in every group whatever the controllers)

A controller is in one hierarchy only: on a hybrid host (v1 controllers, and a
cgroup2 mount without them for systemd) the v1 mount has it. Everything reads
files below the mount table's paths, so tests point it at a fake tree.
"""
from __future__ import annotations

import contextlib
import errno
import os
import signal
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Sequence

from cnfperf.host.system import USER_HZ, Mounted, mounts

CONTROLLERS = ("cpuset", "cpu", "cpuacct")
# What cnfperf uses of each, per version: one of the tuples must all be there.
FILES = {
    1: {"cpuset": (("cpuset.cpus",),),
        "cpu": (("cpu.cfs_quota_us", "cpu.cfs_period_us"),),
        "cpuacct": (("cpuacct.usage_user", "cpuacct.usage_sys"), ("cpuacct.stat",))},
    # v2's root group has none of a controller's files: cgroup.controllers says
    # what its children can have.
    2: {"cpuset": (("cpuset.cpus",),), "cpu": (("cpu.max",),), "cpuacct": (("cpu.stat",),)},
}


@dataclass(frozen=True)
class Controller:
    name: str                  # cpuset | cpu | cpuacct
    version: int               # 1 or 2
    mount: str                 # where its hierarchy is mounted
    files: tuple[str, ...]     # what cnfperf reads or writes in a group there


@dataclass(frozen=True)
class Layout:
    version: str                                    # v1 | v2 | hybrid | none
    controllers: dict[str, Controller] = field(default_factory=dict)   # usable ones
    missing: dict[str, str] = field(default_factory=dict)              # name -> why not

    def to_dict(self) -> dict:
        return asdict(self)


def layout(table: Sequence[Mounted] | None = None) -> Layout:
    """The host's cgroup version and its usable controllers (`table`: the mount
    table, /proc/mounts by default)."""
    table = mounts() if table is None else table
    v1 = [m for m in table if m.fstype == "cgroup"]
    v2 = next((m for m in table if m.fstype == "cgroup2"), None)
    version = {(True, True): "hybrid", (True, False): "v1", (False, True): "v2"}.get(
        (bool(v1), v2 is not None), "none")
    found: dict[str, Controller] = {}
    missing: dict[str, str] = {}
    for name in CONTROLLERS:
        v1_mount = next((m.point for m in v1 if name in m.options.split(",")), None)
        if v1_mount:
            where = (1, v1_mount)
        elif v2 is not None and (name == "cpuacct" or name in _v2_controllers(v2.point)):
            where = (2, v2.point)   # cpu.stat is in every v2 group
        else:
            missing[name] = "in no mounted hierarchy"
            continue
        files = _files(*where, name)
        if files is None:
            missing[name] = f"{where[1]} has no {' nor '.join(FILES[1][name][0])}"
        else:
            found[name] = Controller(name, *where, files)
    return Layout(version, found, missing)


def _v2_controllers(mount: str) -> list[str]:
    try:
        return (Path(mount) / "cgroup.controllers").read_text().split()
    except OSError:
        return []


def _files(version: int, mount: str, name: str) -> tuple[str, ...] | None:
    """The first set of the controller's files present at its mount; v2 has them
    in child groups only, where its cgroup.controllers lists the controller."""
    for files in FILES[version][name]:
        if version == 2 or all((Path(mount) / f).exists() for f in files):
            return files
    return None


def cfs_quota(found: Layout | None = None) -> Controller | None:
    """Where CFS quotas can be set (the cpu controller, its files `files` in a
    container's group), or None when this host cannot."""
    return (found or layout()).controllers.get("cpu")


def parse_proc_cgroup(text: str) -> dict[str, str]:
    """/proc/PID/cgroup: controller -> the process's group in its hierarchy; v2's
    one line (`0::/path`) under "" (cgroups(7))."""
    groups = {}
    for line in text.splitlines():
        parts = line.split(":", 2)
        if len(parts) == 3:
            for name in parts[1].split(",") if parts[1] else [""]:
                groups[name] = parts[2]
    return groups


def group_of(pid: int, controller: Controller, proc: Path = Path("/proc")) -> Path:
    """The directory of the process's group in the controller's hierarchy;
    OSError (or KeyError: not in that hierarchy) when it cannot be read."""
    groups = parse_proc_cgroup((proc / str(pid) / "cgroup").read_text())
    path = groups["" if controller.version == 2 else controller.name]
    return Path(controller.mount) / path.lstrip("/")


def cpu_times(group: Path) -> tuple[float, float]:
    """(user, system) CPU seconds the group's tasks used, by whichever file it has;
    OSError when it has none."""
    usage_user, usage_sys = group / "cpuacct.usage_user", group / "cpuacct.usage_sys"
    if usage_user.exists() and usage_sys.exists():
        return int(usage_user.read_text()) / 1e9, int(usage_sys.read_text()) / 1e9
    stat = group / "cpu.stat"
    if stat.exists():
        values = _keyed(stat.read_text())
        return values["user_usec"] / 1e6, values["system_usec"] / 1e6
    values = _keyed((group / "cpuacct.stat").read_text())
    return values["user"] / USER_HZ, values["system"] / USER_HZ


def _keyed(text: str) -> dict[str, int]:
    """`key value` lines (cpu.stat, cpuacct.stat)."""
    return {k: int(v) for k, v in (line.split() for line in text.splitlines() if line.strip())}


def procs(group: Path) -> list[int]:
    """The pids of the group's processes (their threads: /proc/PID/task)."""
    return [int(pid) for pid in (group / "cgroup.procs").read_text().split()]


def hierarchies(table: Sequence[Mounted] | None = None) -> list[Mounted]:
    """Every mounted cgroup hierarchy (v1's, one per controller set, and v2's)."""
    return [m for m in (mounts() if table is None else table)
            if m.fstype in ("cgroup", "cgroup2")]


def tree(top: Path) -> list[Path]:
    """`top` and every group under it, deepest first (the order rmdir needs);
    none if it is not there."""
    if not top.is_dir():
        return []
    return [Path(d) for d, _, _ in os.walk(top, topdown=False)]


def own_parents(table: Sequence[Mounted] | None = None,
                proc: Path = Path("/proc")) -> list[Path]:
    """Where a relative cgroupsPath lands in each hierarchy: under this
    process's own group there (runc nests it so)."""
    try:
        groups = parse_proc_cgroup((proc / "self" / "cgroup").read_text())
    except OSError:
        return []
    found = []
    for m in hierarchies(table):
        keys = [""] if m.fstype == "cgroup2" else m.options.split(",")
        key = next((k for k in keys if k in groups), None)
        if key is not None:
            found.append(Path(m.point) / groups[key].lstrip("/"))
    return found


def remove(groups: Sequence[Path], wait_s: float = 3.0) -> list[str]:
    """rmdir each group (deepest first), killing what is still in it: a group
    named for a container cnfperf made holds nobody else's processes (a runc
    killed while it created one leaves its init waiting there). Errors, not
    'already gone'."""
    errors = []
    for group in groups:
        if (problem := _rmdir(group, wait_s)) is not None:
            errors.append(f"cgroup {group}: {problem}")
    return errors


def _rmdir(group: Path, wait_s: float) -> str | None:
    """Remove a group, its tasks killed; a process just killed (or a conmon whose
    container was just removed) still exits for a moment: EBUSY is waited for.
    None, or why not."""
    deadline = time.monotonic() + wait_s
    while True:
        try:
            group.rmdir()
            return None
        except FileNotFoundError:
            return None
        except OSError as e:
            if e.errno != errno.EBUSY or time.monotonic() > deadline:
                return e.strerror
        with contextlib.suppress(OSError):
            for pid in procs(group):
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
        time.sleep(0.05)
