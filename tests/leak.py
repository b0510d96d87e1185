"""What a test may leave behind, snapshotted before and compared after.

Every end-to-end test wraps itself in `assert_no_leftovers()` (or the
`no_leftovers` fixture): cleanup is part of what we test, not an afterthought.
"""
from __future__ import annotations

import contextlib
import glob
import os
import subprocess

from cnfperf.cluster.node import SYSCTLS
from cnfperf.host import tools
from cnfperf.runtimes import podman
from cnfperf.runtimes.runc import RUNC_ROOT

# Processes the harness may start; anything by these names that outlives a test leaked.
WATCHED_COMMS = ("cnfperf-engine", "dpdk-testpmd", "ovs-vswitchd", "ovsdb-server", "runc",
                 "qemu-system-x86",
                 "stress-ng", "click", "snabb", "bessd", "[snabb sup]", "vpp_main", "vpp_wk_",
                 "conmon", "podman",
                 # routing daemons in NFs (cnfperf/nfs/frr.py)
                 "zebra", "ospfd", "bgpd", "bfdd", "mgmtd", "staticd",
                 # the test cluster's daemons (cnfperf/cluster/node.py)
                 "containerd", "kube", "etcd", "multus")


def _lines(argv: list[str]) -> set[str]:
    try:
        out = subprocess.run(argv, capture_output=True, text=True, timeout=20).stdout
    except (OSError, subprocess.TimeoutExpired):
        return set()
    return {line.strip() for line in out.splitlines() if line.strip()}


def _processes() -> set[str]:
    found = set()
    for stat_path in glob.glob("/proc/[0-9]*/stat"):
        with contextlib.suppress(OSError):
            stat = open(stat_path).read()
            comm = stat[stat.index("(") + 1:stat.rindex(")")]
            state = stat[stat.rindex(")") + 2]
            # A zombie has exited: it only waits for a slow pid 1 to reap it.
            if state != "Z" and comm.startswith(WATCHED_COMMS + ("dpdk-",)):
                found.add(f"{stat_path.split('/')[2]}:{comm}")
    return found


def _runc_ours() -> set[str]:
    """Containers under cnfperf's runc root. `runc list` would create that root,
    so it is asked only when the root exists: a leftover root must stay visible
    (as a file under /run/cnfperf) instead of being made by the check itself."""
    if not RUNC_ROOT.is_dir():
        return set()
    return _lines(["runc", "--root", str(RUNC_ROOT), "list", "-q"])


def _podman_ours() -> set[str]:
    """Containers in cnfperf's podman store, and the cgroups they leave (the
    runtime's leftovers(): asking podman makes its run-time state, which that
    removes again when no container is left)."""
    if tools.find("podman") is None:
        return set()
    return set(podman.PodmanRuntime.leftovers(""))


def _sysctl(name: str) -> str:
    try:
        return open("/proc/sys/" + name.replace(".", "/")).read().strip()
    except OSError:
        return ""


def _hugetlbfs_mounts() -> set[str]:
    with open("/proc/mounts") as f:
        return {line.split()[1] for line in f if line.split()[2:3] == ["hugetlbfs"]}


def cgroups() -> set[str]:
    """Cgroup directories named like ours, in every hierarchy (runc nests a
    container's under its own cgroup, a few levels down)."""
    # podman's own parent of what it starts outside the group it is given
    return {d for depth in range(1, 5)
            for d in glob.glob("/sys/fs/cgroup/*/" + "*/" * (depth - 1) + "cnfp*")} | \
        set(glob.glob("/sys/fs/cgroup/*/libpod_parent"))


def snapshot() -> dict[str, set[str]]:
    return {
        "netns": {n.split()[0] for n in _lines(["ip", "netns", "list"])},
        "links": {l.split("@")[0] for l in _lines(["ip", "-o", "-br", "link", "show"])
                  for l in [l.split()[0]]},
        "processes": _processes(),
        "hugepage files": {f for m in _hugetlbfs_mounts() for f in glob.glob(f"{m}/*")},
        "dpdk runtime dirs": set(glob.glob("/var/run/dpdk/*")),
        "runc containers": _lines(["runc", "list", "-q"]) | _runc_ours(),
        "podman containers": _podman_ours(),
        "cgroups": cgroups(),
        "cnfperf run files": set(glob.glob("/run/cnfperf/*")),
        "noise files": set(glob.glob("/var/tmp/cnfp*")),
        # Snabb's defaults, which cnfperf points into a run directory: its shm
        # root and hugetlbfs, its feature cache and its supervisor's lock file
        "snabb files": set(glob.glob("/var/run/snabb/*") + glob.glob("/tmp/vhost_features_*")
                           + glob.glob("/tmp/lua_*")),
        # VPP's API segment, named after the point (other shm files of DPDK's
        # live in its runtime directories)
        "shared memory": set(glob.glob("/dev/shm/cnfp*")),
        # what the test cluster's daemons make outside its folder (cluster/node.py's OUTSIDE)
        "cluster files": set(glob.glob("/var/lib/cni/results/cnfpkube*")
                             + glob.glob("/var/log/containers/*")
                             + glob.glob("/var/lib/kubelet/*") + glob.glob("/run/containerd/*")),
        # the kernel tunables the test cluster's kubelet sets (cluster/node.py's SYSCTLS)
        "sysctls": {f"{name}={_sysctl(name)}" for name in SYSCTLS},
        "xdp programs": {l for l in _lines(["ip", "-o", "link", "show"]) if " xdp" in l},
    }


def diff(before: dict[str, set[str]], after: dict[str, set[str]]) -> dict[str, set[str]]:
    return {k: after[k] - before.get(k, set()) for k in after if after[k] - before.get(k, set())}


@contextlib.contextmanager
def assert_no_leftovers(kubelet_gc: bool = False):
    """`kubelet_gc`: a deleted pod's container logs are the kubelet's, which
    removes them with the dead container on its garbage collection (once a
    minute): left out of the comparison (the test cluster's end checks them)."""
    before = snapshot()
    yield
    left = diff(before, snapshot())
    if kubelet_gc and "cluster files" in left:
        left["cluster files"] = {f for f in left["cluster files"]
                                 if not f.startswith("/var/log/containers/")}
        left = {k: v for k, v in left.items() if v}
    assert not left, f"left behind: {left}"


def is_root() -> bool:
    return os.geteuid() == 0
