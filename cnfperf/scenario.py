"""What to measure: a TOML file and/or flags, validated before anything is created.

A scenario file is flat (`switch = "bridge"`, `pairs = 2`, `rate = "500k"`). Any
field may hold several values instead of one: a list, `"64,128,1500"` or a range
`"64:64:512"`. `load_plan()` expands them into a sweep (experiments/sweep.py:
its order, repetitions and point keys), one validated `Scenario` per point;
nothing downstream of it ever sees a list. A study file adds `[study]`,
`[[part]]` and `[quick]` tables around the same fields.
"""
from __future__ import annotations

import os
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import (BaseModel, BeforeValidator, ConfigDict, Field, ValidationError,
                      model_validator)

from cnfperf import UserError, tools
from cnfperf.experiments import sweep

MODES = ("throughput", "latency")
APIS = ("udp", "raw", "mmap", "xdp", "dpdk")
SOCKET_APIS = ("udp", "raw")   # the engine's --mmsg and --blocking apply to these
# The reference framework measured latency at 1000 pps: low enough that one burst
# is never queued behind the previous one.
LATENCY_RATE = 1000.0
# UDP ports: receivers listen on RX_PORT + pair, senders use a range from TX_PORT.
RX_PORT = 9000
TX_PORT = 10000
MAX_PORT = 65535
# Fields that only steer an ndr/pdr search: a fixed-rate point's key ignores them.
SEARCH_FIELDS = ("precision", "trial_duration", "search_max")


def _why(e: ValueError) -> str:
    """sweep's messages name the field ("rate: …"); pydantic adds the field itself."""
    text = str(e)
    head, sep, rest = text.partition(": ")
    return rest if sep and " " not in head else text


def parse_rate(value: Any) -> float:
    """Packets per second from 1000, 2.5e6, "500k", "2.5M" or "1Mpps"; 0 = as fast as possible.
    The one rate parser is sweep.parse_rate; this is its fixed-rate half."""
    try:
        rate = sweep.parse_rate(value)
    except ValueError as e:
        raise ValueError(_why(e)) from None
    if rate.is_search:
        raise ValueError(f"{value!r} is a search, not a fixed rate in packets per second")
    return rate.pps


def rate_or_search(value: Any) -> float | str:
    """A fixed rate in pps, or a search as its canonical text ("ndr", "pdr:0.1%")."""
    try:
        rate = sweep.parse_rate(value)
    except ValueError as e:
        raise ValueError(_why(e)) from None
    return str(rate) if rate.is_search else rate.pps


def is_search(rate: float | str) -> bool:
    return isinstance(rate, str)


def format_rate(pps: float | str | None) -> str:
    if isinstance(pps, str):
        return pps
    if not pps:
        return "max"
    for suffix, scale in (("G", 1e9), ("M", 1e6), ("k", 1e3)):
        if pps >= scale:
            return f"{pps / scale:.4g}{suffix}"
    return f"{pps:.4g}"


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


Rate = Annotated[float, BeforeValidator(parse_rate)]
RateOrSearch = Annotated[float | str, BeforeValidator(rate_or_search)]
Cpus = Annotated[tuple[int, ...] | None, BeforeValidator(parse_cpus)]


class Scenario(BaseModel):
    """One fully specified measurement; every field has a value (no lists)."""

    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)

    switch: str = "veth"
    api: Literal[APIS] = "udp"
    pairs: int = Field(1, ge=1, le=250)
    mode: Literal[MODES] = "throughput"
    size: int = Field(64, ge=64, le=9216, description="Ethernet frame size with FCS")
    burst: int = Field(32, ge=1, le=1024, description="default: 32 for throughput, "
                                                      "1 for latency")
    rate: RateOrSearch = Field(0.0, description="pps per pair, 0 = max, or a search: ndr, "
                               "pdr:X%; default: max for throughput, 1000 for latency")
    duration: float = Field(10.0, gt=0, le=86400)
    warmup: float = Field(1.0, ge=0, le=3600)
    flows: int = Field(1, ge=1, le=MAX_PORT - TX_PORT)
    touch: bool = False
    mmsg: bool = False
    blocking: bool = Field(False, description="blocking sockets (udp, raw); default: on for "
                                              "latency, off for throughput")
    runtime: str = "runc"
    cpus: Cpus = None
    limit: Rate = Field(0.0, description="pps a receiver's link delivers at most (tbf), 0 = none")
    precision: float = Field(0.01, gt=0, lt=0.5, description="search: stop when the bracket "
                                                             "is narrower than this fraction")
    trial_duration: float | None = Field(None, gt=0, le=3600, description="search: measured "
                                         "seconds per trial; default: duration")
    search_max: Rate = Field(0.0, description="search: highest rate tried, 0 = what an "
                                              "unpaced first trial offers")

    @model_validator(mode="before")
    @classmethod
    def _mode_defaults(cls, data: Any) -> Any:
        """Defaults that depend on the mode. Latency is measured one frame at a
        time at a low rate (the reference framework's 1000 pps), so no frame
        waits behind its own burst; and with blocking sockets, because a
        client's pacing and receiving threads share a core, and two spinning
        threads on one core measure the scheduler's time slice instead of the
        data plane."""
        if isinstance(data, dict):
            data = dict(data)
            latency = data.get("mode", "throughput") == "latency"
            data.setdefault("rate", LATENCY_RATE if latency else 0.0)
            data.setdefault("burst", 1 if latency else 32)
            data.setdefault("blocking", latency and data.get("api", "udp") in SOCKET_APIS)
        return data

    def describe(self) -> str:
        return (f"{self.switch} {self.api} {self.mode} pairs={self.pairs} size={self.size} "
                f"rate={format_rate(self.rate)}")


FIELDS = tuple(Scenario.model_fields)


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


def validate(raw: dict[str, Any]) -> Scenario:
    try:
        scenario = Scenario.model_validate(raw)
    except ValidationError as e:
        raise _user_error(e.errors()[0]) from None
    _check_combination(scenario)
    return scenario


def canonical(s: Scenario) -> dict[str, Any]:
    """Every field with its value, defaults filled in: what a point's key is hashed from."""
    values = s.model_dump(mode="json")
    if not is_search(s.rate):
        for name in SEARCH_FIELDS:
            values.pop(name)
    return values


def load(path: Path | None = None, flags: dict[str, Any] | None = None) -> list[Scenario]:
    """Scenarios from a file and flags (flags win), validated; raises UserError."""
    return load_plan(path, flags).scenarios


def load_plan(path: Path | None = None, flags: dict[str, Any] | None = None, *,
              quick: bool = False, host: Any = None) -> Sweep:
    """The sweep of a scenario or study file and flags (flags win); raises UserError.
    With `host`, points whose data plane cannot run here are skipped (and listed)."""
    doc = read_file(path) if path else {}
    doc.update({k: v for k, v in (flags or {}).items() if v is not None})
    return build(doc, quick=quick, host=host)


def build(doc: dict[str, Any], *, quick: bool = False, host: Any = None) -> Sweep:
    try:
        plan = sweep.expand_study(doc, quick, keep=_usable_on(host) if host else None,
                                  canonical=lambda params: canonical(validate(params)))
    except ValueError as e:
        field_, sep, why = str(e).partition(": ")
        raise UserError(field_ if sep else "scenario", why if sep else str(e)) from None
    if not plan.points:
        reasons = "; ".join(dict.fromkeys(reason for _, reason in plan.skipped))
        raise UserError("switch", "no point can run on this host" +
                        (f": {reasons}" if reasons else ""))
    return Sweep(plan, [validate(p.params) for p in plan.points],
                 {"doc": doc, "quick": quick, "skip_unusable": host is not None,
                  "skipped": plan.skip_notes()})


def _usable_on(host: Any):
    """keep(params) for sweep.expand: why a point cannot run on this host, or None.
    A study asks for "every data plane"; the ones this host lacks are left out,
    and the plan says why, naming what concerns it first (`testpmd: ...`)."""
    from cnfperf.dataplanes import DATAPLANES
    from cnfperf.runtimes import RUNTIMES

    problems: dict[str, list[str]] = {}

    def keep(params: dict[str, Any]) -> str | None:
        switch, api = str(params.get("switch", "veth")), str(params.get("api", "udp"))
        runtime = str(params.get("runtime", "runc"))
        dataplane = DATAPLANES.get(switch)
        if dataplane is None or runtime not in RUNTIMES:
            return None      # validation names the mistake
        if switch not in problems:
            problems[switch] = dataplane.check(host)
        if problems[switch]:
            return f"{switch}: {'; '.join(problems[switch])}"
        if api not in dataplane.apis:
            return f"{switch} api={api}: {switch} serves api {', '.join(sorted(dataplane.apis))}"
        if host.engine.apis and api not in host.engine.apis:
            return f"api {api}: {tools.engine_without(api)}"
        if dataplane.max_pairs is not None and int(params.get("pairs", 1)) > dataplane.max_pairs:
            return f"{switch} pairs={params['pairs']}: at most {dataplane.max_pairs} pairs"
        if runtime not in problems:
            problems[runtime] = RUNTIMES[runtime].check()
        if problems[runtime]:
            return f"runtime {runtime}: {'; '.join(problems[runtime])}"
        return None
    return keep


def _user_error(err: dict[str, Any]) -> UserError:
    field = ".".join(str(p) for p in err["loc"]) or "scenario"
    if err["type"] == "extra_forbidden":
        return UserError(field, f"unknown field; known fields: {', '.join(FIELDS)}")
    why = err["msg"].removeprefix("Value error, ")
    given = err.get("input")
    if not isinstance(given, dict) and repr(given) not in why:
        why += f" (got {given!r})"
    return UserError(field, why)


def _check_combination(s: Scenario) -> None:
    # Imported here: the data planes import plan/scenario types themselves.
    from cnfperf.dataplanes import DATAPLANES
    from cnfperf.runtimes import RUNTIMES

    dataplane = DATAPLANES.get(s.switch)
    if dataplane is None:
        raise UserError("switch", f"unknown data plane {s.switch!r}; known: "
                                  f"{', '.join(DATAPLANES)}")
    if s.api not in dataplane.apis:
        raise UserError("api", f"{s.switch} supports {', '.join(sorted(dataplane.apis))}; "
                               f"not {s.api}")
    if dataplane.max_pairs is not None and s.pairs > dataplane.max_pairs:
        raise UserError("pairs", f"{s.switch} serves at most {dataplane.max_pairs} pairs")
    if s.runtime not in RUNTIMES:
        raise UserError("runtime", f"unknown runtime {s.runtime!r}; known: {', '.join(RUNTIMES)}")
    if TX_PORT + s.pairs * s.flows - 1 > MAX_PORT:
        raise UserError("flows", f"pairs × flows must stay ≤ {MAX_PORT - TX_PORT + 1} "
                                 f"(UDP source ports from {TX_PORT})")
    if s.mmsg and s.api not in SOCKET_APIS:
        raise UserError("mmsg", f"sendmmsg/recvmmsg batching applies to udp and raw, not {s.api}")
    if s.blocking and s.api not in SOCKET_APIS:
        raise UserError("blocking", f"blocking sockets apply to udp and raw, not {s.api}")
    if is_search(s.rate) and s.mode != "throughput":
        raise UserError("rate", f"{s.rate} searches the offered rate of throughput points; "
                                "latency is measured at a fixed rate")
    if s.limit:
        why = getattr(dataplane, "limit_problem",
                      lambda api: "only the kernel data planes shape a link (tbf)")(s.api)
        if why:
            raise UserError("limit", f"{s.switch} with api {s.api}: {why}")
    if s.cpus is not None:
        usable = os.sched_getaffinity(0)
        missing = sorted(set(s.cpus) - usable)
        if missing:
            raise UserError("cpus", f"CPU {','.join(map(str, missing))} not usable here; "
                                    f"usable: {','.join(map(str, sorted(usable)))}")
