"""What a run's soaks measured (strategies/soak.py), as a table (summary.py's
Table): per soaked point, how long, in how many segments (an interruption and
--resume make two), the loss over it and its worst second, and how its
latency held up (the median and the worst of its per-second p99).
"""
from __future__ import annotations

import statistics
from typing import Any

from cnfperf.report.summary import Table, _kpps, _percent, _us, done_points, label, varying


def soaked(run: dict[str, Any]) -> list[dict[str, Any]]:
    return [p for p in done_points(run) if p.get("soak")]


def table(run: dict[str, Any]) -> Table | None:
    points = soaked(run)
    if not points:
        return None
    axes = varying(done_points(run)) or ["switch"]
    rows = []
    for p in points:
        series = p["soak"]
        tx = sum(r["tx_packets"] or 0 for r in series)
        lost = sum(r["lost"] or 0 for r in series)
        p99 = [r["lat_p99_ns"] for r in series if r["lat_p99_ns"] is not None]
        rows.append([label(p, axes), _kpps(series[-1]["offered_pps"]),
                     sum(r["interval_s"] or 0 for r in series), len(series),
                     len({r["segment"] for r in series}), lost,
                     100 * lost / tx if tx else None,
                     _percent(max((r["loss_ratio"] for r in series
                                   if r["loss_ratio"] is not None), default=None)),
                     _us(statistics.median(p99)) if p99 else None,
                     _us(max(p99)) if p99 else None,
                     _us(max((r["lat_max_ns"] for r in series if r["lat_max_ns"] is not None),
                             default=None))])
    return ("Soak", ["point", "offered kpps", "seconds", "intervals", "segments", "lost",
                     "loss %", "worst second loss %", "p99 µs median", "p99 µs worst",
                     "max µs"], rows)
