"""Stalls (engine/README.md, `stalls`): read from an engine's summary per poller,
stored per engine and per point, shown next to loss, a point past the mark
warned; and the orchestrator kept off its pollers' cores where it can be."""
from __future__ import annotations

import os

import pytest

from cnfperf.report import stalls, summary, tables
from cnfperf.results import model
from cnfperf.results.store import Store
from cnfperf.run import cpu
from harness import migrated_run, scenarios


def _summary(role: str, tx: int, rx: int, stall_ns: int | None, pollers: int = 1) -> dict:
    s = {"type": "summary", "role": role, "duration_s": 2.0, "tx_packets": tx, "rx_packets": rx,
         "tx_pps": tx / 2, "rx_pps": rx / 2, "offered_pps": 0.0}
    if stall_ns is not None:
        s["stalls"] = {"threshold_ns": 200000, "count": 3, "total_ns": stall_ns,
                       "max_ns": stall_ns // 2, "pollers": pollers}
    return s


def test_an_engine_summary_gives_its_stalls_and_their_share_of_the_window():
    m = model.endpoint_metrics(0, "p0s", "tester", 0, _summary("tester", 100, 100, 30_000_000))
    assert (m.stall_count, m.stall_total_ns, m.stall_max_ns, m.stall_threshold_ns) == \
        (3, 30_000_000, 15_000_000, 200000)
    assert m.stall_share == pytest.approx(0.015)          # 30 ms of a 2 s window
    # a two-thread client's sum is two loops' time: its share is the sum's, at
    # least what its worse loop lost (never halved, which could hide a stalled
    # sender beside an idle receive thread under the mark)
    two = model.endpoint_metrics(0, "c", "client", 0, _summary("client", 1, 1, 30_000_000, 2))
    assert two.stall_share == pytest.approx(0.015)
    # an engine that does not say (a command NF, an older engine): unknown, not 0
    none = model.endpoint_metrics(0, "r", "recv", 0, _summary("recv", 0, 100, None))
    assert none.stall_count is None and none.stall_share is None


def _result(tester_ns: int, nf_ns: int | None) -> model.PointResult:
    tester = model.endpoint_metrics(0, "p0s", "tester", 0, _summary("tester", 1000, 990, tester_ns))
    nf = model.endpoint_metrics(0, "n000", "nf", 1, _summary("nf", 990, 990, nf_ns))
    pair = model.pair_result(0, tester, tester, "throughput")
    return model.PointResult(pairs=[pair], total=model.total([pair]), endpoints=[tester, nf],
                             counters={})


def test_the_worst_poller_marks_the_point_past_the_mark():
    quiet = _result(1_000_000, None)                       # 0.05 %
    assert quiet.stalled().endpoint == "p0s" and quiet.stall_warnings() == []
    loud = _result(10_000_000, 160_000_000)                 # 0.5 % and 8 %
    assert loud.stalled().endpoint == "n000"
    [warning] = loud.stall_warnings()
    assert warning.startswith("n000 (nf) lost 8.0 % of its window to 3 stalls over 200 µs")
    assert model.STALL_MARK == 0.05


def _stored(tmp_path, result: model.PointResult) -> dict:
    [scenario] = scenarios(None, {"rate": "1k"})
    store = Store(tmp_path)
    store.begin_run("1a2b", ["cnfperf", "run"], 1, tmp_path / "runs", {}, "0.1.0")
    store.add_point("1a2b", 0, scenario.model_dump(), status="done", started=1.0, result=result,
                    warnings=result.stall_warnings())
    store.close()
    [point] = Store(tmp_path, create=False).run("1a2b")["points"]
    return point


def test_stalls_are_stored_per_poller_and_the_worst_per_point(tmp_path):
    point = _stored(tmp_path, _result(10_000_000, 160_000_000))
    by_name = {e["endpoint"]: e for e in point["endpoints"]}
    assert by_name["p0s"]["stall_total_ns"] == 10_000_000 and by_name["p0s"]["stall_count"] == 3
    assert by_name["n000"]["stall_max_ns"] == 80_000_000
    assert by_name["n000"]["stall_share"] == pytest.approx(0.08)
    assert by_name["n000"]["stall_threshold_ns"] == 200000
    assert point["stall_ns"] == 160_000_000 and point["stall_share"] == pytest.approx(0.08)
    assert len(point["warnings"]) == 1 and "n000 (nf)" in point["warnings"][0]


def test_a_point_stored_before_has_no_stalls(tmp_path):
    run = migrated_run(tmp_path, 20, "INSERT INTO points (run_id, idx, status, switch) "
                                     "VALUES ('beef', 0, 'done', 'veth')")
    [point] = run["points"]
    assert point["stall_ns"] is None and point["stall_share"] is None
    assert stalls.said(point) == "–" and not stalls.stalled(point)


def test_the_tables_show_stalls_next_to_loss(tmp_path):
    point = _stored(tmp_path, _result(10_000_000, 160_000_000))
    assert stalls.said(point) == "160.0!" and stalls.said(point, 0) == "160.0!"
    assert stalls.said(point, 1) == "–"                     # no poller of that pair said
    text = tables.run_table({"points": [point]})
    header, _, row = text.splitlines()[:3]
    assert "stall ms" in header and header.index("loss %") < header.index("stall ms")
    assert "160.0!" in row and "! more than 5 % of it" in text
    title, headers, rows = summary.throughput({"points": [point]})
    assert headers[headers.index("loss %") + 1:headers.index("loss %") + 3] == \
        ["stall ms", "stall %"]
    i = headers.index("stall ms")
    assert rows[0][i] == pytest.approx(160.0) and rows[0][i + 1] == pytest.approx(8.0)
    assert "1 of 1 points" in stalls.notice([point])
    from cnfperf.report import html
    assert '<tr class="stalled">' in html._table(html.Table(title, headers, rows))


def test_busy_cores_are_the_pollers_and_unpinned_the_point():
    from cnfperf import nfs
    from cnfperf.plan import place
    for pin, want in ((True, 2), (False, 4)):
        [s] = scenarios(None, {"switch": "vhost", "api": "dpdk", "nfs": 1, "tester": "single",
                               "pin": pin})
        point = place(s, "1a2b", host_cpus=(0, 1, 2, 3), nf=nfs.find(s.nf))
        busy = cpu.busy_cores(point)
        assert len(busy) == want and {point.engines[0].cpu, point.nfs[0].cpu} <= busy
        assert cpu.busy_cores(point, (7,)) == busy | {7}   # the switch's poll cores


def test_the_orchestrator_steps_aside_only_when_a_core_is_spare():
    mine = os.sched_getaffinity(0)
    assert cpu.aside(mine)() is None and os.sched_getaffinity(0) == mine   # none to spare
    if len(mine) < 2:
        pytest.skip("one core: nothing to step aside to")
    busy = {min(mine)}
    back = cpu.aside(busy)
    import threading
    release, started = threading.Event(), threading.Event()
    later = threading.Thread(target=lambda: (started.set(), release.wait(5)))
    try:
        assert os.sched_getaffinity(0) == mine - busy
        later.start()             # inherits the spare cores
        started.wait(5)
    finally:
        back()
    try:
        assert os.sched_getaffinity(0) == mine
        assert os.sched_getaffinity(later.native_id) == mine   # put back too
    finally:
        release.set()
        later.join()


def test_a_search_trial_keeps_its_worst_pollers_share(tmp_path):
    from cnfperf.strategies.record import trial_row
    from cnfperf.strategies.truth import Truth
    truth = Truth(intended=1000, sent=1000, refused=0, skipped=0, stretch=0.0, valid=True, why="")
    row = trial_row(1, "search", 500.0, 2.0, _result(10_000_000, 160_000_000), truth)
    assert row["stall_share"] == pytest.approx(0.08)
    plain = _result(10_000_000, None)
    for m in plain.endpoints:
        m.stall_share = None
    assert trial_row(2, "search", 500.0, 2.0, plain, truth)["stall_share"] is None
    from cnfperf.strategies.record import progress
    assert progress(1, "at 500", _result(10_000_000, 160_000_000), truth).endswith(
        "; n000 stalled 8.0% of its window")
    assert "stalled" not in progress(2, "at 500", plain, truth)
    # stored with the trial
    [scenario] = scenarios(None, {"rate": "1k"})
    store = Store(tmp_path)
    store.begin_run("1a2b", ["cnfperf", "run"], 1, tmp_path / "runs", {}, "0.1.0")
    store.add_point("1a2b", 0, scenario.model_dump(), status="done", started=1.0,
                    trials=[row])
    [point] = store.run("1a2b")["points"]
    assert point["trials"][0]["stall_share"] == pytest.approx(0.08)
