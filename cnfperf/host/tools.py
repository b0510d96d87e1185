"""The programs cnfperf, its tests and its benchmarks run, and the Debian package
each comes in.

One table serves `cnfperf doctor`, the data planes' and runtimes' checks, the
notes of a sweep that leaves a data plane out, and the tests (which fail under
CI=true when a tool is missing, instead of skipping). A program that one data
plane alone runs is in a table of its own there (DataPlane.tools), which
find(), missing() and problems() are handed. The Makefile's APT_PACKAGES
installs every package named here and there; a unit test keeps them, and every
command the code runs, in step.
"""
from __future__ import annotations

import os
import re
import shutil
from dataclasses import dataclass
from typing import Mapping

TESTPMD = "dpdk-testpmd"   # DPDK's test application: a switch, an NF, and in NF images
STRESS_NG = "stress-ng"    # the noisy neighbour (noise.py)
QEMU = "qemu-system-x86_64"   # the vm runtime's VMs (runtimes/vm)
# The VMs' kernel, not the host's: the vm runtime boots its /boot/vmlinuz-*
# with the modules in /lib/modules (runtimes/vm/guest.py). A package, no tool.
GUEST_KERNEL = "linux-image-amd64"

# Where Debian puts administrators' tools; a non-root PATH may lack them.
SBIN = ("/usr/local/sbin", "/usr/sbin", "/sbin")


@dataclass(frozen=True)
class Tool:
    package: str                 # the Debian package that has it
    paths: tuple[str, ...] = ()  # where it is when not on PATH


TOOLS: dict[str, Tool] = {
    # links, namespaces, cgroups, hugepages
    "ip": Tool("iproute2"),
    "bridge": Tool("iproute2"),
    "tc": Tool("iproute2"),
    "nft": Tool("nftables"),       # a link's policer at its netdev ingress (host/buckets.py)
    "taskset": Tool("util-linux"),
    "dmesg": Tool("util-linux"),   # the kernel's TSC calibration (cpu.py)
    "mount": Tool("mount"),
    "umount": Tool("mount"),
    "sysctl": Tool("procps"),
    "pgrep": Tool("procps"),
    "pkill": Tool("procps"),
    "modprobe": Tool("kmod"),
    "ldd": Tool("libc-bin"),
    # routing daemons in NFs (nfs/frr.py): vtysh asks them; they are in /usr/lib/frr
    "vtysh": Tool("frr"),
    # containers: runc runs them, a static BusyBox is their shell and tools
    "runc": Tool("runc"),
    "busybox": Tool("busybox-static"),
    # VMs (runtimes/vm): QEMU; their kernel is GUEST_KERNEL, their shell BusyBox
    QEMU: Tool("qemu-system-x86"),
    "mke2fs": Tool("e2fsprogs"),    # a guest disk image from a directory (tests, docs)
    # the podman runtime: podman makes containers, conmon watches each (runc runs them)
    "podman": Tool("podman"),
    "conmon": Tool("conmon"),
    # the test cluster's node (cluster/node.py): its containerd and containerd's CLI
    # (which imports the images made here); the CNI plugins are files, not tools
    "containerd": Tool("containerd"),
    "ctr": Tool("containerd"),
    # its image registry, and what pushes cnfperf's images to a registry (`registry`)
    "docker-registry": Tool("docker-registry"),
    "skopeo": Tool("skopeo"),
    # DPDK, and which of a package's alternatives is which
    TESTPMD: Tool("dpdk-dev"),
    "update-alternatives": Tool("dpkg"),
    "dpkg-query": Tool("dpkg"),     # the guests' kernel: linux-image-amd64's (runtimes/vm)
    # noisy neighbours
    STRESS_NG: Tool("stress-ng"),
    # building the engine
    "meson": Tool("meson"),
    "ninja": Tool("ninja-build"),
    "pkg-config": Tool("pkg-config"),
    "gcc": Tool("gcc"),
    # building switches from source (switches/build.sh; a recipe is tested on a
    # source of its switch's layout)
    "cmake": Tool("cmake"),
    # tests and benchmarks: captures, peers, the report's reader
    "tshark": Tool("tshark"),
    "tcpdump": Tool("tcpdump"),
    "ethtool": Tool("ethtool"),
    "iperf3": Tool("iperf3"),
    "trafgen": Tool("netsniff-ng"),
    "sockperf": Tool("sockperf"),
    "perf": Tool("linux-perf"),    # where an NF spends its time (bench/nf_checksums.py)
    "chromium-headless-shell": Tool("chromium-headless-shell"),
    # whether switches/ changed since main's (tests/e2e/test_switch_source_builds.py)
    "git": Tool("git"),
    # the tests' other hosts (tests/sshhosts.py): namespaces with an sshd each
    "unshare": Tool("util-linux"),
    "nsenter": Tool("util-linux"),
    "sshd": Tool("openssh-server"),
    "ssh-keygen": Tool("openssh-client"),
}


# The engine's packet I/O apis that need a library at build time.
ENGINE_API_PACKAGES = {"dpdk": "libdpdk-dev", "xdp": "libxdp-dev"}


def release(version: str) -> tuple[int, ...]:
    """Major and minor of a version as a program or package says it: (6, 12)
    of `6.12.117+deb12-amd64`, (10, 0) of `10.0.2`; () where it has none."""
    return tuple(int(p) for p in re.findall(r"\d+", version)[:2])


def find(name: str, table: Mapping[str, Tool] = TOOLS) -> str | None:
    """The tool's path, or None. Unknown names are a programming error."""
    tool = table[name]
    found = shutil.which(name) or shutil.which(name, path=os.pathsep.join(SBIN))
    if found:
        return found
    return next((p for p in tool.paths if os.access(p, os.X_OK)), None)


def not_found(what: str, package: str) -> str:
    """How anything missing is reported everywhere: what, and what to install."""
    return f"{what} not found (Debian package {package})"


def missing(name: str, table: Mapping[str, Tool] = TOOLS) -> str:
    return not_found(name, table[name].package)


def problems(*names: str, table: Mapping[str, Tool] = TOOLS) -> list[str]:
    return [missing(n, table) for n in names if find(n, table) is None]


def engine_without(api: str) -> str:
    """Why the engine lacks an api, and how to get it."""
    package = ENGINE_API_PACKAGES.get(api)
    return (f"the engine was built without it (Debian package {package}, then make build)"
            if package else "the engine was built without it")
