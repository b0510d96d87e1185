"""The engine's latency histograms as HdrHistogram V2 blobs and .hlog files, read
back with HdrHistogram's own Python package (hdrh): percentiles, counts, tags.

How close HdrHistogram's percentiles come to the engine's: the blob's buckets
never straddle an engine bucket's edge and each count sits at its engine
bucket's upper bound, where the engine reads a percentile, so at the same rank
both give the same upper bound, except in the bucket of the exact max, which the
engine clamps to and the blob rounds up by at most its own resolution (3
significant digits: 1/1024 of the value). So E <= H <= E * (1 + 2**-10), far
inside the engine's 1/128. The rank is the one thing that may differ: the
engine (and Java's HdrHistogram) takes the ceiling of p/100 * count, hdrh
0.10.8's get_value_at_percentile rounds it to the nearest sample, one sample
lower when the fraction is below one half; on a sparse tail that is another
bucket (in the rtt run below, p99 is rank 990 for the engine, 989 for hdrh:
2.34 ms against 2.24 ms). E is therefore the engine's rule at hdrh's rank; where
the ranks agree it is the engine's own printed percentile, and the engine's
rank read from the blob gives the engine's printed value every time.
"""
from __future__ import annotations

import io
import json
import math
import random
from pathlib import Path

import pytest
from hdrh.histogram import HdrHistogram
from hdrh.log import HistogramLogReader

from cnfperf.cli import main
from cnfperf.results import hdrh, model
from cnfperf.results.store import Store
from harness import older_store

# The engine's summaries of two real runs on a veth (`cnfperf run --switch veth
# --api udp --duration 1`): `--mode latency` (rtt, 999 echoes, a sparse tail) and
# `--mode throughput --rate 20k` (one way, 19,520 frames).
ENGINE = json.loads((Path(__file__).parent / "data" / "engine_latency.json").read_text())
PRINTED = {"p50": 50.0, "p90": 90.0, "p99": 99.0, "p999": 99.9, "p9999": 99.99}
MANY = (*PRINTED.values(), *range(1, 100), 99.5, 99.95, 100.0)
RESOLUTION = 2 ** -10      # the blob's: 3 significant digits, 2048 sub-buckets


# -- the engine's rules, as engine/src/core/hist.c has them -------------------

def engine_buckets(values: list[int]) -> list[list[int]]:
    """hist_index and hist_bounds: a bucket per ns below 128, then 128 per power
    of two up to 2^40 (larger values in the last bucket)."""
    counts: dict[tuple[int, int], int] = {}
    for v in values:
        v = min(v, (1 << 40) - 1)
        width = 1 << max(0, v.bit_length() - 8)
        lower = v // width * width
        key = (lower, lower + width - 1)
        counts[key] = counts.get(key, 0) + 1
    return [[lo, hi, n] for (lo, hi), n in sorted(counts.items())]


def engine_rank(count: int, p: float) -> int:
    return min(count, max(1, math.ceil(p / 100 * count - 1e-9)))


def hdrh_rank(count: int, p: float) -> int:
    """hdrh 0.10.8's get_target_count_at_percentile: rounded, not the ceiling."""
    return max(1, int(min(p, 100.0) * count / 100 + 0.5))


def engine_at_rank(buckets: list[list[int]], rank: int, lo_ns: int, hi_ns: int) -> int:
    """hist_percentile at a rank: the upper bound of the bucket holding it,
    clamped to the exact min and max."""
    seen = 0
    for _, upper, n in buckets:
        seen += n
        if seen >= rank:
            return max(lo_ns, min(upper, hi_ns))
    return hi_ns


def ceiling_rank_value(h: HdrHistogram, p: float) -> int:
    """Java HdrHistogram's getValueAtPercentile (ceiling rank) on a decoded blob."""
    rank = engine_rank(h.get_total_count(), p)
    seen = 0
    for index in range(h.counts_len):
        seen += h.get_count_at_index(index)
        if seen >= rank:
            return h.get_highest_equivalent_value(h.get_value_from_index(index))
    raise AssertionError("rank beyond the histogram")


def assert_faithful(buckets: list[list[int]], count: int, lo_ns: int, hi_ns: int,
                    printed: dict[str, int] | None = None) -> HdrHistogram:
    text = hdrh.blob(buckets, hi_ns)
    assert text.startswith("HISTFAAA")
    h = HdrHistogram.decode(text)
    assert h.get_total_count() == count
    assert (h.lowest_trackable_value, h.highest_trackable_value, h.significant_figures) == \
        (1, 1 << 40, 3)
    for p in MANY:
        got = h.get_value_at_percentile(p)
        want = engine_at_rank(buckets, hdrh_rank(count, p), lo_ns, hi_ns)
        assert want <= got <= want * (1 + RESOLUTION), p
        exact = engine_at_rank(buckets, engine_rank(count, p), lo_ns, hi_ns)
        assert exact <= ceiling_rank_value(h, p) <= exact * (1 + RESOLUTION), p
    for key, p in PRINTED.items() if printed else ():
        assert engine_at_rank(buckets, engine_rank(count, p), lo_ns, hi_ns) == printed[key]
        got = h.get_value_at_percentile(p)
        if hdrh_rank(count, p) == engine_rank(count, p):
            assert printed[key] <= got <= printed[key] * (1 + RESOLUTION), key
        assert printed[key] <= ceiling_rank_value(h, p) <= printed[key] * (1 + RESOLUTION), key
    top = min(hi_ns, (1 << 40) - 1)       # a larger max is in the engine's last bucket
    assert top <= h.get_max_value() <= top * (1 + RESOLUTION)
    return h


def back_to_engine_buckets(h: HdrHistogram) -> list[list[int]]:
    """The blob's counts, each in the engine bucket its value falls in."""
    merged: dict[tuple[int, int], int] = {}
    for index in range(h.counts_len):
        if n := h.get_count_at_index(index):
            [[lo, hi, _]] = engine_buckets([h.get_value_from_index(index)])
            merged[(lo, hi)] = merged.get((lo, hi), 0) + n
    return [[lo, hi, n] for (lo, hi), n in sorted(merged.items())]


# -- blobs ---------------------------------------------------------------------

def test_a_synthetic_histogram_in_the_engines_layout_reads_the_engines_percentiles():
    rng = random.Random(7)
    values = [int(rng.lognormvariate(math.log(20_000), 0.6)) for _ in range(10_000)]
    values += [rng.randrange(0, 128) for _ in range(6)]          # a bucket per ns
    values += [int(rng.uniform(1e6, 4e7)) for _ in range(40)]    # a sparse tail
    values += [1 << 41]                                           # beyond the top
    buckets = engine_buckets(values)
    assert sum(n for *_, n in buckets) == 10_047
    assert any(hdrh_rank(10_047, p) != engine_rank(10_047, p) for p in MANY)
    h = assert_faithful(buckets, len(values), min(values), max(values))
    assert back_to_engine_buckets(h) == buckets      # every count in its own bucket


@pytest.mark.parametrize("kind", ["rtt", "one_way"])
def test_a_real_engine_histogram_reads_the_engines_printed_percentiles(kind):
    lat = ENGINE[kind]
    buckets = lat["histogram"]
    printed = {key: lat[f"{key}_ns"] for key in PRINTED}
    h = assert_faithful(buckets, lat["count"], lat["min_ns"], lat["max_ns"], printed)
    assert back_to_engine_buckets(h) == buckets


def test_the_sparse_tail_where_hdrh_rounds_the_rank_down():
    lat = ENGINE["rtt"]
    h = HdrHistogram.decode(hdrh.blob(lat["histogram"], lat["max_ns"]))
    assert (engine_rank(999, 99), hdrh_rank(999, 99)) == (990, 989)
    assert lat["p99_ns"] == 2342911 == ceiling_rank_value(h, 99)
    assert h.get_value_at_percentile(99) == 2244607    # the sample below, its own bucket's


@pytest.mark.parametrize("digits", [2, 3])
def test_a_blob_added_into_another_histogram_keeps_the_engines_percentiles(digits):
    """HdrHistogram adds a histogram of another range or precision by recording
    each of its buckets at its lowest value: that is still in the engine's bucket."""
    lat = ENGINE["one_way"]
    other = HdrHistogram(1, 3_600_000_000_000, digits)
    other.decode_and_add(hdrh.blob(lat["histogram"], lat["max_ns"]))
    assert other.get_total_count() == lat["count"]
    for key, p in PRINTED.items():
        if hdrh_rank(lat["count"], p) == engine_rank(lat["count"], p):
            want = lat[f"{key}_ns"]
            resolution = {2: 2 ** -7, 3: 2 ** -10}[digits]   # 128 or 1024 sub-buckets
            assert want <= other.get_value_at_percentile(p) <= want * (1 + resolution), key


def test_no_buckets_no_blob_and_a_value_beyond_the_range_is_refused():
    assert hdrh.blob([]) is None and hdrh.blob(None) is None
    with pytest.raises(ValueError, match="outside HdrHistogram's"):
        hdrh.blob([[1 << 41, 1 << 41, 1]])


# -- the store -----------------------------------------------------------------

def _point_result() -> model.PointResult:
    """Two pairs, their receivers' one-way latency in the engine's layout."""
    rng = random.Random(11)
    endpoints, pairs = [], []
    for pair in range(2):
        values = [int(rng.lognormvariate(math.log(30_000 * (pair + 1)), 0.4)) for _ in range(3000)]
        buckets = engine_buckets(values)
        count = len(values)
        lat = {"kind": "one_way", "count": count, "min_ns": min(values),
               "mean_ns": sum(values) / count, "max_ns": max(values), "histogram": buckets,
               **{f"{k}_ns": engine_at_rank(buckets, engine_rank(count, p), min(values),
                                            max(values)) for k, p in PRINTED.items()}}
        base = {"duration_s": 1.5, "rx_packets": count, "tx_packets": count}
        sender = model.endpoint_metrics(pair, f"cnfp1a2bp{pair}s", "send", 1,
                                        {**base, "rx_packets": 0})
        receiver = model.endpoint_metrics(pair, f"cnfp1a2bp{pair}r", "recv", 0,
                                          {**base, "tx_packets": 0, "latency": lat})
        endpoints += [sender, receiver]
        pairs.append(model.pair_result(pair, sender, receiver, "throughput"))
    return model.PointResult(pairs=pairs, total=model.total(pairs), endpoints=endpoints,
                             counters={})


def _store(directory: Path, result: model.PointResult | None) -> None:
    store = Store(directory)
    store.begin_run("1a2b", ["cnfperf", "run"], 1, directory / "runs" / "1a2b", {}, "0.1.0")
    store.add_point("1a2b", 0, {"switch": "veth", "mode": "throughput", "pairs": 2},
                    status="done" if result else "failed", started=1795000000.25, result=result,
                    key="k0")
    store.finish_run("1a2b", "done")
    store.close()


def test_every_stored_histogram_has_its_blob_beside_it(tmp_path):
    result = _point_result()
    _store(tmp_path, result)
    store = Store(tmp_path)
    [point] = store.run("1a2b")["points"]
    store.close()
    rows = [point, *point["per_pair"], *(e for e in point["endpoints"] if e["role"] == "recv")]
    for row in rows:
        keys = list(row)
        assert keys[keys.index("latency_histogram") + 1] == "latency_hdrh"
        h = HdrHistogram.decode(row["latency_hdrh"])
        assert h.get_total_count() == sum(n for *_, n in row["latency_histogram"])
        assert row["lat_max_ns"] <= h.get_max_value() <= row["lat_max_ns"] * (1 + RESOLUTION)
        assert h.get_value_at_percentile(50) == \
            engine_at_rank(row["latency_histogram"], hdrh_rank(h.get_total_count(), 50),
                           row["lat_min_ns"], row["lat_max_ns"])
    assert [e["latency_hdrh"] for e in point["endpoints"] if e["role"] == "send"] == [None, None]
    assert point["latency_hdrh"] == hdrh.blob(result.total.latency.histogram,
                                              result.total.latency.ns["max"])


def test_points_stored_before_get_their_blobs_when_migrated(tmp_path):
    buckets = [[22912, 23039, 3], [75264, 75775, 5]]
    hist = json.dumps(buckets)
    db = older_store(tmp_path, 15)
    db.execute("INSERT INTO points (id, run_id, idx, status, latency_histogram, lat_max_ns) "
               "VALUES (1, 'beef', 0, 'done', ?, 75500)", (hist,))
    db.execute("INSERT INTO points (id, run_id, idx, status) VALUES (2, 'beef', 1, 'failed')")
    db.execute("INSERT INTO pairs (point_id, pair, latency_histogram, lat_max_ns) "
               "VALUES (1, 0, ?, 75500)", (hist,))
    db.execute("INSERT INTO metrics (point_id, pair, endpoint, role, latency_histogram) "
               "VALUES (1, 0, 'cnfpbeefp0r', 'recv', ?)", (hist,))
    db.execute("INSERT INTO metrics (point_id, pair, endpoint, role, latency_histogram) "
               "VALUES (1, 0, 'cnfpbeefp0s', 'send', '[[1, 2]]')")
    db.commit()
    db.close()
    store = Store(tmp_path)
    run = store.run("beef")
    store.close()
    done, failed = run["points"]
    assert done["latency_hdrh"] == done["per_pair"][0]["latency_hdrh"] == hdrh.blob(buckets, 75500)
    assert HdrHistogram.decode(done["latency_hdrh"]).get_value_at_percentile(100) < 75500 * 1.001
    recv, send = sorted(done["endpoints"], key=lambda e: e["endpoint"])
    assert recv["latency_hdrh"] == hdrh.blob(buckets)     # no max stored: upper bounds
    assert send["latency_hdrh"] is None and failed["latency_hdrh"] is None


# -- .hlog files -----------------------------------------------------------------

def read_log(path: Path) -> tuple[list[HdrHistogram], HistogramLogReader]:
    reader = HistogramLogReader(str(path), HdrHistogram(1, 1 << 40, 3))
    out = []
    while (h := reader.get_next_interval_histogram()) is not None:
        out.append(h)
    reader.close()
    return out, reader


def test_export_hdrh_writes_a_log_per_point_that_hdrhs_reader_reads(tmp_path, capsys):
    result = _point_result()
    _store(tmp_path, result)
    out = tmp_path / "logs"
    assert main(["results", "export", "1a2b", "--hdrh", "--results", str(tmp_path),
                 "--out", str(out)]) == 0
    path = out / "point0.hlog"
    assert capsys.readouterr().out == f"{path}\n"
    [comment, version, start, base, legend, *lines] = path.read_text().splitlines()
    assert comment.startswith("#[Logged with cnfperf ") and "run 1a2b point 0" in comment
    assert version == "#[Histogram log format version 1.3]"
    assert start.startswith("#[StartTime: 1795000000.250 (seconds since epoch), ")
    assert base.startswith("#[BaseTime: 1795000000.250")
    assert legend.startswith('"StartTimestamp"')
    assert [line.split(",", 1)[0] for line in lines] == ["Tag=pair0", "Tag=pair1", "Tag=all"]

    histograms, reader = read_log(path)
    assert reader.get_start_time_sec() == 1795000000.25
    assert [h.get_tag() for h in histograms] == ["pair0", "pair1", "all"]
    expected = [p.latency for p in result.pairs] + [result.total.latency]
    for h, lat in zip(histograms, expected):
        assert h.get_total_count() == lat.samples
        assert h.get_start_time_stamp() == 1795000000250.0            # the point's start, ms
        assert h.get_end_time_stamp() - h.get_start_time_stamp() == 1500.0   # its window
        assert h.equals(HdrHistogram.decode(hdrh.blob(lat.histogram, lat.ns["max"])))
    assert sum(h.get_total_count() for h in histograms[:2]) == histograms[2].get_total_count()
    interval_max = float(lines[2].split(",")[3])
    assert interval_max == round(histograms[2].get_max_value() / 1e6, 3) > 0   # ms, not truncated

    # by default into the run's directory
    assert main(["results", "export", "latest", "--hdrh", "--results", str(tmp_path)]) == 0
    assert (tmp_path / "runs" / "1a2b" / "hdrh" / "point0.hlog").read_text() == path.read_text()


@pytest.mark.parametrize("args, field", [
    (["dead", "--hdrh"], "RUN"),
    (["1a2b", "--hdrh", "--csv"], "--hdrh"),
    (["1a2b"], "--csv"),
    (["1a2b", "--hdrh", "--cpu"], "--cpu"),
])
def test_export_hdrh_mistakes_are_one_line_and_exit_2(tmp_path, capsys, args, field):
    _store(tmp_path, _point_result())
    out = tmp_path / "logs"
    assert main(["results", "export", *args, "--results", str(tmp_path), "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"cnfperf: error: {field}: ") and err.count("\n") == 1
    assert not out.exists()


def test_a_run_without_latency_has_nothing_to_export(tmp_path, capsys):
    _store(tmp_path, None)     # a failed point: no histogram
    assert main(["results", "export", "1a2b", "--hdrh", "--results", str(tmp_path)]) == 2
    assert capsys.readouterr().err == \
        "cnfperf: error: RUN: run 1a2b has no latency histogram to export\n"
    assert not (tmp_path / "runs").exists()


def test_a_log_refuses_a_tag_its_readers_would_split():
    with pytest.raises(ValueError, match="tag"):
        hdrh.write_log(io.StringIO(), 0.0, [hdrh.Interval("pair 0", 0, 1, "HISTFAAA")])
