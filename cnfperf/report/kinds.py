"""Latency's two kinds, as the report names them. A split tester's client times
the round trip of each frame it echoes (`rtt`); a single tester, which holds
both ends, times each frame one way on its one clock (`one_way`, as a
throughput point's receiver does). Unlike things: no plot puts them on one
axis and no ranking ranks one against the other; each says which it shows.
"""
from __future__ import annotations

from typing import Any, Iterable, Mapping

from cnfperf.report import contention

ORDER = ("rtt", "one_way")                            # a report shows round trips first
WORDS = {"rtt": "round trip", "one_way": "one way"}   # a table's cell, a panel's title
TIME = {"rtt": "round-trip time", "one_way": "one-way latency"}   # an axis' quantity
SHORT = {"rtt": "RTT", "one_way": "one-way latency"}


def of(row: Mapping[str, Any]) -> str:
    """The kind a row's latency is: what its point stored (the engine's word);
    a row without one, by its tester (a single tester's is one way)."""
    kind = row.get("latency_kind")
    if kind in WORDS:
        return str(kind)
    return "one_way" if contention.tester(row) == "single" else "rtt"


def said(kind: str | None) -> str:
    """`round trip`, `one way`; `–` for none (no latency measured)."""
    return WORDS.get(kind or "", kind or "–")


def present(rows: Iterable[Mapping[str, Any]]) -> list[str]:
    """The kinds among the rows, round trips first."""
    found = {of(r) for r in rows}
    return [k for k in ORDER if k in found]
