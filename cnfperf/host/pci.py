"""PCI devices of this host handed to DPDK: bound to vfio-pci behind an IOMMU,
else uio_pci_generic, and given back to the kernel driver they had.

A NIC lent to a point (lend) is journaled first (kind `pci`, UNDO): its
driver, its netdev's name and whether it was up, so a run killed at any later
step leaves cleanup what to give back. The kernel names a netdev afresh when
its driver takes the device again (eth<n>): give_back renames it as it was.
A virtual function goes with its PF's VFs instead (host/sriov.py), which uses
the binding itself (bind)."""
from __future__ import annotations

import os
import re
import time
from pathlib import Path
from typing import TYPE_CHECKING, Callable

from cnfperf import SystemFailure
from cnfperf.host.journal import undo_each
from cnfperf.host.links import ip, link_flags
from cnfperf.host.system import CommandFailed, run

if TYPE_CHECKING:
    from cnfperf.host.journal import Journal

PCI = Path("/sys/bus/pci")
# A device's address: domain:bus:slot.function (0000:03:00.0).
ADDRESS = re.compile(r"[0-9a-f]{4}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-7]", re.I)
KIND = "pci"
# A driver's probe to its netdev: an emulated NIC under TCG takes seconds.
PROBE_S = 10.0


class PciError(SystemFailure):
    """A device cannot be bound or given back; the message says why."""


def device(address: str) -> Path:
    return PCI / "devices" / address


def exists(address: str) -> bool:
    return device(address).is_dir()


def driver(address: str) -> str:
    """The device's driver now; "" when none has it."""
    bound = device(address) / "driver"
    return bound.resolve().name if bound.exists() else ""


def netdevs(address: str) -> list[str]:
    """The device's netdevs in this netns (a NIC's kernel driver made them)."""
    net = device(address) / "net"
    return sorted(os.listdir(net)) if net.is_dir() else []


def iommu() -> bool:
    """Whether this host's PCI devices are behind an IOMMU (vfio-pci needs one:
    Debian's kernels have no VFIO no-IOMMU mode)."""
    groups = Path("/sys/kernel/iommu_groups")
    return groups.is_dir() and any(groups.iterdir())


def dpdk_driver() -> str:
    """The driver a device is bound to for DPDK: vfio-pci behind an IOMMU, else
    uio_pci_generic (DPDK then works with physical addresses)."""
    return "vfio-pci" if iommu() else "uio_pci_generic"


def _write(path: Path, value: str) -> None:
    try:
        path.write_text(value)
    except OSError as e:
        raise PciError(f"{path}: {value.strip() or 'cleared'}: {e.strerror}") from None


def load(name: str, what: str) -> None:
    """The driver `name` loaded (modprobe) unless it is there."""
    if (PCI / "drivers" / name).is_dir():
        return
    try:
        run(["modprobe", name], what=f"modprobe {name}")
    except CommandFailed as e:
        raise PciError(f"{what}: its DPDK driver {name} cannot be loaded: {e}") from None


def bind(address: str, name: str, what: str,
         probe: Callable[[str], None] | None = None) -> None:
    """The device taken by driver `name` (its override: no other driver takes
    it on a later probe), unbound from the one it had; `probe` asks the kernel
    to probe it (a VF's asks with its PF's autoprobe on)."""
    _write(device(address) / "driver_override", name)
    if driver(address):
        _write(device(address) / "driver" / "unbind", address)
    (probe or _probe)(address)
    if driver(address) != name:
        raise PciError(f"{what}: {name} did not take it"
                       + (f" ({driver(address)} has it)" if driver(address) else ""))


def _probe(address: str) -> None:
    _write(PCI / "drivers_probe", address)


def lend(journal: Journal, address: str) -> dict:
    """The NIC at `address` bound to DPDK's driver for a point, journaled
    first as found: what give_back needs."""
    if not exists(address):
        raise PciError(f"PCI device {address}: no such device on this host")
    name = dpdk_driver()
    load(name, f"PCI device {address}")
    found = {"driver": driver(address), "netdevs": []}
    for netdev in netdevs(address):
        found["netdevs"].append({"name": netdev, "up": "UP" in link_flags(netdev)})
    journal.add(KIND, address, **found)
    if found["driver"] != name:
        bind(address, name, f"PCI device {address}")
    return found


def give_back_all(journal: Journal, bound: list[tuple[str, dict]]) -> None:
    """Every device of `bound` back, the last first, each even if one before
    failed; `bound` is emptied; the first failure is raised once all were tried."""
    undo_each(bound, lambda address, info: give_back(journal, address, info), "PCI devices")


def give_back(journal: Journal | None, address: str, info: dict) -> bool:
    """The device back with the driver it had, its netdevs named and up as
    they were; False when the device is gone."""
    if not exists(address):
        if journal is not None:
            journal.discard(KIND, address)
        return False
    was = str(info.get("driver", ""))
    _write(device(address) / "driver_override", "\n")
    if driver(address) and driver(address) != was:
        _write(device(address) / "driver" / "unbind", address)
    if was and not driver(address):
        _probe(address)
    _rename(address, list(info.get("netdevs") or []))
    if journal is not None:
        journal.discard(KIND, address)
    return True


def _rename(address: str, found: list[dict]) -> None:
    """The driver's new netdevs named as the device's were, up if they were."""
    deadline = time.monotonic() + PROBE_S
    while len(netdevs(address)) < len(found):
        if time.monotonic() > deadline:
            raise PciError(f"PCI device {address}: {driver(address) or 'no driver'} made no "
                           f"netdev in {PROBE_S:g} s (it had {found[0]['name']})")
        time.sleep(0.05)
    for now, was in zip(netdevs(address), found):
        if now != was["name"]:
            ip("link", "set", "dev", now, "name", was["name"])
        if was.get("up"):
            ip("link", "set", "dev", was["name"], "up")


def survey(addresses: list[str]) -> dict[str, tuple[bool, str]]:
    """What doctor says of wires' PCI ends: whether each device is here, the
    driver it has and the one a run binds it to."""
    found = {}
    for address in addresses:
        if not exists(address):
            found[address] = (False, "no such PCI device on its host")
            continue
        names = netdevs(address)
        now = driver(address) or "no driver"
        has = f"{now} (netdev {', '.join(names)})" if names else now
        why = "behind an IOMMU" if iommu() else "no IOMMU"
        found[address] = (True, f"driver {has}, a run binds it to {dpdk_driver()} ({why})")
    return found


UNDO = {KIND: lambda name, info: give_back(None, name, info)}
