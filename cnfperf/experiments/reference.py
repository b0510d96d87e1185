"""A study held against its paper: the paper's published numbers beside what a
run measured, and which of the five papers' experiments the studies reproduce.

A study file may carry, besides its sweep (docs/studies-and-reports.md):

  [study] experiments   the ids it reproduces, of studies/papers/experiments.toml
  [[difference]]        how it departs from its paper: kind (KINDS), text, and
                        the experiments it touches (default: all of the study's)
  [[reference]]         one published number each: figure, metric (METRICS),
                        value, unit, `at` (the scenario values of the point it
                        matches), optionally `per` (then `value` is the ratio of
                        the point at `at` to the point at `at` updated by `per`),
                        where, note

load() validates them (a UserError naming e.g. `reference[3].metric`, before
anything is created); compare() matches each row to a run's stored points (as
results/store.py returns them: plain dicts) and judges each figure's shape;
coverage() gives every experiment of the catalogue its status. Nothing here
draws, prints or opens a store: the report and the CLI do, from these values.
"""
from __future__ import annotations

import math
import statistics
import tomllib
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping, Sequence

from cnfperf import UserError, fields
from cnfperf.experiments import stats, studies
from cnfperf.experiments.sweep import parse_values

CATALOGUE = studies.STUDIES_DIR / "papers" / "experiments.toml"

# How a study departs from its paper; the status an experiment gets from its
# study's differences (coverage): any gap is PART, else any hardware HW, else NOW.
KINDS = {
    "method": "done otherwise, equivalent for the comparison (the text says why)",
    "hardware": "needs hardware or a kernel this kind of host lacks",
    "gap": "cnfperf cannot do it yet",
}
NOW, HW, PART, NO = "NOW", "HW", "PART", "NO"
STATUSES = {
    NOW: "reproduced as the paper did, hardware replaced by the nearest virtual part the "
         "study names",
    HW: "reproduced but for a part that needs hardware or a kernel this kind of host lacks",
    PART: "partly: cnfperf cannot do all of it yet",
    NO: "no study reproduces it",
}

# A step between two rows of a figure changes by less than this share of the
# larger value: flat.
FLAT = 0.10


@dataclass(frozen=True)
class Metric:
    """What a reference row's `metric` reads of a stored point."""

    what: str
    units: Mapping[str, float]     # unit -> its value in the metric's own (the first)
    mode: str                      # the mode its points are when a row leaves it open
    best: bool = False             # several configurations match: the best (highest)

    @property
    def unit(self) -> str:
        return next(iter(self.units))


_RATE = {"Mpps": 1.0, "kpps": 1e-3, "pps": 1e-6}
_TIME = {"µs": 1.0, "us": 1.0, "ns": 1e-3, "ms": 1e3}
METRICS: dict[str, Metric] = {
    "rx_mpps": Metric("received rate, all pairs (not of a search's points)", _RATE,
                      "throughput", True),
    "tx_mpps": Metric("sent rate, all pairs (not of a search's points)", _RATE,
                      "throughput", True),
    "rx_gbps": Metric("received rate in bits: frames of `size` bytes (FCS included, no "
                      "preamble or gap), all pairs", {"Gbps": 1.0, "Mbps": 1e-3},
                      "throughput", True),
    "loss_pct": Metric("frames lost, % of those sent", {"%": 1.0}, "throughput"),
    "ndr_mpps": Metric("a search's rate found without loss (its goal ndr), all pairs",
                       _RATE, "throughput", True),
    "pdr_mpps": Metric("a search's rate found at its partial loss (its first goal pdr:X%), "
                       "all pairs", _RATE, "throughput", True),
    **{f"latency_{k}_us": Metric(f"latency {w} (round trip or one way, as the point "
                                 "measured)", _TIME, "latency")
       for k, w in (("min", "minimum"), ("mean", "mean"), ("p50", "median"),
                    ("p90", "90th percentile"), ("p99", "99th percentile"),
                    ("max", "maximum"))},
    "latency_stdev_us": Metric("latency's standard deviation, from the stored histogram "
                               "(bucket midpoints)", _TIME, "latency"),
    "image_mb": Metric("size of the image the tester's ends ran in (points.image_size; "
                       "MB of 10^6 bytes)", {"MB": 1.0, "kB": 1e-3}, "throughput"),
    "startup_ms": Metric("network functions' startup: container creation to ports up "
                         "(nf_results.ready_s), mean over the point's NFs",
                         {"ms": 1.0, "s": 1e3}, "throughput"),
    "outage_ms": Metric("a fault's outage: the longest gap the receivers saw (outage_ns), the "
                        "longest of the pairs'", {"ms": 1.0, "s": 1e3}, "throughput"),
    "routing_down_pct": Metric("the routing daemons' sessions' time down during the trial, % "
                               "of all their session-time (NF summaries' routing)",
                               {"%": 1.0}, "throughput"),
    "noticed_ms": Metric("a fault's cut to the first session its routing daemons said went "
                         "down (fault_facts.noticed_ms)", {"ms": 1.0, "s": 1e3}, "throughput"),
}
# The unit of a row with `per`: its value is a ratio.
RATIO_UNITS = {"×": 1.0, "%": 0.01}

ROW_KEYS = ("figure", "where", "metric", "value", "unit", "at", "per", "note")
DIFFERENCE_KEYS = ("kind", "experiments", "text")


@dataclass(frozen=True)
class Row:
    """One published number (a [[reference]] row), `at` and `per` parsed as
    their fields' values."""

    index: int
    figure: str
    metric: str
    value: float
    unit: str
    at: Mapping[str, Any]
    per: Mapping[str, Any] | None = None
    where: str = ""
    note: str = ""

    @property
    def factor(self) -> float:
        """The row's unit in the metric's own (its value times this)."""
        return RATIO_UNITS[self.unit] if self.per else METRICS[self.metric].units[self.unit]

    def at_text(self) -> str:
        text = " ".join(f"{k}={fields.show(k, v)}" for k, v in self.at.items())
        if self.per:
            text += " / " + " ".join(f"{k}={fields.show(k, v)}" for k, v in self.per.items())
        return text or "–"


@dataclass(frozen=True)
class Difference:
    kind: str
    text: str
    experiments: tuple[str, ...] = ()    # none: every experiment of the study

    def touches(self, experiment: str) -> bool:
        return not self.experiments or experiment in self.experiments


@dataclass(frozen=True)
class Reference:
    """A study's [study] experiments, [[difference]] and [[reference]] tables."""

    experiments: tuple[str, ...] = ()
    differences: tuple[Difference, ...] = ()
    rows: tuple[Row, ...] = ()

    def __bool__(self) -> bool:
        return bool(self.experiments or self.differences or self.rows)


# -- the catalogue --------------------------------------------------------------


@dataclass(frozen=True)
class Experiment:
    id: str
    paper: str
    figure: str
    what: str
    headline: str
    missing: str = ""


@lru_cache(maxsize=4)
def catalogue(path: Path = CATALOGUE) -> tuple[dict[str, dict[str, str]], tuple[Experiment, ...]]:
    """(papers by number, every experiment in the catalogue's order)."""
    with open(path, "rb") as f:
        doc = tomllib.load(f)
    papers = doc.get("paper") or {}
    found = []
    for i, e in enumerate(doc.get("experiment") or []):
        try:
            found.append(Experiment(**e))
        except TypeError as err:
            raise ValueError(f"{path.name}: experiment[{i}]: {err}") from None
        if e["paper"] not in papers:
            raise ValueError(f"{path.name}: experiment[{i}].paper: no paper {e['paper']!r}")
    ids = [e.id for e in found]
    if twice := sorted({i for i in ids if ids.count(i) > 1}):
        raise ValueError(f"{path.name}: experiment ids twice: {', '.join(twice)}")
    return papers, tuple(found)


def experiment_ids() -> tuple[str, ...]:
    return tuple(e.id for e in catalogue()[1])


# -- loading ------------------------------------------------------------------


def load(doc: Mapping[str, Any], known: Sequence[str] | None = None) -> Reference:
    """A study document's reference tables, checked: UserError naming the key
    (`reference[3].metric`, counted from 0) of the first wrong one. Experiment
    ids are held against `known` (default: the catalogue's); a stored run's
    tables are read with known=() (ids not checked: the catalogue may have
    moved on)."""
    try:
        # the catalogue only where ids are named: a scenario file needs none
        return _load(doc, known if known is not None else experiment_ids)
    except ValueError as e:
        where, _, why = str(e).partition(": ")
        raise UserError(where, why) from None


# experiment ids, or what gives them when first needed (the catalogue)
Known = Sequence[str] | Callable[[], Sequence[str]]


def _load(doc: Mapping[str, Any], known: Known) -> Reference:
    table = doc.get("study") or {}
    ids = (table.get("experiments") or []) if isinstance(table, Mapping) else []
    if not isinstance(ids, list) or not all(isinstance(i, str) for i in ids):
        raise ValueError(f"study.experiments: must be a list of experiment ids (got {ids!r})")
    _known_ids("study.experiments", ids, known)
    differences = tuple(_difference(f"difference[{i}]", d, ids, known)
                        for i, d in enumerate(_tables(doc, "difference")))
    rows = tuple(_row(i, r) for i, r in enumerate(_tables(doc, "reference")))
    return Reference(tuple(ids), differences, rows)


def _tables(doc: Mapping[str, Any], name: str) -> list[Mapping[str, Any]]:
    tables = doc.get(name, [])
    if not isinstance(tables, list) or not all(isinstance(t, Mapping) for t in tables):
        raise ValueError(f"{name}: must be an array of tables ([[{name}]])")
    return tables


def _known_ids(where: str, ids: Sequence[str], known: Known) -> None:
    if not ids:
        return
    known = known() if callable(known) else known
    if known and (unknown := [i for i in ids if i not in known]):
        raise ValueError(f"{where}: unknown experiment {unknown[0]!r} (the ids of "
                         "studies/papers/experiments.toml: 000.1, 002.A′, 003.T52, …)")


def _keys(where: str, table: Mapping[str, Any], allowed: Sequence[str]) -> None:
    for key in table:
        if key not in allowed:
            raise ValueError(f"{where}.{key}: unknown key; known: {', '.join(allowed)}")


def _text(where: str, value: Any, required: bool = True) -> str:
    if value is None and not required:
        return ""
    if not isinstance(value, str) or not value.strip():
        raise ValueError(f"{where}: must be text (got {value!r})")
    return value.strip()


def _difference(where: str, d: Mapping[str, Any], ids: Sequence[str],
                known: Known) -> Difference:
    _keys(where, d, DIFFERENCE_KEYS)
    kind = d.get("kind")
    if kind not in KINDS:
        raise ValueError(f"{where}.kind: {kind!r} is none of {', '.join(KINDS)}")
    touched = d.get("experiments", [])
    if not isinstance(touched, list) or not all(isinstance(i, str) for i in touched):
        raise ValueError(f"{where}.experiments: must be a list of experiment ids")
    _known_ids(f"{where}.experiments", touched, known)
    if others := [i for i in touched if i not in ids]:
        raise ValueError(f"{where}.experiments: {others[0]!r} is not among the study's own "
                         f"(study.experiments: {', '.join(ids) or 'none'})")
    return Difference(kind, _text(f"{where}.text", d.get("text")), tuple(touched))


def _row(i: int, r: Mapping[str, Any]) -> Row:
    where = f"reference[{i}]"
    _keys(where, r, ROW_KEYS)
    metric = r.get("metric")
    if metric not in METRICS:
        raise ValueError(f"{where}.metric: unknown metric {metric!r}; known: "
                         f"{', '.join(METRICS)}")
    value = r.get("value")
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise ValueError(f"{where}.value: must be a number (got {value!r})")
    at = _point(f"{where}.at", r.get("at", {}))
    per = _point(f"{where}.per", r["per"]) if "per" in r else None
    if per is not None and not per:
        raise ValueError(f"{where}.per: names no field (the point the value is a ratio to)")
    unit = r.get("unit")
    units = RATIO_UNITS if per is not None else METRICS[metric].units
    if unit not in units:
        what = "a ratio (per)" if per is not None else metric
        raise ValueError(f"{where}.unit: {unit!r} is not a unit of {what}; known: "
                         f"{', '.join(units)}")
    return Row(i, _text(f"{where}.figure", r.get("figure")), metric, float(value), unit, at,
               per, _text(f"{where}.where", r.get("where"), False),
               _text(f"{where}.note", r.get("note"), False))


def _point(where: str, table: Any) -> dict[str, Any]:
    """`at` or `per`: scenario fields, one value each, parsed as the field's."""
    if not isinstance(table, Mapping):
        raise ValueError(f"{where}: must be a table of scenario fields (at = {{ size = 64 }})")
    names = fields.names()
    out = {}
    for name, value in table.items():
        if name not in names:
            raise ValueError(f"{where}.{name}: not a scenario field")
        values = parse_values(name, value)   # ValueError names the field
        if len(values) != 1:
            raise ValueError(f"{where}.{name}: one value, the point's (got {value!r})")
        out[name] = values[0]
    return out


def of_run(run: Mapping[str, Any]) -> Reference:
    """The reference tables a run stored with its plan (spec.doc): the study as
    it was run, not today's file; empty for a run without them."""
    doc = ((run.get("spec") or {}).get("doc")) or {}
    return load(doc, known=()) if isinstance(doc, Mapping) else Reference()


# -- measuring ----------------------------------------------------------------


def _param(point: Mapping[str, Any], name: str) -> Any:
    scenario = point.get("scenario") or {}
    return scenario[name] if name in scenario else point.get(name)


def same(want: Any, got: Any) -> bool:
    """A value of `at` and a point's: numbers alike as numbers, anything else as text."""
    if isinstance(want, (int, float)) and isinstance(got, (int, float)):
        return math.isclose(float(want), float(got), rel_tol=1e-9, abs_tol=1e-9)
    return str(want) == str(got)


def _searched(point: Mapping[str, Any]) -> bool:
    rate = _param(point, "rate")
    return bool(point.get("goals")) or point.get("search_rate_pps") is not None or \
        isinstance(rate, str) and rate.startswith(("ndr", "pdr"))


def point_value(point: Mapping[str, Any], metric: str) -> float | None:
    """The metric of one stored point in the metric's own unit; None where the
    point does not have it."""
    pairs = int(_param(point, "pairs") or 1)
    if metric in ("rx_mpps", "tx_mpps", "rx_gbps", "loss_pct"):
        if _searched(point):
            return None
        if metric == "loss_pct":
            loss = point.get("loss_ratio")
            return None if loss is None else 100 * loss
        pps = point.get("rx_pps" if metric != "tx_mpps" else "tx_pps")
        if pps is None:
            return None
        return pps * int(_param(point, "size") or 0) * 8 / 1e9 if metric == "rx_gbps" \
            else pps / 1e6
    if metric in ("ndr_mpps", "pdr_mpps"):
        found = _found(point, metric == "ndr_mpps")
        return None if found is None else found * pairs / 1e6
    if metric == "latency_stdev_us":
        hist = point.get("latency_histogram")
        sd = stats.hist_stdev(hist) if hist else None
        return None if sd is None else sd / 1e3
    if metric.startswith("latency_"):
        ns = point.get(f"lat_{metric.split('_')[1]}_ns")
        return None if ns is None else ns / 1e3
    if metric == "image_mb":
        size = point.get("image_size")
        return None if size is None else size / 1e6
    if metric == "outage_ms":
        ns = point.get("outage_ns")
        return None if ns is None else ns / 1e6
    if metric == "routing_down_pct":
        facts = [(e.get("summary") or {}).get("routing") for e in point.get("endpoints") or []]
        facts = [f for f in facts if f and f.get("sessions")]
        total = sum(f["sessions"] * f["seconds"] for f in facts)
        return 100 * sum(f["down_s"] for f in facts) / total if total else None
    if metric == "noticed_ms":
        return (point.get("fault_facts") or {}).get("noticed_ms")
    if metric == "startup_ms":
        ready = [nf["ready_s"] for nf in point.get("nf_results") or []
                 if nf.get("ready_s") is not None]
        return 1e3 * statistics.fmean(ready) if ready else None
    raise ValueError(f"metric {metric!r}: unknown")


def _found(point: Mapping[str, Any], ndr: bool) -> float | None:
    """A search's rate per pair for its ndr goal (ndr) or its first pdr goal."""
    for goal in point.get("goals") or []:
        if (goal.get("loss_ratio") == 0) == ndr:
            return goal.get("conditional_pps")
    if point.get("goals") or point.get("search_rate_pps") is None:
        return None
    threshold = point.get("search_loss_threshold")
    is_ndr = threshold == 0 if threshold is not None else \
        str(_param(point, "rate")).startswith("ndr")
    return point["search_rate_pps"] if is_ndr == ndr else None


@dataclass(frozen=True)
class Measured:
    value: float | None     # the metric's own unit
    points: int = 0         # the points it is the mean of
    configurations: int = 0  # groups of repetitions that matched


def measure(points: Sequence[Mapping[str, Any]], metric: str,
            at: Mapping[str, Any]) -> Measured:
    """The metric at the points whose scenario has `at`'s values: repetitions of
    one point averaged; where several points differ in a field `at` leaves out,
    a rate metric takes the best of them (as the plots' maximum throughput),
    another their mean. Where `at` leaves the mode open and both matched, the
    metric's own mode (METRICS) is taken."""
    m = METRICS[metric]
    matched = [p for p in points if p.get("status", "done") == "done"
               and all(same(v, _param(p, k)) for k, v in at.items())]
    if "mode" not in at and len({_param(p, "mode") for p in matched}) > 1:
        matched = [p for p in matched if _param(p, "mode") == m.mode]
    groups: dict[Any, list[float]] = {}
    for p in matched:
        value = point_value(p, metric)
        if value is not None:
            groups.setdefault(p.get("grp") or p.get("key") or p.get("idx"), []).append(value)
    if not groups:
        return Measured(None)
    means = [statistics.fmean(v) for v in groups.values()]
    value = max(means) if m.best else statistics.fmean(means)
    return Measured(value, sum(len(v) for v in groups.values()), len(groups))


@dataclass(frozen=True)
class Compared:
    """A reference row beside what was measured, both in the row's unit."""

    row: Row
    here: float | None
    points: int = 0
    configurations: int = 0

    @property
    def ratio(self) -> float | None:
        if self.here is None or not self.row.value:
            return None
        return self.here / self.row.value


def compare_row(row: Row, points: Sequence[Mapping[str, Any]]) -> Compared:
    got = measure(points, row.metric, row.at)
    if row.per is None:
        here = None if got.value is None else got.value / row.factor
        return Compared(row, here, got.points, got.configurations)
    base = measure(points, row.metric, {**row.at, **row.per})
    if got.value is None or not base.value:
        return Compared(row, None, got.points + base.points)
    return Compared(row, got.value / base.value / row.factor, got.points + base.points,
                    max(got.configurations, base.configurations))


# -- shapes -------------------------------------------------------------------


@dataclass(frozen=True)
class Shape:
    """A figure's rows of one metric, in the order listed: whether every step
    between two consecutive rows goes the same way here as in the paper (a change
    under FLAT of the larger value is flat); holds None where fewer than two rows
    were measured (no shape)."""

    figure: str
    metric: str
    per: bool
    paper: tuple[float, ...]
    here: tuple[float | None, ...]
    holds: bool | None
    curve: str = ""      # the other fields' values where a figure has several curves

    @property
    def name(self) -> str:
        return " ".join(filter(None, (self.figure, self.metric, "ratio" if self.per else "",
                                      self.curve)))

    def series(self) -> tuple[str, str]:
        """(paper 1 : .73 : .38, here 1 : .78 : –): each normalised to its first
        value."""
        return normalised(self.paper), normalised(self.here)


def step(a: float, b: float) -> int:
    """-1, 0 (flat: a change under FLAT of the larger) or 1."""
    larger = max(abs(a), abs(b))
    if larger == 0 or abs(b - a) < FLAT * larger:
        return 0
    return 1 if b > a else -1


def holds(paper: Sequence[float], here: Sequence[float | None]) -> bool | None:
    both = [(p, h) for p, h in zip(paper, here) if h is not None]
    if len(both) < 2:
        return None
    return all(step(a[0], b[0]) == step(a[1], b[1]) for a, b in zip(both, both[1:]))


def normalised(values: Sequence[float | None]) -> str:
    first = next((v for v in values if v), None)
    if first is None:
        return " : ".join("–" for _ in values)
    return " : ".join("–" if v is None else _short(v / first) for v in values)


def _short(x: float) -> str:
    """1, .73, 1.2, 14: a ratio in two significant places or so."""
    if math.isclose(x, 1.0, abs_tol=5e-3):
        return "1"
    if abs(x) < 1:
        text = f"{x:.2f}"
        return text.replace("0.", ".", 1) if text != "0.00" and text != "-0.00" else "0"
    return f"{x:.2f}".rstrip("0").rstrip(".") if abs(x) < 10 else f"{x:.3g}"


def shapes(compared: Sequence[Compared]) -> list[Shape]:
    """A shape per curve: a figure's rows of one metric, split by the fields
    its rows vary other than its x axis (the field that changes most often from
    row to row), so that no step goes from one curve's end to the next one's
    start."""
    groups: dict[tuple[str, str, bool], list[Compared]] = {}
    for c in compared:
        groups.setdefault((c.row.figure, c.row.metric, c.row.per is not None), []).append(c)
    out = []
    for (figure, metric, per), members in groups.items():
        for name, curve in _curves(members).items():
            paper = tuple(c.row.value for c in curve)
            here = tuple(c.here for c in curve)
            out.append(Shape(figure, metric, per, paper, here,
                             holds(paper, here) if len(curve) > 1 else None, name))
    return out


def _curves(members: Sequence[Compared]) -> dict[str, list[Compared]]:
    """The rows by curve ("switch=ovs switch_in=host"; "" where there is one), in
    the order listed."""
    values: dict[str, list[str]] = {}
    for c in members:
        for k, v in c.row.at.items():
            if str(v) not in values.setdefault(k, []):
                values[k].append(str(v))
    varied = [k for k, vs in values.items() if len(vs) > 1]
    # the x axis: the field that changes most often from one row to the next
    # (rows are listed along a curve), then the one of most values
    changes = {k: sum(a.row.at.get(k) != b.row.at.get(k) for a, b in zip(members, members[1:]))
               for k in varied}
    x = max(varied, key=lambda k: (changes[k], len(values[k])), default=None)
    curves: dict[str, list[Compared]] = {}
    for c in members:
        name = " ".join(f"{k}={fields.show(k, c.row.at[k])}" for k in varied
                        if k != x and k in c.row.at)
        curves.setdefault(name, []).append(c)
    return curves


# -- a run against its paper ---------------------------------------------------


@dataclass
class Comparison:
    reference: Reference
    rows: list[Compared] = field(default_factory=list)
    shapes: list[Shape] = field(default_factory=list)

    def verdict(self) -> dict[str, Any]:
        """points referenced and measured, the median ratio here/paper (of rows
        that are not ratios themselves), shapes holding of those judged."""
        ratios = [c.ratio for c in self.rows if c.ratio is not None and c.row.per is None]
        judged = [s for s in self.shapes if s.holds is not None]
        return {"referenced": len(self.rows),
                "measured": sum(c.here is not None for c in self.rows),
                "median_ratio": statistics.median(ratios) if ratios else None,
                "shapes_hold": sum(bool(s.holds) for s in judged), "shapes": len(judged)}

    def to_dict(self) -> dict[str, Any]:
        return {
            "experiments": list(self.reference.experiments),
            "differences": [{"kind": d.kind, "experiments": list(d.experiments),
                             "text": d.text} for d in self.reference.differences],
            "rows": [{"figure": c.row.figure, "where": c.row.where or None,
                      "metric": c.row.metric, "at": dict(c.row.at),
                      "per": dict(c.row.per) if c.row.per else None, "unit": c.row.unit,
                      "paper": c.row.value, "here": c.here, "ratio": c.ratio,
                      "points": c.points, "note": c.row.note or None} for c in self.rows],
            "shapes": [{"figure": s.figure, "metric": s.metric, "per": s.per,
                        "curve": s.curve or None, "holds": s.holds, "paper": s.series()[0], "here": s.series()[1]}
                       for s in self.shapes],
            "verdict": self.verdict()}


def compare(reference: Reference, points: Sequence[Mapping[str, Any]]) -> Comparison:
    rows = [compare_row(r, points) for r in reference.rows]
    return Comparison(reference, rows, shapes(rows))


def of_stored(run: Mapping[str, Any]) -> Comparison | None:
    """A stored run against the reference it stored; None without one."""
    ref = of_run(run)
    return compare(ref, run.get("points") or []) if ref else None


TABLE_HEADERS = ["figure", "at", "metric", "paper", "here", "unit", "here/paper", "points"]


def table_rows(comparison: Comparison) -> list[list[Any]]:
    """A row per reference row: unmeasured ones say – (None), never 0."""
    return [[c.row.figure + (f" ({c.row.where})" if c.row.where else ""), c.row.at_text(),
             c.row.metric, c.row.value, c.here, c.row.unit, c.ratio, c.points or None]
            for c in comparison.rows]


def shape_lines(comparison: Comparison) -> list[str]:
    """`Table 5 rx_mpps: shape holds yes (paper 1 : .73 …; here 1 : .78 …)`."""
    out = []
    for s in comparison.shapes:
        paper, here = s.series()
        said = "–" if s.holds is None else "yes" if s.holds else "no"
        out.append(f"{s.name}: shape holds {said} (paper {paper}; here {here})")
    return out


def difference_lines(reference: Reference) -> list[str]:
    return [f"{d.kind}" + (f" ({', '.join(d.experiments)})" if d.experiments else "") +
            f": {d.text}" for d in reference.differences]


# -- coverage -----------------------------------------------------------------


def status(reference: Reference, experiment: str) -> str:
    """An experiment's status as a study reproduces it: any gap touching it
    PART, else any hardware HW, else NOW."""
    kinds = {d.kind for d in reference.differences if d.touches(experiment)}
    return PART if "gap" in kinds else HW if "hardware" in kinds else NOW


def all_studies() -> dict[str, Reference]:
    """Every study's reference tables (studies.known()), checked: a study file
    with a wrong one is a UserError naming it."""
    out = {}
    for name in studies.known():
        with open(studies.STUDIES_DIR / f"{name}.toml", "rb") as f:
            doc = tomllib.load(f)
        try:
            out[name] = load(doc)
        except UserError as e:
            raise UserError(f"studies/{name}.toml: {e.field}", e.why) from None
    return out


@dataclass
class Covered:
    """An experiment of the catalogue, and who reproduces it how."""

    experiment: Experiment
    status: str
    studies: list[str]
    differences: list[str]
    verdicts: dict[str, dict[str, Any]] = field(default_factory=dict)   # by study

    def to_dict(self) -> dict[str, Any]:
        e = self.experiment
        return {"id": e.id, "paper": e.paper, "figure": e.figure, "what": e.what,
                "status": self.status, "studies": self.studies,
                "differences": self.differences, "missing": e.missing or None,
                "verdicts": self.verdicts}


def coverage(found: Mapping[str, Reference],
             verdicts: Mapping[str, dict[str, Any]] | None = None) -> list[Covered]:
    """Every experiment of the catalogue, in its order: the studies that claim
    it (study.experiments), the best status any gives it, their differences
    touching it, and (`verdicts`, by study) their last stored run's verdict."""
    rank = [NOW, HW, PART, NO]
    out = []
    for e in catalogue()[1]:
        claims = [name for name, ref in found.items() if e.id in ref.experiments]
        best = min((status(found[n], e.id) for n in claims), key=rank.index, default=NO)
        texts = [f"{d.kind}: {d.text}" + (f" ({n})" if len(claims) > 1 else "")
                 for n in claims for d in found[n].differences if d.touches(e.id)]
        if not claims:
            texts = [f"missing: {e.missing}" if e.missing else
                     "missing: no study claims it (the catalogue says not why)"]
        out.append(Covered(e, best, claims, texts,
                           {n: verdicts[n] for n in claims if verdicts and n in verdicts}))
    return out


def verdict_text(verdict: Mapping[str, Any] | None) -> str:
    """`run 5a33: 5/5 measured, median ×1.12, shapes 1/1`."""
    if not verdict:
        return "–"
    ratio = verdict.get("median_ratio")
    text = (f"{verdict['measured']}/{verdict['referenced']} measured, median "
            f"{'–' if ratio is None else f'×{ratio:.2f}'}, shapes "
            f"{verdict['shapes_hold']}/{verdict['shapes']}")
    return f"run {verdict['run']}: {text}" if verdict.get("run") else text


COVERAGE_HEADERS = ["id", "figure", "status", "study", "differences", "last run"]


def coverage_rows(covered: Iterable[Covered]) -> list[list[str]]:
    return [[c.experiment.id, c.experiment.figure, c.status, ", ".join(c.studies) or "–",
             "; ".join(c.differences) or "–",
             "; ".join(verdict_text(v) for v in c.verdicts.values()) or "–"]
            for c in covered]
