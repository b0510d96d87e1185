"""Expectations (`expect`): lines parsed and judged, a sweep's points carrying
them (parts and [quick] add up, a flag replaces them), stored runs' points held
to them against an earlier run, the run table's column, JUnit XML read back by
a parser, and mistakes (one line, exit 2). Nothing here starts a container."""
from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from cnfperf import UserError
from cnfperf.cli import EXIT_USAGE, main
from cnfperf.experiments import sweep
from cnfperf.report import gates, trend
from cnfperf.report.tables import run_table
from cnfperf.results import expect
from cnfperf.results.expect import MISSED, PASSED, SKIPPED
from cnfperf.results.store import Store
from cnfperf.run.checks import plans
from harness import one_pair, scenarios

SPEC = {"doc": {"switch": "veth", "expect": ["rx_pps >= 1k"]}, "quick": False}


@pytest.mark.parametrize("line, metric, op, value", [
    ("rx_pps >= 2M", "rx_pps", ">=", 2e6),
    ("rx_pps>=2.5kpps", "rx_pps", ">=", 2500.0),
    ("rx_bps > 10Gbps", "rx_bps", ">", 10e9),
    ("loss_ratio <= 0.1%", "loss_ratio", "<=", 0.001),
    ("loss_ratio <= 0.001", "loss_ratio", "<=", 0.001),
    ("p99 <= 50us", "p99", "<=", 50e3),
    ("p99 <= 50µs", "p99", "<=", 50e3),
    ("max < 1.5ms", "max", "<", 1.5e6),
    ("p50 <= 800ns", "p50", "<=", 800.0),
    ("lost <= 0", "lost", "<=", 0.0),
    ("RATE >= 1e6", "rate", ">=", 1e6),
])
def test_an_absolute_bound_is_read_in_the_metrics_unit(line, metric, op, value):
    e = expect.parse(line)
    assert (e.metric.name, e.op, e.value, e.relative) == (metric, op, value, False)
    assert e.bound(None) == pytest.approx(value)


@pytest.mark.parametrize("line, earlier, bound", [
    ("rate >= run - 5%", 1e6, 0.95e6),
    ("p99 <= run + 10%", 100e3, 110e3),
    ("p99 <= run + 10us", 100e3, 110e3),
    ("loss_ratio <= run + 0.001", 0.002, 0.003),
    ("rx_pps >= run", 5e3, 5e3),
])
def test_a_bound_against_the_run_is_its_value_with_the_slack(line, earlier, bound):
    e = expect.parse(line)
    assert e.relative
    assert e.bound(earlier) == pytest.approx(bound)
    assert e.bound(None) is None


@pytest.mark.parametrize("line, said", [
    ("rx_pps = 2M", "expected METRIC OP BOUND"),
    ("speed >= 2M", "unknown metric 'speed'; known: rate, rx_pps"),
    ("p99 <= 50", "a latency takes a unit"),
    ("p99 <= 50 parsecs", "a latency takes a unit"),
    ("rx_pps >= 2T", "'T' is no unit of rx_pps"),
    ("loss_ratio <= 1k", "a ratio is a plain number or a %"),
    ("rx_pps >= -5", "'-5' is not an amount"),
    ("rate >= run - x%", "'x' is not a number"),
    ("rate >= run * 2", "is not an amount"),
    ("lost <= 3k", "no unit of lost"),
])
def test_a_wrong_line_says_what_is_wrong(line, said):
    with pytest.raises(ValueError) as e:
        expect.parse(line)
    assert said in str(e.value)


def _point(idx: int = 0, status: str = "done", **values) -> dict:
    return {"idx": idx, "status": status, "switch": "veth", "rx_pps": 5000.0, "lat_p99_ns": 40e3,
            "loss_ratio": 0.0, **values}


def test_judge_passes_misses_and_skips():
    p = _point()
    assert expect.judge("rx_pps >= 4k", p, None).status == PASSED
    v = expect.judge("p99 <= 20us", p, None)
    assert (v.status, v.value, v.bound) == (MISSED, 40e3, 20e3)
    assert v.why == "40us is not <= 20us"
    # against no run, or one without the point: skipped, never passed
    assert expect.judge("rx_pps >= run - 5%", p, None).status == SKIPPED
    v = expect.judge("rx_pps >= run - 5%", p, [], "ab12")
    assert (v.status, v.why) == (SKIPPED, "run ab12 did not measure rx_pps at this point")
    # the earlier run's repetitions are averaged
    earlier = [_point(rx_pps=5200.0), _point(rx_pps=5400.0)]
    v = expect.judge("rx_pps >= run - 5%", p, earlier, "ab12")
    assert v.status == MISSED and v.bound == pytest.approx(0.95 * 5300)
    # a point that did not finish, or measured nothing of the metric, missed it
    assert expect.judge("rx_pps >= 1", _point(status="failed"), None).why == "the point failed"
    v = expect.judge("p50 <= 1ms", p, None)
    assert (v.status, v.why) == (MISSED, "the point measured no p50")


def test_a_search_points_rate_is_what_it_found_over_its_pairs():
    p = _point(trials=[{}], search_rate_pps=1e6, pairs=2, rx_pps=1.5e6)
    assert expect.METRICS["rate"].read(p) == 2e6
    assert expect.METRICS["rate"].read(_point()) == 5000.0


def test_expectations_add_up_over_parts_and_quick_and_a_flag_replaces_them():
    doc = {"switch": "veth", "expect": ["loss_ratio <= 0.001"],
           "quick": {"expect": "rx_pps >= 1k"},
           "part": [{"size": 64, "expect": ["p99 <= 50us"]}, {"size": 1500}]}
    planned = sweep.expand_study(doc, quick=True)
    by_size = {p.params["size"]: p.expect for p in planned.points}
    assert by_size == {64: ("loss_ratio <= 0.001", "p99 <= 50us", "rx_pps >= 1k"),
                       1500: ("loss_ratio <= 0.001", "rx_pps >= 1k")}
    flagged = sweep.expand_study(sweep.override(doc, {"expect": ["rate >= run"]}), quick=True)
    assert {p.expect for p in flagged.points} == {("rate >= run",)}
    # a point two parts plan carries both parts' lines
    twice = sweep.expand_study({"switch": "veth", "part": [{"expect": "rx_pps >= 1"},
                                                           {"expect": "p99 <= 1ms"}]})
    [point] = twice.points
    assert point.expect == ("rx_pps >= 1", "p99 <= 1ms")
    # expectations are not a point's key: a changed gate keeps --resume's data
    assert point.key == sweep.expand_study({"switch": "veth"}).points[0].key


@pytest.mark.parametrize("doc, said", [
    ({"switch": "veth", "expect": ["p99 <= 50"]}, "expect: 'p99 <= 50': a latency takes a unit"),
    ({"switch": "veth", "expect": 5}, "expect: a list of lines"),
    ({"switch": "veth", "part": [{"expect": ["rx_pps >> 1"]}]}, "expect: 'rx_pps >> 1'"),
])
def test_a_plan_with_a_wrong_line_is_refused_before_it_runs(doc, said):
    with pytest.raises(UserError) as e:
        plans.plan(doc, cores=(0, 1))
    assert said in str(e.value)


def test_a_changed_expectation_is_the_same_scenario():
    a = {"spec": {"doc": {"switch": "veth", "expect": ["rx_pps >= 1"],
                          "part": [{"size": 64, "expect": "p99 <= 1ms"}]}}}
    b = {"spec": {"doc": {"switch": "veth", "part": [{"size": 64}]}}}
    c = {"spec": {"doc": {"switch": "veth", "part": [{"size": 128}]}}}
    assert trend.same_scenario(a, b) and not trend.same_scenario(a, c)


class Runs:
    """A temporary store and the runs added to it, oldest first."""

    def __init__(self, directory: Path):
        self.directory = directory
        self.point = scenarios(None, {"switch": "veth"})[0].model_dump()
        self.n = 0

    def add(self, rx: float, lines: list[str], p99_ns: float = 40e3, spec=SPEC,
            status: str = "done") -> str:
        run_id = f"{0xa000 + self.n:04x}"
        self.n += 1
        store = Store(self.directory)
        store.begin_run(run_id, ["cnfperf", "run"], 1, self.directory / "runs" / run_id, {},
                        "0.1.0", spec)
        store.add_point(run_id, 0, self.point, status=status, started=1.0, key="k",
                        result=one_pair(rx, 20e3, p99_ns) if status == "done" else None,
                        error=None if status == "done" else "boom",
                        switch_facts={"name": "veth", "style": 0}, expect=lines)
        store.finish_run(run_id, "done")
        store.close()
        return run_id


def test_a_stored_run_is_held_against_the_newest_earlier_run_of_its_scenario(tmp_path):
    runs = Runs(tmp_path)
    first = runs.add(5000, ["rx_pps >= run - 5%"])
    runs.add(9000, ["rx_pps >= 1"], spec={"doc": {"switch": "ovs"}, "quick": False})
    runs.add(4900, ["rx_pps >= 1"])          # the same scenario, a newer run
    last = runs.add(4000, ["rx_pps >= run - 5%", "p99 <= 30us", "p99 <= run"])
    store = Store(tmp_path)
    run = store.run(last)
    earlier = gates.earlier_of(run, store.runs(), store.run, store.spec)
    assert earlier["id"] == f"{0xa002:04x}"
    held = gates.judged(run, earlier)
    assert [g.verdict.status for g in held] == [MISSED, MISSED, PASSED]
    assert held[0].verdict.bound == pytest.approx(0.95 * 4900)
    assert gates.said(run["points"][0], held) == "missed rx_pps, p99"
    assert gates.counts(held) == {PASSED: 1, MISSED: 2, SKIPPED: 0}
    table = run_table(run, held)
    assert table.splitlines()[0].split()[-1] == gates.COLUMN
    assert table.splitlines()[2].endswith("missed rx_pps, p99")
    # the first run has none before it: its line against a run is skipped
    alone = store.run(first)
    assert gates.earlier_of(alone, store.runs(), store.run, store.spec) is None
    assert [g.verdict.status for g in gates.judged(alone, None)] == [SKIPPED]


def test_only_an_earlier_run_of_the_same_scenario_is_loaded_whole(tmp_path):
    """A store of many runs: the others' plans are read, not their points."""
    runs = Runs(tmp_path)
    same = runs.add(5000, [])
    other = runs.add(9000, [], spec={"doc": {"switch": "ovs"}, "quick": False})
    last = runs.add(4000, ["rx_pps >= run - 5%"])
    store = Store(tmp_path)
    loaded = []

    def load(run_id):
        loaded.append(run_id)
        return store.run(run_id)
    assert gates.earlier_of(store.run(last), store.runs(), load, store.spec)["id"] == same
    assert loaded == [same] and store.spec(other)["doc"] == {"switch": "ovs"}


def test_junit_xml_has_a_case_per_point_and_expectation(tmp_path):
    runs = Runs(tmp_path)
    before = runs.add(5000, [])
    failed = runs.add(0, ["rx_pps >= 1"], status="failed")
    last = runs.add(4000, ["rx_pps >= 1k", "p99 <= 30us", "rate >= run - 5%"])
    store = Store(tmp_path)
    run = store.run(last)
    held = gates.judged(run, store.run(before))
    path = gates.write_junit(run, held, tmp_path / "out" / "gates.xml", store.run(before))
    root = ET.parse(path).getroot()
    [suite] = root.findall("testsuite")
    assert suite.get("name") == f"cnfperf run {last}"
    assert (suite.get("tests"), suite.get("failures"), suite.get("errors"),
            suite.get("skipped")) == ("3", "2", "0", "0")
    props = {p.get("name"): p.get("value") for p in suite.iter("property")}
    assert props["run"] == last and props["expect_run"] == before
    cases = suite.findall("testcase")
    assert [c.get("name") for c in cases] == ["rx_pps >= 1k", "p99 <= 30us", "rate >= run - 5%"]
    assert {c.get("classname") for c in cases} == {"point 1 veth"}
    assert [c.find("failure") is not None for c in cases] == [False, True, True]
    assert cases[1].find("failure").get("message") == "40us is not <= 30us"
    # a point that did not finish: an error, not a failure
    broken = store.run(failed)
    path = gates.write_junit(broken, gates.judged(broken, None), tmp_path / "broken.xml", None)
    [case] = ET.parse(path).getroot().iter("testcase")
    assert case.find("error").get("message") == "the point failed"


def test_results_show_holds_a_run_to_its_expectations(tmp_path, capsys):
    runs = Runs(tmp_path)
    first = runs.add(3900, [])
    before = runs.add(5000, [])
    last = runs.add(4000, ["rx_pps >= run - 5%"])
    runs.add(4100, [])                           # stored after it: never its `run`
    assert main(["results", "show", last, "--results", str(tmp_path), "--json"]) == 0
    said = json.loads(capsys.readouterr().out)["expectations"]
    assert (said["expect_run"], said["missed"]) == (before, 1)
    assert said["verdicts"][0]["verdict"] == MISSED
    # the run named instead of the newest earlier one; latest: the newest before it
    assert main(["results", "show", last, "--results", str(tmp_path), "--expect-run",
                 first]) == 0
    out = capsys.readouterr().out
    assert "expectations: 1 passed, 0 missed, 0 skipped; against run " + first in out
    assert main(["results", "show", last, "--results", str(tmp_path), "--expect-run",
                 "latest", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["expectations"]["expect_run"] == before
    for wrong, said in (("ffff", "--expect-run: no run 'ffff'"),
                        (last, f"--expect-run: {last} is the run itself")):
        assert main(["results", "show", last, "--results", str(tmp_path), "--expect-run",
                     wrong]) == EXIT_USAGE
        assert said in capsys.readouterr().err


def test_a_stored_line_this_cnfperf_cannot_read_is_skipped_and_said(tmp_path):
    runs = Runs(tmp_path)
    run_id = runs.add(4000, ["rx_pps >= 1k"])
    with Store(tmp_path).db as db:   # as a later cnfperf, with a metric this one lacks, wrote it
        db.execute("UPDATE points SET expect = ? WHERE run_id = ?",
                   (json.dumps(["jitter <= 1us", "rx_pps >= 1k"]), run_id))
    run = Store(tmp_path).run(run_id)
    assert not gates.relative(run)
    odd, fine = gates.judged(run, None)
    assert odd.verdict.status == SKIPPED and "cannot read it" in odd.verdict.why
    assert fine.verdict.status == PASSED and odd.row()[2] == "–"


def test_bad_gate_flags_are_refused_before_anything_runs(tmp_path, capsys):
    assert main(["run", "--switch", "veth", "--expect", "p99 < 5", "--results",
                 str(tmp_path)]) == EXIT_USAGE
    assert "expect: 'p99 < 5': a latency takes a unit" in capsys.readouterr().err
    assert not (tmp_path / "cnfperf.db").exists()
