"""Receive Packet Steering: which cores take the frames an interface receives.

A veth or macvlan hands a frame to the next device on the CPU that sent it
(netif_rx queues it on that CPU's backlog); a receive queue's RPS map moves it
to the backlog of one of the map's cores instead (its flow's hash picks which),
where it is processed, routing and transmission included. Set through sysfs,
in the interface's netns (`ip netns exec` mounts that netns's /sys).
"""
from __future__ import annotations

from typing import Sequence


def rps_mask(cores: Sequence[int]) -> str:
    """An rps_cpus mask: hexadecimal, 32-bit words separated by commas; no
    cores is 0 (no steering)."""
    bits = sum(1 << c for c in cores)
    words = []
    while True:
        words.append(f"{bits & 0xffffffff:08x}")
        bits >>= 32
        if not bits:
            break
    return ",".join(reversed(words))


def rps_script(ifaces: Sequence[str], cores: Sequence[int]) -> str:
    """What steers the frames the interfaces receive to `cores` (none: no
    steering), run in their netns."""
    mask = rps_mask(cores)
    return "; ".join(f"for q in /sys/class/net/{iface}/queues/rx-*; do "
                     f"echo {mask} > $q/rps_cpus; done" for iface in ifaces)
