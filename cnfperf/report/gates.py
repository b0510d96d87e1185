"""Gates: a stored run's points held to their expectations (`expect`,
results/expect.py), each `run` in a line being the same point of an earlier run
(`expect_run`: the newest earlier run of the same scenario, or one named).

A point of the earlier run is the same point when compare matches it
(compare.what: what was measured, not for how long); its repetitions are
averaged. The verdicts are the run table's `expect` column, a table of their
own, the HTML report's, and JUnit XML (`--junit`): a test case per point and
expectation, which CI systems read.
"""
from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

from cnfperf.report import compare, summary
from cnfperf.report.trend import same_scenario
from cnfperf.results import expect
from cnfperf.results.expect import MISSED, PASSED, SKIPPED

COLUMN = "expect"
HEADERS = ["point", "expectation", "value", "bound", "verdict", "why"]
NOTE = ("Each point held to its expectations (expect); `run` in a line is the same point of "
        "an earlier run (named below), its repetitions averaged. A point that did not finish, "
        "or has no value of the metric, missed it; a line against a run that did not measure "
        "the point is skipped.")


@dataclass(frozen=True)
class Gate:
    point: dict[str, Any]          # the stored point
    label: str
    verdict: expect.Verdict

    def row(self) -> list[Any]:
        e = expect.read(self.verdict.expectation)
        metric = e.metric if e else None
        return [f"{self.point['idx'] + 1} {self.label}".strip(), self.verdict.expectation,
                expect.show(metric, self.verdict.value),
                expect.show(metric, self.verdict.bound), self.verdict.status, self.verdict.why]

    def to_dict(self) -> dict[str, Any]:
        return {"point": self.point["idx"], "label": self.label, **self.verdict.to_dict()}


def expecting(run: dict[str, Any]) -> bool:
    """Whether any point of the run states an expectation."""
    return any(p.get("expect") for p in run.get("points", []))


def relative(run: dict[str, Any]) -> bool:
    """Whether a line of the run's points is held against an earlier run."""
    return any((e := expect.read(line)) is not None and e.relative
               for p in run.get("points", []) for line in p.get("expect") or ())


def judged(run: dict[str, Any], earlier: dict[str, Any] | None) -> list[Gate]:
    """Every point's every expectation, in the run's order; `earlier` the run
    a `run` in a line means (None: none, its lines are skipped)."""
    same: dict[tuple, list[dict[str, Any]]] = defaultdict(list)
    for p in summary.done_points(earlier or {}):
        same[compare.what(p)].append(p)
    points = run.get("points", [])
    names = summary.varying(points) or ["switch"]
    return [Gate(p, summary.label(p, names),
                 expect.judge(line, p, None if earlier is None else same.get(compare.what(p), []),
                              earlier["id"] if earlier else None))
            for p in points for line in p.get("expect") or ()]


def missed(gates: Sequence[Gate]) -> list[Gate]:
    return [g for g in gates if g.verdict.status == MISSED]


def counts(gates: Sequence[Gate]) -> dict[str, int]:
    return {s: sum(g.verdict.status == s for g in gates) for s in (PASSED, MISSED, SKIPPED)}


def said(point: dict[str, Any], gates: Sequence[Gate]) -> str:
    """The run table's cell of a point: `ok`, `missed p99, rx_pps`, `skipped`
    (every line skipped), or nothing without expectations."""
    mine = [g for g in gates if g.point is point]
    if not mine:
        return ""
    lost = [e.metric.name if (e := expect.read(g.verdict.expectation)) else "?"
            for g in missed(mine)]
    if lost:
        return "missed " + ", ".join(dict.fromkeys(lost))
    return "ok" if any(g.verdict.status == PASSED for g in mine) else SKIPPED


def summary_line(gates: Sequence[Gate], earlier: dict[str, Any] | None) -> str:
    """`7 passed, 1 missed, 0 skipped; against run ab12`."""
    n = counts(gates)
    against = f"; against run {earlier['id']}" if earlier else ""
    return ", ".join(f"{v} {k}" for k, v in n.items()) + against


def notice(gates: Sequence[Gate]) -> str:
    """The report header's sentence when a point missed an expectation."""
    lost = missed(gates)
    if not lost:
        return ""
    points = len({g.point["idx"] for g in lost})
    return (f"{len(lost)} expectation{'s' if len(lost) > 1 else ''} missed at {points} "
            f"point{'s' if points > 1 else ''}: see Expectations.")


def table(gates: Sequence[Gate], every: bool = True) -> summary.Table | None:
    """(title, headers, rows): every line's verdict, or with `every` False only
    those that missed or were skipped (a terminal's brief)."""
    shown = [g for g in gates if every or g.verdict.status != PASSED]
    if not shown:
        return None
    return ("Expectations", HEADERS, [g.row() for g in shown])


def write_junit(run: dict[str, Any], gates: Sequence[Gate], path: Path,
                earlier: dict[str, Any] | None) -> Path:
    """JUnit XML: a test suite for the run, a test case per point and
    expectation (its class the point, its name the line), a failure where
    it missed, an error where the point did not finish, skipped where no
    earlier run had the point. junitparser writes it."""
    from junitparser import Error, Failure, JUnitXml, Skipped, TestCase, TestSuite
    suite = TestSuite(f"cnfperf run {run['id']}")
    suite.add_property("run", run["id"])
    suite.add_property("command", " ".join(run.get("command") or []))
    if earlier:
        suite.add_property("expect_run", earlier["id"])
    for g in gates:
        # the point's time shared by its lines: the suite's sum is the run's
        lines = len(g.point.get("expect") or ()) or 1
        case = TestCase(g.verdict.expectation,
                        classname=f"point {g.point['idx'] + 1}" + (f" {g.label}" if g.label else ""),
                        time=round(_seconds(g.point) / lines, 3))
        v = g.verdict
        if v.status == SKIPPED:
            case.result = [Skipped(v.why)]
        elif v.status == MISSED and g.point.get("status") != "done":
            case.result = [Error(v.why, "point")]
        elif v.status == MISSED:
            case.result = [Failure(v.why, "expectation")]
        suite.add_testcase(case)
    xml = JUnitXml("cnfperf")
    xml.add_testsuite(suite)
    path.parent.mkdir(parents=True, exist_ok=True)
    xml.write(str(path), pretty=True)
    return path


def _seconds(point: dict[str, Any]) -> float:
    start, end = point.get("started"), point.get("finished")
    return end - start if start and end else 0.0


def earlier_of(run: dict[str, Any], listed: Sequence[dict[str, Any]],
               load: Any, spec: Any) -> dict[str, Any] | None:
    """The newest run stored before `run` and made from its scenario
    (trend.same_scenario, expectations aside) that finished a point; None
    without one. `listed` the store's runs (Store.runs), `load` a run by id,
    `spec` its plan alone (Store.spec): only a run of the same scenario is
    loaded whole."""
    before = [r["id"] for r in listed if r.get("stored") and r["started"] <= run["started"]
              and r["id"] != run["id"]]
    for run_id in reversed(before):
        if not same_scenario({"spec": spec(run_id)}, run):
            continue
        other = load(run_id)
        if summary.done_points(other):
            return other
    return None
