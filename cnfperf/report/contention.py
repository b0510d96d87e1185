"""Whether a stored point was measured with more busy pollers than cores, and
which tester measured it.

A point with more busy pollers than cores measures the scheduler's time slices
as much as its data plane: the report marks it wherever its numbers show
(hollow markers, a column in tables, a count in the header).

A point stores `pollers` (the busy pollers its plan counted) and `point_cores`
(how many cores it was placed on); points stored before those columns carry
only the plan's warning, "N busy pollers share M cores: …" (plan.py; before,
"N busy-polling threads share M cores"), which is read instead.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Mapping, Sequence

from cnfperf import fields

COLUMN = "CPU contended"   # the tables' flag column (html.py tints its rows that say yes)
_WARNING = re.compile(r"(\d+) (?:busy pollers|busy-polling threads) share (\d+) cores?")


@dataclass(frozen=True)
class Share:
    pollers: int
    cores: int

    @property
    def contended(self) -> bool:
        return self.pollers > self.cores

    def __str__(self) -> str:
        """`3 busy pollers on 2 cores`."""
        return f"{self.pollers} busy pollers on {self.cores} core{'' if self.cores == 1 else 's'}"


def share(point: Mapping[str, Any]) -> Share | None:
    """The point's busy pollers and cores; None when it says neither (a point
    stored before the plan counted them, without a warning: not contended, or
    not known to be)."""
    if point.get("pollers") is not None and point.get("point_cores") is not None:
        return Share(int(point["pollers"]), int(point["point_cores"]))
    for warning in point.get("warnings") or ():
        if found := _WARNING.search(str(warning)):
            return Share(int(found[1]), int(found[2]))
    return None


def contended(point: Mapping[str, Any]) -> bool:
    found = share(point)
    return bool(found and found.contended)


def count(points: Sequence[Mapping[str, Any]]) -> tuple[int, Share | None]:
    """(how many points were contended, the most crowded share among them)."""
    crowded = [s for s in map(share, points) if s and s.contended]
    worst = max(crowded, key=lambda s: s.pollers / s.cores, default=None)
    return len(crowded), worst


def tester(point: Mapping[str, Any]) -> str | None:
    """The tester that measured the point (split or single): the stored column,
    which holds what `auto` chose, else the scenario's own value."""
    scenario = point.get("scenario") or {}
    for value in (point.get("tester"), scenario.get("tester")):
        if value in fields.TESTERS:
            return str(value)
    return point.get("tester") or scenario.get("tester")


def tester_said(point: Mapping[str, Any]) -> str:
    """`single (auto: split would put 3 busy pollers on 2 cores)`: the tester and
    why, when the point stored why."""
    used = tester(point) or "–"
    why = point.get("tester_why")
    return f"{used} ({why})" if why else used
