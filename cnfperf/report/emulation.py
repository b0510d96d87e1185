"""How a stored point's virtual machines ran: with the host's KVM, or emulated
by QEMU's TCG (a host without usable KVM). An emulated guest runs its
instructions in software, tens of times slower: its numbers measure the
emulator as much as the data plane, and the report says so wherever they show
(a column of the Points table, a count in the header).

A point stores `vm_facts` (VmRuntime.facts: the accel it used, QEMU's and the
guest kernel's versions, how many VMs); a point without VMs, or stored before
VMs, has none.
"""
from __future__ import annotations

from typing import Any, Mapping, Sequence

COLUMN = "VMs"   # the Points table's column: "2 kvm", "1 tcg (emulated)", "–"


def accel(point: Mapping[str, Any]) -> str | None:
    """The accelerator the point's VMs ran with; None: it had none."""
    return (point.get("vm_facts") or {}).get("accel")


def emulated(point: Mapping[str, Any]) -> bool:
    return accel(point) == "tcg"


def said(point: Mapping[str, Any]) -> str:
    """`2 tcg (emulated)`, `1 kvm`, `–` (no VM)."""
    facts = point.get("vm_facts") or {}
    if not facts:
        return "–"
    return f"{facts.get('vms', '?')} {facts.get('accel', '?')}" + \
        (" (emulated)" if emulated(point) else "")


def any_vms(points: Sequence[Mapping[str, Any]]) -> bool:
    return any(p.get("vm_facts") for p in points)


def notice(points: Sequence[Mapping[str, Any]]) -> str:
    """The header's warning when points ran emulated VMs, else nothing."""
    count = sum(map(emulated, points))
    if not count:
        return ""
    return (f"Emulated: {count} of {len(points)} points ran their virtual machines under "
            "QEMU's TCG (this host's KVM could not boot the guest): a guest's instructions "
            "run in software, so their numbers measure the emulator as much as the data "
            "plane. The VMs column flags them.")
