"""What to measure: a TOML file and/or flags, validated before anything is created.

A scenario file is flat (`switch = "bridge"`, `pairs = 2`, `rate = "500k"`). Any
field may hold several values instead of one: a list, `"64,128,1500"` or a range
`"64:64:512"`. `build()` expands them into a sweep (experiments/sweep.py: its
order, repetitions and point keys), one validated `Scenario` per point; nothing
downstream of it ever sees a list. A study file adds `[study]`, `[[part]]` and
`[quick]` tables around the same fields.

The fields themselves are declared once, in fields.py; this module turns that
table into the pydantic model. Whether a valid scenario's parts go together on
this cnfperf and this host (a data plane's apis, a runtime) is decided above
the data planes, in checks.py, which hands its checks to build().
"""
from __future__ import annotations

import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any, Callable, Literal

from pydantic import (BaseModel, BeforeValidator, ConfigDict, Field as Constraint,
                      PlainSerializer, ValidationError, create_model, model_validator)

from cnfperf import UserError, fields, rate as rates
from cnfperf.experiments import sweep
from cnfperf.fields import Field
from cnfperf.rate import Rate

SOCKET_APIS = ("udp", "raw")   # the engine's --mmsg applies to these
# Fields that were renamed: an old scenario file gets told the new spelling.
RENAMED = {"blocking": 'poll = "interrupt" (blocking = true) or "busy"'}
# The reference framework measured latency at 1000 pps: low enough that one burst
# is never queued behind the previous one.
LATENCY_RATE = 1000.0


def _why(e: ValueError) -> str:
    """Parsers name the field ("rate: …"); pydantic adds the field itself."""
    text = str(e)
    head, sep, rest = text.partition(": ")
    return rest if sep and " " not in head else text


def parse_cpus(value: Any) -> tuple[int, ...] | None:
    """A Linux cpulist ("0-3,6") or a list of CPU numbers."""
    if value is None:
        return None
    if isinstance(value, int) and not isinstance(value, bool):
        value = [value]
    if isinstance(value, str):
        cpus: list[int] = []
        for part in value.split(","):
            lo, sep, hi = part.strip().partition("-")
            if not lo.isdigit() or (sep and not hi.isdigit()):
                raise ValueError(f"{value!r} is not a CPU list: expected e.g. \"0-3\" or \"0,2\"")
            cpus.extend(range(int(lo), int(hi if sep else lo) + 1))
        value = cpus
    if not isinstance(value, (list, tuple)) or not value or \
            any(isinstance(c, bool) or not isinstance(c, int) or c < 0 for c in value):
        raise ValueError("expected a CPU list such as \"0-3\" or [0, 2]")
    return tuple(sorted(set(value)))


def _rate_type(f: Field) -> Any:
    def check(value: Any) -> Rate:
        try:
            return rates.parse(value, f.name, search=f.searchable, zero=f.zero)
        except ValueError as e:
            raise ValueError(_why(e)) from None
    # Points carry, hash and store the plain value (a number, or "ndr").
    return Annotated[Rate, BeforeValidator(check), PlainSerializer(Rate.value)]


def _annotation(f: Field) -> Any:
    if f.kind == "rate":
        return _rate_type(f)
    if f.kind == "cpus":
        return Annotated[tuple[int, ...] | None, BeforeValidator(parse_cpus)]
    kind = {"str": str, "int": int, "float": float, "bool": bool}.get(f.kind)
    if f.kind == "choice":
        kind = Literal[f.choices]
    if kind is None:
        raise TypeError(f"field {f.name}: unknown kind {f.kind!r}")
    return kind | None if f.optional else kind


class _Scenario(BaseModel):
    """One fully specified measurement; every field has a value (no lists)."""

    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)

    @model_validator(mode="before")
    @classmethod
    def _mode_defaults(cls, data: Any) -> Any:
        """Defaults that depend on the mode. Latency is measured one frame at a
        time at a low rate (the reference framework's 1000 pps), so no frame
        waits behind its own burst; and on sockets with poll = interrupt, because
        a client's pacing and receiving threads share a core, and two spinning
        threads on one core measure the scheduler's time slice instead of the
        data plane."""
        if isinstance(data, dict):
            data = dict(data)
            latency = data.get("mode", "throughput") == "latency"
            data.setdefault("rate", LATENCY_RATE if latency else 0.0)
            data.setdefault("burst", 1 if latency else 32)
            sockets = data.get("api", "udp") in SOCKET_APIS
            data.setdefault("poll", "interrupt" if latency and sockets else "busy")
            # mmap hands a sleeping reader whole blocks, on a block's 1 ms timeout at
            # latency's low rate: raw sockets wake per frame.
            data.setdefault("nf_api", "dpdk" if data.get("api") == "dpdk"
                            else "raw" if latency else "mmap")
        return data

    def describe(self) -> str:
        """`veth udp throughput pairs=1 size=64 rate=max`: progress lines, --dry-run."""
        return " ".join(str(getattr(self, f.name)) if f.label == "bare"
                        else f"{f.name}={fields.show(f.name, getattr(self, f.name))}"
                        for f in fields.described())


def _model() -> type[_Scenario]:
    """The model of the field table as it stands when this module is imported."""
    return create_model("Scenario", __base__=_Scenario, **{
        # Rates are Rate objects from their default on (0.0 is written as a number).
        f.name: (_annotation(f), Constraint(f.default, ge=f.ge, gt=f.gt, le=f.le, lt=f.lt,
                                            description=f.help,
                                            validate_default=f.kind == "rate"))
        for f in fields.FIELDS})


Scenario = _model()


def read_file(path: Path) -> dict[str, Any]:
    try:
        with open(path, "rb") as f:
            return tomllib.load(f)
    except OSError as e:
        raise UserError("scenario", f"cannot read {path}: {e.strerror}") from None
    except tomllib.TOMLDecodeError as e:
        raise UserError("scenario", f"{path}: {e}") from None


@dataclass
class Sweep:
    """A validated sweep: the plan (order, keys, repetitions, skipped points) and one
    Scenario per planned point, in the same order."""

    plan: sweep.Plan
    scenarios: list[Scenario]
    # What it was made from, stored with the run: `--resume` rebuilds the same plan.
    spec: dict[str, Any] = field(default_factory=dict)


Check = Callable[[Scenario], None]     # raises UserError when the parts do not go together
Keep = Callable[[dict], "str | None"]  # why a point cannot run on this host, or None
Settle = Callable[[Scenario], Scenario]   # the scenario as it runs (tester = auto chosen)


def in_turn(value: str, count: int) -> tuple[str, ...]:
    """`count` places from a value naming them joined by + (nf_host, nf_in,
    tester_host): taken in turn, the last repeating (`a+b`, 3: a, b, b)."""
    places = value.split("+")
    return tuple(places[min(i, len(places) - 1)] for i in range(count))


def tester_hosts(s: Scenario) -> tuple[str, str]:
    """Where a path's sending end (send, client; the single tester's one
    engine) and its receiving end (recv, server) run: tester_host names one
    host for both, or two joined by + (a+b: the sender on a). ValueError for
    more than two, or an empty name."""
    ends = s.tester_host.split("+")
    if len(ends) > 2 or "" in ends:
        raise ValueError(f"{s.tester_host!r}: one host for both ends, or the sender's and the "
                         "receiver's joined by + (local+dut)")
    sender, receiver = in_turn(s.tester_host, 2)
    return sender, receiver


def validate(raw: dict[str, Any], check: Check | None = None) -> Scenario:
    try:
        scenario = Scenario.model_validate(raw)
    except ValidationError as e:
        raise _user_error(e.errors()[0]) from None
    if check:
        check(scenario)
    return scenario


def canonical(s: Scenario) -> dict[str, Any]:
    """Every field with its value, defaults filled in: what a point's key is hashed
    from; a field added later (Field.late) only where it is not at its default, so
    that a run stored before it keeps its points' keys."""
    values = s.model_dump(mode="json")
    for f in fields.late():
        if values.get(f.name) == f.default:
            values.pop(f.name)
    if not s.rate.is_search:
        for name in fields.search_only():
            values.pop(name, None)
    return values


def build(doc: dict[str, Any], *, quick: bool = False, check: Check | None = None,
          keep: Keep | None = None, settle: Settle | None = None) -> Sweep:
    """The sweep of a scenario or study document; raises UserError. `keep` leaves
    out (and lists) points this host cannot run; `check` refuses combinations;
    a point's key is hashed from what `settle` makes of its scenario. The sweep's
    scenarios are as asked (tester = auto is chosen as each point is placed)."""
    settled = settle or (lambda s: s)
    try:
        plan = sweep.expand_study(
            doc, quick, keep=keep,
            canonical=lambda params: canonical(settled(validate(params, check))))
    except ValueError as e:
        field_, sep, why = str(e).partition(": ")
        raise UserError(field_ if sep else "scenario", why if sep else str(e)) from None
    if not plan.points:
        reasons = "; ".join(dict.fromkeys(reason for _, reason in plan.skipped))
        raise UserError("switch", "no point can run on this host" +
                        (f": {reasons}" if reasons else ""))
    return Sweep(plan, [validate(p.params, check) for p in plan.points],
                 {"doc": doc, "quick": quick, "skip_unusable": keep is not None,
                  "skipped": plan.skip_notes(),
                  "defaults": {k: fields.by_name()[k].default for k in fields.CHANGED_DEFAULTS}})


def _user_error(err: dict[str, Any]) -> UserError:
    field_ = ".".join(str(p) for p in err["loc"]) or "scenario"
    if err["type"] == "extra_forbidden" and field_ in RENAMED:
        return UserError(field_, f"renamed: now {RENAMED[field_]}")
    if err["type"] == "extra_forbidden":
        return UserError(field_, f"unknown field; known fields: {', '.join(fields.names())}")
    why = err["msg"].removeprefix("Value error, ")
    given = err.get("input")
    if not isinstance(given, dict) and repr(given) not in why:
        why += f" (got {given!r})"
    return UserError(field_, why)
