"""The engine's latency histograms as HdrHistogram's own: a V2 blob (compressed,
base64, `HISTFAAA…`) and histogram log (.hlog) files, for HdrHistogram's tools
(the `hdrh` package, HistogramLogProcessor, HdrHistogram_c).

The engine's buckets are HdrHistogram's layout at 2 significant digits (128
sub-buckets per power of two: engine/README.md, "Histogram"). The blob has 3:
each engine bucket's count is recorded at its upper bound, where the engine
reads a percentile, and a 3-digit sub-bucket never straddles an engine
bucket's edge (both are cut at powers of two), so a percentile read from the
blob is the engine's upper bound exactly. 2 digits would copy the buckets one
to one, but HdrHistogram adds a histogram of another precision or range by
recording each foreign bucket at its *lowest* value: a 2-digit blob added into
the 3-digit histograms most tools keep would fall up to 1/128 below the engine's
percentiles, a 3-digit one lands where the engine reads (into a 2-digit one too).
The bucket holding the exact max is recorded at the max, as the engine clamps
its percentiles to it (within the blob's 1/1024 above it). Values are in ns.
"""
from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import IO

from hdrh.histogram import HdrHistogram
from hdrh.log import HistogramLogWriter

LOWEST_NS = 1
HIGHEST_NS = 1 << 40     # the engine's top (HIST_TOP_BITS): larger values are in its last bucket
DIGITS = 3
# The log format version with tags (hdrh's writer says 1.2, from before them).
LOG_FORMAT = "1.3"
NS_PER_MS = 1e6          # Interval_Max is in ms, HdrHistogram's convention for ns values


def histogram(buckets: Sequence[Sequence[int]], max_ns: float | None = None) -> HdrHistogram:
    """An HdrHistogram holding the engine's `[lower_ns, upper_ns, count]` buckets,
    each count at its upper bound (at the max for the bucket holding it)."""
    h = HdrHistogram(LOWEST_NS, HIGHEST_NS, DIGITS)
    for lower, upper, count in buckets:
        value = int(upper)
        if max_ns is not None and lower <= max_ns < upper:
            value = int(max_ns)
        if count and not h.record_value(value, int(count)):
            raise ValueError(f"{value} ns is outside HdrHistogram's {LOWEST_NS}..{HIGHEST_NS} ns")
    return h


def blob(buckets: Sequence[Sequence[int]] | None, max_ns: float | None = None) -> str | None:
    """The V2 blob of the engine's buckets; None without any."""
    if not buckets:
        return None
    return histogram(buckets, max_ns).encode().decode("ascii")


def decode(text: str) -> HdrHistogram:
    return HdrHistogram.decode(text)


@dataclass(frozen=True)
class Interval:
    """One line of a log: its histogram's tag (no comma, space or line break),
    its start in seconds after the log's base time, its length, its blob."""

    tag: str
    start_s: float
    length_s: float
    blob: str


def write_log(out: IO[str], start_s: float, intervals: Sequence[Interval],
              comment: str | None = None) -> None:
    """An .hlog: a comment, the format version, the start and base time
    (`start_s`, seconds since the epoch; interval starts are relative to it),
    the legend, then a tagged line per interval, as HdrHistogram's Java writer
    lays it out. hdrh's own writer gives the comment, base time and legend; its
    start time line fails (it formats milliseconds as seconds), its version is
    1.2 (without tags) and its interval lines carry no tag and truncate their
    max to whole milliseconds, so those lines are written here."""
    writer = HistogramLogWriter(out)
    if comment:
        writer.output_comment(f"[{comment}]")
    writer.output_comment(f"[Histogram log format version {LOG_FORMAT}]")
    # Both in whole ms, as Java's writer takes them: a base time a fraction of a
    # ms before the start time puts every interval before it, and a reader
    # asked for intervals from the start on (hdrh's default) skips them all.
    ms = round(start_s * 1000)
    stamp = time.strftime("%a %b %d %H:%M:%S %Z %Y", time.localtime(ms / 1000))
    out.write(f"#[StartTime: {ms / 1000:.3f} (seconds since epoch), {stamp}]\n")
    writer.output_base_time(ms)
    writer.output_legend()
    for line in intervals:
        if not line.tag or any(c in line.tag for c in ", \r\n"):
            raise ValueError(f"tag {line.tag!r}: no comma, space or line break, not empty")
        max_ms = decode(line.blob).get_max_value() / NS_PER_MS
        out.write(f"Tag={line.tag},{line.start_s:.3f},{line.length_s:.3f},{max_ms:.3f},"
                  f"{line.blob}\n")
