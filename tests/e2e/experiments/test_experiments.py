"""Sweeps, resume, NDR search, studies, reports, export and compare, end to end:
real runc containers on veth links, short points at low rates.

One uninterrupted 2×2 sweep is run once per module; the resume, report, export
and compare tests read it instead of measuring it again.
"""
from __future__ import annotations

import csv
import io
import json
import shutil
import signal
import subprocess
import time
import xml.etree.ElementTree as ET
from pathlib import Path

import jsonschema
import pytest

import harness
import headless
import leak
from harness import REPO, cnfperf_argv, cnfperf_env

pytestmark = pytest.mark.e2e

SWEEP = ["--switch", "veth", "--size", "64,1500", "--rate", "5k,10k", "--duration", "1",
         "--warmup", "0.2"]
# Plan order: size outer, rate inner, each in the order given.
ORDER = [(64, 5000.0), (64, 10000.0), (1500, 5000.0), (1500, 10000.0)]


def cnfperf(results: Path, *args: str, timeout: float = 180) -> subprocess.CompletedProcess:
    """The real command line in a subprocess; another run holding the host fails the test."""
    done = subprocess.run(cnfperf_argv(*args), capture_output=True,
                          text=True, cwd=REPO, timeout=timeout, env=cnfperf_env(results),
                          stdin=subprocess.DEVNULL)
    harness.not_busy(done, args[0])
    return done


def stored(results: Path, run: str) -> dict:
    done = cnfperf(results, "results", "show", run, "--json")
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


@pytest.fixture(scope="module")
def sweep(tmp_path_factory, engine) -> tuple[Path, dict]:
    results = tmp_path_factory.mktemp("sweep") / "results"
    with leak.assert_no_leftovers():
        done = cnfperf(results, "run", *SWEEP, "--json")
    assert done.returncode == 0, done.stderr
    return results, json.loads(done.stdout)["run"]


def test_a_2x2_sweep_runs_every_point_in_plan_order(sweep, tmp_path):
    results, run = sweep
    assert run["status"] == "done" and run["planned"] == 4
    points = run["points"]
    assert [(p["size"], p["rate"]) for p in points] == ORDER
    assert [p["idx"] for p in points] == [0, 1, 2, 3]
    assert len({p["key"] for p in points}) == 4
    for p in points:
        assert p["status"] == "done" and p["lost"] == 0, p
        [pair] = p["per_pair"]
        harness.assert_sent(p, pair, p["rate"])     # 1 s at the rate
    for p, following in zip(points, points[1:]):
        assert p["finished"] <= following["started"], "each point is stored before the next"

    # --dry-run plans the same points in the same order and creates nothing.
    fresh = tmp_path / "results"
    with leak.assert_no_leftovers():
        dry = cnfperf(fresh, "run", *SWEEP, "--dry-run")
    assert dry.returncode == 0, dry.stderr
    lines = [l for l in dry.stdout.splitlines() if l.strip().startswith("[")]
    assert [(l.split("size=")[1].split()[0], l.split("rate=")[1].split()[0]) for l in lines] \
        == [("64", "5k"), ("64", "10k"), ("1500", "5k"), ("1500", "10k")]
    assert "cores send:" in lines[0] and "data planes: veth" in dry.stdout
    assert not fresh.exists()


def _wait_for(proc: subprocess.Popen, text: str, timeout: float = 120) -> str:
    seen = []
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        line = proc.stderr.readline()
        if not line:
            break
        seen.append(line)
        if text in line:
            return "".join(seen)
    proc.kill()
    proc.wait()
    pytest.fail(f"never saw {text!r}: {''.join(seen)}")


def test_resume_after_sigkill_skips_finished_points(sweep, tmp_path):
    _, uninterrupted = sweep
    results = tmp_path / "results"
    before = leak.snapshot()
    # another run holding the host: _wait_for fails with its one line, naming it
    proc = subprocess.Popen(cnfperf_argv("run", *SWEEP),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            cwd=REPO, env=cnfperf_env(results), stdin=subprocess.DEVNULL)
    _wait_for(proc, "[3/4]")            # two points are stored, the third is being set up
    proc.send_signal(signal.SIGKILL)
    proc.wait(10)
    proc.stdout.close()
    proc.stderr.close()

    killed = stored(results, "latest")
    assert killed["status"] == "running"
    assert [p["status"] for p in killed["points"]][:2] == ["done", "done"]
    kept = {p["key"]: p["started"] for p in killed["points"] if p["status"] == "done"}

    resumed = cnfperf(results, "run", "--resume", "latest", "--json")
    assert resumed.returncode == 0, resumed.stderr
    assert f"{len(kept)} of 4 points were already done" in resumed.stderr
    assert "removed what run" in resumed.stderr          # the killed run's containers, links
    assert not leak.diff(before, leak.snapshot()), "the resumed run left something behind"

    run = stored(results, killed["id"])
    assert run["id"] == killed["id"] and run["status"] == "done"
    assert len(run["points"]) == len(uninterrupted["points"]) == 4
    assert [p["status"] for p in run["points"]] == ["done"] * 4
    assert [p["key"] for p in run["points"]] == [p["key"] for p in uninterrupted["points"]]
    for p in run["points"]:
        if p["key"] in kept:
            assert p["started"] == kept[p["key"]], "a finished point was measured again"
    assert [(p["size"], p["rate"]) for p in run["points"]] == ORDER


def test_ndr_search_finds_the_rate_of_a_tbf_limited_veth(tmp_path, engine, no_leftovers):
    results = tmp_path / "results"
    limit = 20_000
    done = cnfperf(results, "run", "--switch", "veth", "--api", "udp", "--rate", "ndr",
                   "--search", "bisect", "--limit", "20k", "--search-max", "40k",
                   "--precision", "0.02", "--events", str(tmp_path / "events.jsonl"),
                   "--trial-duration", "0.5", "--warmup", "0.3", "--json")
    assert done.returncode == 0, done.stderr
    # its events, each as the schema says: a trial event per trial the point stored
    events = _events(tmp_path / "events.jsonl")
    [stored_point] = json.loads(done.stdout)["run"]["points"]
    trials_seen = [e for e in events if e["event"] == "trial"]
    assert [e["offered_pps"] for e in trials_seen] == \
        [t["offered_pps"] for t in stored_point["trials"]]
    assert all(e["trial"].startswith(f"trial {t['n']} ")
               for e, t in zip(trials_seen, stored_point["trials"])), trials_seen
    [end] = [e for e in events if e["event"] == "point_end"]
    assert end["rate_pps"] == stored_point["search_rate_pps"] and end["status"] == "done"
    [point] = json.loads(done.stdout)["run"]["points"]
    assert point["rate"] == "ndr" and point["search_loss_threshold"] == 0
    assert point["search_verified"] == 1
    assert abs(point["search_rate_pps"] - limit) <= 0.05 * limit, point["trials"]
    assert point["search_loss_ratio"] == 0

    *trials, low, p10, p50, p90 = point["trials"]   # then latency below the rate found
    assert trials[0]["offered_pps"] == 40_000 and trials[-1]["phase"] == "verify"
    assert [t["fraction"] for t in (low, p10, p50, p90)] == [0, 0.1, 0.5, 0.9]
    assert p90["offered_pps"] == pytest.approx(0.9 * point["search_rate_pps"])
    assert all(t["phase"] == "latency" and t["lat_p50_ns"] for t in (low, p10, p50, p90))
    assert [t["n"] for t in trials] == list(range(1, len(trials) + 1))
    over = [t for t in trials if t["tx_pps"] > 1.05 * limit]
    assert over and all(not t["passed"] and t["loss_ratio"] > 0 for t in over), trials
    for t in trials:   # loss against what was really sent, not against the request
        assert t["loss_ratio"] == pytest.approx(max(0, t["sent"] - t["received"]) / t["sent"])
        assert t["duration"] == 0.5 and t["valid"] in (0, 1)
        # what the trial asked of its one sender: its rate over its duration (truth.py)
        assert t["intended"] == round(t["offered_pps"] * t["duration"]), t
    point_dir = results / "runs" / json.loads(done.stdout)["run"]["id"] / "point0"
    assert sorted(p.name for p in point_dir.glob("trial*")) == \
        sorted(f"trial{t['n']}" for t in point["trials"])
    assert "ndr" in done.stderr and "verified" in done.stderr


def test_mlrsearch_finds_ndr_and_pdr_then_latency_below_them(tmp_path, engine, no_leftovers):
    """One MLRsearch for two goals on a veth shaped to 20 kpps, short trials;
    then latency trials at the lowest load and at half the PDR."""
    results = tmp_path / "results"
    limit = 20_000
    done = cnfperf(results, "run", "--switch", "veth", "--api", "udp", "--rate", "ndr+pdr",
                   "--limit", "20k", "--search-max", "40k", "--precision", "0.05",
                   "--trial-duration", "0.5", "--duration-sum", "1", "--warmup", "0.3",
                   "--latency-at", "min+50%", "--json", timeout=300)
    assert done.returncode == 0, done.stderr
    [point] = json.loads(done.stdout)["run"]["points"]
    assert point["rate"] == "ndr+pdr:0.5%" and point["search_loss_threshold"] == 0
    ndr, pdr = point["goals"]
    assert (ndr["loss_ratio"], pdr["loss_ratio"]) == (0, 0.005)
    for g in (ndr, pdr):
        assert 0.85 * limit < g["conditional_pps"] <= g["lower_pps"] < 1.1 * limit, point["goals"]
        assert g["upper_pps"] is None or g["upper_pps"] > g["lower_pps"]
    assert point["search_rate_pps"] == ndr["conditional_pps"]

    trials = point["trials"]
    searched = [t for t in trials if t["phase"] in ("search", "retry")]
    assert searched[0]["offered_pps"] == 40_000 and searched[0]["duration"] == 0.5
    for t in searched:
        assert t["intended"] == round(t["offered_pps"] * t["duration"]) and t["valid"] in (0, 1)
        assert bool(t["invalid_why"]) == (not t["valid"])
    over = [t for t in searched if t["tx_pps"] > 1.1 * limit and t["valid"]]
    assert all(t["loss_ratio"] > 0.005 for t in over), over
    latency = [t for t in trials if t["phase"] == "latency"]
    assert [t["fraction"] for t in latency] == [0, 0.5]
    assert latency[0]["offered_pps"] == pytest.approx(400)     # 1 % of the top
    assert latency[1]["offered_pps"] == pytest.approx(pdr["conditional_pps"] / 2)
    for t in latency:
        assert t["latency_kind"] == "one_way" and t["lat_p50_ns"] > 0
        assert sum(b[2] for b in t["latency_histogram"]) == t["latency_samples"]
    point_dir = results / "runs" / json.loads(done.stdout)["run"]["id"] / "point0"
    assert len(list(point_dir.glob("trial*"))) == len(trials)
    assert "ndr: " in done.stderr and "pdr:0.5%: " in done.stderr


@pytest.mark.needs("chromium-headless-shell")
def test_report_renders_in_headless_chromium(sweep, tmp_path):
    results, run = sweep
    done = cnfperf(results, "report", run["id"], "--out", str(tmp_path / "report"))
    assert done.returncode == 0, done.stderr
    html = Path(done.stdout.strip())
    assert html == tmp_path / "report" / "report.html"
    pngs = sorted(p.name for p in html.parent.glob("*.png"))
    assert pngs == ["rx_vs_offered.png", "throughput_vs_size.png"]   # one data plane: no ranking

    page = headless.render(html)
    assert page.errors == []
    assert page.title == f"cnfperf run {run['id']}"
    assert len(page.images) == len(pngs)
    for complete, width, height in page.images:
        assert complete and width > 300 and height > 200
    assert [s[0] for s in page.sections][0] == "at-a-glance"
    for section, present, height in page.sections:
        assert present and height > 0, section
    (tmp_path / "screenshot.png").write_bytes(page.screenshot)
    from PIL import Image
    with Image.open(io.BytesIO(page.screenshot)) as im:
        assert im.size[0] >= 1200 and im.size[1] > 1500
        assert len(im.convert("RGB").resize((64, 256)).getcolors(64 * 256) or []) > 50

    again = cnfperf(results, "report", "latest")   # `latest` and the default place
    assert again.returncode == 0, again.stderr
    assert again.stdout.strip() == str(results / "runs" / run["id"] / "report" / "report.html")


def test_csv_export_round_trip(sweep, tmp_path):
    results, run = sweep
    out = tmp_path / "run.csv"
    done = cnfperf(results, "results", "export", run["id"], "--csv", "--out", str(out))
    assert done.returncode == 0, done.stderr
    rows = list(csv.DictReader(out.open()))
    assert len(rows) == 2 * len(run["points"])          # one pair and the total per point
    by_point = {(r["idx"], r["pair"]): r for r in rows}
    for p in run["points"]:
        for pair, values in ((p["per_pair"][0]["pair"], p["per_pair"][0]), ("all", p)):
            row = by_point[(str(p["idx"]), str(pair))]
            assert row["run"] == run["id"] and row["key"] == p["key"]
            assert (int(row["size"]), float(row["rate"])) == (p["size"], p["rate"])
            for col in ("sent", "received", "lost"):
                assert int(row[col]) == values[col]
            for col in ("tx_pps", "rx_pps", "rx_bps", "loss_ratio", "lat_p50_ns", "lat_p99_ns"):
                assert float(row[col]) == values[col], col      # exact, not approximate
            assert row["steady_rx_pps"] == ("" if values["steady_rx_pps"] is None
                                            else repr(values["steady_rx_pps"]))
    stdout = cnfperf(results, "results", "export", "latest", "--csv")
    assert stdout.returncode == 0 and stdout.stdout == out.read_text()


def test_compare_two_runs_side_by_side(sweep, tmp_path):
    results, run = sweep
    other = cnfperf(results, "run", "--switch", "veth", "--size", "64", "--rate", "5k",
                    "--duration", "1", "--warmup", "0.2", "--json")
    assert other.returncode == 0, other.stderr
    b = json.loads(other.stdout)["run"]["id"]
    done = cnfperf(results, "compare", run["id"], b, "--json")
    assert done.returncode == 0, done.stderr
    table = json.loads(done.stdout)
    [row] = table["rows"]                                   # the one point both measured
    assert row[0] == "size=64 rate=5k"
    a_kpps, b_kpps, ratio = row[1:4]
    assert ratio == pytest.approx(b_kpps / a_kpps) and 0.9 < ratio < 1.1
    assert any("only in A" in n and "size=1500" in n for n in table["notes"])
    text = cnfperf(results, "compare", run["id"], b)
    assert text.returncode == 0 and "B/A" in text.stdout and "size=64 rate=5k" in text.stdout


def test_a_gate_that_misses_fails_the_run_and_one_that_holds_passes_it(sweep, tmp_path):
    """Expectations on a real point: absolute ones and one against the sweep's
    same point (--expect-run), one missed (exit 5, the table marks it, JUnit XML
    read by a parser); then the same point again, held against that gated run
    (the newest earlier run of its scenario: expectations aside), passes (exit 0)."""
    results = tmp_path / "results"
    results.mkdir()
    shutil.copy(sweep[0] / "cnfperf.db", results)      # the sweep's store, not shared
    point = ["--switch", "veth", "--size", "64", "--rate", "5k", "--duration", "1",
             "--warmup", "0.2"]
    junit = tmp_path / "gates.xml"
    with leak.assert_no_leftovers():
        done = cnfperf(results, "run", *point, "--expect", "rx_pps >= 4k",
                       "--expect", "loss_ratio <= 1%", "--expect", "rate >= run - 20%",
                       "--expect", "rx_pps >= 1G", "--expect-run", sweep[1]["id"],
                       "--junit", str(junit))
    assert done.returncode == 5, done.stderr
    head, _, row = done.stdout.splitlines()[1:4]
    assert head.split()[-1] == "expect" and row.endswith("missed rx_pps"), done.stdout
    assert f"expectations: 3 passed, 1 missed, 0 skipped; against run {sweep[1]['id']}" \
        in done.stdout
    [suite] = ET.parse(junit).getroot().findall("testsuite")
    assert (suite.get("tests"), suite.get("failures"), suite.get("skipped")) == ("4", "1", "0")
    props = {p.get("name"): p.get("value") for p in suite.iter("property")}
    assert props["expect_run"] == sweep[1]["id"]
    cases = {c.get("name"): c for c in suite.iter("testcase")}
    assert cases["rx_pps >= 1G"].find("failure").get("message").endswith("is not >= 1G")
    assert cases["rate >= run - 20%"].find("failure") is None
    gated = stored(results, "latest")["id"]

    done = cnfperf(results, "run", *point, "--expect", "rate >= run - 20%", "--json",
                   "--junit", str(junit))
    assert done.returncode == 0, done.stderr
    said = json.loads(done.stdout)["expectations"]
    assert (said["expect_run"], said["passed"], said["missed"]) == (gated, 1, 0)
    [verdict] = said["verdicts"]
    assert verdict["bound"] == pytest.approx(0.8 * verdict["value"], rel=0.1)
    [case] = ET.parse(junit).getroot().iter("testcase")
    assert case.find("failure") is None and case.find("skipped") is None


def test_a_series_of_runs_finds_the_regression_of_the_last(tmp_path, engine, no_leftovers):
    """Three real runs of one point, the third with its tester's ends held to a
    tenth of a core each: its received rate falls by far more than runs differ,
    and compare over the series says so (exit 4) and draws the trend."""
    results = tmp_path / "results"
    point = ["--switch", "veth", "--api", "udp", "--duration", "0.5", "--warmup", "0.2", "--json"]
    ids = []
    for slower in ([], [], ["--endpoint-quota", "10"]):
        done = cnfperf(results, "run", *point, *slower)
        assert done.returncode == 0, done.stderr
        ids.append(json.loads(done.stdout)["run"]["id"])
    done = cnfperf(results, "compare", *ids, "--metric", "rate", "--json")
    assert done.returncode == 4, done.stderr
    trend = json.loads(done.stdout)
    [row] = trend["rows"]
    assert row["runs"] == ids and row["verdict"] == "regression" and row["since"] == ids[2]
    assert row["last"] < 0.5 * row["previous"], row
    # what went with the change: the quota, in the changed run and in no other, first
    first = row["differences"][0]
    assert (first["what"], first["after"], first["score"]) == ("field endpoint_quota", "10.0", 1)
    side = cnfperf(results, "compare", ids[1], ids[2])
    assert side.returncode == 0, side.stderr
    assert "moved; it also differed in: field endpoint_quota: default → 10.0" in side.stdout
    assert Path(row["plot"]).read_bytes()[:4] == b"\x89PNG"
    assert Path(row["plot"]).parent == results / "runs" / ids[2] / "trend"
    # --last: the runs made from the second's scenario (the third's flags differ)
    done = cnfperf(results, "compare", "--last", "5", ids[1], "--metric", "rate", "--json")
    assert done.returncode in (0, 4), done.stderr     # two runs' noise may be a step
    assert json.loads(done.stdout)["runs"] == ids[:2]


def test_a_latency_study_stores_the_distribution_and_reports_it(tmp_path, engine,
                                                               no_leftovers):
    study = tmp_path / "rtt.toml"
    study.write_text(
        'switch = "veth"\napi = "udp"\nmode = "latency"\nsize = [64, 1500]\nrate = 1000\n'
        'duration = 5\nwarmup = 0.5\n'
        '[study]\ntitle = "RTT on a veth"\nplots = ["rtt_vs_size", "latency_cdf"]\n'
        '[quick]\nduration = 1\nwarmup = 0.2\n')
    results = tmp_path / "results"
    done = cnfperf(results, "study", str(study), "--quick")
    assert done.returncode == 0, done.stderr
    report = Path(done.stdout.strip().splitlines()[-1].removeprefix("report: "))
    assert report.name == "report.html" and report.exists()
    assert sorted(p.name for p in report.parent.glob("*.png")) == \
        ["latency_cdf.png", "rtt_vs_size.png"]
    assert "RTT on a veth" in report.read_text()

    run = stored(results, "latest")
    assert [p["size"] for p in run["points"]] == [64, 1500]
    for p in run["points"]:
        assert p["duration"] == 1 and p["latency_kind"] == "rtt"
        hist = p["latency_histogram"]
        assert sum(b[2] for b in hist) == p["received"] > 800    # every echo, in the histogram
        assert p["lat_p50_ns"] <= p["lat_p99_ns"] <= p["lat_max_ns"]


# The real engine, except that it fails to open its interface for 1500-byte frames,
# as an engine does on a data plane that cannot carry them. The netns runtime runs
# the host's binary as is.
PICKY_ENGINE = """#!/bin/sh
case " $* " in
*" --size 1500 "*) echo "cnfperf-engine: --iface: no such device" >&2; exit 1 ;;
esac
exec ENGINE "$@"
"""


def test_a_failed_point_does_not_stop_the_sweep_and_resume_retries_it(tmp_path, engine,
                                                                      no_leftovers):
    picky = tmp_path / "cnfperf-engine"
    picky.write_text(PICKY_ENGINE.replace("ENGINE", str(engine)))
    picky.chmod(0o755)
    results = tmp_path / "results"
    args = ["run", "--switch", "veth", "--runtime", "netns", "--size", "64,1500,128",
            "--rate", "5k", "--duration", "1", "--warmup", "0.2"]
    env = cnfperf_env(results, CNFPERF_ENGINE=str(picky))
    done = subprocess.run(cnfperf_argv(*args), capture_output=True,
                          text=True, cwd=REPO, timeout=180, env=env, stdin=subprocess.DEVNULL)
    assert done.returncode == 1, done.stderr
    assert "1 of 3 points failed; point 2 (size=1500)" in done.stderr
    assert "no such device" in done.stderr and "--resume" in done.stderr
    run = stored(results, "latest")
    assert [p["status"] for p in run["points"]] == ["done", "failed", "done"]

    resumed = cnfperf(results, "run", "--resume", run["id"])   # the real engine again
    assert resumed.returncode == 0, resumed.stderr
    assert "2 of 3 points were already done" in resumed.stderr
    again = stored(results, run["id"])
    assert [(p["size"], p["status"]) for p in again["points"]] == \
        [(64, "done"), (1500, "done"), (128, "done")]
    assert again["points"][1]["lost"] == 0


def _soak_rows(results: Path) -> list[tuple]:
    import sqlite3
    try:
        db = sqlite3.connect(results / "cnfperf.db", timeout=5)
        try:
            return db.execute("SELECT n, segment FROM soak ORDER BY n").fetchall()
        finally:
            db.close()
    except sqlite3.Error:   # not created yet
        return []


def test_a_soak_interrupted_keeps_its_series_and_resume_goes_on(tmp_path, engine,
                                                               no_leftovers):
    """A 6 s soak at 5 kpps, interrupted (SIGINT) once two seconds are stored,
    then resumed: one series of about 6 s in two segments, nothing left behind."""
    results = tmp_path / "results"
    port = harness.free_port()
    args = ["run", "--switch", "veth", "--api", "udp", "--rate", "5k", "--soak", "6",
            "--warmup", "0.3", "--events", str(tmp_path / "events.jsonl"),
            "--metrics-port", f"127.0.0.1:{port}"]
    proc = subprocess.Popen(cnfperf_argv(*args), stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True, cwd=REPO,
                            env=cnfperf_env(results), stdin=subprocess.DEVNULL)
    stop = time.monotonic() + 120
    scraped: dict[str, float] = {}
    while len(_soak_rows(results)) < 2 and time.monotonic() < stop and proc.poll() is None:
        scraped = harness.scrape(port) or scraped   # Prometheus' view of the running point
        time.sleep(0.2)
    proc.poll()
    harness.not_busy(proc, "run")
    assert len(_soak_rows(results)) >= 2, "the soak stored no intervals"
    proc.send_signal(signal.SIGINT)
    err = proc.communicate(timeout=60)[1]
    assert proc.returncode == 128 + signal.SIGINT, err
    interrupted = stored(results, "latest")
    [point] = interrupted["points"]
    assert point["status"] == "interrupted"
    before = point["soak"]
    assert len(before) >= 2 and {r["segment"] for r in before} == {0}
    # the live rate, as a scrape during the run found it, and each node's CPU
    rx = scraped.get(f'cnfperf_rx_packets_per_second{{pair="0",point="0",'
                     f'run="{interrupted["id"]}",switch="veth"}}')
    assert rx is not None and 4000 < rx < 6000, scraped
    assert any(k.startswith("cnfperf_node_cpu_cores{") and v > 0 for k, v in scraped.items())
    # every stored second was an event as it came, and the run's end says it stopped
    events = _events(tmp_path / "events.jsonl")
    seconds = [(e["n"], e["at_s"]) for e in events if e["event"] == "second"]
    assert seconds == [(r["n"], r["at_s"]) for r in before]
    assert [e["status"] for e in events if e["event"] in ("point_end", "run_end")] == \
        ["interrupted", "interrupted"]

    resumed = cnfperf(results, "run", "--resume", "latest", "--json")
    assert resumed.returncode == 0, resumed.stderr
    assert "resuming the soak at 5k pps per pair" in resumed.stderr
    [point] = json.loads(resumed.stdout)["run"]["points"]
    assert point["status"] == "done"
    series = point["soak"]
    assert series[:len(before)] == before                  # kept as it was
    assert [r["n"] for r in series] == list(range(len(series)))
    assert {r["segment"] for r in series} == {0, 1}
    # each segment leaves out the second its warm-up ends in
    assert 4.5 <= sum(r["interval_s"] for r in series) <= 6.5
    assert all(a["at_s"] < b["at_s"] for a, b in zip(series, series[1:]))
    for r in series:
        assert r["offered_pps"] == 5000 and r["rx_packets"] > 0 and r["lat_p99_ns"] > 0
        assert r["loss_ratio"] == 0, series


def test_the_advisor_ranks_what_real_runs_measured_and_its_plan_runs(tmp_path, engine,
                                                                   no_leftovers):
    """An l2 NF in a chain through a kernel bridge and through testpmd (DPDK), each
    an NDR search: the advisor ranks the two by the rates they found, names the
    points, writes its page; asked to consider macvlan too, it writes a plan for
    it, which runs as is (shortened by flags) and gives macvlan a verdict."""
    results = tmp_path / "results"
    short = ["--nfs", "1", "--rate", "ndr", "--search", "bisect", "--trial-duration", "0.3",
             "--precision", "0.1", "--warmup", "0.2", "--latency-at", "50%"]
    found = {}
    for plane in (["--switch", "bridge", "--search-max", "200k"],
                  ["--switch", "testpmd", "--api", "dpdk", "--search-max", "400k"]):
        done = cnfperf(results, "run", *plane, *short, "--json")
        assert done.returncode == 0, done.stderr
        run = json.loads(done.stdout)["run"]
        [p] = run["points"]
        found[p["switch"]] = (p["search_rate_pps"], f"{run['id']}:0")
    need = ["advise", "--rate", "2k", "--nfs", "1", "--p99", "100ms"]
    done = cnfperf(results, *need, "--json", "--html", str(tmp_path / "advice.html"))
    assert done.returncode == 0, done.stderr
    options = json.loads(done.stdout)["options"]
    ranked = [(o["config"]["switch"], o["sizes"][0]["capacity_pps"], o["sizes"][0]["capacity_at"])
              for o in options]
    # the measured numbers, ranked by them: the rate each search found, and its point
    assert sorted(ranked) == sorted((k, *v) for k, v in found.items())
    assert [r[1] for r in ranked] == sorted((r[1] for r in ranked), reverse=True), options
    assert all(o["verdict"] == "meets" and o["hosts"][0]["another_kind"] is False
               for o in options), options
    page = (tmp_path / "advice.html").read_text()
    assert all(at in page for _, at in found.values()) and "Options, best first" in page

    plan = tmp_path / "plan.toml"
    done = cnfperf(results, *need, "--switch", "bridge,testpmd,macvlan", "--plan", str(plan))
    assert done.returncode == 0 and "1 data plane to measure" in done.stdout, done.stdout
    assert {line for line in plan.read_text().splitlines() if line.startswith("switch")} == \
        {'switch = "macvlan"'}
    done = cnfperf(results, "run", str(plan), "--duration", "1", "--warmup", "0.2",
                   "--search", "bisect", "--trial-duration", "0.3", "--precision", "0.1",
                   "--search-max", "200k", "--latency-at", "50%", "--json")
    assert done.returncode in (0, 5), done.stderr     # 5: it missed the need, and said so
    run = json.loads(done.stdout)["run"]
    assert [(p["switch"], p["status"]) for p in run["points"]] == [("macvlan", "done")] * 2
    done = cnfperf(results, *need, "--switch", "macvlan", "--json")
    [macvlan] = json.loads(done.stdout)["options"]
    assert macvlan["verdict"] in ("meets", "misses") and macvlan["runs"] == \
        {run["id"]: str(results)}, macvlan


def _events(path: Path) -> list[dict]:
    """A run's --events file, every line held to docs/events.schema.json."""
    schema = json.loads((REPO / "docs" / "events.schema.json").read_text())
    events = [json.loads(line) for line in path.read_text().splitlines()]
    for e in events:
        jsonschema.validate(e, schema)
    assert events[0]["event"] == "run_start" and events[-1]["event"] == "run_end"
    return events


# A path with a rate it keeps to: a veth shaped by tbf (the udp ends), and a memif
# pipeline through an engine NF that polices (DPDK, the single tester), its bucket
# eight bursts deep: a sender that lost its core catches up that many back to back.
KEPT_PATHS = {
    "veth-tbf": ["--switch", "veth", "--api", "udp", "--limit", "20k"],
    "memif-policer": ["--switch", "memif", "--api", "dpdk", "--nfs", "1", "--nf", "l2",
                      "--tester", "single", "--policer", "engine", "--policer-rate", "20k",
                      "--policer-bucket", "256"],
}


@pytest.mark.parametrize("path", list(KEPT_PATHS))
def test_kept_engines_find_the_rate_fresh_ones_find(tmp_path, engine, no_leftovers, path):
    """engine_keep: the same NDR search with the engines kept across its trials
    (each later trial a line on their stdin) and with fresh ones
    for every trial finds the path's 20 kpps alike; only the first trial of
    the kept search starts engines."""
    if path.startswith("memif"):
        harness.require("dpdk-testpmd")   # DPDK (and hugepages)
    found = {}
    for keep in ("yes", "no"):
        results = tmp_path / keep
        done = cnfperf(results, "run", *KEPT_PATHS[path], "--rate", "ndr", "--search", "bisect",
                       "--search-max", "40k", "--precision", "0.05", "--trial-duration", "0.3",
                       "--warmup", "0.2", "--latency-at", "none", "--engine-keep", keep,
                       "--json", timeout=300)
        assert done.returncode == 0, done.stderr
        run = json.loads(done.stdout)["run"]
        [point] = run["points"]
        assert point["search_verified"] == 1 and point["search_loss_ratio"] == 0, point["trials"]
        found[keep] = point["search_rate_pps"]
        point_dir = results / "runs" / run["id"] / "point0"
        trials = sorted(point_dir.glob("trial*"), key=lambda d: int(d.name[5:]))
        assert len(trials) == len(point["trials"]) > 3
        started = [bool(list(d.glob("*.argv.json"))) for d in trials]
        told = [bool(list(d.glob("*.keep"))) for d in trials]
        if keep == "yes":
            assert started == [True] + [False] * (len(trials) - 1), started
            assert told == [False] + [True] * (len(trials) - 1), told
        else:
            assert all(started) and not any(told)
    for keep, pps in found.items():
        assert abs(pps - 20_000) <= 0.06 * 20_000, found
    assert abs(found["yes"] - found["no"]) <= 0.06 * 20_000, found
