"""Sweep axes: the values a scenario field may take, expanded into test points.

A field's value may be one value or many:

    64,128,1500       a list (CLI and TOML strings)
    64:64:512         min:step:max, inclusive of max when it falls on the step grid
    [64, "1k:1k:4k"]  a TOML array; string elements are read the same way
    1M, 500k, 2.5M    rates (k = 1e3, M = 1e6, G = 1e9; an optional "pps" suffix)
    ndr, pdr, pdr:X%  zero-loss / partial-drop-rate searches (pdr alone allows 0.1%)

Repeated values are dropped (first one wins), and so is a point that runs as one
before it (tester = auto and the tester it picks, a search-only field at a fixed
rate: the key says so), listed as skipped; so every point has a distinct key.

Order of the plan (stable, documented because --resume and the reader rely on it):
fields by their `axis` in fields.py, data plane first, then names that are not fields
sorted by name; within a field, values in the order the user gave them;
repetitions innermost. The data plane is outermost because starting a switch is
the slowest step; rate is innermost but one so that a received-vs-offered curve
is measured in one go on one switch instance.

Every point has a `key`: a hash of all its parameters plus the repetition
number. `--resume` skips points whose key is already stored, so changing any
parameter (even a fixed one such as duration) makes fresh points rather than
silently reusing old results.
"""
from __future__ import annotations

import hashlib
import itertools
import json
import math
from dataclasses import dataclass, field
from decimal import Decimal, InvalidOperation
from typing import Any, Callable, Iterable, Mapping

from cnfperf import fields as field_table, rate as rates
from cnfperf.experiments import studies

# Fields that configure the sweep itself and never become an axis.
SINGLE_VALUED = tuple(field_table.SWEEP_SETTINGS)

# A typo like 64:1:9000 would schedule days of work; refuse it.
MAX_AXIS_VALUES = 1000
MAX_POINTS = 100_000

_TRUE = {"true", "yes", "on", "1"}
_FALSE = {"false", "no", "off", "0"}


def parse_one(field_name: str, raw: Any, kind: str | None = None) -> Any:
    """One value of a field, as the plain JSON value a point carries."""
    kind = kind or field_table.kind_of(field_name)
    if kind == "rate":
        own = field_table.profiled(field_name)
        f = field_table.by_name().get(own[1] if own else field_name)
        return rates.parse(raw, field_name, search=f.searchable if f else True,
                           zero=f.zero if f else "").value()
    if kind == "int":
        if isinstance(raw, bool) or (isinstance(raw, float) and not raw.is_integer()):
            raise ValueError(f"{field_name}: {raw!r} is not a whole number")
        try:
            return int(raw) if not isinstance(raw, str) else int(raw.strip())
        except ValueError:
            raise ValueError(f"{field_name}: '{raw}' is not a whole number") from None
    if kind == "float":
        if isinstance(raw, bool):
            raise ValueError(f"{field_name}: {raw!r} is not a number")
        try:
            value = float(raw)
        except (TypeError, ValueError):
            raise ValueError(f"{field_name}: '{raw}' is not a number") from None
        if not math.isfinite(value):
            raise ValueError(f"{field_name}: '{raw}' is not a finite number")
        return rates.tidy(value)
    if kind == "bool":
        if isinstance(raw, bool):
            return raw
        s = str(raw).strip().lower()
        if s in _TRUE:
            return True
        if s in _FALSE:
            return False
        raise ValueError(f"{field_name}: '{raw}' is not yes or no")
    if isinstance(raw, (dict, list)):
        raise ValueError(f"{field_name}: {raw!r} is not a single value")
    s = str(raw).strip()
    if not s:
        raise ValueError(f"{field_name}: empty value")
    return s


def parse_values(field_name: str, raw: Any, kind: str | None = None) -> list:
    """Every value a field takes, in the user's order, without repeats."""
    kind = kind or field_table.kind_of(field_name)
    if kind == "cpus" and isinstance(raw, (list, tuple)) and raw and \
            all(isinstance(c, int) and not isinstance(c, bool) for c in raw):
        return [list(raw)]      # [0, 2] is one set of CPUs; ["0-1", "2-3"] sweeps two
    items = raw if isinstance(raw, (list, tuple)) else [raw]
    if not items:
        raise ValueError(f"{field_name}: empty list")
    values: list = []
    for item in items:
        if isinstance(item, (list, tuple, dict)):
            raise ValueError(f"{field_name}: nested lists are not allowed ({item!r})")
        if isinstance(item, str):
            values.extend(_parse_text(field_name, item, kind))
        else:
            values.append(parse_one(field_name, item, kind))
        if len(values) > MAX_AXIS_VALUES:
            raise ValueError(f"{field_name}: more than {MAX_AXIS_VALUES} values")
    unique: list = []
    for v in values:
        if not any(v == u and type(v) is type(u) for u in unique):
            unique.append(v)
    return unique


def _parse_text(field_name: str, text: str, kind: str) -> list:
    # A cpulist's commas are its own; so are a command line's (an NF's
    # cmd:TEMPLATE, in a field of words) when the text starts with one: its
    # first item holds a space. `l2,cmd:x --in {iface1}` sweeps two values.
    parts = [p.strip() for p in text.split(",")]
    own = field_table.profiled(field_name)
    words = getattr(field_table.by_name().get(own[1] if own else field_name), "words", False)
    if kind == "cpus" or words and len(parts[0].split()) > 1:
        return [parse_one(field_name, text, kind)]
    if any(not p for p in parts):
        raise ValueError(f"{field_name}: empty item in '{text}'")
    out: list = []
    for part in parts:
        # a range is start:step:stop; a search's goals (ndr+pdr:1%+pdr:2%) are not
        if part.count(":") == 2 and kind in ("int", "float", "rate") and "dr" not in part.lower():
            out.extend(_parse_range(field_name, part, kind))
        else:
            out.append(parse_one(field_name, part, kind))
    return out


def _parse_range(field_name: str, text: str, kind: str) -> list:
    lo_s, step_s, hi_s = (p.strip() for p in text.split(":"))
    if kind == "rate":
        nums = [rates.number(p.lower(), text, field_name) for p in (lo_s, step_s, hi_s)]
        lo, step, hi = (Decimal(repr(n)) for n in nums)
    else:
        try:
            lo, step, hi = (Decimal(p) for p in (lo_s, step_s, hi_s))
        except InvalidOperation:
            raise ValueError(f"{field_name}: '{text}' is not min:step:max") from None
        if not all(d.is_finite() for d in (lo, step, hi)):
            raise ValueError(f"{field_name}: '{text}': min, step and max must be finite numbers")
        if kind == "int" and any(d != d.to_integral_value() for d in (lo, step, hi)):
            raise ValueError(f"{field_name}: '{text}': min, step and max must be whole numbers")
    if step <= 0:
        raise ValueError(f"{field_name}: '{text}': step must be > 0")
    if lo > hi:
        raise ValueError(f"{field_name}: '{text}': min is larger than max")
    count = int((hi - lo) / step) + 1
    if count > MAX_AXIS_VALUES:
        raise ValueError(f"{field_name}: '{text}' gives {count} values (at most {MAX_AXIS_VALUES})")
    # Decimal steps avoid 0.1+0.2 drift deciding whether max is included.
    return [parse_one(field_name, _decimal_number(lo + i * step), kind) for i in range(count)]


def _decimal_number(d: Decimal) -> int | float:
    return int(d) if d == d.to_integral_value() else float(d)


@dataclass
class SweepPoint:
    index: int                  # position in the plan, from 0
    params: dict                # one value per field
    rep: int = 0                # repetition, from 0
    group: str = ""             # hash of params: shared by all repetitions of a point
    key: str = ""               # group + repetition: what --resume compares
    repeat: int = 1             # repetitions of this point (its part's repeat)
    expect: tuple[str, ...] = ()   # its expectations (fields.EXPECT), as written

    def label(self, fields: Iterable[str]) -> str:
        """The point's values of the given fields (the plan's axes), for progress lines."""
        text = " ".join(f"{f}={field_table.show(f, self.params[f])}"
                        for f in fields if f in self.params)
        return f"{text} rep={self.rep + 1}/{self.repeat}".strip() if self.repeat > 1 else text


@dataclass
class Plan:
    points: list[SweepPoint]
    axes: dict[str, list]                       # fields with more than one value, in plan order
    fixed: dict[str, Any]                       # fields with one value
    repeat: int = 1                             # the most repetitions of any point
    skipped: list[tuple[dict, str]] = field(default_factory=list)

    def describe(self) -> str:
        """What --dry-run prints before the list of points."""
        lines = [f"{len(self.points)} point{'' if len(self.points) == 1 else 's'}" + self._repetitions()
                 + (f", {len(self.skipped)} skipped" if self.skipped else "")]
        for name, values in self.axes.items():
            some = sum(name in p.params for p in self.points) < len(self.points)
            lines.append(f"  {name}: {', '.join(field_table.show(name, v) for v in values)}"
                         + (" (some points)" if some else ""))
        fixed = " ".join(f"{k}={field_table.show(k, v)}" for k, v in self.fixed.items())
        if fixed:
            lines.append(f"  fixed: {fixed}")
        expected = list(dict.fromkeys(line for p in self.points for line in p.expect))
        if expected:
            some = any(set(expected) - set(p.expect) for p in self.points)
            lines.append(f"  {field_table.EXPECT}: {'; '.join(expected)}"
                         + (" (some points)" if some else ""))
        lines += [f"  {note}" for note in self.skip_notes()]
        return "\n".join(lines)

    def _repetitions(self) -> str:
        """` (3 x 2 repetitions)`; where parts repeat differently,
        ` (2 x 10, 4 x 1 repetitions)`."""
        groups: dict[int, set[str]] = {}
        for p in self.points:
            groups.setdefault(p.repeat, set()).add(p.group)
        if max(groups, default=1) == 1:
            return ""
        return " (" + ", ".join(f"{len(g)} x {n}" for n, g in groups.items()) + " repetitions)"

    def skip_notes(self) -> list[str]:
        """One line per reason a point was left out; a reason names what it
        concerns, e.g. `testpmd: dpdk-testpmd not found (Debian package dpdk-dev)`."""
        return list(dict.fromkeys(f"skipped {reason}" for _, reason in self.skipped))


def point_hash(params: Mapping[str, Any]) -> str:
    blob = json.dumps(params, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(blob.encode()).hexdigest()[:16]


def _axis_rank(name: str) -> tuple[int, str]:
    """A field's place in the order; a pair's own value (pair.1.rate) right
    after its field's."""
    order = field_table.axis_order()
    own = field_table.profiled(name)
    if own and own[1] in order:
        return order.index(own[1]), name
    return (order.index(name), "") if name in order else (len(order), name)


Keep = Callable[[dict], "str | None"]
Canonical = Callable[[dict], Mapping[str, Any]]


def expand(fields: Mapping[str, Any], kinds: Mapping[str, str] | None = None,
           keep: Keep | None = None, canonical: Canonical | None = None) -> Plan:
    """The cartesian product of all field values, in plan order.

    keep(params) may return a reason to leave a point out (an api a data plane
    does not support, a data plane this host lacks); skipped points are listed
    in the plan so --dry-run can say why.
    canonical(params) may return the point with every default filled in (the
    validated scenario); the key is hashed from that, so a field left at its
    default and the same value spelled out give the same key, and a changed
    default gives new keys. It may raise ValueError for an invalid point, which
    then fails the whole plan before anything runs.
    """
    kinds = {**field_table.kinds(), **(kinds or {})}
    expect = expectations(fields.get(field_table.EXPECT, ()))
    parsed = {name: parse_values(name, raw, kinds.get(name)) for name, raw in
              profiles(fields).items() if name != field_table.EXPECT}
    repeat = _repeat(parsed.pop("repeat", [1]))
    for name in SINGLE_VALUED:
        parsed.pop(name, None)
    order = sorted(parsed, key=_axis_rank)
    axes = {n: parsed[n] for n in order if len(parsed[n]) > 1}
    fixed = {n: parsed[n][0] for n in order if len(parsed[n]) == 1}
    total = math.prod(len(parsed[n]) for n in order) * repeat
    if total > MAX_POINTS:
        raise ValueError(f"sweep: {total} points (at most {MAX_POINTS}); narrow a range")
    points: list[SweepPoint] = []
    skipped: list[tuple[dict, str]] = []
    first: dict[str, dict] = {}          # group → the params that made it first
    for combo in itertools.product(*(parsed[n] for n in order)):
        params = dict(zip(order, combo))
        reason = keep(params) if keep else None
        if reason:
            skipped.append((params, reason))
            continue
        group = point_hash(canonical(params) if canonical else params)
        if group in first:
            # Values that run as the same point (tester = auto and the tester it
            # picks; a search-only field at a fixed rate): one key, measured once.
            skipped.append((params, _same_point(params, first[group])))
            continue
        first[group] = params
        for rep in range(repeat):
            points.append(SweepPoint(len(points), params, rep, group, f"{group}-{rep}", repeat,
                                     expect))
    return Plan(points, axes, fixed, repeat, skipped)


def expectations(raw: Any) -> tuple[str, ...]:
    """`expect`'s lines (one, or a list), as written; what each says is
    results/expect.py's to check (checks.plan does, before a run)."""
    lines = [raw] if isinstance(raw, str) else raw
    if not isinstance(lines, (list, tuple)) or not all(isinstance(x, str) for x in lines):
        raise ValueError(f"{field_table.EXPECT}: a list of lines like \"rx_pps >= 2M\", "
                         f"not {raw!r}")
    return tuple(dict.fromkeys(line.strip() for line in lines))


def _same_point(params: Mapping[str, Any], earlier: Mapping[str, Any]) -> str:
    """`tester=single: the same point as tester=auto`, naming the values that differ."""
    differ = [n for n in params if params[n] != earlier.get(n)]

    def values(p: Mapping[str, Any]) -> str:
        return " ".join(f"{n}={field_table.show(n, p[n])}" for n in differ)
    return f"{values(params)}: the same point as {values(earlier)}"


def _repeat(values: list) -> int:
    if len(values) != 1:
        raise ValueError("repeat: takes one value, not a list")
    if values[0] < 1:
        raise ValueError(f"repeat: {values[0]} must be >= 1")
    return values[0]


# Tables of a study file that are not scenario fields: [[reference]] holds the
# paper's published numbers, [[difference]] how the study departs from the paper
# (both read by experiments/reference.py, never by the sweep).
STUDY_TABLES = ("study", "quick", "part", "reference", "difference")


def expand_study(doc: Mapping[str, Any], quick: bool = False,
                 kinds: Mapping[str, str] | None = None, keep: Keep | None = None,
                 canonical: Canonical | None = None) -> Plan:
    """A study file: top-level fields, optional [[part]]s, optional [quick] overrides.

    Each part is merged over the top-level fields and expanded on its own (so a
    latency part at 1000 pps and a throughput part unpaced do not multiply).
    With quick, [quick] overrides the top level and every part, then the part's
    own [part.quick]. Parts are then interleaved by data plane, keeping each
    switch's points together.
    """
    _check_tables(doc)
    base = profiles({k: v for k, v in doc.items() if k not in STUDY_TABLES})
    parts = doc.get("part") or [{}]
    plans = []
    for part in parts:
        # a pair's own values merge field by field (pair.N.FIELD): a part that
        # gives pair 1 its rate keeps the size the top level gave it
        tables = [base, {k: v for k, v in part.items() if k != "quick"},
                  *([doc.get("quick", {}), part.get("quick", {})] if quick else [])]
        fields: dict[str, Any] = {}
        for table in tables:
            fields.update(profiles(table))
        # expectations add up: the top level's hold in every part, beside its own
        fields[field_table.EXPECT] = [line for table in tables
                                      for line in expectations(table.get(field_table.EXPECT, ()))]
        plans.append(expand(fields, kinds, keep, canonical))
    return merge(plans)


def _check_tables(doc: Mapping[str, Any]) -> None:
    """A study file's tables are tables, [study] holds what studies.TABLE says."""
    if "quick" in doc and not isinstance(doc["quick"], Mapping):
        raise ValueError("quick: must be a table")
    parts = doc.get("part", [])
    if not isinstance(parts, list) or not all(isinstance(p, Mapping) for p in parts):
        raise ValueError("part: must be an array of tables ([[part]])")
    if any("quick" in p and not isinstance(p["quick"], Mapping) for p in parts):
        raise ValueError("part.quick: must be a table")
    if "study" in doc:
        studies.check_table(doc["study"])


def profiles(table: Mapping[str, Any]) -> dict[str, Any]:
    """A table whose `pair` table gives pairs values of their own ([pair.1] rate
    = "50k", or pair.1.rate = "50k"), with each such value as a name of its own,
    pair.1.rate, as sweeps carry them (an axis like any field's); ValueError
    naming what is not a pair's profile."""
    name = field_table.PROFILE
    out = {k: v for k, v in table.items() if k != name}
    if name not in table:
        return out
    pairs = table[name]
    if not isinstance(pairs, Mapping):
        raise ValueError(f"{name}: must be tables of a pair's own values, by its index: "
                         f"[{name}.1] rate = \"50k\" (or {name}.1.rate = \"50k\"); how many "
                         "pairs: pairs")
    for index, own in pairs.items():
        if not str(index).isdigit():
            raise ValueError(f"{name}.{index}: a pair's profile is named by its index, from 0 "
                             f"([{name}.1] is the second pair's)")
        if not isinstance(own, Mapping):
            raise ValueError(f"{name}.{index}: must be a table of the pair's own values "
                             f"(rate = \"50k\", size = 1500)")
        for field, value in own.items():
            out[f"{name}.{int(index)}.{field}"] = value
    for key in out:
        if (own_field := field_table.profiled(key)) is not None:
            check_profiled(key, own_field[1])
    return out


def check_profiled(name: str, field: str) -> None:
    """ValueError unless `field` is one a pair may set for itself."""
    if field not in field_table.PER_PAIR:
        what = "not a field a pair sets for itself" if field in field_table.names() \
            else "unknown field"
        raise ValueError(f"{name}: {what}; per pair: {', '.join(field_table.PER_PAIR)}")


def override(doc: Mapping[str, Any], flags: Mapping[str, Any]) -> dict[str, Any]:
    """The document with the flags given on the command line winning over it:
    each set at the top level and taken out of [quick], of every [[part]] and of
    its [part.quick], which would otherwise win over the top level. A pair's own
    value (--pair 1.rate=50k: pair.1.rate) wins over that pair's in the file."""
    given = {k: v for k, v in flags.items() if v is not None}

    def without(table: Any) -> Any:
        if not isinstance(table, Mapping):
            return table          # expand_study names the mistake
        if any(field_table.profiled(k) for k in given):
            table = profiles(table)
        kept = {k: v for k, v in table.items() if k not in given}
        if isinstance(table.get("quick"), Mapping):
            kept["quick"] = without(table["quick"])
        return kept

    out = dict(doc)
    if any(field_table.profiled(k) for k in given):
        out = profiles(out)
    if "quick" in out:
        out["quick"] = without(out["quick"])
    if isinstance(out.get("part"), list):
        out["part"] = [without(p) for p in out["part"]]
    out.update(given)
    return out


def merge(plans: list[Plan]) -> Plan:
    """One plan from several, data plane outermost, a point two parts plan
    (same group) kept once, where it first comes, repeated as often as the part
    that repeats it most asks."""
    if len(plans) == 1:
        return plans[0]
    switch_order: list = []
    repeat: dict[str, int] = {}
    expect: dict[str, tuple[str, ...]] = {}   # a point two parts plan: both parts' lines
    for plan in plans:
        for p in plan.points:
            if p.params.get("switch") not in switch_order:
                switch_order.append(p.params.get("switch"))
            repeat[p.group] = max(repeat.get(p.group, 1), p.repeat)
            expect[p.group] = tuple(dict.fromkeys((*expect.get(p.group, ()), *p.expect)))
    points: list[SweepPoint] = []
    for sw in switch_order:
        for plan in plans:
            for p in plan.points:
                if p.params.get("switch") == sw and p.group in repeat:
                    n = repeat.pop(p.group)
                    points += [SweepPoint(len(points) + rep, p.params, rep, p.group,
                                          f"{p.group}-{rep}", n, expect[p.group])
                               for rep in range(n)]
    axes: dict[str, list] = {}
    all_fields: list[str] = []
    for plan in plans:
        for name in [*plan.axes, *plan.fixed]:
            if name not in all_fields:
                all_fields.append(name)
    for name in sorted(all_fields, key=_axis_rank):
        values: list = []
        for p in points:
            if name in p.params and p.params[name] not in values:
                values.append(p.params[name])
        if len(values) > 1 or any(name not in p.params for p in points):
            axes[name] = values
    fixed = {n: points[0].params[n] for n in all_fields if n not in axes and points}
    return Plan(points, axes, fixed, max(p.repeat for p in plans),
                [s for plan in plans for s in plan.skipped])


def nominal_seconds(params: Mapping[str, Any]) -> float:
    """A point's traffic time before overheads: what ETA scales from."""
    seconds = float(params.get("duration", 10)) + float(params.get("warmup", 0))
    rate = params.get("rate", 0)
    if isinstance(rate, str) and rates.parse(rate).is_search:
        # a binary search from 1% to 100% at 1% precision takes about ten trials
        trial = params.get("trial_duration") or params.get("duration", 10)
        seconds = 10 * (float(trial) + float(params.get("warmup", 0)))
    return max(seconds, 0.1)


class Progress:
    """Progress lines with an ETA learnt from the points already finished.

    ETA = remaining nominal seconds x (measured / nominal so far): setup and
    teardown overheads scale in, and a sweep whose points differ in duration
    or mix searches with fixed rates is still estimated sensibly.
    """

    def __init__(self, plan: Plan, done_keys: Iterable[str] = ()):
        self.plan = plan
        done = set(done_keys)
        self.todo = [p for p in plan.points if p.key not in done]
        self.finished = len(plan.points) - len(self.todo)
        self._measured = 0.0
        self._nominal = 0.0
        self._left = sum(nominal_seconds(p.params) for p in self.todo)

    def done(self, point: SweepPoint, seconds: float) -> None:
        self.finished += 1
        self._measured += seconds
        nominal = nominal_seconds(point.params)
        self._nominal += nominal
        self._left = max(0.0, self._left - nominal)

    def eta(self) -> float | None:
        """Seconds left, or None before any point has finished."""
        if self._nominal == 0:
            return None
        return self._left * self._measured / self._nominal

    def line(self, point: SweepPoint) -> str:
        """The line printed as a point starts."""
        width = len(str(len(self.plan.points)))
        eta = self.eta()
        return (f"[{self.finished + 1:>{width}}/{len(self.plan.points)}] "
                f"{point.label(self.plan.axes) or 'single point'}"
                + (f"  eta {format_seconds(eta)}" if eta is not None else ""))


def format_seconds(seconds: float) -> str:
    s = int(round(seconds))
    if s >= 3600:
        return f"{s // 3600}h{s % 3600 // 60:02d}m"
    if s >= 60:
        return f"{s // 60}m{s % 60:02d}s"
    return f"{s}s"
