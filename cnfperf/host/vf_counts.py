"""A virtual function's frames as its NIC counts them: what the VF handed the
NIC's embedded switch (tx) and what the switch handed it (rx). Beside what
the engines sent and received they split a link's loss in the loss table
(report/nfs.py) into before the NIC (the sender's driver or ring), in it, and
after it (the receiver's ring or driver).

Where the counts come from, per VF, best first (`source()`):
- "pf": the PF's statistics of each of its VFs (`ip -s link show PF`, the
  kernel's ndo_get_vf_stats), with what the NIC dropped for the VF; they count
  a VF bound to DPDK too. The kernel reports them for every PF, zeros where
  its driver keeps none (igb, the lab's NIC): only PF_DRIVERS' are read.
- "vf": the NIC's own counters of the VF as its driver reads them from the
  NIC (`ethtool -S`), for the VF drivers in VF_DRIVERS (igbvf: the VF's
  VFGPRC and VFGPTC registers, which count the FCS in bytes as hardware does).
- "driver": the VF netdev's own counts (its kernel driver's: what it gave
  the NIC and took from it), what any netdev has.
A VF bound to DPDK with no "pf" source has no counts here: its engine's are
the only ones.
"""
from __future__ import annotations

import json

from cnfperf.host.links import ip
from cnfperf.host.system import CommandFailed, run

# PF drivers that fill in the kernel's per-VF statistics (ndo_get_vf_stats).
PF_DRIVERS = frozenset({"mlx5_core", "ice", "i40e", "ionic", "liquidio"})
# VF drivers whose `ethtool -S` rx_packets and tx_packets are the NIC's registers.
VF_DRIVERS = frozenset({"igbvf"})


def source(pf_driver: str, vf_driver: str | None) -> str | None:
    """Where a VF's counts come from (the module's doc): vf_driver None is a
    VF bound to DPDK, which only the PF can count (else None)."""
    if pf_driver in PF_DRIVERS:
        return "pf"
    if vf_driver is None:
        return None
    return "vf" if vf_driver in VF_DRIVERS else "driver"


def from_pf(pf: str) -> dict[int, dict[str, int | None]]:
    """Each VF's counts as the PF reports them, by VF index (PortCounters'
    fields; a count the kernel did not report: None)."""
    link = json.loads(ip("-s", "-j", "link", "show", "dev", pf) or "[{}]")[0]
    return {vf["vf"]: parse_pf(vf.get("stats") or {}) for vf in link.get("vfinfo_list") or []}


def parse_pf(stats: dict) -> dict[str, int | None]:
    """One vfinfo_list entry's `stats` (iproute2 names the tx side's counts
    tx_packets, newer ones packets)."""
    rx, tx = stats.get("rx") or {}, stats.get("tx") or {}
    return {"rx_packets": rx.get("packets"), "tx_packets": tx.get("tx_packets", tx.get("packets")),
            "rx_dropped": rx.get("dropped"), "tx_dropped": tx.get("dropped")}


def from_vf(netdev: str, netns: str | None) -> dict[str, int]:
    """The NIC's counts of a VF netdev's frames, as its driver reads them
    (`ethtool -S`): rx_packets and tx_packets, those it has (none if ethtool
    failed: the netdev's own counts stand then)."""
    argv = ["ethtool", "-S", netdev]
    if netns:
        argv = ["ip", "netns", "exec", netns, *argv]
    try:
        said = parse_ethtool(run(argv, what=f"virtual function {netdev}'s NIC counters"))
    except CommandFailed:
        return {}
    return {k: said[k] for k in ("rx_packets", "tx_packets") if k in said}


def parse_ethtool(text: str) -> dict[str, int]:
    """`ethtool -S`'s `     name: value` lines."""
    found: dict[str, int] = {}
    for line in text.splitlines():
        name, sep, value = line.strip().partition(":")
        if sep and value.strip().isdigit():
            found[name] = int(value)
    return found
