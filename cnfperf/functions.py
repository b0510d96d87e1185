"""What runs in a network function's container: the command, how to tell it is
up, and how to read its counters.

The engine's own kinds (l2, mirror, strip-encap, l3) print the engine's
records: `ready` once its ports are up, a `summary` with per-port counters.
`testpmd` is Debian's dpdk-testpmd in mac forwarding mode, `cmd:TEMPLATE`
a command of the user's, into which the NF's ports are substituted, and
`click:KIND` or `click:FILE` userlevel Click with a configuration of ours or
the user's, the ports substituted likewise (click_nfs.py). They print what they
print, so readiness is a line of their output (testpmd, Click) or a settle
time (a user's command), and counters are what can be read from their output
(testpmd's forward statistics at exit, our Click kinds' counters) or none.
"""
from __future__ import annotations

import shlex
import string
from dataclasses import dataclass
from typing import Any, Sequence

from cnfperf import UserError, click_nfs
from cnfperf.dataplanes.base import Attachment
from cnfperf.dataplanes.dpdk_args import lcores
from cnfperf.dataplanes.testpmd_app import frame_args, parse_fwd_stats
from cnfperf.engine import nf_argv
from cnfperf.fields import CMD
from cnfperf.plan import NF, Pair
from cnfperf.scenario import Scenario
from cnfperf.host.tools import TESTPMD

# What a template may name. The NF's port 1 faces the sender, port 2 the receiver.
PLACEHOLDERS = {
    "iface1": "port 1's kernel interface", "iface2": "port 2's kernel interface",
    "port1": "port 1's DPDK port id", "port2": "port 2's DPDK port id",
    "mac1": "port 1's MAC", "mac2": "port 2's MAC",
    "peer1": "MAC of the hop before (frames leaving port 1 go there)",
    "peer2": "MAC of the hop after (frames leaving port 2 go there)",
    "cpu": "the NF's first core", "cores": "how many cores it has (nf_cores)",
    "lcores": "an EAL --lcores map: main and first worker lcore on its first core, one more "
              "worker per further core (each floating over the cpuset when pin = no)",
    "eal": "EAL arguments for its DPDK ports (several words)",
}
# testpmd forwards between its ports in pairs, rewriting MACs to each port's peer;
# --stats-period keeps it running without a terminal, and SIGINT makes it print
# its forward statistics and exit.
# With two cores (nf_cores = 2) each direction is forwarded by a core of its own;
# more would have nothing to forward (paired ports: two streams).
TESTPMD_NF_CORES = 2
TESTPMD_TEMPLATE = (f"{TESTPMD} {{eal}} --lcores {{lcores}} -- --forward-mode=mac "
                    "--port-topology=paired --nb-cores={cores} --stats-period=1 "
                    "--total-num-mbufs=8192 --eth-peer=0,{peer1} --eth-peer=1,{peer2}")
TESTPMD_READY = "packet forwarding - ports="
SETTLE_S = 2.0   # a user's command gets this long to bring its ports up


@dataclass(frozen=True)
class Command:
    argv: list[str]
    records: bool                 # prints the engine's JSON records
    ready: str | None = None      # a line of its output that says its ports are up


def template_of(kind: str) -> str | None:
    """The command template of a kind that is not the engine's."""
    if kind == "testpmd":
        return TESTPMD_TEMPLATE
    if kind.startswith(CMD):
        return kind[len(CMD):]
    return None


# What an NF's ports have: DPDK port ids and EAL arguments with nf_api = dpdk,
# kernel interface names otherwise (on a kernel data plane DPDK holds the
# interface through af_packet). A placeholder naming what they lack would be
# filled in empty.
DPDK_PLACEHOLDERS = ("port1", "port2", "eal")
KERNEL_PLACEHOLDERS = ("iface1", "iface2")


def check_template(kind: str, nf_api: str) -> None:
    """UserError naming the field when a template (a command's, a Click
    configuration) cannot be filled in, or names what its NF's ports will not have."""
    if click_nfs.is_click(kind):
        _check_click(kind, nf_api)
        return
    template = template_of(kind)
    if template is None:
        return
    if not template.strip():
        raise UserError("nf", "cmd: needs a command, e.g. cmd:my-nf --in {iface1} --out {iface2}")
    try:
        words = shlex.split(template)
        names = [name for word in words for _, name, _, _ in string.Formatter().parse(word)
                 if name is not None]
    except ValueError as e:   # an unclosed quote or brace
        raise UserError("nf", f"{template!r}: {e}") from None
    for name in names:
        _check_name(name, nf_api)
    if any("{eal}" in word and word != "{eal}" for word in words):
        raise UserError("nf", "{eal} is several words: give it a word of its own")
    try:   # a format spec or conversion ({cpu:x}, {mac1!r}) fails here, not mid-run
        for word in words:
            word.format(**{name: "" for name in PLACEHOLDERS} |
                        {"cpu": 0, "cores": 1, "port1": 0, "port2": 0})
    except (ValueError, TypeError, KeyError, IndexError) as e:
        raise UserError("nf", f"{template!r}: {e}") from None


def _check_name(name: str, nf_api: str) -> None:
    if name not in PLACEHOLDERS:
        raise UserError("nf", f"{{{name}}} is not a placeholder; known: "
                              f"{', '.join('{' + p + '}' for p in PLACEHOLDERS)}")
    if name in DPDK_PLACEHOLDERS and nf_api != "dpdk":
        raise UserError("nf", f"{{{name}}} names a DPDK port's; with nf_api = {nf_api} "
                              "the ports are kernel interfaces: {iface1}, {iface2}")
    if name in KERNEL_PLACEHOLDERS and nf_api == "dpdk":
        raise UserError("nf", f"{{{name}}} names a kernel interface; with nf_api = dpdk "
                              "the ports are DPDK's: {port1}, {port2}, {eal}")


def _check_click(kind: str, nf_api: str) -> None:
    """A Click NF's api, and its configuration: ours, or a readable file whose
    placeholders its ports will have."""
    if nf_api not in click_nfs.APIS:
        raise UserError("nf_api", f"Click NFs reach their ports through packet sockets or "
                                  f"DPDK: nf_api = {', '.join(click_nfs.APIS)}, not {nf_api} "
                                  "(Click has no AF_XDP element)")
    for name in click_nfs.placeholders(click_nfs.template(kind, nf_api)):
        if name == "eal":
            raise UserError("nf", "{eal} is for a command line: cnfperf gives Click its EAL "
                                  "arguments itself; name the ports {port1}, {port2}")
        _check_name(name, nf_api)


def command(engine: str, nf: NF, ports: Sequence[Attachment], hops: Sequence[str],
            pair: Pair, s: Scenario, eal: Sequence[str],
            floating: Sequence[int] = ()) -> Command:
    """`engine`: the program the NF's container runs (Click, for a Click NF);
    `floating`: the cores an unpinned NF floats over (TestPoint.floating)."""
    if click_nfs.is_click(s.nf):
        text = click_nfs.template(s.nf, s.nf_api, s.size, s.burst)
        config = click_nfs.config(s.nf, s.nf_api, text, _values(nf, ports, hops, eal, floating),
                              s.size)
        # Click runs a thread per lcore: one, its main, on the NF's core
        # (floating over the point's when unpinned)
        main = lcores((), floating) if floating else f"0@{nf.cpu}"
        return Command(click_nfs.argv(engine, config, eal, main), records=False, ready=click_nfs.READY)
    template = template_of(s.nf)
    if template is None:
        # A router's table: host routes to the two ends, not a cross-connect.
        routes = ["--route", f"{pair.receiver.ip}/32,2", "--route", f"{pair.sender.ip}/32,1"] \
            if s.nf == "l3" else []
        return Command(nf_argv(engine, nf, ports, hops, pair, s, eal, floating, routes),
                       records=True)
    values = _values(nf, ports, hops, eal, floating)
    argv: list[str] = []
    for word in shlex.split(template):
        if word == "{eal}":
            argv += eal
        else:
            argv.append(word.format(**values))
    if s.nf != "testpmd":
        return Command(argv, records=False)
    return Command([*argv, *frame_args(s.size)], records=False, ready=TESTPMD_READY)


def _values(nf: NF, ports: Sequence[Attachment], hops: Sequence[str],
            eal: Sequence[str], floating: Sequence[int]) -> dict[str, Any]:
    cores = nf.cores or (nf.cpu,)
    values: dict[str, Any] = {"cpu": nf.cpu, "cores": len(cores), "eal": " ".join(eal),
                              "lcores": lcores(cores, floating)}
    for n in (1, 2):
        att = ports[n - 1] if len(ports) >= n else None
        values[f"iface{n}"] = att.iface if att and att.iface else ""
        values[f"port{n}"] = att.port if att and att.port is not None else ""
        values[f"mac{n}"] = att.mac if att else ""
        values[f"peer{n}"] = hops[n - 1] if len(hops) >= n else ""
    return values


def counted(kind: str) -> bool:
    """Whether a command NF of this kind prints counters (a missing one fails)."""
    return kind == "testpmd" or click_nfs.ports_of(kind) > 0


def ready(kind: str, lines: list[str]) -> dict[str, Any] | None:
    """An engine-like `ready` record of a command NF's output: Click says when."""
    wall_ns = click_nfs.ready_wall_ns(lines) if click_nfs.is_click(kind) else None
    return {"type": "ready", "wall_ns": wall_ns} if wall_ns is not None else None


def summary(kind: str, output: str) -> dict[str, Any]:
    """An engine-like summary of a command NF's output: testpmd's forward
    statistics and our Click kinds' counters as per-port counters; nothing for
    a user's command or Click configuration."""
    if click_nfs.is_click(kind):
        return click_nfs.summary(kind, output)
    if kind != "testpmd":
        return {"nf": kind, "ports": []}
    stats = parse_fwd_stats(output)
    ports = [{"port": port + 1, "rx_packets": c["rx_packets"], "tx_packets": c["tx_packets"],
              "tx_refused": c["tx_dropped"], "dropped": {"other": c["rx_dropped"]}}
             for port, c in sorted(stats.items())]
    return {"nf": kind, "ports": ports,
            "rx_packets": sum(p["rx_packets"] for p in ports),
            "tx_packets": sum(p["tx_packets"] for p in ports)}
