"""A real point's latency as HdrHistogram's blob and log, end to end: the blob in
`run --json` and in the store holds what `latency_histogram` holds, and `results
export --hdrh` writes an .hlog that HdrHistogram's own reader reads back."""
from __future__ import annotations

import json
import sqlite3
import subprocess
from pathlib import Path

import pytest
from hdrh.histogram import HdrHistogram
from hdrh.log import HistogramLogReader

import harness
from harness import REPO, cnfperf_argv, cnfperf_env

pytestmark = pytest.mark.e2e

def cnfperf(results: Path, *args: str) -> subprocess.CompletedProcess:
    done = subprocess.run(cnfperf_argv(*args), capture_output=True, text=True, cwd=REPO,
                          timeout=180, env=cnfperf_env(results), stdin=subprocess.DEVNULL)
    harness.not_busy(done, args[0])
    return done


def hdrh_percentile(buckets: list[list[int]], p: float, lo_ns: float, hi_ns: float) -> float:
    """The engine's reading (a bucket's upper bound, clamped to min and max) at the
    rank hdrh 0.10.8 takes: p/100 × count rounded to the nearest sample."""
    rank = max(1, int(p * sum(n for *_, n in buckets) / 100 + 0.5))
    seen = 0
    for _, upper, n in buckets:
        seen += n
        if seen >= rank:
            return max(lo_ns, min(upper, hi_ns))
    return hi_ns


def assert_blob_holds_histogram(row: dict) -> HdrHistogram:
    h = HdrHistogram.decode(row["latency_hdrh"])
    buckets = row["latency_histogram"]
    assert h.get_total_count() == sum(n for *_, n in buckets) > 0
    for p in (50, 90, 99, 99.9):
        want = hdrh_percentile(buckets, p, row["lat_min_ns"], row["lat_max_ns"])
        assert want <= h.get_value_at_percentile(p) <= want * (1 + 2 ** -10), p
    return h


def test_a_points_latency_is_an_hdrhistogram_blob_and_log(tmp_path, engine, no_leftovers):
    results = tmp_path / "results"
    done = cnfperf(results, "run", "--switch", "veth", "--api", "udp", "--mode", "latency",
                   "--pairs", "2", "--duration", "1", "--warmup", "0.2", "--json")
    assert done.returncode == 0, done.stderr
    [point] = json.loads(done.stdout)["run"]["points"]
    rows = [point, *point["per_pair"]]
    assert [r.get("pair") for r in point["per_pair"]] == [0, 1]
    counts = [assert_blob_holds_histogram(r).get_total_count() for r in rows]
    assert counts[0] == counts[1] + counts[2]
    keys = list(point)
    assert keys[keys.index("latency_histogram") + 1] == "latency_hdrh"

    db = sqlite3.connect(results / "cnfperf.db")
    stored = [db.execute("SELECT latency_hdrh FROM points").fetchone()[0],
              *(r[0] for r in db.execute("SELECT latency_hdrh FROM pairs ORDER BY pair"))]
    measured = db.execute("SELECT pair, latency_hdrh FROM metrics "   # the ends that measured
                          "WHERE latency_hdrh IS NOT NULL ORDER BY pair").fetchall()
    db.close()
    assert stored == [r["latency_hdrh"] for r in rows]
    assert [(pair, HdrHistogram.decode(blob).get_total_count()) for pair, blob in measured] == \
        [(0, counts[1]), (1, counts[2])]

    out = tmp_path / "logs"
    export = cnfperf(results, "results", "export", "latest", "--hdrh", "--out", str(out))
    assert export.returncode == 0, export.stderr
    assert export.stdout == f"{out / 'point0.hlog'}\n"
    reader = HistogramLogReader(str(out / "point0.hlog"), HdrHistogram(1, 1 << 40, 3))
    read = []
    while (h := reader.get_next_interval_histogram()) is not None:
        read.append(h)
    reader.close()
    assert [h.get_tag() for h in read] == ["pair0", "pair1", "all"]
    assert [h.get_total_count() for h in read] == [*counts[1:], counts[0]]
    assert reader.get_start_time_sec() == pytest.approx(point["started"], abs=1e-3)
    for h, row in zip(read, [*rows[1:], rows[0]]):
        assert h.equals(HdrHistogram.decode(row["latency_hdrh"]))
        assert 0.9 < (h.get_end_time_stamp() - h.get_start_time_stamp()) / 1000 < 1.5

    refused = cnfperf(results, "results", "export", "latest", "--hdrh", "--csv")
    assert refused.returncode == 2 and refused.stderr.count("\n") == 1
