"""Repetition statistics, steady-state trimming and latency histograms."""
from __future__ import annotations

import math
import random

import pytest

from cnfperf.experiments import stats


def test_summary_of_repetitions():
    s = stats.summarize([10.0, 12.0, 14.0])
    assert s.n == 3 and s.mean == 12.0
    assert s.stddev == pytest.approx(2.0)
    half = 4.303 * 2.0 / math.sqrt(3)             # t(0.975, 2) = 4.303
    assert (s.ci_low, s.ci_high) == pytest.approx((12 - half, 12 + half))


def test_single_value_has_no_spread():
    s = stats.summarize([5])
    assert (s.n, s.mean, s.stddev, s.ci_low, s.ci_high) == (1, 5.0, None, None, None)
    assert s.to_dict()["mean"] == 5.0


def test_summaries_per_point_group():
    rows = [{"switch": "veth", "size": 64, "rx_pps": v} for v in (100.0, 110.0, 120.0)]
    rows += [{"switch": "veth", "size": 1500, "rx_pps": 50.0},
             {"switch": "veth", "size": 1500, "rx_pps": None}]      # a failed repetition
    got = stats.summarize_groups(rows, ("switch", "size"), "rx_pps")
    assert set(got) == {("veth", 64), ("veth", 1500)}
    assert got[("veth", 64)].mean == 110.0 and got[("veth", 64)].n == 3
    assert got[("veth", 1500)].n == 1 and got[("veth", 1500)].ci_low is None


def test_no_values_is_an_error():
    with pytest.raises(ValueError, match="mean of no values"):
        stats.summarize([])


@pytest.mark.parametrize("df, t", [(1, 12.706), (4, 2.776), (9, 2.262), (30, 2.042),
                                   (35, 2.042), (45, 2.021), (200, 1.980), (10**6, 1.960)])
def test_t_quantiles(df, t):
    assert stats.t95(df) == t


def test_t_table_decreases_towards_normal():
    values = [stats.t95(df) for df in range(1, 200)]
    assert all(a >= b for a, b in zip(values, values[1:]))
    assert values[-1] > 1.96


def test_ci_covers_the_true_mean_about_95_percent_of_the_time():
    rng = random.Random(7)
    hits = 0
    trials = 2000
    for _ in range(trials):
        s = stats.summarize([rng.gauss(100, 10) for _ in range(5)])
        hits += s.ci_low <= 100 <= s.ci_high
    assert 0.93 < hits / trials < 0.97


def _intervals(n, dt=1.0, last=None, start=0.0, rate=1000):
    """Interval records as the engine prints them (elapsed_s = end, interval_s = length)."""
    rows = [{"type": "interval", "elapsed_s": start + (i + 1) * dt, "interval_s": dt,
             "phase": "measure", "rx_packets": rate * dt} for i in range(n)]
    if last is not None:
        rows.append({"type": "interval", "elapsed_s": rows[-1]["elapsed_s"] + last,
                     "interval_s": last, "phase": "measure", "rx_packets": rate * last * 0.3})
    return rows


def _ends(rows):
    return [r["elapsed_s"] for r in rows]


def test_steady_state_drops_warmup_and_partial_last_interval():
    rows = _intervals(6, last=0.4)                # 6 full seconds, then 0.4 s cut short
    kept = stats.steady_state(rows, warmup=2.0)
    assert _ends(kept) == [3.0, 4.0, 5.0, 6.0]


def test_steady_state_drops_records_the_engine_marked_warmup():
    rows = _intervals(4)
    rows[0]["phase"] = rows[1]["phase"] = "warmup"
    assert _ends(stats.steady_state(rows)) == [3.0, 4.0]


def test_steady_state_keeps_a_full_last_interval():
    kept = stats.steady_state(_intervals(5), warmup=0)
    assert len(kept) == 5


def test_steady_state_without_dt_uses_gaps_and_sorts():
    rows = [{"t": 3.0}, {"t": 1.0}, {"t": 2.0}, {"t": 4.0}, {"t": 4.2}]
    kept = stats.steady_state(rows, warmup=1.0, t_key="t", dt_key="dt")
    assert [r["t"] for r in kept] == [2.0, 3.0, 4.0]


def test_interval_starting_inside_warmup_is_dropped():
    rows = _intervals(4, dt=1.0, start=0.5)       # intervals [0.5,1.5], [1.5,2.5], ...
    kept = stats.steady_state(rows, warmup=1.0)
    assert _ends(kept) == [2.5, 3.5, 4.5]


def test_steady_state_drops_intervals_the_traffic_stopped_inside():
    # A receiver counts on after its sender stops at 1 s warm-up + 4 s: its fifth
    # and sixth records are full length but partly idle.
    kept = stats.steady_state(_intervals(6), warmup=1.0, until=5.0)
    assert _ends(kept) == [2.0, 3.0, 4.0, 5.0]
    assert stats.steady_state(_intervals(2), warmup=0.5, until=1.5) == []


def test_rate_from_intervals_is_count_over_time():
    rows = stats.steady_state(_intervals(5, rate=2000, last=0.5), warmup=1)
    assert stats.interval_rate(rows, "rx_packets") == pytest.approx(2000)
    assert stats.interval_rate([], "rx_packets") is None


def test_negative_warmup_is_an_error():
    with pytest.raises(ValueError, match="warmup"):
        stats.steady_state(_intervals(3), warmup=-1)


# --- histograms -------------------------------------------------------------

def loglinear(values_ns):
    """Bucket values as the engine does (engine/src/core/hist.h): one bucket per ns
    below 128, then 128 buckets per power of two; bounds inclusive."""
    counts = {}
    for v in values_ns:
        width = 1 << max(0, int(v).bit_length() - 8)
        lower = (int(v) // width) * width
        key = (lower, lower + width - 1)
        counts[key] = counts.get(key, 0) + 1
    return [[lo, hi, n] for (lo, hi), n in sorted(counts.items())]


def test_percentiles_within_one_percent_of_exact():
    rng = random.Random(3)
    values = sorted(rng.lognormvariate(math.log(20_000), 0.5) for _ in range(20_000))
    hist = loglinear(values)
    for p in (50, 90, 99, 99.9):
        exact = values[math.ceil(p / 100 * len(values) - 1e-9) - 1]
        got = stats.percentile(hist, p)
        assert exact - 1 <= got <= exact * 1.0079       # never below, at most 1/128 above
    got = stats.percentiles(hist)
    assert set(got) == {"p50", "p90", "p99", "p999", "p9999"}
    assert got["p50"] <= got["p90"] <= got["p99"] <= got["p999"] <= got["p9999"]


def test_percentile_edges():
    hist = [[100, 199, 1], [200, 299, 3]]
    assert stats.percentile(hist, 0) == 199        # rank 1 -> end of the first bucket
    assert stats.percentile(hist, 25) == 199
    assert stats.percentile(hist, 26) == 299
    assert stats.percentile(hist, 100) == 299
    # 99.9% of 1000 samples is rank 999, not 1000 (float 999.0000000000001)
    thousand = [[i, i, 1] for i in range(1000)]
    assert stats.percentile(thousand, 99.9) == 998
    assert stats.percentile([], 50) is None
    assert stats.percentile([[1, 2, 0]], 50) is None
    with pytest.raises(ValueError, match="percentile: 101"):
        stats.percentile(hist, 101)


def test_merge_adds_counts_of_identical_buckets():
    a = [[100, 109, 5], [110, 119, 1]]
    b = [[110, 119, 2], [200, 209, 4], [300, 309, 0]]
    assert stats.merge_histograms([a, b]) == [[100, 109, 5], [110, 119, 3], [200, 209, 4]]
    assert stats.total(stats.merge_histograms([a, b])) == 12


def test_merged_percentiles_equal_those_of_all_samples():
    rng = random.Random(5)
    x = [rng.uniform(5_000, 9_000) for _ in range(5000)]
    y = [rng.uniform(20_000, 40_000) for _ in range(5000)]
    merged = stats.merge_histograms([loglinear(x), loglinear(y)])
    assert merged == loglinear(x + y)
    assert stats.percentile(merged, 50) == pytest.approx(9_000, rel=0.01)


def test_engine_style_buckets_below_128_ns_are_exact():
    hist = loglinear([5, 5, 7, 127, 128, 129])
    assert hist[:3] == [[5, 5, 2], [7, 7, 1], [127, 127, 1]]
    assert stats.percentile(hist, 50) == 7


def test_merge_refuses_different_layouts():
    with pytest.raises(ValueError, match="different layouts"):
        stats.merge_histograms([[[100, 200, 1]], [[150, 250, 1]]])


@pytest.mark.parametrize("bad", [[[1, 2]], [[5, 1, 3]], [[1, 2, -1]]])
def test_bad_buckets_are_named(bad):
    with pytest.raises(ValueError, match="histogram bucket"):
        stats.merge_histograms([bad])


def test_cdf_and_mean():
    hist = [[100, 199, 1], [200, 299, 3]]
    assert stats.cdf(hist) == [(100.0, 0.0), (199.0, 0.25), (299.0, 1.0)]
    assert stats.cdf([]) == []
    assert stats.hist_mean(hist) == pytest.approx((149.5 * 1 + 249.5 * 3) / 4)
    assert stats.hist_mean([]) is None


def test_cdf_is_monotonic_and_ends_at_one():
    rng = random.Random(11)
    curve = stats.cdf(loglinear([rng.expovariate(1 / 10_000) + 1000 for _ in range(3000)]))
    xs, ys = zip(*curve)
    assert list(xs) == sorted(xs) and list(ys) == sorted(ys)
    assert ys[0] == 0 and ys[-1] == 1


def test_percentile_names_match_the_store():
    assert stats.percentile_name(50) == "p50"
    assert stats.percentile_name(99.9) == "p999"
    assert stats.percentile_name(99.99) == "p9999"
