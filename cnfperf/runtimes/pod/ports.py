"""How a pod takes a node's ports that are links (Multus' attachments), and
what the kernel drops on the way.

host-device moves the data plane's own link into the pod, its name and MAC
kept: every kernel data plane's ports.

A link that moves to another netns loses its addresses and neighbours (the
data plane's, for api = udp): they are made again in the pod's (settle()).
"""
from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from typing import Any

from cnfperf.host.links import ip

HOST_DEVICE = "host-device"


@dataclass
class Port:
    """One link of a node's netns as its pod takes it."""

    link: str
    cni: str                        # the plugin that attaches it
    config: dict[str, Any]          # its NetworkAttachmentDefinition's CNI config
    replay: list[list[str]] = field(default_factory=list)   # `ip` steps, in the pod's netns


def take(link: str, netns: str) -> Port:
    """What the pod's attachment of `link` (in `netns`, as the data plane made
    it) is."""
    return Port(link, HOST_DEVICE, {"type": HOST_DEVICE, "device": link},
                replay=_dropped_by_move(link, netns))


def give(port: Port, netns: str, journal: Any) -> None:
    """The link leaves `netns` for the pod's attachment: host-device takes it
    from this host's netns (it is journaled there before it is)."""
    journal.add("link", port.link)
    ip("link", "set", port.link, "netns", str(os.getpid()), netns=netns)


def settle(port: Port, netns: str) -> None:
    """Once the pod runs and `netns` names its netns: what the move dropped,
    made again."""
    for step in port.replay:
        ip(*step, netns=netns)


def _dropped_by_move(link: str, netns: str) -> list[list[str]]:
    """The `ip` commands that make again what the link loses when it moves to
    another netns: its IPv4 addresses and its permanent neighbours (the
    kernel's own IPv6 link-local address comes back by itself)."""
    steps = []
    for info in json.loads(ip("-j", "addr", "show", "dev", link, netns=netns) or "[]"):
        steps += [["addr", "add", f"{a['local']}/{a['prefixlen']}", "dev", link]
                  for a in info.get("addr_info", []) if a.get("family") == "inet"]
    for n in json.loads(ip("-j", "neigh", "show", "dev", link, "nud", "permanent",
                           netns=netns) or "[]"):
        if "lladdr" in n:
            steps.append(["neigh", "replace", n["dst"], "lladdr", n["lladdr"], "dev", link,
                          "nud", "permanent"])
    return steps
