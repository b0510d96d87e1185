"""What the engine says of itself: `cnfperf-engine --describe` (engine/README.md,
--describe), its roles, apis, NF kinds, poll modes and options, read once per
binary. cnfperf derives from it what it can when an engine is there (the argv
it builds is checked against its options: engine.argv_problems); the lists it
needs before (the `nf` and `poll` values, the apis) are held equal to it by
tests/unit/test_engine_describe.py.
"""
from __future__ import annotations

import functools
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cnfperf import SystemFailure
from cnfperf.host.system import CommandFailed, run
from cnfperf.polls import PollMode


class DescribeError(SystemFailure):
    """The engine gave no description: not built, built before it had
    --describe, or it said something else."""


@dataclass(frozen=True)
class Option:
    """A common option (opts_table.c's row) or an api's own (its type `flag`
    or `value`: the api's own setter checks it)."""
    name: str
    letter: str | None
    type: str          # flag, word, integer, seconds, rate, name, mac, ipv4, bucket, route, value
    value: str | None  # the value's name in --help (RATE,BUCKET); None for a flag or a word
    words: tuple[str, ...] = ()
    min: float | None = None
    max: float | None = None
    default: Any = None
    ends: bool = False   # --help, --version, --describe: the parse ends there
    egress: bool = False  # an api's option that names a second port
    help: str = ""
    parts: tuple[Option, ...] = ()   # a bucket's RATE, BUCKET[, QUEUE], each a number
    above_min: bool = False          # a part whose min itself is refused (a RATE of 0)

    @property
    def takes_value(self) -> bool:
        return self.type != "flag"


@dataclass(frozen=True)
class Api:
    name: str
    l2: bool            # frames with the headers the engine builds (not udp)
    needs_iface: bool
    options: tuple[Option, ...]
    # a thread per queue of a port (nf, send, recv --threads); None: an engine
    # built before --describe said
    queues: bool | None = None


@dataclass(frozen=True)
class EngineNf:
    """An NF kind of the engine (core/nf.c): the ports it takes, whether it
    writes a next hop's MAC, whether it routes (--route)."""
    name: str
    ports: int
    next_hop: bool
    routed: bool


@dataclass(frozen=True)
class Description:
    version: str
    roles: dict[str, dict[str, bool]]   # name -> its properties (struct role)
    apis: tuple[Api, ...]               # built in, the default first
    known_apis: tuple[str, ...]         # it may be built with
    nfs: tuple[EngineNf, ...]           # the default first
    polls: tuple[PollMode, ...]
    options: tuple[Option, ...]

    def api(self, name: str) -> Api | None:
        return next((a for a in self.apis if a.name == name), None)

    def option(self, spelled: str, api: str | None = None) -> Option | None:
        """The option `--name` or `-l` stands for: a common one, or one of the
        api's own (the first api's when none is named); None if neither."""
        own = self.api(api) if api else self.apis[0] if self.apis else None
        for o in (*self.options, *(own.options if own else ())):
            if spelled in (f"--{o.name}", *([f"-{o.letter}"] if o.letter else [])):
                return o
        return None


def _option(row: dict[str, Any]) -> Option:
    return Option(name=row["name"], letter=row.get("letter"), type=row["type"],
                  value=row.get("value"), words=tuple(row.get("words", ())), min=row.get("min"),
                  max=row.get("max"), default=row.get("default"), ends=row.get("ends", False),
                  egress=row.get("egress", False), help=row.get("help", ""),
                  parts=tuple(map(_option, row.get("parts", ()))),
                  above_min=row.get("above_min", False))


def parse(text: str) -> Description:
    """The document --describe printed; ValueError (KeyError, TypeError) if it is none."""
    d = json.loads(text)
    return Description(
        version=str(d["version"]),
        roles={r.pop("name"): r for r in d["roles"]},
        apis=tuple(Api(a["name"], a["l2"], a["needs_iface"], tuple(map(_option, a["options"])),
                       a.get("queues")) for a in d["apis"]),
        known_apis=tuple(d["known_apis"]),
        nfs=tuple(EngineNf(**k) for k in d["nfs"]),
        polls=tuple(PollMode(**m) for m in d["polls"]),
        options=tuple(map(_option, d["options"])),
    )


@functools.cache   # a binary says the same every time: once per process
def describe(engine: Path) -> Description:
    """What `engine --describe` says; DescribeError (exit 1) naming the binary
    and `make build` when it says nothing of the kind."""
    try:
        out = run([engine, "--describe"], what=f"asking {engine} what it has", timeout=10)
    except CommandFailed as e:
        raise DescribeError(f"{e} (an engine built before --describe? make build)") from None
    try:
        return parse(out)
    except (ValueError, KeyError, TypeError) as e:
        raise DescribeError(f"{engine} --describe gave no description ({e!r:.80}): "
                            "make build") from None
