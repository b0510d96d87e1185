"""A VM's network cards (base.Nic): what is refused before anything exists,
where each sits on the guest's PCI bus, how the guest's /init is told about
them, and the tap and macvtap devices cnfperf opens for QEMU."""
from __future__ import annotations

import fcntl
import os
import re
import socket
import stat
import struct
from typing import Sequence

from cnfperf.host.links import in_netns

from ..base import Nic, check_name

# Fixed places on the guest's PCI bus (q35's root bus): the 9p root, the exec
# ports, then the NICs in order, one slot each; 0x1f is q35's own.
SLOT_9P = 0x02
SLOT_SERIAL = 0x03
SLOT_DISK = 0x04
FIRST_NIC_SLOT = 0x08
MAX_NICS = 0x1f - FIRST_NIC_SLOT
_MAC = re.compile(r"[0-9a-f]{2}(:[0-9a-f]{2}){5}")
VIRTIO = "virtio"
IGB = "igb"          # an emulated Intel 82576 with SR-IOV (program.py: QEMU >= 8)
MODELS = (VIRTIO, IGB)
_IFNAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,14}")

TUNSETIFF = 0x400454CA
IFF_TAP = 0x0002
IFF_NO_PI = 0x1000
IFF_VNET_HDR = 0x4000


def slot(index: int) -> int:
    return FIRST_NIC_SLOT + index


def pci(index: int) -> str:
    """The guest's PCI address of the NIC at that index."""
    return f"0000:00:{slot(index):02x}.0"


def check(nics: Sequence[Nic]) -> None:
    """ValueError naming the NIC and why, before anything is created."""
    if len(nics) > MAX_NICS:
        raise ValueError(f"nics: at most {MAX_NICS} per VM, {len(nics)} given")
    names, macs = set(), set()
    for n, nic in enumerate(nics):
        what = f"nic {n} ({nic.name!r})"
        if not isinstance(nic.name, str) or not _IFNAME.fullmatch(nic.name):
            raise ValueError(f"{what}: name: 1-15 letters, digits, '_', '.', '-'")
        if not isinstance(nic.mac, str) or not _MAC.fullmatch(nic.mac.lower()) or \
                int(nic.mac[:2], 16) & 1:
            raise ValueError(f"{what}: mac {nic.mac!r}: a unicast MAC address (xx:xx:xx:xx:xx:xx)")
        if nic.name in names or nic.mac.lower() in macs:
            raise ValueError(f"{what}: its name or MAC is another NIC's too")
        names.add(nic.name)
        macs.add(nic.mac.lower())
        if not 68 <= nic.mtu <= 65535:
            raise ValueError(f"{what}: mtu {nic.mtu}: from 68 to 65535")
        _check_backend(what, nic)


def _check_backend(what: str, nic: Nic) -> None:
    if nic.model not in MODELS:
        raise ValueError(f"{what}: model {nic.model!r}: one of {', '.join(MODELS)}")
    if nic.model == IGB and (nic.tap is None or nic.dpdk):
        raise ValueError(f"{what}: an igb NIC is the guest kernel's, on a tap (DPDK takes "
                         "its virtual functions)")
    if (nic.tap is None) == (nic.socket is None):
        raise ValueError(f"{what}: one of tap and socket (its backend)")
    if nic.tap is not None:
        check_name(nic.tap, f"{what}: tap")
        if nic.netns is not None:
            check_name(nic.netns, f"{what}: netns")
        if nic.server:
            raise ValueError(f"{what}: server is for a vhost-user socket, not a tap")
        return
    if nic.macvtap or nic.netns is not None:
        raise ValueError(f"{what}: macvtap and netns are for a tap, not a vhost-user socket")
    if not nic.dpdk:
        # QEMU 7.2 (TCG) segfaults in a vCPU thread once the guest kernel's
        # virtio_net drives a vhost-user device; DPDK's virtio PMD works.
        raise ValueError(f"{what}: a vhost-user NIC must be dpdk (QEMU 7.2 crashes when the "
                         "guest kernel's virtio_net drives one); use a tap for a kernel NIC")
    if not nic.socket.startswith("/") or len(nic.socket.encode()) > 107:
        raise ValueError(f"{what}: socket {nic.socket!r}: an absolute path of at most 107 bytes")


def describe(nics: Sequence[Nic]) -> str:
    """/init's description of the NICs (cnfperf_nics=): SLOT/MAC/NAME/MTU/KIND
    each, KIND k (the kernel's virtio_net), d (DPDK's) or i (the kernel's igb)."""
    return ",".join(f"{slot(n):02x}/{nic.mac.lower()}/{nic.name}/{nic.mtu}/{_kind(nic)}"
                    for n, nic in enumerate(nics))


def _kind(nic: Nic) -> str:
    return "d" if nic.dpdk else "i" if nic.model == IGB else "k"


# -- tap and macvtap ------------------------------------------------------------

def _open_tap(name: str) -> int:
    """The tap device `name` (in this thread's netns) opened; TUNSETIFF would
    make a new one where there is none, which nothing would be attached to."""
    try:
        socket.if_nametoindex(name)
    except OSError:
        raise OSError(f"tap {name}: no such link") from None
    fd = os.open("/dev/net/tun", os.O_RDWR)
    try:
        ifr = struct.pack("16sH22x", name.encode(), IFF_TAP | IFF_NO_PI | IFF_VNET_HDR)
        fcntl.ioctl(fd, TUNSETIFF, ifr)
    except OSError as e:
        os.close(fd)
        raise OSError(e.errno, f"tap {name}: {e.strerror}") from None
    return fd


def _open_macvtap(name: str) -> int:
    """/dev/tapIFINDEX of the macvtap link `name` (in this thread's netns). The
    ifindex is checked first: /dev/tap alone is nothing of ours."""
    try:
        ifindex = socket.if_nametoindex(name)
    except OSError:
        raise OSError(f"macvtap {name}: no such link") from None
    dev = f"/dev/tap{ifindex}"
    try:
        if not stat.S_ISCHR(os.stat(dev).st_mode):
            raise OSError(f"macvtap {name}: {dev} is not a character device")
    except FileNotFoundError:
        raise OSError(f"macvtap {name}: no {dev} (is {name} a macvtap link?)") from None
    return os.open(dev, os.O_RDWR)


def mac_of(name: str) -> str:
    """A link's MAC in this thread's netns."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        info = fcntl.ioctl(s.fileno(), 0x8927, struct.pack("256s", name.encode()[:15]))  # SIOCGIFHWADDR
    return ":".join(f"{b:02x}" for b in info[18:24])


def open_fd(nic: Nic, netns: str) -> int:
    """The open tap (or macvtap) device QEMU is handed for this NIC; OSError
    saying why not. A macvtap must have the NIC's MAC, or it drops the guest's
    frames."""
    def work() -> int:
        if not nic.macvtap:
            return _open_tap(nic.tap)
        fd = _open_macvtap(nic.tap)
        mac = mac_of(nic.tap)
        if mac != nic.mac.lower():
            os.close(fd)
            raise OSError(f"macvtap {nic.tap}: its MAC {mac} is not the NIC's {nic.mac}")
        return fd
    return in_netns(nic.netns or netns, work)
