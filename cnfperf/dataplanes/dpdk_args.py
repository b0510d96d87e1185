"""EAL arguments and vdev strings for every DPDK process of a run.

Every process gets its own --file-prefix (two EALs with one prefix would attach
to each other's shared config) and a memory limit, so the hugepages a test point
reserves are the sum of its processes' limits. --in-memory keeps hugepage memory
in memfds that die with the process: a killed run leaves no hugepage files, only
an empty runtime directory that hugepages.remove_dpdk_files() sweeps.
--single-file-segments is what lets a vhost-user peer map all of virtio-user's
memory through a handful of fds (without it only the first segment is shared).
"""
from __future__ import annotations

from typing import Sequence

# Enough for the engine's mbuf pool (burst and ring sized) plus rings and EAL's own.
ENDPOINT_MB = 64
# One vhost-user queue pair of 256..1024 descriptors per side, unless a switch
# is asked for more (switch_rxq): the engine polls queue 0 only.
QUEUES = 1


def eal_args(file_prefix: str, huge_dir: str, memory_mb: int, vdevs: Sequence[str] = (),
             lcores: str | None = None) -> list[str]:
    args = ["--file-prefix", file_prefix, "--huge-dir", huge_dir,
            "--in-memory", "--single-file-segments",
            "--socket-mem", str(memory_mb), "--socket-limit", str(memory_mb),
            # Only virtual devices: no PCI scan, no telemetry thread, and IOVA as VA
            # because a container may not read /proc/self/pagemap.
            "--no-pci", "--no-telemetry", "--iova-mode", "va"]
    if lcores is not None:
        args += ["--lcores", lcores]
    for vdev in vdevs:
        args += ["--vdev", vdev]
    return args


def lcores(cores: Sequence[int], floating: Sequence[int] = ()) -> str:
    """EAL's --lcores: lcore 0 (main) and 1 on the first core, 2… on the others;
    unpinned (TestPoint.floating), every lcore floats over those cores."""
    if floating:
        spread = "(" + ",".join(map(str, sorted(floating))) + ")"
        return ",".join(f"{n}@{spread}" for n in range(len(cores) + 1))
    return ",".join(f"{n}@{cores[max(0, n - 1)]}" for n in range(len(cores) + 1))


def lcore_cpus(cores: Sequence[int], floating: Sequence[int] = ()) -> dict[int, int | None]:
    """What lcores() places each worker lcore (1…) on: its core, None where it floats."""
    return {n: None if floating else cores[n - 1] for n in range(1, len(cores) + 1)}


def _vdev(driver: str, index: int, **params: object) -> str:
    opts = ",".join(f"{k}={v}" for k, v in params.items() if v is not None)
    return f"{driver}{index},{opts}"


def vhost(index: int, socket: str, client: bool = False, queues: int = QUEUES) -> str:
    """A vhost-user backend port (net_vhost): the side that maps its peer's memory."""
    return _vdev("net_vhost", index, iface=socket, queues=queues, client=1 if client else None)


def virtio_user(index: int, socket: str, mac: str | None = None, server: bool = False,
                queues: int = QUEUES, ring: int | None = None) -> str:
    """A virtio-user frontend port: what a container endpoint attaches as. Its
    `queues` are the queue pairs it offers its vhost-user peer (OVS sizes a
    vhost port's Rx queues by them); the engine enables and polls the first.
    `ring`: the descriptors of each of its virtqueues (`queue_size`, DPDK's
    default 256): the front end sizes a vhost-user ring, both ways alike."""
    return _vdev("net_virtio_user", index, path=socket, mac=mac, queues=queues,
                 queue_size=ring, server=1 if server else None)


# The PMDs' own buffers hold 2 KB: a 1518-byte frame, not a jumbo one.
STD_BUFFER = 2048
# The engine's rule for a jumbo frame's mbuf (FRAME_SLACK and JUMBO_UNIT in
# engine/src/api/dpdk.c): the frame, 128 bytes to spare, in whole 4 KB pages.
FRAME_SLACK = 128
JUMBO_UNIT = 4096
FCS = 4


def jumbo(frame_size: int) -> bool:
    """The engine gives frames of this size mbufs larger than the standard 2 KB
    (and so needs more memory for its pool)."""
    return frame_size - FCS + FRAME_SLACK > STD_BUFFER


def endpoint_mb(frame_size: int) -> int:
    """Memory for one engine's DPDK: its pool of ~4k mbufs plus EAL's own."""
    return 4 * ENDPOINT_MB if jumbo(frame_size) else ENDPOINT_MB


def memif(index: int, socket: str, role: str, mac: str | None = None, id: int = 0,
          frame_size: int = 0) -> str:
    """A memif port; the socket path is a file (not abstract) so it lives in the
    run's socket directory that both containers mount. Above 2 KB its ring
    buffers (bsize, set by the client, which owns the shared memory) hold one
    whole frame: one descriptor and one mbuf per frame."""
    if role not in ("server", "client"):
        raise ValueError(f"memif role {role!r}: server or client")
    bsize = round_up(frame_size, 1024) if frame_size > STD_BUFFER else None
    return _vdev("net_memif", index, role=role, id=id, socket=socket,
                 **{"socket-abstract": "no"}, mac=mac, bsize=bsize)


def af_packet(index: int, iface: str, frame_size: int = 0, queues: int = QUEUES) -> str:
    """The af_packet PMD's TPACKET slots must hold the kernel's header and a
    whole frame; its default 2 KB slot holds 1518 bytes. A larger slot is whole
    pages, one per block (the PMD strides its slots by framesz, so a block
    must hold a whole number of them), by the rule the engine sizes its mbufs
    with (engine/src/api/dpdk.c): the PMD needs an mbuf as large as a slot.
    `queues`: its queue pairs, a packet socket each in one fanout group (the
    kernel spreads the interface's frames over them by flow hash, whatever
    queues the interface itself has)."""
    if not jumbo(frame_size):
        return _vdev("net_af_packet", index, iface=iface, qpairs=queues)
    slot = round_up(frame_size - FCS + FRAME_SLACK, JUMBO_UNIT)
    return _vdev("net_af_packet", index, iface=iface, qpairs=queues, framesz=slot, blocksz=slot)


def af_xdp(index: int, iface: str, queues: int = QUEUES) -> str:
    """The af_xdp PMD: an AF_XDP socket on each of the interface's first
    `queues` queues (its XDP program steers each queue's frames to its own),
    frames in umem chunks the kernel fills and drains without a copy into a
    TPACKET ring. A frame must fit one 2 KB mbuf (nic_problem refuses jumbo
    frames with it); the interface must have the queues (xdp_queue_problem)."""
    return _vdev("net_af_xdp", index, iface=iface, start_queue=0, queue_count=queues)


def nic_problem(driver: str, frame_size: int) -> str | None:
    """Why DPDK cannot open a NIC with `driver` (nic_driver) for frames of
    `frame_size`, or None: af_xdp's frames fit one 2 KB buffer (a larger one
    would take a jumbo mbuf, which spans more than the PMD's umem chunk)."""
    if driver == "af_xdp" and jumbo(frame_size):
        largest = STD_BUFFER - FRAME_SLACK + FCS
        return (f"af_xdp takes frames of up to {largest} bytes (one 2 KB buffer each), not "
                f"{frame_size}: use af_packet")
    return None


def nic(index: int, iface: str, driver: str, frame_size: int = 0, queues: int = QUEUES) -> str:
    """The vdev through which DPDK opens a kernel NIC (a wire's end):
    `driver` is the scenario's nic_driver, af_packet or af_xdp; `queues` its
    Rx and Tx queues (a switch's switch_rxq; an engine NF's Port.queues, a
    thread per queue; another engine polls one)."""
    if driver == "af_xdp":
        return af_xdp(index, iface, queues)
    return af_packet(index, iface, frame_size, queues)


def xdp_queue_problem(iface: str, has: int, queues: int) -> str | None:
    """Why af_xdp cannot open `queues` queues of an interface that has `has`
    receive queues (an AF_XDP socket binds to one queue of the device), or None."""
    if queues <= has:
        return None
    return (f"{iface} has {has} receive queue(s); nic_driver af_xdp takes one socket per "
            f"queue, so switch_rxq {queues} needs {queues} (af_packet spreads over any)")


def round_up(n: int, unit: int) -> int:
    return -(-n // unit) * unit


def pci_eal_args(file_prefix: str, huge_dir: str, memory_mb: int,
                 devices: Sequence[str]) -> list[str]:
    """DPDK on PCI devices (virtual functions bound to uio_pci_generic or
    vfio-pci), allowed by address: physical addresses (uio has no IOMMU to
    map virtual ones), hugepages from the point's mount. The ports are
    numbered in the PCI bus's order of the devices."""
    args = ["--file-prefix", file_prefix, "--huge-dir", huge_dir, "--in-memory",
            "--socket-mem", str(memory_mb), "--socket-limit", str(memory_mb),
            "--no-telemetry", "--iova-mode", "pa"]
    for device in devices:
        args += ["-a", device]
    return args


def kernel_eal_args(file_prefix: str, vdevs: Sequence[str], frame_size: int = 0) -> list[str]:
    """DPDK on kernel interfaces through the af_packet PMD (its vdevs), the way
    DPDK runs without a supported NIC. The PMD copies between the kernel's ring
    and the mbufs, so ordinary memory serves (--no-huge): no hugepages to
    reserve, no hugetlbfs to mount."""
    memory = endpoint_mb(frame_size) * len(vdevs)
    args = ["--file-prefix", file_prefix, "--no-huge", "-m", str(memory),
            "--no-pci", "--no-telemetry"]
    for vdev in vdevs:
        args += ["--vdev", vdev]
    return args
