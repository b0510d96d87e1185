"""Statistics for repetitions, interval records and latency histograms.

No scipy: the two-sided 95% Student t quantiles for small degrees of freedom
are embedded below; past the table the next smaller tabulated df is used, which
errs on the wide (honest) side.

Histograms are lists of [lower_ns, upper_ns, count] buckets with inclusive
bounds, the engine's log-linear layout (engine/src/core/hist.h: one bucket per
ns below 128 ns, then 128 buckets per power of two). Buckets of one layout never
partially overlap, so merging is adding counts of identical buckets.
Percentiles are computed as the engine computes them, so a value recomputed
from a stored histogram equals the one the engine printed: the upper bound of
the bucket holding the rank, never below the true value and at most 0.78% above.
"""
from __future__ import annotations

import bisect
import math
from dataclasses import asdict, dataclass
from typing import Any, Iterable, Mapping, Sequence

# t(0.975, df) for df = 1..30, then selected larger df; infinity -> normal 1.96.
_T95 = {
    1: 12.706, 2: 4.303, 3: 3.182, 4: 2.776, 5: 2.571, 6: 2.447, 7: 2.365, 8: 2.306,
    9: 2.262, 10: 2.228, 11: 2.201, 12: 2.179, 13: 2.160, 14: 2.145, 15: 2.131,
    16: 2.120, 17: 2.110, 18: 2.101, 19: 2.093, 20: 2.086, 21: 2.080, 22: 2.074,
    23: 2.069, 24: 2.064, 25: 2.060, 26: 2.056, 27: 2.052, 28: 2.048, 29: 2.045,
    30: 2.042, 40: 2.021, 60: 2.000, 80: 1.990, 100: 1.984, 120: 1.980,
}
_T95_DF = sorted(_T95)
_Z95 = 1.960


def t95(df: int) -> float:
    """Two-sided 95% Student t quantile for df degrees of freedom."""
    if df < 1:
        raise ValueError(f"degrees of freedom: {df} must be >= 1")
    if df > 1000:
        return _Z95
    return _T95[_T95_DF[bisect.bisect_right(_T95_DF, df) - 1]]


@dataclass
class Summary:
    n: int
    mean: float
    stddev: float | None        # sample (n-1); None for a single value
    ci_low: float | None        # 95% confidence interval of the mean
    ci_high: float | None

    def to_dict(self) -> dict:
        return asdict(self)


def mean(values: Sequence[float]) -> float:
    if not values:
        raise ValueError("mean of no values")
    return math.fsum(values) / len(values)


def stddev(values: Sequence[float]) -> float | None:
    if len(values) < 2:
        return None
    m = mean(values)
    return math.sqrt(math.fsum((v - m) ** 2 for v in values) / (len(values) - 1))


def summarize(values: Iterable[float]) -> Summary:
    """Mean, sample stddev and 95% CI of repetitions of one point."""
    vals = [float(v) for v in values]
    m, s = mean(vals), stddev(vals)
    if s is None:
        return Summary(len(vals), m, None, None, None)
    half = t95(len(vals) - 1) * s / math.sqrt(len(vals))
    return Summary(len(vals), m, s, m - half, m + half)


def summarize_groups(rows: Iterable[Mapping[str, Any]], keys: Sequence[str],
                     value: str) -> dict[tuple, Summary]:
    """Repetitions of each point summarised: {(values of keys): Summary of `value`}.
    Rows without the value (a failed repetition) are left out, so n says how many
    repetitions the numbers rest on."""
    groups: dict[tuple, list[float]] = {}
    for r in rows:
        if r.get(value) is not None:
            groups.setdefault(tuple(r.get(k) for k in keys), []).append(float(r[value]))
    return {k: summarize(v) for k, v in groups.items()}


# --- interval records -------------------------------------------------------

def steady_state(intervals: Sequence[Mapping[str, Any]], warmup: float = 0.0,
                 t_key: str = "elapsed_s", dt_key: str = "interval_s",
                 partial: float = 0.9, until: float | None = None) -> list:
    """Interval records of the steady state only.

    Each record carries its end time (engine: `elapsed_s`, seconds since the
    endpoint started) and its length (`interval_s`; when missing, the gap to
    the previous record). Drops records the engine marked `"phase": "warmup"`
    and records that started inside `warmup` seconds, and a last record shorter
    than `partial` x the typical interval (the run ended inside it, so its rate
    is skewed by start/stop effects). With `until` (when the traffic stopped, on
    the records' clock), records that end later are dropped too: a receiver
    counts on after its sender is done, and a full-length interval that is
    half idle is no steady state either.
    """
    if warmup < 0:
        raise ValueError(f"warmup: {warmup} must be >= 0")
    rows = sorted((r for r in intervals if r.get("phase") != "warmup"),
                  key=lambda r: float(r[t_key]))
    spans = []
    prev = 0.0
    for r in rows:
        end = float(r[t_key])
        dt = float(r[dt_key]) if r.get(dt_key) is not None else end - prev
        spans.append((end - dt, dt, r))
        prev = end
    kept = [(start, dt, r) for start, dt, r in spans if start >= warmup - 1e-9
            and (until is None or start + dt <= until + 1e-9)]
    if len(kept) >= 2:
        typical = sorted(dt for _, dt, _ in kept)[len(kept) // 2]
        if kept[-1][1] < partial * typical:
            kept.pop()
    return [r for _, _, r in kept]


def interval_rate(intervals: Sequence[Mapping[str, Any]], count_key: str,
                  dt_key: str = "interval_s") -> float | None:
    """Rate over records (total count / total time), not a mean of per-interval rates."""
    seconds = math.fsum(float(r[dt_key]) for r in intervals)
    if seconds <= 0:
        return None
    return math.fsum(float(r[count_key]) for r in intervals) / seconds


# --- latency histograms -----------------------------------------------------

Bucket = tuple[int, int, int]


def _buckets(hist: Iterable[Sequence[float]]) -> list[Bucket]:
    out = []
    for b in hist:
        if len(b) != 3:
            raise ValueError(f"histogram bucket {b!r}: expected [lower_ns, upper_ns, count]")
        lo, hi, n = int(b[0]), int(b[1]), int(b[2])
        if hi < lo or n < 0:
            raise ValueError(f"histogram bucket {list(b)!r}: needs lower <= upper and count >= 0")
        if n:
            out.append((lo, hi, n))
    return out


def merge_histograms(hists: Iterable[Iterable[Sequence[float]]]) -> list[list[int]]:
    """One histogram from many (repetitions, pairs): counts of identical buckets add."""
    counts: dict[tuple[int, int], int] = {}
    for hist in hists:
        for lo, hi, n in _buckets(hist):
            counts[(lo, hi)] = counts.get((lo, hi), 0) + n
    merged = sorted(counts.items())
    for ((lo_a, hi_a), _), ((lo_b, hi_b), _) in zip(merged, merged[1:]):
        if lo_b < hi_a:
            raise ValueError(f"histograms have different layouts: buckets [{lo_a}, {hi_a}] "
                             f"and [{lo_b}, {hi_b}] overlap")
    return [[lo, hi, n] for (lo, hi), n in merged]


def total(hist: Iterable[Sequence[float]]) -> int:
    return sum(n for _, _, n in _buckets(hist))


def percentile(hist: Iterable[Sequence[float]], p: float) -> float | None:
    """The p-th percentile in ns: upper bound of the bucket holding the nearest rank."""
    if not 0 <= p <= 100:
        raise ValueError(f"percentile: {p} must be between 0 and 100")
    buckets = sorted(_buckets(hist))
    n_total = sum(n for _, _, n in buckets)
    if n_total == 0:
        return None
    # the epsilon keeps 99.9% of 1000 samples at rank 999, as the engine counts it
    rank = min(n_total, max(1, math.ceil(p / 100 * n_total - 1e-9)))
    seen = 0
    for _, hi, n in buckets:
        seen += n
        if seen >= rank:
            return float(hi)
    return float(buckets[-1][1])


def percentile_name(p: float) -> str:
    """50 -> "p50", 99.9 -> "p999": the names the results store uses for columns."""
    return "p" + f"{p:g}".replace(".", "")


def percentiles(hist: Iterable[Sequence[float]],
                ps: Sequence[float] = (50, 90, 99, 99.9, 99.99)) -> dict[str, float | None]:
    """{"p50": ns, "p999": ns, ...} from one histogram."""
    buckets = [list(b) for b in _buckets(hist)]
    return {percentile_name(p): percentile(buckets, p) for p in ps}


def hist_mean(hist: Iterable[Sequence[float]]) -> float | None:
    """Mean in ns, each bucket counted at its midpoint."""
    buckets = _buckets(hist)
    n_total = sum(n for _, _, n in buckets)
    if n_total == 0:
        return None
    return math.fsum((lo + hi) / 2 * n for lo, hi, n in buckets) / n_total


def hist_stdev(hist: Iterable[Sequence[float]]) -> float | None:
    """Sample standard deviation in ns, each bucket counted at its midpoint (as
    hist_mean); None for fewer than two samples."""
    buckets = _buckets(hist)
    n_total = sum(n for _, _, n in buckets)
    if n_total < 2:
        return None
    mid = math.fsum((lo + hi) / 2 * n for lo, hi, n in buckets) / n_total
    return math.sqrt(math.fsum(((lo + hi) / 2 - mid) ** 2 * n for lo, hi, n in buckets)
                     / (n_total - 1))


def cdf(hist: Iterable[Sequence[float]]) -> list[tuple[float, float]]:
    """(latency_ns, fraction of samples <= it) at every bucket's upper bound, after
    a first point (lowest lower bound, 0)."""
    buckets = sorted(_buckets(hist))
    n_total = sum(n for _, _, n in buckets)
    if n_total == 0:
        return []
    points = [(float(buckets[0][0]), 0.0)]
    seen = 0
    for _, hi, n in buckets:
        seen += n
        points.append((float(hi), seen / n_total))
    return points
