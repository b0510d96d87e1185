"""`cnfperf compare RUN1 RUN2 RUN3 …`: each point's trend over a series of runs,
judged as FD.io CSIT's trending judges its own (jumpavg).

A point is what compare matches (compare.MATCH: what was measured, not for how
long); its value in a run is a search's rate found, else the received rate, and
its latency percentiles p50 and p99 where measured: each a metric of its own.
jumpavg splits a metric's values over the runs into groups (the split that
describes them in the fewest bits, each group taken as one normal
distribution); a point's repetitions in a run go in together, so their spread
tells jumpavg how noisy one run is. The latest group against the one before
gives the verdict: a regression (rate lower, latency higher), a progression, or
normal (one group). A step smaller than `min_change` % is no step: its groups
are taken for one. A regression stays
one while its group is the latest: until a later group recovers, or the series
no longer reaches back to before it.

A point is trended over the runs that measured it, when the newest run of the
series did and at least one other; the others are named in notes.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Sequence

import jumpavg

from cnfperf import fields
from cnfperf.experiments import stats
from cnfperf.report import compare, explain, summary


@dataclass(frozen=True)
class Metric:
    name: str          # rate, p50, p99: the --metric values and the JSON's
    unit: str
    scale: float       # stored value / scale = the value in unit
    higher_is_better: bool


METRICS = {m.name: m for m in (Metric("rate", "kpps", 1e3, True), Metric("p50", "µs", 1e3, False),
                               Metric("p99", "µs", 1e3, False))}
REGRESSION, PROGRESSION, NORMAL = "regression", "progression", "normal"
HEADERS = ["point", "metric", "runs", "last", "trend", "previous", "change %", "verdict",
           "since"]


@dataclass
class Group:
    """Runs in a row whose values jumpavg took for one distribution."""
    runs: list[str]
    average: float                 # of the group's values, in its metric's unit
    verdict: str = NORMAL          # against the group before (the first: normal)
    change: float | None = None    # % against the group before


@dataclass
class Trend:
    """One metric of one point over the runs that measured it (oldest first)."""
    point: str                     # its label
    key: tuple = field(repr=False)  # what it measured (compare.MATCH's values)
    metric: Metric
    runs: list[str]
    samples: list[list[float]]     # per run, each repetition's value (metric's unit)
    groups: list[Group]
    facts: dict[str, Any] = field(repr=False)   # the newest run's point (plot styles)
    # what else went with a change (not normal): the best first (explain.ranked)
    explained: list[explain.Difference] = field(default_factory=list)

    @property
    def values(self) -> list[float]:
        """Per run, its repetitions averaged."""
        return [stats.mean(s) for s in self.samples]

    @property
    def previous(self) -> Group | None:
        return self.groups[-2] if len(self.groups) > 1 else None

    @property
    def verdict(self) -> str:
        return self.groups[-1].verdict

    @property
    def since(self) -> str | None:
        """The run the latest group starts with, when it is a change."""
        return self.groups[-1].runs[0] if self.verdict != NORMAL else None

    def row(self) -> list[Any]:
        last, prev = self.groups[-1], self.previous
        return [self.point, f"{self.metric.name} {self.metric.unit}", len(self.runs),
                self.values[-1], last.average, prev.average if prev else None,
                last.change, self.verdict, self.since or ""]

    def to_dict(self) -> dict[str, Any]:
        last, prev = self.groups[-1], self.previous
        return {"point": self.point, "metric": self.metric.name, "unit": self.metric.unit,
                "runs": self.runs, "values": self.values, "samples": self.samples,
                "last": self.values[-1], "trend": last.average,
                "previous": prev.average if prev else None, "change_pct": last.change,
                "verdict": self.verdict, "since": self.since,
                "groups": [{"runs": g.runs, "average": g.average, "verdict": g.verdict,
                            "change_pct": g.change} for g in self.groups],
                "differences": [d.to_dict() for d in self.explained]}



def whys(found: Sequence[Trend]) -> list[str]:
    """A line per point and change: `size=64 rate, p50 regression since 869c:
    host governor: performance → powersave (in 2 of 2 changed runs, 0 of 3
    others); …`, its metrics together where the same facts went with them."""
    said: dict[tuple, list[str]] = {}
    for t in found:
        if t.verdict != NORMAL:
            reasons = tuple(d.text(series=True) for d in t.explained)
            said.setdefault((t.point, t.verdict, t.since, reasons), []).append(t.metric.name)
    out = []
    for (point, verdict, since, reasons), names in said.items():
        head = f"{point} {', '.join(names)} {verdict} since {since}"
        out.append(f"{head}: " + "; ".join(reasons) if reasons else
                   f"{head}: nothing stored differed (the host's noise, or what cnfperf "
                   "does not record)")
    return out


def _groups(runs: Sequence[str], samples: Sequence[Sequence[float]], metric: Metric,
            min_change: float) -> list[Group]:
    """jumpavg's groups of the runs' samples (by index), a step smaller than
    `min_change` % merged into the group before, each judged against the one
    before."""
    def average(members: list[int]) -> float:
        return stats.mean([v for i in members for v in samples[i]])

    def change(before: float, after: float) -> float | None:
        return 100 * (after - before) / before if before else None

    found: list[list[int]] = []
    if max(max(s) for s in samples) <= 0:   # all zero: jumpavg needs a positive maximum
        found = [list(range(len(runs)))]
    else:
        at = 0
        for g in jumpavg.classify([s[0] if len(s) == 1 else list(s) for s in samples]):
            members = list(range(at, at + len(g)))
            at += len(g)
            step = change(average(found[-1]), average(members)) if found else None
            if step is not None and abs(step) < min_change:
                found[-1] += members
            else:
                found.append(members)
    groups: list[Group] = []
    for members in found:
        group = Group([runs[i] for i in members], average(members))
        if groups:
            before = groups[-1].average
            group.change = change(before, group.average)
            better = group.average > before if metric.higher_is_better \
                else group.average < before
            if group.average != before:
                group.verdict = PROGRESSION if better else REGRESSION
        groups.append(group)
    return groups


def trends(runs: Sequence[dict[str, Any]], metrics: Sequence[str] = tuple(METRICS),
           min_change: float = 0.0) -> tuple[list[Trend], list[str]]:
    """(trends, notes) of a series of stored runs, oldest first: a Trend per point
    and metric the newest run and at least one other measured, in the newest
    run's order; notes name the points left out."""
    ids = [r["id"] for r in runs]
    measured = [compare.measured(r) for r in runs]
    newest = measured[-1]
    names = [f for f in summary.LABEL_FIELDS if f in compare.MATCH]
    fields = summary.varying([m[k]["point"] for m in measured for k in m], names) or ["switch"]
    out: list[Trend] = []
    alone: list[str] = []
    for key, last in newest.items():
        label = summary.label(last["point"], fields)
        had = [i for i, m in enumerate(measured) if key in m]
        if len(had) < 2:
            alone.append(label)
            continue
        for name in metrics:
            metric = METRICS[name]
            mine = [i for i in had if measured[i][key][name]]
            if len(mine) < 2 or mine[-1] != len(runs) - 1:
                continue
            samples = [[v / metric.scale for v in measured[i][key][name]] for i in mine]
            t = Trend(label, key, metric, [ids[i] for i in mine], samples,
                      _groups([ids[i] for i in mine], samples, metric, min_change),
                      last["point"])
            if t.verdict != NORMAL:
                t.explained = explain.ranked([runs[i] for i in mine],
                                             [measured[i][key]["point"] for i in mine],
                                             set(t.groups[-1].runs))
            out.append(t)
    notes = []
    if alone:
        notes.append(f"only in the newest run ({ids[-1]}): " + "; ".join(alone))
    gone = {k: m[k]["point"] for m in measured[:-1] for k in m if k not in newest}
    if gone:
        notes.append(f"not in the newest run ({ids[-1]}), not trended: "
                     + "; ".join(dict.fromkeys(summary.label(p, fields) for p in gone.values())))
    return out, notes


def same_scenario(a: dict[str, Any], b: dict[str, Any]) -> bool:
    """Whether two stored runs were made from the same scenario: file and flags
    alike (the plan each stored, its `doc`), quick or not, whatever each
    expected of its points (`expect`: a gate changed measures the same). A run
    stored without its plan is like none."""
    sa, sb = a.get("spec") or {}, b.get("spec") or {}
    return "doc" in sa and "doc" in sb and \
        (measuring(sa["doc"]), sa.get("quick", False)) == \
        (measuring(sb["doc"]), sb.get("quick", False))


def measuring(table: Any) -> Any:
    """A scenario document without its expectations, in its [quick] and
    [[part]]s too."""
    if isinstance(table, list):
        return [measuring(t) for t in table]
    if not isinstance(table, dict):
        return table
    return {k: measuring(v) for k, v in table.items() if k != fields.EXPECT}
