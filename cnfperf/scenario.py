"""What to measure: a TOML file and/or flags, validated before anything is created.

A scenario file is flat (`switch = "bridge"`, `pairs = 2`, `rate = "500k"`). Any
field may hold a list instead of a value: `expand()` turns the lists into their
cartesian product, one `Scenario` per combination, in the order the fields were
given. Ranges, repetitions and rate searches are further expansion steps here;
nothing downstream of `load()` ever sees a list.
"""
from __future__ import annotations

import itertools
import math
import os
import re
import tomllib
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import (BaseModel, BeforeValidator, ConfigDict, Field, ValidationError,
                      model_validator)

from cnfperf import UserError

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

_RATE = re.compile(r"\s*(\d+(?:\.\d*)?|\.\d+)\s*([kMG]?)\s*(?:pps)?\s*", re.IGNORECASE)
_SCALE = {"": 1.0, "k": 1e3, "m": 1e6, "g": 1e9}


def parse_rate(value: Any) -> float:
    """Packets per second from 1000, 2.5e6, "500k", "2.5M" or "1Mpps"; 0 = as fast as possible."""
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        raise ValueError("expected packets per second, e.g. 1000, \"500k\", \"2.5M\"")
    if isinstance(value, str):
        match = _RATE.fullmatch(value)
        if not match:
            raise ValueError(f"{value!r} is not a rate: expected packets per second, "
                             "e.g. 1000, 500k, 2.5M")
        rate = float(match[1]) * _SCALE[match[2].lower()]
    else:
        rate = float(value)
    if not math.isfinite(rate) or rate < 0:
        raise ValueError("must be 0 (as fast as possible) or a positive rate")
    return rate


def format_rate(pps: float) -> str:
    if pps == 0:
        return "max"
    for suffix, scale in (("G", 1e9), ("M", 1e6), ("k", 1e3)):
        if pps >= scale:
            return f"{pps / scale:g}{suffix}"
    return f"{pps:g}"


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
    rate: Rate = Field(0.0, description="pps per pair, 0 = max; default: max for throughput, "
                                        "1000 for latency")
    duration: float = Field(10.0, gt=0, le=86400)
    warmup: float = Field(1.0, ge=0, le=3600)
    flows: int = Field(1, ge=1, le=MAX_PORT - TX_PORT)
    touch: bool = False
    mmsg: bool = False
    blocking: bool = Field(False, description="blocking sockets (udp, raw); default: on for "
                                              "latency, off for throughput")
    runtime: str = "runc"
    cpus: Cpus = None

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


def expand(raw: dict[str, Any]) -> list[dict[str, Any]]:
    """The cartesian product of every list-valued field, first field outermost."""
    axes = []
    for key, value in raw.items():
        values = value if isinstance(value, list) and key in FIELDS else [value]
        if key == "cpus" and isinstance(value, list) and all(isinstance(c, int) for c in value):
            values = [value]  # [0, 2] is one CPU set; ["0-1", "2-3"] are two
        if not values:
            raise UserError(key, "empty list: give at least one value")
        axes.append([(key, v) for v in values])
    return [dict(combo) for combo in itertools.product(*axes)]


def validate(raw: dict[str, Any]) -> Scenario:
    try:
        scenario = Scenario.model_validate(raw)
    except ValidationError as e:
        raise _user_error(e.errors()[0]) from None
    _check_combination(scenario)
    return scenario


def load(path: Path | None = None, flags: dict[str, Any] | None = None) -> list[Scenario]:
    """Scenarios from a file and flags (flags win), validated; raises UserError."""
    raw = read_file(path) if path else {}
    raw.update({k: v for k, v in (flags or {}).items() if v is not None})
    return [validate(combo) for combo in expand(raw)]


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
    if s.cpus is not None:
        usable = os.sched_getaffinity(0)
        missing = sorted(set(s.cpus) - usable)
        if missing:
            raise UserError("cpus", f"CPU {','.join(map(str, missing))} not usable here; "
                                    f"usable: {','.join(map(str, sorted(usable)))}")
