"""Expectations: what a point must measure for a CI job to pass (`expect`).

An expectation is one line, `METRIC OP BOUND`:

    rx_pps >= 2M            an absolute bound, in the metric's unit
    loss_ratio <= 0.1%      (a ratio: 0.001 or 0.1 %)
    p99 <= 50us             (a latency takes a unit: ns, us or µs, ms, s)
    rate >= run - 5%        against the same point of an earlier run (`expect_run`),
    p99 <= run + 10us       less or more a share of its value, or an amount

OP is >=, <=, > or <. `run` is that run's value of the metric, its
repetitions averaged; a share after it (`run - 5%`) is of that value, so a
ratio's slack in points is a plain number (`loss_ratio <= run + 0.001`).

A point's value of a metric is read from what it stored (the store's point,
`Store.run`): METRICS says where. Judging a point is `judge`; matching the
earlier run's point to it is the report's (report/gates.py).
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any, Callable, Mapping

from cnfperf.experiments import stats
from cnfperf.results.model import LATENCY_KEYS

RUN = "run"   # in a bound: the earlier run's value (expect_run)
OPS: dict[str, Callable[[float, float], bool]] = {
    ">=": lambda a, b: a >= b, "<=": lambda a, b: a <= b,
    ">": lambda a, b: a > b, "<": lambda a, b: a < b}
PASSED, MISSED, SKIPPED = "passed", "missed", "skipped"


@dataclass(frozen=True)
class Metric:
    name: str
    unit: str          # rate (pps), bits (bit/s), time (ns), ratio, count
    about: str
    read: Callable[[Mapping[str, Any]], float | None]


def _column(key: str) -> Callable[[Mapping[str, Any]], float | None]:
    return lambda point: point.get(key)


def found_rate(point: Mapping[str, Any]) -> float | None:
    """A search's rate found, over all pairs; any other point's received rate:
    what compare and the trend view call a point's rate."""
    if point.get("trials"):
        found = point.get("search_rate_pps")
        return None if found is None else found * (point.get("pairs") or 1)
    return point.get("rx_pps")


METRICS: dict[str, Metric] = {m.name: m for m in (
    Metric("rate", "rate", "a search's rate found (all pairs), else the received rate",
           found_rate),
    Metric("rx_pps", "rate", "received frames per second, all pairs", _column("rx_pps")),
    Metric("tx_pps", "rate", "sent frames per second, all pairs", _column("tx_pps")),
    Metric("rx_bps", "bits", "received bits per second, all pairs", _column("rx_bps")),
    Metric("loss_ratio", "ratio", "frames lost over frames sent", _column("loss_ratio")),
    Metric("lost", "count", "frames lost", _column("lost")),
    *(Metric(k, "time", f"latency: {k} of all pairs' samples", _column(f"lat_{k}_ns"))
      for k in LATENCY_KEYS),
    Metric("stall_share", "ratio", "the most any poller lost of its window to stalls",
           _column("stall_share")),
    Metric("baseline_share", "ratio", "the received rate over the generator baseline's",
           _column("baseline_share")))}

_SI = {"": 1.0, "k": 1e3, "m": 1e6, "g": 1e9}
_TIME = {"ns": 1.0, "us": 1e3, "µs": 1e3, "ms": 1e6, "s": 1e9}
_AMOUNT = re.compile(r"^([0-9]*\.?[0-9]+(?:e[+-]?[0-9]+)?)\s*([^\s0-9.].*)?$", re.I)
_LINE = re.compile(r"^\s*([a-z0-9_]+)\s*(>=|<=|>|<)\s*(.+?)\s*$", re.I)
_RELATIVE = re.compile(rf"^{RUN}\s*(?:([+-])\s*(.+))?$", re.I)
EXAMPLES = '"rx_pps >= 2M", "loss_ratio <= 0.1%", "p99 <= 50us", "rate >= run - 5%"'


@dataclass(frozen=True)
class Expectation:
    text: str
    metric: Metric
    op: str
    value: float | None = None     # an absolute bound; None: against the run
    sign: int = 0                  # against the run: + or - the slack, 0 none
    slack: float = 0.0             # an amount in the metric's unit
    share: bool = False            # the slack is a share of the run's value

    @property
    def relative(self) -> bool:
        return self.value is None

    def bound(self, earlier: float | None) -> float | None:
        """The value the metric is held to; None against a run that has none."""
        if not self.relative:
            return self.value
        if earlier is None:
            return None
        slack = self.slack * abs(earlier) if self.share else self.slack
        return earlier + self.sign * slack


def parse(text: Any) -> Expectation:
    """One expectation; ValueError saying what is wrong with it."""
    if not isinstance(text, str):
        raise ValueError(f"{text!r} is not a line like {EXAMPLES}")
    m = _LINE.match(text)
    if not m:
        raise ValueError(f"{text!r}: expected METRIC OP BOUND, e.g. {EXAMPLES}")
    name, op, rhs = m.group(1).lower(), m.group(2), m.group(3)
    metric = METRICS.get(name)
    if metric is None:
        raise ValueError(f"{text!r}: unknown metric {name!r}; known: {', '.join(METRICS)}")
    rel = _RELATIVE.match(rhs)
    if rel is None:
        return Expectation(text, metric, op, value=amount(rhs, metric, text))
    if rel.group(1) is None:
        return Expectation(text, metric, op, sign=0)
    slack = rel.group(2).strip()
    share = slack.endswith("%")
    value = _number(slack[:-1].strip(), text) / 100 if share else amount(slack, metric, text)
    return Expectation(text, metric, op, sign=1 if rel.group(1) == "+" else -1,
                       slack=value, share=share)


def amount(text: str, metric: Metric, line: str) -> float:
    """`2M`, `10G`, `50us`, `0.1%`, `12` in the metric's stored unit."""
    m = _AMOUNT.match(text.strip())
    if not m:
        raise ValueError(f"{line!r}: {text!r} is not an amount")
    number, unit = _number(m.group(1), line), (m.group(2) or "").strip()
    if metric.unit == "time":
        if unit not in _TIME:
            raise ValueError(f"{line!r}: a latency takes a unit ({', '.join(_TIME)}), e.g. 50us")
        return number * _TIME[unit]
    if metric.unit == "ratio":
        if unit not in ("", "%"):
            raise ValueError(f"{line!r}: a ratio is a plain number or a % (0.001, 0.1%)")
        return number / 100 if unit == "%" else number
    suffix = {"rate": "pps", "bits": "bps", "count": ""}[metric.unit]
    head = unit.lower().removesuffix(suffix) if suffix else unit.lower()
    if head not in _SI or (metric.unit == "count" and head):
        raise ValueError(f"{line!r}: {unit!r} is no unit of {metric.name} "
                         f"({'frames' if metric.unit == 'count' else 'k, M or G' + ' ' + suffix})")
    return number * _SI[head]


def _number(text: str, line: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise ValueError(f"{line!r}: {text!r} is not a number") from None
    if not math.isfinite(value) or value < 0:
        raise ValueError(f"{line!r}: {text!r} must be a number >= 0")
    return value


def parse_all(values: Any, where: str = "expect") -> tuple[str, ...]:
    """A scenario's `expect` (a line or a list of them), each checked; the lines
    as given. ValueError `expect: …` naming the bad one."""
    lines = [values] if isinstance(values, str) else values
    if not isinstance(lines, (list, tuple)):
        raise ValueError(f"{where}: a list of lines like {EXAMPLES}")
    for line in lines:
        try:
            parse(line)
        except ValueError as e:
            raise ValueError(f"{where}: {e}") from None
    return tuple(dict.fromkeys(lines))


@dataclass(frozen=True)
class Verdict:
    expectation: str
    status: str                 # PASSED, MISSED, SKIPPED
    value: float | None         # the point's, in the metric's stored unit
    bound: float | None         # what it was held to
    why: str = ""               # a miss's or a skip's reason, in words

    def to_dict(self) -> dict[str, Any]:
        return {"expectation": self.expectation, "verdict": self.status, "value": self.value,
                "bound": self.bound, "why": self.why}


def judge(line: str, point: Mapping[str, Any], earlier: list[Mapping[str, Any]] | None,
          run_id: str | None = None) -> Verdict:
    """A stored point held to an expectation; `earlier` the expect_run's points
    that measured the same (None: no run to hold it against, [] one that did not
    measure it). A point that did not finish, or has no value of the metric,
    missed it: a gate that cannot be checked does not pass."""
    try:
        e = parse(line)
    except ValueError as why:   # stored by another cnfperf, with words this one lacks
        return Verdict(line, SKIPPED, None, None, f"this cnfperf cannot read it: {why}")
    if point.get("status") != "done":
        return Verdict(line, MISSED, None, None, f"the point {point.get('status')}")
    value = e.metric.read(point)
    bound = None
    if e.relative:
        if earlier is None:
            return Verdict(line, SKIPPED, value, None, "no earlier run to hold it against")
        known = [v for v in map(e.metric.read, earlier) if v is not None]
        if not known:
            return Verdict(line, SKIPPED, value, None,
                           f"run {run_id} did not measure {e.metric.name} at this point")
        bound = e.bound(stats.mean(known))
    else:
        bound = e.value
    if value is None:
        return Verdict(line, MISSED, None, bound, f"the point measured no {e.metric.name}")
    if OPS[e.op](value, bound):
        return Verdict(line, PASSED, value, bound)
    return Verdict(line, MISSED, value, bound,
                   f"{show(e.metric, value)} is not {e.op} {show(e.metric, bound)}")


def read(line: str) -> Expectation | None:
    """A stored line parsed; None where this cnfperf cannot (judge says why)."""
    try:
        return parse(line)
    except ValueError:
        return None


def show(metric: Metric | None, value: float | None) -> str:
    """A value in the metric's unit, as an expectation would write it."""
    if value is None:
        return "–"
    if metric is None:
        return f"{value:g}"
    if metric.unit == "time":   # µs below what would round to 1000us
        return f"{value / 1e3:.3g}us" if value < 999.5e3 else f"{value / 1e6:.4g}ms"
    if metric.unit == "ratio":
        return f"{value:.4g}"
    if metric.unit == "count":
        return f"{value:.0f}"
    for suffix, scale in (("G", 1e9), ("M", 1e6), ("k", 1e3)):
        if abs(value) >= scale:
            return f"{value / scale:.4g}{suffix}"
    return f"{value:.4g}"
