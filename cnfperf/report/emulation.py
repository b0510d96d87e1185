"""How a stored point's virtual machines ran: with the host's KVM, or emulated
by QEMU's TCG (a host without usable KVM). An emulated guest runs its
instructions in software, tens of times slower: its numbers measure the
emulator as much as the data plane, and the report says so wherever they show
(a column of the Points table, a count in the header).

A point stores `vm_facts` (VmRuntime.facts: the accel it used, QEMU's and the
guest kernel's versions, how many VMs); a point without VMs, or stored before
VMs, has none. A host of the point can itself be an emulated machine (the lab:
a QEMU guest under TCG, its NICs QEMU's): its stored `cpu_model` says so.
"""
from __future__ import annotations

from typing import Any, Mapping, Sequence

from cnfperf.host.facts import EMULATED_CPU as TCG_CPU   # what an emulated machine's CPU is named

COLUMN = "VMs"   # the Points table's column: "2 kvm", "1 tcg (emulated)", "–"


def accel(point: Mapping[str, Any]) -> str | None:
    """The accelerator the point's VMs ran with; None: it had none."""
    return (point.get("vm_facts") or {}).get("accel")


def emulated_hosts(point: Mapping[str, Any]) -> list[str]:
    """The point's hosts that are emulated machines, by name."""
    return sorted(name for name, facts in (point.get("hosts") or {}).items()
                  if str((facts or {}).get("cpu_model") or "").startswith(TCG_CPU))


def emulated(point: Mapping[str, Any]) -> bool:
    return accel(point) == "tcg" or bool(emulated_hosts(point))


def said(point: Mapping[str, Any]) -> str:
    """`2 tcg (emulated)`, `1 kvm`, `host dut tcg (emulated)`, `–` (no VM)."""
    facts = point.get("vm_facts") or {}
    hosts = emulated_hosts(point)
    parts = ([f"{facts.get('vms', '?')} {facts.get('accel', '?')}"] if facts else []) + \
        ([f"host {', '.join(hosts)} tcg"] if hosts else [])
    if not parts:
        return "–"
    return ", ".join(parts) + (" (emulated)" if emulated(point) else "")


def any_vms(points: Sequence[Mapping[str, Any]]) -> bool:
    """Whether the column has anything to say: VMs, or an emulated host."""
    return any(p.get("vm_facts") or emulated_hosts(p) for p in points)


def notice(points: Sequence[Mapping[str, Any]]) -> str:
    """The header's warning when points ran emulated VMs or on emulated
    hosts, else nothing."""
    vms = sum(accel(p) == "tcg" for p in points)
    hosts = sum(bool(emulated_hosts(p)) for p in points)
    said = []
    if vms:
        said.append(f"{vms} of {len(points)} points ran their virtual machines under QEMU's "
                    "TCG (this host's KVM could not boot the guest)")
    if hosts:
        said.append(f"{hosts} of {len(points)} points ran on a host that is itself an "
                    "emulated machine (QEMU's TCG, its NICs QEMU's: the lab)")
    if not said:
        return ""
    return ("Emulated: " + "; ".join(said) + ": a guest's instructions run in software, so "
            "their numbers measure the emulator as much as the data plane. The VMs column "
            "flags them.")
