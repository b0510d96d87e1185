"""QEMU's command line for a VM, and the kernel command line that tells the
guest's /init what it has (a pure function of a Spec: unit tests read it)."""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from ..base import Nic
from . import nics as nic_slots
from .frames import PORT_NAME
from .ports import sock_path

EXEC_PORTS = 8          # commands a VM runs at once (one relay each)
HUGEPAGE_MB = 2
GUEST_HUGEPAGES_MB = 256   # reserved in a guest with a DPDK NIC, for its EAL
BASE_MB = 320              # the guest kernel, its page cache of the 9p root, Python
CMDLINE_MAX = 2047         # x86's COMMAND_LINE_SIZE less its NUL


@dataclass(frozen=True)
class Spec:
    name: str
    cpus: int                      # vCPUs
    accel: str                     # kvm | tcg
    kernel: Path
    initramfs: Path
    python: str                    # the guest's exec server runs under it
    dir: Path                      # QMP, exec ports, console log
    memory_mb: int | None = None   # None: BASE_MB, and GUEST_HUGEPAGES_MB more with DPDK NICs
    nics: tuple[Nic, ...] = ()
    fds: dict[int, int] = field(default_factory=dict)   # NIC index -> its tap fd
    mounts: tuple[str, ...] = ()   # host paths the guest must see through its tmpfs
    disk: str | None = None        # a disk image of the user's: its root for their commands
    disk_format: str = "raw"       # qcow2 | raw (guest.disk_format)
    iommu: bool = False            # an emulated IOMMU: vfio-pci for DPDK in the guest

    @property
    def hugepages(self) -> int:
        return GUEST_HUGEPAGES_MB // HUGEPAGE_MB if any(n.dpdk for n in self.nics) else 0

    @property
    def memory(self) -> int:
        return self.memory_mb or BASE_MB + self.hugepages * HUGEPAGE_MB

    @property
    def qmp(self) -> Path:
        return self.dir / "qmp.sock"

    @property
    def console(self) -> Path:
        return self.dir / "console.log"


def cmdline(spec: Spec) -> str:
    """The guest kernel's command line: quiet on the serial console, a panic
    ends QEMU (-no-reboot), hugepages for DPDK, and /init's cnfperf_* words."""
    words = ["console=ttyS0", "quiet", "panic=-1", f"cnfperf_name={spec.name}",
             f"cnfperf_python={spec.python}"]
    if spec.hugepages:
        words.append(f"hugepages={spec.hugepages}")
    if spec.nics:
        words.append(f"cnfperf_nics={nic_slots.describe(spec.nics)}")
    if spec.mounts:
        words.append(f"cnfperf_mounts={','.join(spec.mounts)}")
    if spec.disk:
        words.append("cnfperf_disk=1")
    if spec.iommu:
        # translation for the devices bound to vfio-pci only: the kernel's own
        # drivers keep their DMA untranslated (pt), as fast as without one
        words += ["intel_iommu=on", "iommu=pt"]
    line = " ".join(words)
    if len(line) > CMDLINE_MAX:
        raise ValueError(f"the guest's kernel command line would be {len(line)} bytes "
                         f"(at most {CMDLINE_MAX}): fewer NICs or mounts")
    return line


def cpu_args(accel: str) -> list[str]:
    if accel == "kvm":
        return ["-accel", "kvm", "-cpu", "host"]
    # one host thread per vCPU (MTTCG), each pinned to its core
    return ["-accel", "tcg,thread=multi", "-cpu", "max"]


def machine_args(spec: Spec) -> list[str]:
    """q35 (PCI: virtio-pci, uio_pci_generic; with Spec.iommu Intel's IOMMU,
    for vfio-pci), guest RAM shared (memfd) so that a vhost-user backend can
    map it, started paused (-S) until its vCPU threads are in their cgroup and
    pinned."""
    # debug-threads: QEMU names its threads (CPU 0/TCG, …), as run/cpu.py reports them
    # the IOMMU before every PCI device it translates for
    iommu = ["-device", "intel-iommu"] if spec.iommu else []
    return ["-name", f"cnfperf:{spec.name},debug-threads=on", "-machine", "q35", *iommu,
            *cpu_args(spec.accel),
            "-smp", str(spec.cpus), "-m", f"{spec.memory}M",
            "-object", f"memory-backend-memfd,id=mem,size={spec.memory}M,share=on",
            "-numa", "node,memdev=mem",
            "-nodefaults", "-no-user-config", "-display", "none", "-no-reboot", "-S",
            "-serial", f"file:{spec.console}",
            "-qmp", f"unix:{spec.qmp},server=on,wait=off",
            "-kernel", str(spec.kernel), "-initrd", str(spec.initramfs),
            "-append", cmdline(spec)]


def root_args() -> list[str]:
    """The host's root, read-only; multidevs=remap keeps inode numbers of its
    many file systems apart."""
    return ["-fsdev", "local,id=root,path=/,security_model=none,readonly=on,multidevs=remap",
            "-device", f"virtio-9p-pci,fsdev=root,mount_tag=root,addr={nic_slots.SLOT_9P:#x}"]


def exec_args(spec: Spec) -> list[str]:
    """The exec server's virtio-serial ports, a unix socket each (QEMU listens);
    port 0 of the bus is kept for a console, so they are 1 onwards."""
    args = ["-device", f"virtio-serial-pci,id=ser,addr={nic_slots.SLOT_SERIAL:#x},"
                       f"max_ports={EXEC_PORTS + 1}"]
    for n in range(EXEC_PORTS):
        args += ["-chardev", f"socket,id=exec{n},path={sock_path(spec.dir, n)},server=on,wait=off",
                 "-device", f"virtserialport,bus=ser.0,nr={n + 1},chardev=exec{n},"
                            f"name={PORT_NAME}{n}"]
    return args


def disk_args(spec: Spec) -> list[str]:
    """A user's disk image as virtio-blk; snapshot=on: the guest's writes go to
    a temporary overlay QEMU unlinks at once, never to the image."""
    if not spec.disk:
        return []
    return ["-drive", f"file={spec.disk},if=none,id=disk,format={spec.disk_format},snapshot=on",
            "-device", f"virtio-blk-pci,drive=disk,addr={nic_slots.SLOT_DISK:#x}"]


def nic_args(index: int, nic: Nic, fd: int | None) -> list[str]:
    """One NIC: its backend (an open tap or macvtap device, or a vhost-user
    socket) and its device at its fixed slot: virtio-net-pci, or an igb behind
    a PCIe root port there (SR-IOV needs PCI Express; the guest's kernel
    numbers the port's bus)."""
    netdev = f"net{index}"
    if nic.socket is not None:
        # as a client it waits for the server at start, and reconnects to it
        mode = "server=on,wait=off" if nic.server else "reconnect=1"
        backend = ["-chardev", f"socket,id=vhost{index},path={nic.socket},{mode}",
                   "-netdev", f"vhost-user,id={netdev},chardev=vhost{index}"]
    else:
        if fd is None:
            raise ValueError(f"nic {index} ({nic.name}): no open tap device")
        # no /dev/vhost-net on every host: QEMU moves the frames itself
        backend = ["-netdev", f"tap,id={netdev},fd={fd},vhost=off"]
    if nic.model == nic_slots.IGB:
        port = f"port{index}"
        # romfile=: no boot ROM (the guest boots from -kernel), none to look for
        return backend + ["-device", f"pcie-root-port,id={port},bus=pcie.0,chassis={index + 1},"
                                     f"addr={nic_slots.slot(index):#x}",
                          "-device", f"igb,bus={port},netdev={netdev},mac={nic.mac.lower()},"
                                     "romfile="]
    return backend + ["-device", f"virtio-net-pci,netdev={netdev},mac={nic.mac.lower()},"
                                 f"addr={nic_slots.slot(index):#x}"]


def argv(qemu: list[str], spec: Spec) -> list[str]:
    """qemu: its program's first words (program.Qemu.args)."""
    args = [*qemu, *machine_args(spec), *root_args(), *exec_args(spec), *disk_args(spec)]
    for n, nic in enumerate(spec.nics):
        args += nic_args(n, nic, spec.fds.get(n))
    return args


def probe_argv(qemu: str, accel: str, kernel: Path, initramfs: Path) -> list[str]:
    """The smallest boot: /init prints its first line on the serial console
    (stdio) and powers off."""
    return [qemu, "-machine", "q35", *cpu_args(accel), "-smp", "1", "-m", "128M",
            "-nodefaults", "-no-user-config", "-display", "none", "-no-reboot",
            "-serial", "stdio", "-kernel", str(kernel), "-initrd", str(initramfs),
            "-append", "console=ttyS0 quiet panic=-1 cnfperf_probe=1"]
