"""The guest: a Debian kernel (linux-image-amd64: the guests' kernel, not the
host's) and an initramfs of static BusyBox, the kernel modules the guest
needs, its /init and the exec server. Nothing else: the guest's root is the
host's own, read-only over 9p, so the engine, testpmd, Click and Python are
where they are on the host.

Built once and cached beside the container images (rootfs.images_dir), by a
hash of everything that goes in: the kernel as an uncompressed vmlinux, which
QEMU boots through its PVH entry without the decompressor (under TCG that
halves the boot: 4.6 s against 9.6 s for the vmlinuz), and the initramfs, a
gzipped newc cpio written in Python (cpio.py)."""
from __future__ import annotations

import contextlib
import functools
import hashlib
import lzma
import os
import re
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

from cnfperf.host.system import CommandFailed, is_static_elf, proc_stat, run
from cnfperf.host.tools import GUEST_KERNEL, not_found, release

from .. import rootfs
from ..base import ContainerError, ImageInfo
from . import cpio

FORMAT = "cnfperf-vm-guest-2"   # bump when the layout below changes
HERE = Path(__file__).parent
BOOT = Path("/boot")
MODULES = Path("/lib/modules")
GENERIC = "-amd64"     # linux-image-amd64's flavour (-cloud-amd64, -rt-amd64: others)
# The modules /init loads, by group: always (PCI virtio, the 9p root, the exec
# server's virtio-serial ports), for kernel NICs (and AF_PACKET for the
# engine's raw and mmap apis; the bridge, stp and llc along, and veth, for a
# guest that is a host of cnfperf's itself: its kernel bridge, its netns' veth
# pairs), for DPDK NICs, for a disk image of the user's
# (vm_image: virtio-blk, ext4 and the CRC32C ext4 asks for by a soft
# dependency, which `depends=` does not list), for an emulated SR-IOV NIC (igb;
# igbvf: its virtual functions' driver, as no udev loads it when they appear).
# Their dependencies come along.
GROUPS = {"base": ("virtio_pci", "9p", "9pnet_virtio", "virtio_console"),
          "net": ("virtio_net", "af_packet", "bridge", "veth"),
          "dpdk": ("uio_pci_generic",),
          "igb": ("igb", "igbvf"),
          "disk": ("virtio_blk", "crc32c_generic", "ext4")}
# A disk image's formats QEMU is told (never guessed: a raw image could pass
# for anything), by the image's first bytes.
QCOW2_MAGIC = b"QFI\xfb"
EXT4_MAGIC_AT, EXT4_MAGIC = 1080, b"\x53\xef"   # the superblock's s_magic
XZ_MAGIC = b"\xfd7zXZ\x00"


@dataclass(frozen=True)
class Kernel:
    version: str
    vmlinuz: Path
    modules: Path            # /lib/modules/VERSION

    @property
    def pvh(self) -> bool:
        """Whether QEMU can boot its vmlinux directly (its PVH entry)."""
        with contextlib.suppress(OSError):
            return "CONFIG_PVH=y" in (BOOT / f"config-{self.version}").read_text().splitlines()
        return False


@dataclass(frozen=True)
class Guest:
    kernel: Path             # what QEMU's -kernel boots
    initramfs: Path
    version: str             # the kernel's

    @property
    def info(self) -> ImageInfo:
        size = self.kernel.stat().st_size + self.initramfs.stat().st_size
        return ImageInfo(name=f"vm-{self.version}", path=str(self.kernel.parent), size_bytes=size)


def _version_key(version: str) -> list:
    return [(0, int(p)) if p.isdigit() else (1, p) for p in re.split(r"[.-]", version)]


def find_kernel(boot: Path = BOOT, modules: Path = MODULES, since: tuple[int, ...] | None = None,
                preferred: str | None = None) -> Kernel | None:
    """A kernel in /boot whose modules are installed: `preferred` (a version)
    where it is there, else the newest, Debian's generic flavour before others
    (a host's own kernel of another flavour may lack what a guest loads);
    `since`: only those of that version or later (the lab's)."""
    found = []
    for vmlinuz in boot.glob("vmlinuz-*"):
        version = vmlinuz.name.removeprefix("vmlinuz-")
        if (modules / version / "kernel").is_dir():
            found.append(Kernel(version, vmlinuz, modules / version))
    if since is not None:
        found = [k for k in found if release(k.version) >= since]
    elif preferred and (chosen := next((k for k in found if k.version == preferred), None)):
        return chosen
    return max(found, key=lambda k: (_generic(k.version), _version_key(k.version)), default=None)


@functools.cache
def _meta_version() -> str | None:
    """The kernel linux-image-amd64 depends on (`6.1.0-57-amd64`): Debian 12's
    own, which make deps installs for the guests. Another kernel installed
    beside it (the lab's 6.12) is not every VM's: a guest's DPDK on virtio
    was tested on this one."""
    with contextlib.suppress(CommandFailed, OSError):
        depends = run(["dpkg-query", "-W", "-f", "${Depends}", GUEST_KERNEL], timeout=10)
        if found := re.search(r"linux-image-(\S+)", depends):
            return found[1]
    return None


def default_kernel() -> Kernel | None:
    """The guests' kernel: linux-image-amd64's, else the newest (find_kernel)."""
    return find_kernel(preferred=_meta_version())


def _generic(version: str) -> bool:
    return version.endswith(GENERIC) and not version.endswith(("-cloud" + GENERIC, "-rt" + GENERIC))


def kernel_problem() -> str | None:
    """Why no guest can be built from this host's kernels, or None."""
    kernel = default_kernel()
    if kernel is None:
        return not_found(f"a guest kernel ({BOOT}/vmlinuz-VERSION with {MODULES}/VERSION)",
                         GUEST_KERNEL)
    try:
        kernel_modules(kernel)
    except (ContainerError, OSError, lzma.LZMAError) as e:
        return f"guest kernel {kernel.version}: {e}"
    return None


# -- modules ------------------------------------------------------------------

def module_name(path: Path) -> str:
    name = path.name.split(".ko")[0]
    return name.replace("-", "_")


def module_bytes(path: Path) -> bytes:
    data = path.read_bytes()
    if path.name.endswith(".ko.xz"):
        return lzma.decompress(data)
    if not path.name.endswith(".ko"):
        raise ContainerError(f"guest kernel module {path}: only .ko and .ko.xz can be unpacked")
    return data


def depends(data: bytes) -> list[str]:
    """The modules a module needs: its .modinfo's `depends=` (what depmod reads)."""
    m = re.search(rb"(?:^|\0)depends=([^\0]*)", data)
    return [d.decode().replace("-", "_") for d in m[1].split(b",") if d] if m else []


def builtin(modules: Path) -> set[str]:
    with contextlib.suppress(OSError):
        return {module_name(Path(line)) for line in
                (modules / "modules.builtin").read_text().split()}
    return set()


def index(modules: Path) -> dict[str, Path]:
    return {module_name(p): p for p in (modules / "kernel").rglob("*.ko*")}


def load_order(wanted: tuple[str, ...], files: dict[str, Path], built_in: set[str],
               read=module_bytes) -> list[str]:
    """The modules to insmod for `wanted`, each after what it depends on;
    built-in ones left out. ContainerError naming one that is neither."""
    order: list[str] = []

    def visit(name: str, path: tuple[str, ...]) -> None:
        if name in order or name in built_in:
            return
        if name in path:
            raise ContainerError(f"guest kernel modules: a dependency cycle {' -> '.join(path)}")
        if name not in files:
            raise ContainerError(f"guest kernel module {name}: not found, nor built in")
        for dep in depends(read(files[name])):
            visit(dep, path + (name,))
        order.append(name)

    for name in wanted:
        visit(name, ())
    return order


def kernel_modules(kernel: Kernel) -> tuple[dict[str, list[str]], dict[str, bytes]]:
    """Each group's load order (GROUPS), and the content of every module in them."""
    files = index(kernel.modules)
    built_in = builtin(kernel.modules)
    cache: dict[Path, bytes] = {}

    def read(path: Path) -> bytes:
        if path not in cache:
            cache[path] = module_bytes(path)
        return cache[path]
    groups = {group: load_order(wanted, files, built_in, read) for group, wanted in GROUPS.items()}
    return groups, {n: read(files[n]) for order in groups.values() for n in order}


# -- the image ----------------------------------------------------------------

def vmlinux(vmlinuz: bytes) -> bytes | None:
    """The ELF kernel inside an XZ-compressed bzImage; None for another kind."""
    start = vmlinuz.find(XZ_MAGIC)
    if start < 0:
        return None
    try:
        elf = lzma.LZMADecompressor(lzma.FORMAT_XZ).decompress(vmlinuz[start:])
    except lzma.LZMAError:
        return None
    return elf if elf.startswith(b"\x7fELF") else None


def init_script() -> bytes:
    return (HERE / "init.sh").read_bytes()


def exec_server() -> dict[str, bytes]:
    return {name: (HERE / name).read_bytes() for name in ("server.py", "frames.py")}


def initramfs(modules: dict[str, bytes], groups: dict[str, list[str]],
              busybox: bytes) -> bytes:
    """The cpio archive: /init, BusyBox (its applets: /init installs them), the
    modules flat in /lib/modules, each group's load order in /etc/modules.GROUP,
    the exec server in /exec."""
    entries = [cpio.directory(d) for d in ("bin", "dev", "etc", "exec", "host", "lib",
                                           "lib/modules", "proc", "root", "sys", "tmp")]
    entries += [cpio.char_device("dev/console", 5, 1),
                cpio.file("bin/busybox", busybox, 0o755), cpio.symlink("bin/sh", "busybox"),
                cpio.file("init", init_script(), 0o755)]
    entries += [cpio.file(f"lib/modules/{name}.ko", data) for name, data in sorted(modules.items())]
    entries += [cpio.file(f"etc/modules.{group}",
                          "".join(f"{n} {n}.ko\n" for n in names).encode())
                for group, names in groups.items()]
    entries += [cpio.file(f"exec/{name}", data) for name, data in exec_server().items()]
    return cpio.compress(cpio.pack(entries))


def _remove_abandoned(base: Path) -> None:
    for entry in base.glob(".vm-build-*"):
        pid = entry.name.split("-")[2]
        if pid.isdigit() and proc_stat(int(pid)) is None:
            shutil.rmtree(entry, ignore_errors=True)


def build(base: Path | None = None, kernel: Kernel | None = None) -> Guest:
    """The guest of this host's kernel, built on first use; ContainerError when
    there is no kernel or BusyBox to build it from."""
    kernel = kernel or default_kernel()
    if kernel is None:
        raise ContainerError(kernel_problem())
    if not is_static_elf(rootfs.BUSYBOX):
        raise ContainerError(not_found(f"static {rootfs.BUSYBOX}", "busybox-static"))
    groups, found = kernel_modules(kernel)
    busybox = rootfs.BUSYBOX.read_bytes()
    vmlinuz = kernel.vmlinuz.read_bytes()
    digest = hashlib.sha256()
    for part in (FORMAT.encode(), kernel.version.encode(), vmlinuz, busybox, init_script(),
                 *exec_server().values(), *(found[n] for n in sorted(found)),
                 repr(groups).encode(), str(kernel.pvh).encode()):
        digest.update(hashlib.sha256(part).digest())
    base = rootfs.images_dir(base)
    final = base / f"vm-{digest.hexdigest()[:16]}"
    guest = Guest(final / "kernel", final / "initramfs.gz", kernel.version)
    if guest.kernel.is_file() and guest.initramfs.is_file():
        return guest
    base.mkdir(parents=True, exist_ok=True)
    _remove_abandoned(base)
    tmp = Path(tempfile.mkdtemp(prefix=f".vm-build-{os.getpid()}-", dir=base))
    try:
        os.chmod(tmp, 0o755)
        elf = vmlinux(vmlinuz) if kernel.pvh else None
        (tmp / "kernel").write_bytes(elf or vmlinuz)
        (tmp / "initramfs.gz").write_bytes(initramfs(found, groups, busybox))
        (tmp / "digest").write_text(digest.hexdigest() + "\n")
        try:
            os.rename(tmp, final)   # atomic: other builders see none or a whole one
        except OSError:
            if not guest.initramfs.is_file():
                raise
    finally:
        with contextlib.suppress(FileNotFoundError):
            shutil.rmtree(tmp)
    return guest


def disk_format(path: str) -> str:
    """qcow2 or raw: what QEMU is to read the disk image at `path` as; ValueError
    for what is neither a file nor a qcow2 image nor a raw ext4 file system or
    disk (a partition table's first partition is the root, /init tries it first)."""
    try:
        with open(path, "rb") as f:
            head = f.read(EXT4_MAGIC_AT + 2)
    except OSError as e:
        raise ValueError(f"{path}: {e.strerror}") from None
    if head.startswith(QCOW2_MAGIC):
        return "qcow2"
    if head[EXT4_MAGIC_AT:EXT4_MAGIC_AT + 2] == EXT4_MAGIC or head[510:512] == b"\x55\xaa":
        return "raw"
    raise ValueError(f"{path}: neither a qcow2 image nor a raw ext4 file system or disk")
