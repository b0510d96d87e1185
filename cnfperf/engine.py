"""The engine seen from the orchestrator: its argv, and its JSON lines read back.

The contract is engine/README.md. A process prints one `ready` line once it is
polling, `interval` lines while it runs and one `summary` line at the end.
Engines run with --hold: after the summary they keep their ports open, idle,
until the trial closes their stdin (a two-phase stop, see trial.py). The
command lines built here are checked against what the engine takes, as its
--describe says (argv_problems).
"""
from __future__ import annotations

import ipaddress
import json
import re
import threading
from dataclasses import dataclass, field
from typing import IO, Any, Sequence

from cnfperf import polls
from cnfperf.dataplanes.base import Attachment
from cnfperf.dataplanes.dpdk_args import lcores
from cnfperf.host.engine_describe import Description, Option
# Where the engine is lives below the plugins (host/engine_path.py); kept
# importable from here for the commands above.
from cnfperf.host.engine_path import ENGINE_ENV, find_engine
from cnfperf.plan import NF, Endpoint, destinations, spread_address
from cnfperf.scenario import Scenario

LINE_TYPES = ("ready", "start", "interval", "summary")
# Seconds between interval records: the progress display and the raw files use them.
INTERVAL = 1.0
# How long at most a tester or client sends one frame every 10 ms, before its
# warm-up, for the first to come back (--settle): a switch may forward on a
# port only some time after it connected (OVS reconfigures a vhost-user port
# then; half a second when it makes a jumbo MTU's buffer pool). A path that
# works settles in one frame's trip.
SETTLE = 3.0


class EngineOutputError(Exception):
    pass


def argv(engine: str, ep: Endpoint, ports: Sequence[Attachment], peer: Endpoint, hop: str,
         s: Scenario, eal: Sequence[str] = ()) -> list[str]:
    """The command line of one endpoint's engine: `ports` in slot order, `hop` the
    MAC its frames go to next, `eal` its EAL arguments when it runs DPDK. Its
    pair's own values (a profile) win over the point's."""
    s = s.of_pair(ep.pair)
    args = [engine, ep.role, "--api", s.api, *port_args(ports)]
    # Flows spread over a router's prefixes: the sending side addresses them in
    # turn, the receiving side takes frames to any (plan.destinations).
    spread = destinations(s)
    src_ip, dst_ip = ep.ip, peer.ip
    if spread > 1:
        first = spread_address(ep.pair)
        src_ip, dst_ip = (first, dst_ip) if ep.receives_first else (src_ip, first)
    args += ["--src-mac", ports[0].mac, "--src-ip", src_ip, "--sport", str(ep.udp_port),
             "--dst-mac", hop, "--dst-ip", dst_ip, "--dport", str(peer.udp_port),
             "--size", str(s.size), "--burst", str(s.burst), "--flows", str(s.flows),
             "--cpu", ",".join(map(str, ep.all_cores)), "--interval", f"{INTERVAL:g}"]
    if ep.queues > 1:   # a thread per queue of its port, one per core (endpoint_cores)
        args += ["--threads", str(ep.queues)]
    if ep.receives_first:
        # Receivers count until told to stop; the sender flags its warm-up
        # frames, so both sides exclude exactly the same packets.
        args += ["--duration", "0", *_pace(s)]
    else:
        args += ["--rate", s.rate.argv(), "--duration", f"{s.duration:g}",
                 "--warmup", f"{s.warmup:g}"]
    if spread > 1:
        args += ["--ip-span", str(spread)]
    if ep.role in ("tester", "client"):
        args += ["--settle", f"{SETTLE:g}"]
    if s.onoff and ep.role in ("send", "tester"):
        args += ["--onoff", str(s.onoff)]
    contract = conformance_contract(s)
    if contract and ep.role in ("recv", "tester"):
        args += ["--conformance", bucket_arg(*contract)]
    if ep.role == "recv" and peer.host != ep.host:
        # its sender stamps frames with another host's clock (engine/README.md)
        args += ["--clock", "other"]
    if s.touch:
        args.append("--touch")
    if s.mmsg:
        args.append("--mmsg")
    return args + _tail(s, eal)


def nf_argv(engine: str, nf: NF, ports: Sequence[Attachment], hops: Sequence[str],
            s: Scenario, eal: Sequence[str] = (), floating: Sequence[int] = (),
            extra: Sequence[str] = ()) -> list[str]:
    """The command line of a network function's engine: frames leaving its port 1
    go to hops[0] (towards the sender), those leaving port 2 to hops[1]; a
    mirror has no hops (it sends frames back to where they came from).
    Unpinned (`floating`: TestPoint.floating) it is not pinned to its core, and
    DPDK's main lcore floats over those cores too. `extra`: its kind's own
    options (an l3 NF's routes: nfs/engine.py). Its pair's own values (a
    profile: size, burst, the pace) win over the point's."""
    s = s.of_pair(nf.pair)
    args = [engine, "nf", "--nf", s.nf, "--api", nf.ports[0].api, *port_args(ports)]
    for option, mac in zip(("--dst-mac", "--dst-mac2"), hops):
        args += [option, mac]
    args += ["--size", str(s.size), "--burst", str(s.burst), *_threads(nf, floating),
             "--interval", f"{INTERVAL:g}", "--duration", "0", *_pace(s)]
    if floating and eal:
        eal = [*eal, "--lcores", lcores((), floating)]   # its main lcore, the only one
    if s.policer == "engine":
        args += ["--policer", bucket_arg(s.policer_rate.pps, s.policer_bucket)]
    if s.shaper == "engine":
        args += ["--shaper", bucket_arg(s.shaper_rate.pps, s.shaper_bucket, s.shaper_queue)]
    return [*args, *extra, *_tail(s, eal)]


def _threads(nf: NF, floating: Sequence[int]) -> list[str]:
    """--threads (a queue of each port each: Port.queues) and --cpu: its cores
    in turn (as many: check_cpu); none unpinned."""
    queues = nf.ports[0].queues
    return [*(["--threads", str(queues)] if queues > 1 else []),
            *([] if floating else ["--cpu", ",".join(map(str, nf.cores or (nf.cpu,)))])]


def conformance_contract(s: Scenario) -> tuple[float, int] | None:
    """The (rate, bucket) a receiver holds what it got to: the shaper's, the last
    to act on the frames, else the policer's; None without either."""
    if s.shaper != "none":
        return s.shaper_rate.pps, s.shaper_bucket
    if s.policer != "none":
        return s.policer_rate.pps, s.policer_bucket
    return None


def bucket_arg(pps: float, *frames: int) -> str:
    """RATE,BUCKET[,QUEUE] as the engine takes it (--policer, --shaper, --conformance)."""
    return ",".join([f"{pps:.10g}", *map(str, frames)])


def _pace(s: Scenario) -> list[str]:
    """A receiver's or an NF's --rate: the pace an adaptive poller expects
    before it has seen any frames (engine/README.md, poll modes). Only a
    paced sender's rate, and only for adaptive, the one mode that reads it."""
    if not polls.mode(s.poll).paced or s.rate.kind != "pps" or s.rate.pps <= 0:
        return []
    return ["--rate", s.rate.argv()]


def _tail(s: Scenario, eal: Sequence[str]) -> list[str]:
    """What every engine of the point is told last: how it waits for packets, to
    hold its ports after its summary (the two-phase stop) and, kept across the
    point's trials, to run the next one when told (engine_keep), its EAL arguments."""
    return [*(["--poll", s.poll] if s.poll != polls.ENGINE_DEFAULT else []), "--hold",
            *(["--keep"] if s.engine_keep else []), *(["--", *eal] if eal else [])]


def trial_line(ep: Endpoint | NF, s: Scenario, warmup: float) -> str:
    """The line that runs a kept engine's next trial (engine --keep): a sender's
    rate, duration and warm-up; the others' pace (as argv() and nf_argv() give it)."""
    s = s.of_pair(ep.pair)
    if ep.role in ("send", "client", "tester"):
        rate = s.rate.argv()
    else:
        pace = _pace(s)
        rate = pace[1] if pace else "0"
    return f"{rate} {s.duration:g} {warmup:g}\n"


def port_args(ports: Sequence[Attachment]) -> list[str]:
    """--iface/--port for the engine's port 1, --iface2/--port2 for its port 2."""
    args = []
    for suffix, att in zip(("", "2"), ports):
        if att.iface:
            args += [f"--iface{suffix}", att.iface]
        if att.port is not None:
            args += [f"--port{suffix}", str(att.port)]
    return args


def argv_problems(args: Sequence[str], described: Description) -> list[str]:
    """What the engine would refuse of a command line argv() or nf_argv() built,
    each option held to its row in the engine's --describe: a role or option
    it does not have (common, or the --api's own), a value missing or given to a
    flag, a word not among its words, a number out of its range, a value not of
    its type. Empty when it takes each of them; what they say together is the
    engine's to check when it starts (one line, exit 2)."""
    problems = []
    if len(args) < 2 or args[1] not in described.roles:
        return [f"role {args[1] if len(args) > 1 else '(none)'}: not one of "
                f"{', '.join(described.roles)}"]
    words = list(args[2:])
    if "--" in words:   # EAL arguments: the EAL's
        words = words[:words.index("--")]
    api = next((words[i + 1] for i in range(len(words) - 1) if words[i] == "--api"), None)
    i = 0
    while i < len(words):
        spelled = words[i]
        option = described.option(spelled, api) if spelled.startswith("-") else None
        if option is None:
            problems.append(f"{spelled}: not an option of the engine" +
                            (f" with --api {api}" if api else ""))
            break   # whether a value follows is unknown: the engine stops there too
        if not option.takes_value:
            i += 1
            continue
        if i + 1 == len(words):
            problems.append(f"{spelled}: needs a value")
            break
        if (why := _value_problem(option, words[i + 1])) is not None:
            problems.append(f"{spelled} {words[i + 1]}: {why}")
        i += 2
    return problems


_MAC = re.compile(r"[0-9a-fA-F]{2}(:[0-9a-fA-F]{2}){5}")
_SUFFIX = {"k": 1e3, "K": 1e3, "m": 1e6, "M": 1e6, "g": 1e9, "G": 1e9}


def _number(option: Option, value: str) -> float | None:
    """value as the option's kind of number, or None when it is none."""
    try:
        if option.type == "integer":
            return float(int(value)) if value.isdigit() else None
        if option.type == "rate" and value[-1:] in _SUFFIX:
            return float(value[:-1]) * _SUFFIX[value[-1]]
        return float(value)
    except ValueError:
        return None


def _value_problem(option: Option, value: str) -> str | None:
    """Why the engine would refuse `value` for `option`, by its type (engine/README.md,
    --describe), or None."""
    if option.type == "word":
        return None if value in option.words else f"not one of {', '.join(option.words)}"
    if option.type in ("integer", "seconds", "rate"):
        number = _number(option, value)
        if number is None:
            return f"not {'a whole number' if option.type == 'integer' else 'a number'}"
        if not option.min <= number <= option.max or option.above_min and number == option.min:
            return (f"not above {option.min:g} and at most {option.max:g}" if option.above_min
                    else f"not from {option.min:g} to {option.max:g}")
        return None
    if option.type == "cpus":   # N[,N…]: each a CPU in the option's range
        parts = value.split(",")
        if not all(p.isdigit() for p in parts):
            return "not a CPU or a comma-separated list of them"
        if not all(option.min <= int(p) <= option.max for p in parts):
            return f"not from {option.min:g} to {option.max:g}"
        return None
    if option.type == "mac":
        return None if _MAC.fullmatch(value) else "not a MAC address"
    if option.type == "ipv4":
        try:
            ipaddress.IPv4Address(value)
        except ValueError:
            return "not an IPv4 address"
        return None
    if option.type == "bucket":
        parts = value.split(",")
        if len(parts) != len(option.parts):
            return f"not {option.value}"
        why = next(((p.name, w) for p, v in zip(option.parts, parts)
                    if (w := _value_problem(p, v)) is not None), None)
        return f"{why[0]} {why[1]}" if why else None
    if option.type == "route":
        prefix, _, port = value.partition(",")
        try:
            ipaddress.IPv4Network(prefix)
        except ValueError:
            return "not PREFIX/LEN,PORT"
        return None if port in ("1", "2") else "its port is not 1 or 2"
    return None if value else "empty"   # name, an api's own value: theirs to check


def parse_line(line: str) -> dict[str, Any]:
    """One engine record; raises EngineOutputError for anything else."""
    try:
        record = json.loads(line)
    except json.JSONDecodeError as e:
        raise EngineOutputError(f"not JSON ({e.msg}): {line[:120]!r}") from None
    if not isinstance(record, dict) or record.get("type") not in LINE_TYPES:
        raise EngineOutputError(f"not an engine record (type {'|'.join(LINE_TYPES)}): "
                                f"{line[:120]!r}")
    return record


@dataclass
class EngineOutput:
    """Reads one process's stdout on a thread: every line is kept raw on disk
    (the run directory's record of what the engine said), parsed records in
    memory, and for `ready` and `summary` an event the trial can wait on. A
    command that does not print records (a command NF) has its lines kept
    instead, unparsed."""

    endpoint: str
    raw: IO[str]
    parse: bool = True
    _printed: dict[str, threading.Event] = field(
        default_factory=lambda: {"ready": threading.Event(), "summary": threading.Event()})
    records: list[dict[str, Any]] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    lines: list[str] = field(default_factory=list)   # as printed, when not parsed
    _thread: threading.Thread | None = None

    def follow(self, stream: IO[bytes]) -> None:
        self._thread = threading.Thread(target=self._read, args=(stream,), daemon=True,
                                        name=f"engine-{self.endpoint}")
        self._thread.start()

    def _read(self, stream: IO[bytes]) -> None:
        for raw_line in iter(stream.readline, b""):
            line = raw_line.decode(errors="replace").rstrip("\n")
            self.raw.write(line + "\n")
            self.raw.flush()
            if not self.parse:
                self.lines.append(line)
                continue
            if not line.strip():
                continue
            try:
                record = parse_line(line)
            except EngineOutputError as e:
                self.problems.append(str(e))
                continue
            self.records.append(record)
            if record["type"] in self._printed:
                self._printed[record["type"]].set()

    def renew(self, raw: IO[str]) -> None:
        """A kept engine's next trial (engine --keep): its lines go to `raw` and
        what it printed before is forgotten. Called while the engine, held after
        its summary, prints nothing: before its next trial's line is sent."""
        self.raw = raw
        self.records.clear()
        self.problems.clear()
        self.lines.clear()
        for event in self._printed.values():
            event.clear()

    def printed(self, record: str) -> threading.Event:
        """Set once the engine has printed a `ready` (or `summary`) record."""
        return self._printed[record]

    def join(self, timeout: float) -> None:
        if self._thread:
            self._thread.join(timeout)

    @property
    def summary(self) -> dict[str, Any] | None:
        return next((r for r in reversed(self.records) if r["type"] == "summary"), None)

    @property
    def ready(self) -> dict[str, Any] | None:
        return next((r for r in self.records if r["type"] == "ready"), None)

    @property
    def start(self) -> dict[str, Any] | None:
        """A sender's `start` record: its warm-up began (after its --settle)."""
        return next((r for r in self.records if r["type"] == "start"), None)

    @property
    def last_interval(self) -> dict[str, Any] | None:
        return next((r for r in reversed(self.records) if r["type"] == "interval"), None)
