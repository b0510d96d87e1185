"""What to measure: a TOML file and/or flags, validated before anything is created.

A scenario file is flat (`switch = "bridge"`, `pairs = 2`, `rate = "500k"`). Any
field may hold several values instead of one: a list, `"64,128,1500"` or a range
`"64:64:512"`. A plan (run/checks/plans.py) expands them into a sweep
(experiments/sweep.py: its order, repetitions and point keys), one `Scenario`
per point validated here (`validate`); nothing downstream of it ever sees a list. A study file adds `[study]`, `[[part]]` and
`[quick]` tables around the same fields.

Pairs are alike unless a scenario gives one its own values, its profile:
`[pair.1]` with `rate = "50k"` (or `pair.1.rate = "50k"`, `--pair 1.rate=50k`)
makes the second pair differ from the first, an aggressor beside a victim. Only
the fields of fields.PER_PAIR may differ; each pair's values are validated as a
scenario of its own (its mode's defaults included), and a point carries those
that differ from its own (`Scenario.pair`; `of_pair` gives a pair's view).

The fields themselves are declared once, in fields.py; this module turns that
table into the pydantic model. Whether a valid scenario's parts go together on
this cnfperf and this host (a data plane's apis, a runtime) is decided above
the data planes, in run/checks/, which makes a document a plan: it expands the
sweep, validates each point here (validate) and checks it there, once.
"""
from __future__ import annotations

import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any, Callable, Literal

from pydantic import (BaseModel, BeforeValidator, ConfigDict, Field as Constraint,
                      PlainSerializer, ValidationError, create_model, model_validator)

from cnfperf import UserError, fields, graph as graphs, polls, rate as rates
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


# Each profiled pair's values that differ from the point's: ((index, ((field,
# value), …)), …), fields of fields.PER_PAIR in their order, values as the
# point's (a Rate for rate); dumped and stored as {"1": {"rate": 50000}}.
Profile = tuple[tuple[int, tuple[tuple[str, Any], ...]], ...]


def _read_profile(value: Any) -> Profile:
    """A Profile, or its dump read back (a stored point, a remote agent's)."""
    if isinstance(value, tuple):
        return value
    if not isinstance(value, dict):
        raise ValueError("expected pairs' own values by index, e.g. "
                         f"{{\"1\": {{\"rate\": 50000}}}}")
    out = []
    for index, own in sorted(value.items(), key=lambda kv: int(kv[0])):
        if not str(index).isdigit() or not isinstance(own, dict):
            raise ValueError(f"{fields.PROFILE}.{index}: not a pair's profile")
        values = []
        for name in fields.PER_PAIR:
            if name in own:
                f = fields.by_name()[name]
                v = own[name]
                values.append((name, rates.parse(v, name, search=False, zero=f.zero)
                               if f.kind == "rate" else v))
        if set(own) - set(fields.PER_PAIR):
            raise ValueError(f"{fields.PROFILE}.{index}: "
                             f"{', '.join(sorted(set(own) - set(fields.PER_PAIR)))}: not per pair")
        out.append((int(index), tuple(values)))
    return tuple(out)


def _dump_profile(profile: Profile) -> dict[str, dict[str, Any]]:
    return {str(index): {name: v.value() if isinstance(v, Rate) else v for name, v in own}
            for index, own in profile}


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

    # pairs' own values (Profile): scenario.validate computes them; not a field of
    # the table (fields.py): a value of its own is a pair.N.FIELD name of a field
    pair: Annotated[Any, BeforeValidator(_read_profile), PlainSerializer(_dump_profile)] = ()

    @model_validator(mode="after")
    def _profiles_fit(self) -> "_Scenario":
        for index, _ in self.pair:
            if index >= self.pairs:
                raise ValueError(f"{fields.PROFILE}.{index}: no such pair (pairs = {self.pairs})")
        return self

    def of_pair(self, index: int) -> "_Scenario":
        """The scenario as pair `index` runs it: its own values over the point's."""
        for k, own in self.pair:
            if k == index:
                return self.model_copy(update={**dict(own), "pair": ()})
        return self

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
            data.setdefault("poll", polls.INTERRUPT if latency and sockets else polls.BUSY)
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


def profile(s: Scenario, index: int) -> dict[str, Any]:
    """Every per-pair field's value as pair `index` runs it (its own over the
    point's), as the store keeps what each pair was asked."""
    mine = s.of_pair(index).model_dump(mode="json")
    return {name: mine[name] for name in fields.PER_PAIR}


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


Keep = Callable[[dict], "str | None"]  # why a point cannot run on this host, or None


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


def validate(raw: dict[str, Any]) -> Scenario:
    """A point's parameters (one value each; a pair's own as pair.N.FIELD) as a
    Scenario, or UserError naming the field: its fields valid on their own
    (whether they go together is run/checks' question)."""
    base, own = _split(raw)
    if base.get("graph"):
        base = _with_graph(base)
    try:
        scenario = Scenario.model_validate(base)
    except ValidationError as e:
        raise _user_error(e.errors()[0]) from None
    if own:
        scenario = _with_profiles(scenario, base, own)
    return scenario


def _with_graph(raw: dict[str, Any]) -> dict[str, Any]:
    """A graph's parameters: its text canonical (one link per `;`, the key's),
    nfs its NFs' count (given otherwise: refused)."""
    if not isinstance(raw["graph"], str):
        raise UserError("graph", f"expected the links as text, got {raw['graph']!r}")
    try:
        parsed = graphs.parse(raw["graph"])
    except ValueError as e:
        raise UserError("graph", str(e)) from None
    count = len(parsed.nfs)
    if raw.get("nfs", count) != count:
        raise UserError("nfs", f"{raw['nfs']}, but the graph has {count} network functions "
                               f"({', '.join(parsed.nfs)}): leave nfs out, the graph sets it")
    return {**raw, "graph": str(parsed), "nfs": count}


def _split(raw: dict[str, Any]) -> tuple[dict[str, Any], dict[int, dict[str, Any]]]:
    """The point's own parameters, and each pair's (pair.1.rate: {1: {"rate": …}})."""
    base: dict[str, Any] = {}
    own: dict[int, dict[str, Any]] = {}
    for name, value in raw.items():
        found = fields.profiled(name)
        if found is None:
            base[name] = value
            continue
        try:
            sweep.check_profiled(name, found[1])
        except ValueError as e:
            raise UserError(name, _why(e)) from None
        own.setdefault(found[0], {})[found[1]] = value
    return base, own


def _with_profiles(s: Scenario, raw: dict[str, Any],
                   own: dict[int, dict[str, Any]]) -> Scenario:
    """`s` with its pairs' own values: each pair validated as a scenario of its
    own (so a pair in latency mode gets latency's rate, burst and poll unless
    it says), then kept where it differs from the point."""
    name = fields.PROFILE
    if s.rate.is_search:
        raise UserError("rate", f"{s.rate}: a search is not run with pairs' own profiles "
                                f"({name}.N): it would judge every pair's loss as one; sweep "
                                f"fixed rates instead (rate = \"10k,50k\", {name}.1.rate = …)")
    if s.soak:
        raise UserError("soak", f"{s.soak:g}: a soak stores its seconds at one rate per pair, "
                                f"not with pairs' own profiles ({name}.N); measure a long "
                                "fixed trial instead (duration)")
    profile = []
    for index in sorted(own):
        where = f"{name}.{index}"
        if index >= s.pairs:
            raise UserError(where, f"no such pair: pairs = {s.pairs} (pairs 0 to {s.pairs - 1})")
        try:   # the NFs' api is the point's: their ports are the data plane's
            mine = Scenario.model_validate({**raw, **own[index], "nf_api": s.nf_api})
        except ValidationError as e:
            err = e.errors()[0]
            field_ = str(err["loc"][0]) if err["loc"] else ""
            problem = _user_error(err)
            raise UserError(f"{where}.{field_}" if field_ in own[index] else where,
                            problem.why) from None
        if mine.rate.is_search:
            raise UserError(f"{where}.rate", f"{mine.rate}: a pair's own rate is a fixed rate, "
                                             "not a search")
        if mine.size > s.size:
            raise UserError(f"{where}.size", f"{mine.size} is larger than size ({s.size}): the "
                                             "switch, its links and NFs are made for size; "
                                             "give size the largest pair's")
        values = tuple((f, getattr(mine, f)) for f in fields.PER_PAIR
                       if getattr(mine, f) != getattr(s, f))
        if values:
            profile.append((index, values))
    return s.model_copy(update={"pair": tuple(profile)})


def canonical(s: Scenario) -> dict[str, Any]:
    """Every field with its value, defaults filled in: what a point's key is hashed
    from; a field added later (Field.late) only where it is not at its default, so
    that a run stored before it keeps its points' keys."""
    values = s.model_dump(mode="json")
    if not values.get(fields.PROFILE):   # pairs alike: keys as before profiles
        values.pop(fields.PROFILE, None)
    for f in fields.late():
        if values.get(f.name) == f.default:
            values.pop(f.name)
    if not s.rate.is_search:
        for name in fields.search_only():
            values.pop(name, None)
    return values


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
