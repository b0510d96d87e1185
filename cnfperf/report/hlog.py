"""`cnfperf results export RUN --hdrh`: a run's latency as HdrHistogram log files
(.hlog), one per point that has a latency histogram (`point<idx>.hlog`, as its
run directory's `point<idx>/`), from the blobs the store holds (`latency_hdrh`).

A file's start and base time are the point's start; each line is one histogram,
tagged `pair<N>` for a pair's and `all` for the point's total (the CSV's word),
starting at the point's start and lasting its measured window (the engine's
`duration_s` of the ends that measured it). HdrHistogram's readers tell the
lines apart by their tags (HistogramLogProcessor -tag, hdrh's histogram.get_tag()).
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

from cnfperf import __version__
from cnfperf.results import hdrh

TOTAL = "all"


def tag(pair: int) -> str:
    return f"pair{pair}"


def intervals(point: dict[str, Any]) -> list[hdrh.Interval]:
    """The point's lines: each pair's histogram, then the total."""
    lines = [hdrh.Interval(tag(r["pair"]), 0.0, _window(point, r["pair"]), r["latency_hdrh"])
             for r in point.get("per_pair") or [] if r.get("latency_hdrh")]
    if point.get("latency_hdrh"):
        window = max((line.length_s for line in lines), default=0.0) or _window(point, None)
        lines.append(hdrh.Interval(TOTAL, 0.0, window, point["latency_hdrh"]))
    return lines


def _window(point: dict[str, Any], pair: int | None) -> float:
    """How long the ends of `pair` (None: every pair) measured: the longest window
    of those that measured latency, else of any, else the point's duration."""
    ends = [e for e in point.get("endpoints") or [] if pair is None or e.get("pair") == pair]
    measured = [e for e in ends if e.get("latency_hdrh")] or ends
    return max((float(e.get("seconds") or 0) for e in measured), default=0.0) or \
        float(point.get("duration") or 0)


def write(run: dict[str, Any], directory: Path) -> list[tuple[Path, int]]:
    """Writes a file per point with latency into `directory` (made if missing);
    returns each file and its number of histograms."""
    written = []
    for point in run["points"]:
        lines = intervals(point)
        if not lines:
            continue
        directory.mkdir(parents=True, exist_ok=True)
        path = directory / f"point{point['idx']}.hlog"
        comment = (f"Logged with cnfperf {__version__}: run {run['id']} point {point['idx']} "
                   f"key {point.get('key')}, latency {point.get('latency_kind')} in ns")
        with path.open("w") as f:
            hdrh.write_log(f, float(point["started"]), lines, comment)
        written.append((path, len(lines)))
    return written
