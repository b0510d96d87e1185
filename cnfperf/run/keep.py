"""A switch kept between a run's points, as CSIT keeps its DUT up across trials.

Consecutive points whose switch would be made alike (switch_key: the fields
marked switch_config, the ports it joins and the cores its nodes are on) share
one switch: when a point is over its data plane releases it (DataPlane.release:
the point's engines are gone, the switch stays), and the next point with the
same key takes it back (DataPlane.reuse: counters and learned state reset),
unless it is no longer healthy (DataPlane.stale: then it is stopped and a fresh
one started). A point that failed, a key that changes, the run's end, an error
or a signal stop the kept switch: the run's teardown holds its stop. While it
is kept its resources stay in the journal, so `cnfperf cleanup` removes them
after a killed run as it would a point's.

A kept switch carries the point's virtual machines along (their boot is what
a VM point waits for; Runtime.keeps): their NICs are the switch's ports, so
a guest is kept (vm_keep) only when its switch is, and serves the next point when that
point also differs from this one only in its traffic (guest_key: the fields
marked traffic) and the guest still answers (Container.stale). Their netns go
with them. A kept guest runs nothing between points: each point starts its
processes in it, as in a fresh one; what a point prepared in it (NfKind.prepare)
it keeps, for a point made alike, which does not prepare it again.
"""
from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from cnfperf import fields
from cnfperf.fields import LOCAL

if TYPE_CHECKING:
    from cnfperf.dataplanes import DataPlane
    from cnfperf.plan import TestPoint
    from cnfperf.runtimes import Container


def switch_key(point: TestPoint) -> str:
    """What a switch is made for: the switch_config fields' values, the links it
    joins (their ports: names, MACs, apis, slots) and the cores of every node
    (the switch's own are chosen from them: dpdk_base.switch_cpus)."""
    s = point.scenario.model_dump(mode="json")
    made = {
        "fields": {name: s[name] for name in fields.switch_config()},
        "links": [[_port(link.a), _port(link.b), link.first_is_a]
                  for link in point.links_joined_here()],
        "cpus": list(point.cpus),
        "engines": [[ep.name, ep.cpu, *([list(ep.cores)] if ep.cores else [])]
                    for ep in point.engines],
        "nfs": [[nf.name, list(nf.cores)] for nf in point.nfs],
        "nics": [list(n) for n in point.nics],
    }
    return json.dumps(made, sort_keys=True, default=str)


def guest_key(point: TestPoint) -> dict[str, Any]:
    """What a kept VM was booted and prepared for beyond its switch's key: every
    field of the point's but its traffic's (fields.traffic): its memory, image
    and accelerator, its quota, its NF's kind and configuration, the fault."""
    s = point.scenario.model_dump(mode="json")
    return {name: value for name, value in s.items() if name not in fields.traffic()}


def _port(port: Any) -> list[Any]:
    return [port.name, port.node, port.mac, port.api, port.slot, port.vm, port.host,
            *([port.queues] if port.queues > 1 else [])]


def keepable(point: TestPoint) -> bool:
    """Whether the point may hand its switch on: asked for (switch_keep), and a
    switch of this host's only (another host's part goes with its agent's teardown)."""
    s = point.scenario
    return bool(s.switch_keep) and s.dut_host == LOCAL and not s.hosts


@dataclass
class Guest:
    """A VM kept with the switch its NICs are on."""
    container: Container
    points: int = 1    # the points it served so far


@dataclass
class Kept:
    key: str
    dataplane: DataPlane
    points: int = 1    # the points it served so far
    guests: dict[str, Guest] = field(default_factory=dict)   # its VMs, by node
    made_for: dict[str, Any] = field(default_factory=dict)   # their guest_key


class Keeper:
    """The run's kept switch, at most one, and the VMs on it. The runner marks
    each point that measured (passed()); only such a point hands its switch on.
    `gone` removes a node's netns: a kept guest's goes with it."""

    def __init__(self, gone: Callable[[str], None] = lambda name: None) -> None:
        self.kept: Kept | None = None
        self.passed_point: int | None = None
        self.served: dict[str, Any] = {}   # how the last point's switch came: switch.json
        self.not_kept = "the run's first switch"   # why no switch is kept, if none is
        self.gone = gone
        self.offered: dict[str, Guest] = {}   # kept guests for the point being built
        self.parked: dict[str, Guest] = {}    # the point's, until its switch is handed back
        self.no_guests = "none was kept"      # why none is kept, if the switch is

    def take(self, point: TestPoint) -> DataPlane | None:
        """The kept switch if this point may have it (same key, still healthy),
        ready for it (reuse); else None, and any kept switch stopped. Its guests
        that may serve the point are offered to it (guest())."""
        kept, self.kept = self.kept, None
        self.served = {"kept": False, "points": 1, "guests": {}}
        if kept is None:
            self.served["fresh_because"] = self.not_kept
            self.no_guests = f"their switch is fresh: {self.not_kept}"
            return None
        key = switch_key(point)
        why = None
        if not keepable(point):
            why = "switch_keep = no"
        elif kept.key != key:
            why = "the switch is made differently for this point"
        elif kept.dataplane.name != point.scenario.switch:
            why = "another data plane"
        else:
            why = kept.dataplane.stale()
        if why is None:
            try:
                kept.dataplane.reuse(point)
            except Exception as e:  # a switch that cannot be reset is not used
                why = f"could not be reset: {e}"
            except BaseException:   # a signal: the switch goes, as the run does
                self._stop(kept.dataplane, kept.guests, netns=True)
                raise
        if why is not None:
            self.served["fresh_because"] = why
            self.no_guests = f"their switch is fresh: {why}"
            self._stop(kept.dataplane, kept.guests, netns=True)
            return None
        self.served = {"kept": True, "points": kept.points + 1, "guests": {}}
        try:
            self._offer(point, kept)
        except BaseException:   # a guest not destroyed, or a signal: the switch and all go
            guests, self.offered = {**kept.guests, **self.offered}, {}
            self._stop(kept.dataplane, guests, netns=True)
            raise
        return kept.dataplane

    def _offer(self, point: TestPoint, kept: Kept) -> None:
        """The kept switch's guests the point may have: all, if it differs from
        theirs in its traffic only, each still answering; the others destroyed."""
        made_for = guest_key(point)
        differs = sorted(name for name in {*made_for, *kept.made_for}
                         if made_for.get(name) != kept.made_for.get(name))
        if differs and kept.guests:
            self.no_guests = "the point differs in " + ", ".join(differs)
            self._destroy(kept.guests, netns=True)
            return
        stale = {}
        for name, guest in kept.guests.items():
            if (why := guest.container.stale()) is None:
                self.offered[name] = guest
            else:
                stale[name] = guest
                self.served["guests"][name] = {"kept": False, "fresh_because": why}
        self._destroy(stale, netns=True)

    def holds(self, name: str) -> bool:
        """Whether a node's VM is kept (or offered, or parked): its netns stays."""
        return name in self.offered or name in self.parked or \
            (self.kept is not None and name in self.kept.guests)

    def guest(self, name: str) -> Container | None:
        """The node's kept VM, if one is offered to this point (take())."""
        guest = self.offered.pop(name, None)
        if guest is None:
            self.served["guests"].setdefault(name, {"kept": False,
                                                    "fresh_because": self.no_guests})
            return None
        guest.points += 1
        self.parked[name] = guest    # the point's now: hand_back() decides
        self.served["guests"][name] = {"kept": True, "points": guest.points}
        return guest.container

    def park(self, point: TestPoint, name: str, container: Container) -> bool | None:
        """A node's VM at its point's end: held for its switch's hand_back()
        when the point measured, injected no fault (which may have left the
        guest changed) and asks for it (vm_keep), else destroyed. False when held."""
        guest = self.parked.pop(name, None) or Guest(container)
        s = point.scenario
        if self.passed_point != point.index or s.fault != "none" or not s.vm_keep:
            container.destroy()
            return None
        try:
            container.release()
        except BaseException:
            container.destroy()
            raise
        self.parked[name] = guest
        return False

    def passed(self, point: TestPoint) -> None:
        """The point measured: its switch may serve the next one."""
        self.passed_point = point.index

    def hand_back(self, point: TestPoint, dataplane: DataPlane) -> bool | None:
        """The point is over: keep its switch (release) and its parked VMs if
        it passed and may, else stop them. False when kept (a teardown step
        that removed nothing)."""
        points = self.served.get("points", 1)
        self.not_kept = ("the point before failed" if self.passed_point != point.index else
                         "switch_keep = no" if not point.scenario.switch_keep else
                         "a switch of another host" if not keepable(point) else
                         f"{dataplane.name} is not kept between points"
                         if not dataplane.keeps else "")
        # what was offered and not taken, or taken and not parked, is this point's to remove
        guests, self.parked, unused, self.offered = self.parked, {}, self.offered, {}
        if self.not_kept:
            self._stop(dataplane, {**guests, **unused})
            return None
        s = point.scenario
        self.no_guests = ("vm_keep = no" if not s.vm_keep else
                          "a fault was injected into the point before" if s.fault != "none" else
                          "none was kept")
        try:
            self._destroy(unused)
            dataplane.release()
        except BaseException:
            self._stop(dataplane, guests)
            raise
        self.kept = Kept(switch_key(point), dataplane, points, guests, guest_key(point))
        return False

    def abandon(self, dataplane: DataPlane) -> None:
        """The point failed before its teardown held the switch it took: the
        switch goes now, and its VMs with their netns."""
        guests = {**self.parked, **self.offered}
        self.parked, self.offered = {}, {}
        self.not_kept = "the point before failed"
        self._stop(dataplane, guests, netns=True)

    def drop(self) -> str | None:
        """The run is over (done, failed or interrupted): the kept switch and its
        VMs go; what was stopped, named as a teardown step names it."""
        kept, self.kept = self.kept, None
        self.served = {"kept": False, "points": 1, "guests": {}}
        if kept is None:
            return None
        self.not_kept = "the point before had no switch here"
        self._stop(kept.dataplane, kept.guests, netns=True)
        return " and ".join([f"data-plane {kept.dataplane.name}",
                             *([f"VMs {', '.join(sorted(kept.guests))}"] if kept.guests else [])])

    def _stop(self, dataplane: DataPlane, guests: dict[str, Guest], netns: bool = False) -> None:
        """The VMs, then the switch their NICs were on: each even if one before failed."""
        try:
            self._destroy(guests, netns)
        finally:
            dataplane.stop()

    def _destroy(self, guests: dict[str, Guest], netns: bool = False) -> None:
        """Each VM destroyed, and with `netns` its node's netns removed (a kept
        one's: no point's teardown removes it); the first failure raised once
        every one was tried."""
        failed: BaseException | None = None
        for name, guest in guests.items():
            for undo in (guest.container.destroy, *([lambda: self.gone(name)] if netns else [])):
                try:
                    undo()
                except BaseException as e:   # the others still go
                    failed = failed or e
        if failed is not None:
            raise failed
