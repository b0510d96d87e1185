"""OCI runtime-spec config.json for one engine container, written as a dict
(`runc spec` was the reference; we state every field we rely on)."""
from __future__ import annotations

import os
import resource
from typing import Sequence

from .base import Mount, Quota, cpu_list

OCI_VERSION = "1.0.2"

# What the engine's APIs need: raw sockets and link setup (NET_RAW, NET_ADMIN),
# locked memory for AF_XDP umem and DPDK (IPC_LOCK), BPF/XDP load and DPDK's
# pagemap reads (SYS_ADMIN), real-time priority (SYS_NICE), rlimits (SYS_RESOURCE).
CAPABILITIES = ("CAP_AUDIT_WRITE", "CAP_KILL", "CAP_NET_BIND_SERVICE",
                "CAP_NET_RAW", "CAP_NET_ADMIN", "CAP_IPC_LOCK", "CAP_SYS_ADMIN",
                "CAP_SYS_NICE", "CAP_SYS_RESOURCE")

# The container's pid 1 in the full image (rootfs.py; the minimal image has no
# shell and runs the engine's --idle instead). pid 1 ignores signals it has no
# handler for, so a bare `sleep` would survive SIGTERM; the shell's trap makes
# the container stoppable by a polite kill too.
INIT = ["/bin/sh", "-c", "trap 'exit 0' TERM INT; sleep 2147483647 & wait"]

# Writable scratch on top of the read-only image; mount targets must lie under
# one of these (or exist in the image) so runc never has to create a directory
# inside the shared, cached rootfs.
SCRATCH_DIRS = ("/dev", "/run", "/tmp", "/mnt")

# Capability numbers (linux/capability.h), to check which of ours we hold.
CAP_BITS = {"CAP_KILL": 5, "CAP_NET_BIND_SERVICE": 10, "CAP_NET_ADMIN": 12,
            "CAP_NET_RAW": 13, "CAP_IPC_LOCK": 14, "CAP_SYS_ADMIN": 21, "CAP_SYS_NICE": 23,
            "CAP_SYS_RESOURCE": 24, "CAP_AUDIT_WRITE": 29}

UNLIMITED = 2**64 - 1
NOFILE = 65536
TUN = {"path": "/dev/net/tun", "type": "c", "major": 10, "minor": 200,
       "fileMode": 0o666, "uid": 0, "gid": 0}


def _tmpfs(target: str, mode: str, size: str, extra: Sequence[str] = ()) -> dict:
    return {"destination": target, "type": "tmpfs", "source": "tmpfs",
            "options": ["nosuid", "nodev", f"mode={mode}", f"size={size}", *extra]}


def _base_mounts() -> list[dict]:
    dev = _tmpfs("/dev", "755", "65536k", ["strictatime"])
    dev["options"].remove("nodev")
    return [
        {"destination": "/proc", "type": "proc", "source": "proc",
         "options": ["nosuid", "noexec", "nodev"]},
        dev,
        {"destination": "/dev/pts", "type": "devpts", "source": "devpts",
         "options": ["nosuid", "noexec", "newinstance", "ptmxmode=0666", "mode=0620"]},
        _tmpfs("/dev/shm", "1777", "65536k", ["noexec"]),
        {"destination": "/dev/mqueue", "type": "mqueue", "source": "mqueue",
         "options": ["nosuid", "noexec", "nodev"]},
        {"destination": "/sys", "type": "sysfs", "source": "sysfs",
         "options": ["nosuid", "noexec", "nodev", "ro"]},
        # DPDK keeps its runtime dir (/var/run/dpdk) here: private to the container.
        _tmpfs("/run", "755", "65536k"),
        _tmpfs("/tmp", "1777", "65536k"),
        _tmpfs("/mnt", "755", "1024k"),
    ]


# What a container mounts its own over: an image's files under these are hidden.
MOUNTED_OVER = tuple(m["destination"] for m in _base_mounts())


def bind_mount(m: Mount) -> dict:
    opts = ["rbind", "rprivate"] + (["ro"] if m.readonly else [])
    return {"destination": m.target, "type": "bind", "source": os.path.abspath(m.source),
            "options": opts}


def held_capabilities() -> tuple[str, ...]:
    """Ours that this process may hand on: runc cannot give a container a
    capability outside its own bounding set (nested sandboxes often drop some)."""
    with open("/proc/self/status") as f:
        bnd = next(int(l.split()[1], 16) for l in f if l.startswith("CapBnd:"))
    return tuple(c for c in CAPABILITIES if bnd >> CAP_BITS[c] & 1)


def reachable_limit(res: int, wanted: int) -> int:
    """The rlimit runc can set: raising above our hard limit needs CAP_SYS_RESOURCE.
    (Locking memory still works past a low RLIMIT_MEMLOCK with CAP_IPC_LOCK.)"""
    hard = resource.getrlimit(res)[1]
    if hard == resource.RLIM_INFINITY:
        return wanted
    if "CAP_SYS_RESOURCE" in held_capabilities():
        return wanted
    return min(hard, wanted)


def host_settings() -> dict:
    """What config() needs to know about the host, for RuncRuntime.create()."""
    return {"caps": held_capabilities(),
            "memlock": reachable_limit(resource.RLIMIT_MEMLOCK, UNLIMITED),
            "nofile": reachable_limit(resource.RLIMIT_NOFILE, NOFILE),
            "tun": os.path.exists("/dev/net/tun")}


def config(name: str, rootfs: str, cpus: Sequence[int], netns_path: str,
           mounts: Sequence[Mount] = (), tun: bool = False,
           caps: Sequence[str] = CAPABILITIES, memlock: int = UNLIMITED,
           nofile: int = NOFILE, init: Sequence[str] = INIT, quota: Quota | None = None) -> dict:
    caps = list(caps)
    # runc writes cpu.cfs_quota_us/cfs_period_us (cgroup v1) or cpu.max (v2).
    cpu: dict = {"cpus": cpu_list(cpus)}
    if quota is not None:
        cpu.update(quota=quota.quota_us, period=quota.period_us)
    # Parents before children, so a mount under another mount lands on top of it.
    binds = [bind_mount(m) for m in sorted(mounts, key=lambda m: m.target.count("/"))]
    devices_allow = [{"allow": False, "access": "rwm"}]
    devices = []
    if tun:
        devices.append(dict(TUN))
        devices_allow.append({"allow": True, "type": "c", "major": 10, "minor": 200,
                              "access": "rwm"})
    return {
        "ociVersion": OCI_VERSION,
        "process": {
            "terminal": False,
            "user": {"uid": 0, "gid": 0},
            "args": list(init),
            "env": ["PATH=/bin:/sbin:/usr/bin:/usr/sbin", "HOME=/"],
            "cwd": "/",
            "capabilities": {k: caps for k in
                             ("bounding", "effective", "permitted", "inheritable", "ambient")},
            "rlimits": [
                {"type": "RLIMIT_MEMLOCK", "hard": memlock, "soft": memlock},
                {"type": "RLIMIT_NOFILE", "hard": nofile, "soft": nofile},
            ],
            "noNewPrivileges": True,
        },
        "root": {"path": rootfs, "readonly": True},
        "hostname": name,
        "mounts": _base_mounts() + binds,
        "linux": {
            # Relative: runc nests it under its own cgroup in every hierarchy, so
            # the host's limits on us still apply to the containers we start.
            "cgroupsPath": name,
            "resources": {"cpu": cpu, "devices": devices_allow},
            "devices": devices,
            "namespaces": [{"type": "pid"}, {"type": "ipc"}, {"type": "uts"},
                           {"type": "mount"}, {"type": "network", "path": netns_path}],
            "maskedPaths": ["/proc/acpi", "/proc/asound", "/proc/kcore", "/proc/keys",
                            "/proc/latency_stats", "/proc/timer_list", "/proc/timer_stats",
                            "/proc/sched_debug", "/sys/firmware", "/proc/scsi"],
            "readonlyPaths": ["/proc/bus", "/proc/fs", "/proc/irq", "/proc/sys",
                              "/proc/sysrq-trigger"],
        },
    }


def check_targets(mounts: Sequence[Mount], rootfs: str) -> None:
    """Refuse targets runc would have to create inside the read-only image."""
    for m in mounts:
        target = "/run/" + m.target[len("/var/run/"):] if m.target.startswith("/var/run/") \
            else m.target
        if any(target.startswith(d + "/") for d in SCRATCH_DIRS):
            continue
        if m.target.startswith(("/sys/", "/proc/")):
            continue
        if os.path.lexists(os.path.join(rootfs, m.target.lstrip("/"))):
            continue
        raise ValueError(f"mount target {m.target!r}: must lie under "
                         f"{', '.join(SCRATCH_DIRS)} (the image is read-only)")
