"""The placeholders of a command template or a Click configuration: what an
NF's ports are called, filled in when it starts, checked before the run.
"""
from __future__ import annotations

import shlex
import string
from typing import TYPE_CHECKING, Any, Sequence

from cnfperf import UserError
from cnfperf.dataplanes.dpdk_args import lcores

if TYPE_CHECKING:
    from cnfperf.dataplanes.base import Attachment
    from cnfperf.plan import NF

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
# What an NF's ports have: DPDK port ids and EAL arguments with nf_api = dpdk,
# kernel interface names otherwise (on a kernel data plane DPDK holds the
# interface through af_packet). A placeholder naming what they lack would be
# filled in empty.
DPDK_PLACEHOLDERS = ("port1", "port2", "eal")
KERNEL_PLACEHOLDERS = ("iface1", "iface2")


def check_command(template: str, nf_api: str) -> None:
    """UserError naming `nf` when a command template cannot be filled in, or
    names what its NF's ports will not have."""
    if not template.strip():
        raise UserError("nf", "cmd: needs a command, e.g. cmd:my-nf --in {iface1} --out {iface2}")
    try:
        words = shlex.split(template)
        names = [name for word in words for _, name, _, _ in string.Formatter().parse(word)
                 if name is not None]
    except ValueError as e:   # an unclosed quote or brace
        raise UserError("nf", f"{template!r}: {e}") from None
    for name in names:
        check_name(name, nf_api)
    if any("{eal}" in word and word != "{eal}" for word in words):
        raise UserError("nf", "{eal} is several words: give it a word of its own")
    try:   # a format spec or conversion ({cpu:x}, {mac1!r}) fails here, not mid-run
        for word in words:
            word.format(**{name: "" for name in PLACEHOLDERS} |
                        {"cpu": 0, "cores": 1, "port1": 0, "port2": 0})
    except (ValueError, TypeError, KeyError, IndexError) as e:
        raise UserError("nf", f"{template!r}: {e}") from None


def check_name(name: str, nf_api: str) -> None:
    if name not in PLACEHOLDERS:
        raise UserError("nf", f"{{{name}}} is not a placeholder; known: "
                              f"{', '.join('{' + p + '}' for p in PLACEHOLDERS)}")
    if name in DPDK_PLACEHOLDERS and nf_api != "dpdk":
        raise UserError("nf", f"{{{name}}} names a DPDK port's; with nf_api = {nf_api} "
                              "the ports are kernel interfaces: {iface1}, {iface2}")
    if name in KERNEL_PLACEHOLDERS and nf_api == "dpdk":
        raise UserError("nf", f"{{{name}}} names a kernel interface; with nf_api = dpdk "
                              "the ports are DPDK's: {port1}, {port2}, {eal}")


def fill_command(template: str, values: dict[str, Any], eal: Sequence[str]) -> list[str]:
    """The template's words, its placeholders filled in; {eal} is several words."""
    argv: list[str] = []
    for word in shlex.split(template):
        if word == "{eal}":
            argv += eal
        else:
            argv.append(word.format(**values))
    return argv


def values(nf: NF, ports: Sequence[Attachment], hops: Sequence[str],
           eal: Sequence[str], floating: Sequence[int]) -> dict[str, Any]:
    """Every placeholder's value for one NF (empty where its ports lack it)."""
    cores = nf.cores or (nf.cpu,)
    out: dict[str, Any] = {"cpu": nf.cpu, "cores": len(cores), "eal": " ".join(eal),
                           "lcores": lcores(cores, floating)}
    for n in (1, 2):
        att = ports[n - 1] if len(ports) >= n else None
        out[f"iface{n}"] = att.iface if att and att.iface else ""
        out[f"port{n}"] = att.port if att and att.port is not None else ""
        out[f"mac{n}"] = att.mac if att else ""
        out[f"peer{n}"] = hops[n - 1] if len(hops) >= n else ""
    return out
