"""SR-IOV on this host: the NICs that have virtual functions (their physical
function, the PF), and a point's VFs made on one, configured from the PF, bound
to their kernel driver, and removed again.

The PF's state is journaled before it is touched (kind `vfs`, UNDO): a run
killed at any later step leaves cleanup the PF's VF count and autoprobe as
they were found. VFs are made with the PF's driver autoprobe off, so that
each gets its MAC and settings from the PF before a driver takes it (a VF's
driver that starts first picks a MAC of its own, and the PF then refuses it
the one set for it); its kernel driver then takes it by a probe."""
from __future__ import annotations

import json
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from cnfperf import SystemFailure
from cnfperf.host import pci
from cnfperf.host.links import ip, link_flags
from cnfperf.host.system import CommandFailed

if TYPE_CHECKING:
    from cnfperf.host.journal import Journal

NET = Path("/sys/class/net")
KIND = "vfs"
# The PCI subsystem vendor QEMU gives the devices it emulates (Red Hat's):
# a PF of that vendor is no NIC's silicon, and its numbers are the emulator's.
QEMU_SUBSYSTEM = "0x1af4"
BIND_S = 10.0     # a VF's driver probe to its netdev (an emulated NIC under TCG: seconds)


class SriovError(SystemFailure):
    """A PF cannot give the VFs asked for; the message says why."""


@dataclass(frozen=True)
class Pf:
    name: str          # its netdev
    pci: str           # its PCI address
    driver: str        # its kernel driver
    total: int         # sriov_totalvfs
    vfs: int           # sriov_numvfs now

    @property
    def device(self) -> Path:
        return pci.device(self.pci)


def describe(pf: Pf, net: Path = NET) -> str:
    """`pf0: igb 8086:10c9, 7 VFs (QEMU's emulation)`: what a point stores of
    the NIC its VFs were on."""
    device = net / pf.name / "device"
    try:
        vendor, model, subsystem = (_read(device / f) for f in
                                    ("vendor", "device", "subsystem_vendor"))
    except OSError:
        vendor = model = subsystem = "?"
    emulated = " (QEMU's emulation)" if subsystem == QEMU_SUBSYSTEM else ""
    ids = f"{vendor.removeprefix('0x')}:{model.removeprefix('0x')}"
    return f"{pf.name}: {pf.driver or '?'} {ids}, {pf.total} VFs{emulated}"


def _read(path: Path) -> str:
    return path.read_text().strip()


def _write(path: Path, value: str) -> None:
    try:
        path.write_text(value)
    except OSError as e:
        raise SriovError(f"{path}: {value}: {e.strerror}") from None


def pf(name: str, net: Path = NET) -> Pf | None:
    """The NIC `name` as a PF, or None where it has no virtual functions."""
    device = net / name / "device"
    try:
        total = int(_read(device / "sriov_totalvfs"))
        vfs = int(_read(device / "sriov_numvfs"))
    except (OSError, ValueError):
        return None
    if total <= 0:
        return None
    driver = (device / "driver").resolve().name if (device / "driver").exists() else ""
    return Pf(name, device.resolve().name, driver, total, vfs)


def pfs(net: Path = NET) -> list[Pf]:
    """This netns's NICs that have virtual functions, by name."""
    with_vfs = (pf(entry.name, net) for entry in sorted(net.iterdir()))
    return [found for found in with_vfs if found is not None]


def unknown(wanted: str, net: Path = NET, found: list[Pf] | None = None) -> str | None:
    """Why sriov_pf `wanted` names no one NIC with SR-IOV here (auto: where
    several have it), or None. `found`: pfs(net), when the caller read it."""
    found = pfs(net) if found is None else found
    if wanted == "auto":
        return None if len(found) < 2 else (
            f"NICs {', '.join(p.name for p in found)} have SR-IOV: name one with sriov_pf")
    if any(p.name == wanted for p in found):
        return None
    why = "no such NIC" if not (net / wanted).exists() else "it has no SR-IOV virtual functions"
    return f"sriov_pf {wanted}: {why}" + (
        f" (NICs with SR-IOV: {', '.join(p.name for p in found)})" if found else "")


def choose(wanted: str, count: int, net: Path = NET) -> Pf:
    """The PF to make `count` VFs on: `wanted` by name, or (auto) the host's
    only one; SriovError saying why none can."""
    found = pfs(net)
    if wanted == "auto" and not found:
        raise SriovError("no NIC on this host has SR-IOV virtual functions "
                         "(sriov_totalvfs in /sys/class/net/*/device)")
    if (why := unknown(wanted, net, found)) is not None:
        raise SriovError(why)
    chosen = found[0] if wanted == "auto" else next(p for p in found if p.name == wanted)
    if chosen.vfs:
        raise SriovError(f"{chosen.name} has {chosen.vfs} virtual functions already: a point "
                         f"makes its own (echo 0 > {net}/{chosen.name}/device/sriov_numvfs "
                         "frees it)")
    if count > chosen.total:
        raise SriovError(f"the point needs {count} virtual functions, {chosen.name} has at "
                         f"most {chosen.total} (sriov_totalvfs)")
    return chosen


@dataclass(frozen=True)
class Vfs:
    """VFs made on a PF that had none (choose refuses one that has): their
    PCI addresses (VF 0 first), and the PF's state as journaled (what
    remove() restores)."""
    pf: Pf
    pci: tuple[str, ...]
    found: dict


def make(journal: Journal, pf: Pf, count: int, up: bool = False) -> Vfs:
    """`count` VFs on the PF, no driver on them yet; journaled before the PF
    is touched. `up`: the PF's link up too (the NIC limits a VF's rate only
    while it has a link), down again afterwards if it was."""
    device = pf.device
    found = {"pci": pf.pci, "autoprobe": _read(device / "sriov_drivers_autoprobe"),
             "up": _is_up(pf.name)}
    had_link = _carrier(pf.name)
    journal.add(KIND, pf.name, **found)
    _write(device / "sriov_drivers_autoprobe", "0")
    _write(device / "sriov_numvfs", str(count))
    if up and not found["up"]:
        ip("link", "set", "dev", pf.name, "up")
    if up or had_link:
        # Making VFs resets the NIC (igb's): its link is down for seconds, and
        # meanwhile it switches nothing between its VFs either.
        _wait_carrier(pf.name)
    return Vfs(pf, tuple((device / f"virtfn{n}").resolve().name for n in range(count)), found)


@dataclass(frozen=True)
class Settings:
    """What the PF sets on each VF besides its MAC (the scenario's sriov_*
    fields). Spoof checking off by default: it lets a VF send from its own MAC
    alone, and a point's NFs forward frames of the tester's MACs; trust on: a
    VF may go promiscuous, as a bridge port."""
    vlan: int = 0            # 0: none
    spoofchk: bool = False
    trust: bool = True
    max_tx_rate: int = 0     # Mbit/s; 0: none


def _is_up(name: str) -> bool:
    return "UP" in link_flags(name)


def _carrier(name: str) -> bool:
    try:
        return _read(NET / name / "carrier") == "1"
    except OSError:      # a PF that is down has no carrier to read
        return False


def _wait_carrier(name: str) -> None:
    """The PF's link up again (its driver's watchdog notices in about two
    seconds)."""
    deadline = time.monotonic() + BIND_S
    while time.monotonic() < deadline:
        if _carrier(name):
            return
        time.sleep(0.1)
    raise SriovError(f"{name}: its link is not back {BIND_S:g} s after its virtual functions "
                     "were made (the NIC switches between them, and limits their rate, only "
                     "with a link)")


def configure(pf: Pf, vf: int, mac: str, settings: Settings = Settings()) -> None:
    """The VF's MAC and settings, from the PF (the NIC refuses a rate limit
    while the PF's link is down: the caller brings it up)."""
    onoff = {True: "on", False: "off"}
    args = ["mac", mac, "spoofchk", onoff[settings.spoofchk], "trust", onoff[settings.trust]]
    if settings.vlan:
        args += ["vlan", str(settings.vlan)]
    if settings.max_tx_rate:
        args += ["max_tx_rate", str(settings.max_tx_rate)]
    try:
        ip("link", "set", "dev", pf.name, "vf", str(vf), *args)
    except CommandFailed as e:
        raise SriovError(f"{pf.name} ({pf.driver}) refuses virtual function {vf}'s settings "
                         f"({' '.join(args)}): {e}") from None


def applied(pf: Pf) -> list[dict]:
    """Each VF's settings as the PF reports them (ip -j link's vfinfo_list)."""
    link = json.loads(ip("-d", "-j", "link", "show", "dev", pf.name) or "[{}]")[0]
    return list(link.get("vfinfo_list") or [])


def _probe(pf: Pf, address: str) -> None:
    """A driver takes the VF: its own (the PF's VF driver), or the one its
    driver_override names. Autoprobe is on for the probe alone."""
    _write(pf.device / "sriov_drivers_autoprobe", "1")
    try:
        _write(pci.PCI / "drivers_probe", address)
    finally:
        _write(pf.device / "sriov_drivers_autoprobe", "0")


def bind_dpdk(pf: Pf, address: str) -> str:
    """The VF bound to DPDK's driver (pci.dpdk_driver(), loaded first): its
    name. The VF goes with the PF's VFs (remove): no driver to give it back to."""
    driver = pci.dpdk_driver()
    what = f"virtual function {address} of {pf.name}"
    try:
        pci.load(driver, what)
        pci.bind(address, driver, what, probe=lambda a: _probe(pf, a))
    except pci.PciError as e:
        raise SriovError(str(e)) from None
    return driver


def bind_kernel(pf: Pf, address: str) -> str:
    """The VF taken by its kernel driver: its netdev's name."""
    _probe(pf, address)
    deadline = time.monotonic() + BIND_S
    while time.monotonic() < deadline:
        names = pci.netdevs(address)
        if names:
            return names[0]
        time.sleep(0.05)
    driver = pci.driver(address)
    held = f"its driver {driver}" if driver else "no driver took it"
    raise SriovError(f"virtual function {address} of {pf.name}: no netdev in {BIND_S:g} s "
                     f"({held})")


def remove(journal: Journal | None, name: str, info: dict) -> bool:
    """The PF's VFs removed (their netdevs and bindings, wherever they are, go
    with them), its autoprobe as journaled; False when the PF is gone."""
    device = pci.device(str(info.get("pci", "")))
    if not info.get("pci") or not (device / "sriov_numvfs").exists():
        if journal is not None:
            journal.discard(KIND, name)
        return False
    _write(device / "sriov_numvfs", "0")
    _write(device / "sriov_drivers_autoprobe", str(info.get("autoprobe", "1")))
    if info.get("up") is False and _is_up(name):
        ip("link", "set", "dev", name, "down")
    if journal is not None:
        journal.discard(KIND, name)
    return True


UNDO = {KIND: lambda name, info: remove(None, name, info)}
