"""`cnfperf doctor --hosts FILE` and `cnfperf cleanup --hosts FILE`: every host
of an inventory, and every wire between them.

A host is checked as a run would use it: reached over SSH with its key and
known host key, its agent started (cnfperf there, the same version), root,
and what it can run (its doctor's data planes). A wire is checked by a frame:
every wire's end listens, a frame naming the wire goes out of its first end
(`a`), and the wire is good when its other end (`b`) heard it. A frame heard
at another end says the wires are crossed; heard nowhere, the wire is cut,
down or named wrong. A wire with an end named by PCI address (a NIC its
node's DPDK drives) carries no frame before a run binds it: its row says
which driver each such end has now and which a run binds it to.
"""
from __future__ import annotations

import secrets
import time
from dataclasses import dataclass, field
from typing import Any

from cnfperf import SystemFailure, UserError
from cnfperf.fields import LOCAL
from cnfperf.host import frames, pci
from cnfperf.host.facts import HostFacts
from cnfperf.remote.hosts import Hosts
from cnfperf.remote.inventory import End, Inventory, Wire
from cnfperf.run.checks import matrix
from cnfperf.run.cleanup import cleanup

SETTLE_S = 0.3     # for frames to cross and listeners to read them


@dataclass
class HostCheck:
    name: str
    address: str = ""
    problem: str = ""                  # why it could not be used at all
    facts: dict[str, Any] = field(default_factory=dict)
    planes: list[str] = field(default_factory=list)   # data planes usable there

    @property
    def ok(self) -> bool:
        return not self.problem


@dataclass
class WireCheck:
    wire: str
    problem: str = ""
    note: str = ""                     # what the check could say of a good wire

    @property
    def ok(self) -> bool:
        return not self.problem


def usable_planes(table: dict[str, Any]) -> list[str]:
    return [name for name, row in table["dataplanes"].items()
            if any(cell == "yes" for cell in row["apis"].values())]


def check_hosts(inventory: Inventory, local: HostFacts,
                hosts: Hosts | None = None) -> tuple[list[HostCheck], list[WireCheck]]:
    """Every host and wire of the inventory, checked (see the module)."""
    hosts = hosts or Hosts(inventory)
    checks = [HostCheck(LOCAL, "this host", facts={"kernel": local.kernel},
                        planes=usable_planes(matrix(local)))]
    try:
        for name, host in inventory.hosts.items():
            check = HostCheck(name, f"{host.user}@{host.address}:{host.port}")
            checks.append(check)
            try:
                hosts.open([name])
                check.facts = hosts.facts[name]
                check.planes = usable_planes(hosts.agent(name).call("matrix"))
            except (UserError, SystemFailure) as e:
                check.problem = e.why if isinstance(e, UserError) else str(e)
        reachable = {c.name for c in checks if c.ok}
        return checks, _wires(inventory, hosts, reachable)
    finally:
        hosts.close()


def _wires(inventory: Inventory, hosts: Hosts, reachable: set[str]) -> list[WireCheck]:
    found = []
    listening: dict[str, list[str]] = {}     # host -> its ends' interfaces
    tokens: dict[str, Any] = {}
    for w in inventory.wires:
        label = str(w)
        lost = [e.host for e in (w.a, w.b) if e.host not in reachable]
        if lost:
            found.append(WireCheck(label, f"host {lost[0]} is unreachable"))
            continue
        if w.a.pci is not None or w.b.pci is not None:
            found.append(_pci_wire(hosts, w))
            continue
        tokens[label] = (w, secrets.token_hex(4))
        for end in (w.a, w.b):
            listening.setdefault(end.host, []).append(end.iface)
    problems: dict[str, str] = {}
    local_listeners = {i: frames.Listener(i) for i in listening.get(LOCAL, [])}
    try:
        return found + _frames(hosts, tokens, listening, local_listeners, problems)
    finally:
        for listener in local_listeners.values():
            listener.stop()


def _pci_wire(hosts: Hosts | None, w: Wire) -> WireCheck:
    """Each PCI end's driver, now and for a run; a device the host lacks is a
    problem. No frame: the NIC is DPDK's only during a run."""
    said = []
    for end in (w.a, w.b):
        if end.pci is None:
            continue
        if end.host == LOCAL:
            found = pci.survey([end.pci])
        else:
            assert hosts is not None
            found = hosts.agent(end.host).call("pci", addresses=[end.pci])
        ok, text = found[end.pci]
        if not ok:
            return WireCheck(str(w), f"{end}: {text}")
        said.append(f"{end}: {text}")
    return WireCheck(str(w), note="; ".join(said) + "; no frame before a run binds it")


def _frames(hosts: Hosts, tokens: dict[str, Any], listening: dict[str, list[str]],
            local_listeners: dict[str, frames.Listener],
            problems: dict[str, str]) -> list[WireCheck]:
    """Every end listens, each wire's frame goes out of its `a` end; each
    wire's verdict from where its token was heard."""
    for listener in local_listeners.values():
        listener.start()
        if listener.problem:
            problems[f"{LOCAL}:{listener.iface}"] = listener.problem
    for name, ifaces in listening.items():
        if name != LOCAL:
            for iface, why in hosts.agent(name).call("listen", ifaces=ifaces).items():
                problems[f"{name}:{iface}"] = why
    for label, (w, token) in tokens.items():
        why = frames.send(w.a.iface, token) if w.a.host == LOCAL else \
            hosts.agent(w.a.host).call("send", frames_to_send=[[w.a.iface, token]]).get(w.a.iface, "")
        if why:
            problems[str(w.a)] = why
    time.sleep(SETTLE_S)
    heard: dict[str, set[str]] = {f"{LOCAL}:{i}": l.stop() for i, l in local_listeners.items()}
    for name in listening:
        if name != LOCAL:
            for iface, got in hosts.agent(name).call("heard").items():
                heard[f"{name}:{iface}"] = set(got)
    return [WireCheck(label, _verdict(w.a, w.b, token, heard, problems))
            for label, (w, token) in tokens.items()]


def _verdict(a: End, b: End, token: str, heard: dict[str, set[str]],
             problems: dict[str, str]) -> str:
    for end in (a, b):
        if str(end) in problems:
            return problems[str(end)]
    if token in heard.get(str(b), set()):
        return ""
    elsewhere = sorted(end for end, got in heard.items() if token in got and end != str(a))
    if elsewhere:
        return (f"a frame sent on {a} arrived at {', '.join(elsewhere)}, not at {b}: "
                "the wires are crossed")
    return f"a frame sent on {a} did not arrive at {b}: cut, down, or not this cable"


def cleanup_hosts(inventory: Inventory, run_id: str | None, force: bool = False,
                  hosts: Hosts | None = None) -> tuple[list[str], list[str]]:
    """(removed, failed) on every host of the inventory, this one first; a host
    that cannot be reached, or that a run holds (unless forced), is a failure
    of its own."""
    removed, failed = cleanup(force=force, run_id=run_id)
    hosts = hosts or Hosts(inventory)
    try:
        for name in inventory.hosts:
            try:
                hosts.open([name])
                answer = hosts.agent(name).call("cleanup", run_id=run_id, force=force)
            except (UserError, SystemFailure) as e:
                failed.append(f"host {name}: {e.why if isinstance(e, UserError) else e}")
                continue
            if answer.get("busy"):
                failed.append(f"host {name}: {answer['busy']} (--force cleans it all the same)")
                continue
            removed += [f"{line} on host {name}" for line in answer["removed"]]
            failed += [f"{line} on host {name}" for line in answer["failed"]]
    finally:
        hosts.close()
    return removed, failed
