"""Which QEMU runs a VM: the host's (Debian 12's is 7.2), or, for a VM with
an emulated SR-IOV NIC (Nic.model igb: QEMU >= 8 emulates the Intel 82576
with its virtual functions), the lab's parts' QEMU where the host's is older.
The lab's QEMU is Debian's backport, unpacked by lab/parts.sh (make deps)
into host/lab.py's PARTS and never installed: it reads its firmware and modules
from there, never from the host's QEMU (another build's modules are refused)."""
from __future__ import annotations

import contextlib
import functools
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

from cnfperf.host import lab as lab_parts, tools
from cnfperf.host.system import CommandFailed, run

from ..base import ContainerError, Nic
from .nics import IGB

IGB_SINCE = (8, 0)        # QEMU's first release with the igb device


@dataclass(frozen=True)
class Qemu:
    binary: str
    version: str
    data: tuple[str, ...] = ()      # its firmware and option ROMs (-L), first looked in
    modules: str | None = None      # its loadable modules (QEMU_MODULE_DIR)

    @property
    def has_igb(self) -> bool:
        return tools.release(self.version) >= IGB_SINCE

    def args(self) -> list[str]:
        """Its binary and where it reads its data (before the VM's options)."""
        return [self.binary, *(a for d in self.data for a in ("-L", d))]

    def env(self) -> dict[str, str]:
        return {"QEMU_MODULE_DIR": self.modules} if self.modules else {}


@functools.cache
def _version(binary: str) -> str:
    """`7.2.19`: from QEMU's own first line; '?' when it does not say."""
    with contextlib.suppress(CommandFailed, OSError):
        found = re.search(r"version (\S+)", run([binary, "--version"], timeout=10))
        if found:
            return found[1]
    return "?"


def host() -> Qemu | None:
    binary = tools.find(tools.QEMU)
    return Qemu(binary, _version(binary)) if binary else None


def lab(parts: Path | None = None) -> Qemu | None:
    """The lab parts' QEMU, when lab/parts.sh unpacked one."""
    root = lab_parts.part("qemu", parts)
    binary = root / "usr/bin" / tools.QEMU
    if not os.access(binary, os.X_OK):
        return None
    return Qemu(str(binary), _version(str(binary)),
                data=(str(root / "usr/share/qemu"), str(root / "usr/share/seabios")),
                modules=str(root / "usr/lib/x86_64-linux-gnu/qemu"))


def igb_problem() -> str | None:
    """Why no QEMU here emulates an igb NIC, or None."""
    try:
        _choose(igb=True)
    except ContainerError as e:
        return str(e)
    return None


def choose(nics: Sequence[Nic] = ()) -> Qemu:
    """The host's QEMU, or the lab's where a NIC needs what the host's lacks;
    ContainerError saying what to install."""
    return _choose(igb=any(n.model == IGB for n in nics))


def _choose(igb: bool) -> Qemu:
    found = host()
    if not igb:
        if found is None:
            raise ContainerError(tools.missing(tools.QEMU))
        return found
    if found is not None and found.has_igb:
        return found
    parts = lab()
    if parts is not None and parts.has_igb:
        return parts
    have = f"this host's QEMU is {found.version}" if found else tools.missing(tools.QEMU)
    raise ContainerError(f"an igb NIC (SR-IOV) needs QEMU >= {'.'.join(map(str, IGB_SINCE))}; "
                         f"{have}, and {lab_parts.part('qemu')} has none ({lab_parts.HINT})")
