"""`cnfperf compare RUN_A RUN_B`: the points two runs share, side by side, with B/A.

Points match on what was measured (data plane, api, mode, tester, pairs, size,
burst, rate, …), not on how long: a 10 s run compares with a 1 s one. Repetitions are
averaged. A search point compares the rate it found (total over pairs), any
other its received rate. A series of runs is trend.py's: each point's
values over the runs, grouped.
"""
from __future__ import annotations

from collections import defaultdict
from typing import Any

from cnfperf.experiments import stats
from cnfperf.report import summary
from cnfperf.results import expect

MATCH = ("switch", "api", "mode", "tester", "pairs", "size", "burst", "rate", "flows", "touch",
         "mmsg", "poll", "limit")
HEADERS = ["point", "A kpps", "B kpps", "B/A", "A loss %", "B loss %", "A p50 µs",
           "B p50 µs", "B/A", "A p99 µs", "B p99 µs", "B/A"]


def what(point: dict[str, Any]) -> tuple:
    """What a point measured, as compare matches points of two runs."""
    return tuple(str(summary._param(point, f)) for f in MATCH)


def measured(run: dict[str, Any]) -> dict[tuple, dict[str, Any]]:
    """{what a point measured (what): its first repetition's point and, per value
    (rate in pps, loss in %, p50 and p99 in ns), the value of each repetition
    that has one}: the run's finished points, matched as compare matches them."""
    groups: dict[tuple, list[dict[str, Any]]] = defaultdict(list)
    for p in summary.done_points(run):
        groups[what(p)].append(p)
    out = {}
    for key, members in groups.items():
        def each(get) -> list[float]:
            return [v for v in map(get, members) if v is not None]
        out[key] = {"point": members[0], "rate": each(expect.found_rate),
                    "loss": each(lambda p: None if p["loss_ratio"] is None
                                 else 100 * p["loss_ratio"]),
                    "p50": each(lambda p: p.get("lat_p50_ns")),
                    "p99": each(lambda p: p.get("lat_p99_ns"))}
    return out


def _means(run: dict[str, Any]) -> dict[tuple, dict[str, Any]]:
    """measured(run) with each value's repetitions averaged (None: none had one)."""
    return {key: {name: (v if name == "point" else stats.mean(v) if v else None)
                  for name, v in m.items()} for key, m in measured(run).items()}


def _ratio(a: float | None, b: float | None) -> float | None:
    return b / a if a and b is not None else None


def compare(run_a: dict[str, Any], run_b: dict[str, Any]) -> tuple[list[list[Any]], list[str]]:
    """(rows, notes): a row per point both runs measured; notes name the others."""
    a, b = _means(run_a), _means(run_b)
    shared = [k for k in a if k in b]
    fields = summary.varying(summary.done_points(run_a) + summary.done_points(run_b)) \
        or ["switch"]
    rows = []
    for k in shared:
        x, y = a[k], b[k]
        kpps = [None if v is None else v / 1e3 for v in (x["rate"], y["rate"])]
        us = {n: [None if v is None else v / 1e3 for v in (x[n], y[n])] for n in ("p50", "p99")}
        rows.append([summary.label(x["point"], fields), *kpps, _ratio(*kpps), x["loss"],
                     y["loss"], *us["p50"], _ratio(*us["p50"]), *us["p99"],
                     _ratio(*us["p99"])])
    notes = []
    for name, mine, other in (("A", a, b), ("B", b, a)):
        only = [k for k in mine if k not in other]
        if only:
            notes.append(f"only in {name} ({run_a['id'] if name == 'A' else run_b['id']}): "
                         + "; ".join(summary.label(mine[k]["point"], fields) for k in only))
    return rows, notes
