"""How a pod takes a node's ports that are links (Multus' attachments), and
what the kernel drops on the way.

`cni` names the CNI plugin (fields.CNIS):
- host-device moves the data plane's own link into the pod, its name and MAC
  kept: every kernel data plane's ports;
- macvlan and bridge make the port again with the plugin of the data plane's
  kind, as a CNF's macvlan or bridge network does: a macvlan child of the
  data plane's parent, or a veth on the data plane's bridge (each in this
  host's netns, where the plugins look for them), the MAC set by the tuning
  plugin after it. The bridge plugin names its side of the veth itself: once
  the pod runs it is renamed as the data plane named its port of the bridge,
  and its static forwarding entries are made again (settle()).

A link that moves to another netns loses its addresses and neighbours (the
data plane's, for api = udp): they are made again in the pod's (settle()).
"""
from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from typing import Any

from cnfperf.host.links import del_link, ip, quiet_links

from ..base import ContainerError

HOST_DEVICE = "host-device"
MACVLAN = "macvlan"
BRIDGE = "bridge"


@dataclass
class Port:
    """One link of a node's netns as its pod takes it."""

    link: str
    cni: str                        # the plugin that attaches it
    config: dict[str, Any]          # its NetworkAttachmentDefinition's CNI config
    replay: list[list[str]] = field(default_factory=list)   # `ip` steps, in the pod's netns
    host_side: str | None = None    # bridge: its port of the bridge, as the data plane named it
    static: list[str] = field(default_factory=list)         # bridge: MACs fixed on host_side


def take(link: str, netns: str, cni: str) -> Port:
    """What the pod's attachment of `link` (in `netns`, as the data plane made
    it) is: host-device, or the `cni` plugin where the link is of its kind."""
    port = Port(link, HOST_DEVICE, {"type": HOST_DEVICE, "device": link},
                replay=_dropped_by_move(link, netns))
    if cni == HOST_DEVICE:
        return port
    [info] = json.loads(ip("-d", "-j", "link", "show", "dev", link, netns=netns))
    kind = info.get("linkinfo", {})
    peer = _host_links().get(info.get("link_index"))
    made = {"mtu": info["mtu"], "ipam": {}}
    tuning = {"type": "tuning", "mac": info["address"]}
    if cni == MACVLAN and kind.get("info_kind") == MACVLAN:
        if peer is None:
            raise ContainerError(f"{link}: its macvlan parent is not in the host's netns, "
                                 "where the macvlan plugin looks for it")
        mode = kind.get("info_data", {}).get("mode", "bridge")
        port.cni, port.config = MACVLAN, {"plugins": [
            {"type": MACVLAN, "master": peer["ifname"], "mode": mode, **made}, tuning]}
    elif cni == BRIDGE and kind.get("info_kind") == "veth" and peer and peer.get("master"):
        port.cni, port.host_side = BRIDGE, peer["ifname"]
        port.static = [e["mac"] for e in json.loads(ip("-j", "fdb", "show", "dev", port.host_side,
                                                       tool="bridge") or "[]")
                       if e.get("state") == "static" and "vlan" not in e]
        port.config = {"plugins": [
            {"type": BRIDGE, "bridge": peer["master"], "isGateway": False, "ipMasq": False,
             "hairpinMode": False, "promiscMode": False, **made}, tuning]}
    return port


def give(port: Port, netns: str, journal: Any) -> None:
    """The link leaves `netns` for the pod's attachment: host-device takes it
    from this host's netns (it is journaled there before it is, unless no
    `journal`: a lent NIC or a device, which come back, not deleted); a
    plugin makes it again (the data plane's goes)."""
    if port.cni == HOST_DEVICE:
        if journal is not None:
            journal.add("link", port.link)
        ip("link", "set", port.link, "netns", str(os.getpid()), netns=netns)
    else:
        del_link(port.link, netns)


def settle(port: Port, netns: str) -> None:
    """Once the pod runs and `netns` names its netns: what the move dropped,
    made again; the bridge plugin's side of the veth named as the data plane
    named it (its counters, faults and policers look for it by that name),
    without IPv6, with its static entries."""
    for step in port.replay:
        ip(*step, netns=netns)
    if port.host_side is None:
        return
    [info] = json.loads(ip("-j", "link", "show", "dev", port.link, netns=netns))
    made = _host_links().get(info.get("link_index"))
    if made is None:
        raise ContainerError(f"{port.link}: the bridge plugin's side of it is not in the "
                             "host's netns")
    quiet_links(None, [made["ifname"]])
    ip("link", "set", made["ifname"], "down")
    ip("link", "set", made["ifname"], "name", port.host_side)
    ip("link", "set", port.host_side, "up")
    for mac in port.static:
        ip("fdb", "replace", mac, "dev", port.host_side, "master", "static", tool="bridge")


def _host_links() -> dict[int, dict[str, Any]]:
    """This host's netns' links by ifindex."""
    return {i["ifindex"]: i for i in json.loads(ip("-j", "link", "show") or "[]")}


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
