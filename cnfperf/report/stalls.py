"""What a stored point's pollers lost to stalls, and whether that marks it.

A stall is a gap between two iterations of an engine's polling loop above its
threshold (engine/README.md, `stalls`): the poller's core was another's. The
store keeps per engine the sum and its share of the window (metrics), per point
the largest of each (points.stall_ns, stall_share); a point whose pollers lost
more than model.STALL_MARK of the window is marked, in the tables and the
report's header. Points stored before, and command NFs, say nothing ("–").
"""
from __future__ import annotations

from typing import Any, Mapping, Sequence

from cnfperf.results.model import STALL_MARK

COLUMN = "stall ms"     # the stalls' sum of the poller that lost the largest share
SHARE = "stall %"       # that share of its window


def _pollers(point: Mapping[str, Any], pair: int | None) -> list[Mapping[str, Any]]:
    return [e for e in point.get("endpoints") or ()
            if e.get("stall_total_ns") is not None and (pair is None or e.get("pair") == pair)]


def ms(point: Mapping[str, Any], pair: int | None = None) -> float | None:
    """The stalls' sum, in ms, of the poller (of `pair` only: its ends and NFs)
    that lost the largest share of its window, as the point stores it; None
    when none said."""
    if pair is None and point.get("stall_ns") is not None:
        return point["stall_ns"] / 1e6
    found = _pollers(point, pair)
    worst = max(found, key=lambda e: (e.get("stall_share") or 0, e["stall_total_ns"]),
                default=None)
    return worst["stall_total_ns"] / 1e6 if worst else None


def share(point: Mapping[str, Any], pair: int | None = None) -> float | None:
    """The largest share of the window a poller lost (0..1); None when none said."""
    if pair is None and point.get("stall_share") is not None:
        return point["stall_share"]
    found = [e["stall_share"] for e in _pollers(point, pair) if e.get("stall_share") is not None]
    return max(found) if found else None


def stalled(point: Mapping[str, Any]) -> bool:
    return (share(point) or 0) > STALL_MARK


def said(point: Mapping[str, Any], pair: int | None = None) -> str:
    """`12.3` ms, `12.3!` past the mark, `–` unknown: the text table's cell."""
    value = ms(point, pair)
    if value is None:
        return "–"
    return f"{value:.1f}{'!' if (share(point, pair) or 0) > STALL_MARK else ''}"


def notice(points: Sequence[Mapping[str, Any]]) -> str:
    """The header's warning when pollers lost more than the mark, else nothing."""
    marked = [p for p in points if stalled(p)]
    if not marked:
        return ""
    worst = max(share(p) or 0 for p in marked)
    return (f"Stalls: in {len(marked)} of {len(points)} points a poller (a tester end or a "
            f"network function) lost more than {100 * STALL_MARK:g} % of its measured window "
            f"(up to {100 * worst:.1f} %) to gaps in its polling: its core was another's, and "
            f"the numbers show the host's scheduling as much as the data plane; see the tables' "
            f"{COLUMN} and {SHARE} columns.")
