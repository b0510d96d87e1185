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
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from cnfperf import fields
from cnfperf.fields import LOCAL

if TYPE_CHECKING:
    from cnfperf.dataplanes import DataPlane
    from cnfperf.plan import TestPoint


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


def _port(port: Any) -> list[Any]:
    return [port.name, port.node, port.mac, port.api, port.slot, port.vm, port.host,
            *([port.queues] if port.queues > 1 else [])]


def keepable(point: TestPoint) -> bool:
    """Whether the point may hand its switch on: asked for (switch_keep), and a
    switch of this host's only (another host's part goes with its agent's teardown)."""
    s = point.scenario
    return bool(s.switch_keep) and s.dut_host == LOCAL and not s.hosts


@dataclass
class Kept:
    key: str
    dataplane: DataPlane
    points: int = 1    # the points it served so far


class Keeper:
    """The run's kept switch, at most one. The runner marks each point that
    measured (passed()); only such a point hands its switch on."""

    def __init__(self) -> None:
        self.kept: Kept | None = None
        self.passed_point: int | None = None
        self.served: dict[str, Any] = {}   # how the last point's switch came: switch.json
        self.not_kept = "the run's first switch"   # why no switch is kept, if none is

    def take(self, point: TestPoint) -> DataPlane | None:
        """The kept switch if this point may have it (same key, still healthy),
        ready for it (reuse); else None, and any kept switch stopped."""
        kept, self.kept = self.kept, None
        self.served = {"kept": False, "points": 1}
        if kept is None:
            self.served["fresh_because"] = self.not_kept
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
                kept.dataplane.stop()
                raise
        if why is not None:
            self.served["fresh_because"] = why
            kept.dataplane.stop()
            return None
        self.served = {"kept": True, "points": kept.points + 1}
        return kept.dataplane

    def passed(self, point: TestPoint) -> None:
        """The point measured: its switch may serve the next one."""
        self.passed_point = point.index

    def hand_back(self, point: TestPoint, dataplane: DataPlane) -> bool | None:
        """The point is over: keep its switch (release) if it passed and may,
        else stop it. False when kept (a teardown step that removed nothing)."""
        points = self.served.get("points", 1)
        self.not_kept = ("the point before failed" if self.passed_point != point.index else
                         "switch_keep = no" if not point.scenario.switch_keep else
                         "a switch of another host" if not keepable(point) else
                         f"{dataplane.name} is not kept between points"
                         if not dataplane.keeps else "")
        if self.not_kept:
            dataplane.stop()
            return None
        try:
            dataplane.release()
        except BaseException:
            dataplane.stop()
            raise
        self.kept = Kept(switch_key(point), dataplane, points)
        return False

    def drop(self) -> str | None:
        """The run is over (done, failed or interrupted): the kept switch goes;
        what was stopped, named as a teardown step names it."""
        kept, self.kept = self.kept, None
        if kept is None:
            return None
        self.not_kept = "the point before had no switch here"
        kept.dataplane.stop()
        return f"data-plane {kept.dataplane.name}"
