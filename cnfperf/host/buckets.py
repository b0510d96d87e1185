"""Token buckets on kernel links: the shaper (tc's tbf or htb, a root qdisc on
the link's egress) and the policer (nftables' netdev ingress hook, or tc's
police action where the kernel has it), each journaled before it is made and
removed by its owner at teardown or by `cnfperf cleanup` (UNDO).

Rates and buckets are frames, as the engine's are (one word per concept): a
kernel bucket in bytes holds `bucket` frames of the point's size without the
FCS (what tc and nftables count of a frame), a tc rate in bits per second is
`rate` such frames a second. nftables' limit counts packets itself (`burst N
packets`), whole ones per second.
"""
from __future__ import annotations

import json
import math
from typing import Any, Callable

from cnfperf.host import tools
from cnfperf.host.facts import kernel_option
from cnfperf.host.journal import Journal
from cnfperf.host.links import ip
from cnfperf.host.system import CommandFailed, run

FCS = 4
# The kernel's placements (fields.POLICERS, fields.SHAPERS name the engine's too).
POLICERS = ("nft", "tc")
SHAPERS = ("tbf", "htb")
# Where each placement sits and what it needs of the kernel: (module, CONFIG_ option).
NEEDS: dict[str, tuple[tuple[str, str], ...]] = {
    "tbf": (("sch_tbf", "NET_SCH_TBF"),),
    "htb": (("sch_htb", "NET_SCH_HTB"),),
    "nft": (("nf_tables", "NF_TABLES_NETDEV"), ("nft_limit", "NFT_LIMIT")),
    "tc": (("act_police", "NET_ACT_POLICE"), ("sch_ingress", "NET_SCH_INGRESS"),
           ("cls_u32", "NET_CLS_U32")),
}
TOOL = {"tbf": "tc", "htb": "tc", "nft": "nft", "tc": "tc"}
# the queue of a pair's limit (limit_shaper), in frames
LIMIT_QUEUE = 64
# nftables' hook priority: before anything else at that hook
PRIORITY = -500


def refusal(placement: str) -> str | None:
    """Why this host cannot put a kernel policer or shaper there (a tool, a
    kernel option missing), or None when it can."""
    if placement not in NEEDS:
        return None
    missing = tools.problems(TOOL[placement])
    if missing:
        return missing[0]
    for module, option in NEEDS[placement]:
        if not kernel_option(module, option):
            return f"this kernel has no CONFIG_{option} ({module})"
    return None


def _frame(size: int) -> int:
    return size - FCS


def _bits(pps: float, size: int) -> str:
    return f"{pps * _frame(size) * 8:.0f}bit"


def limit_shaper(pps: float, burst: int) -> tuple[int, int]:
    """(bucket, queue) in frames of the tbf shaper that a pair's `limit` is.

    The bucket holds 10 ms of traffic or five of the sender's bursts (its
    pacer's longest catch-up), whichever is more, so a sender below the limit
    passes whole; over a 1 s trial that blurs the limit by about 1 % at 20 kpps.
    The queue is short (64 frames): what exceeds the limit is dropped and
    counted as loss, instead of filling a udp sender's socket buffer and
    slowing the sender down."""
    return max(math.ceil(pps * 0.010), 5 * burst, 2), LIMIT_QUEUE


def shaper_args(kind: str, link: str, pps: float, bucket: int, queue: int,
                size: int) -> list[list[str]]:
    """The tc commands of a shaper on link's egress: tbf (its bucket and a queue
    of `queue` frames in bytes), or htb (one class at the rate, its own rate and
    ceiling alike, and a pfifo of `queue` frames under it)."""
    frame = _frame(size)
    burst = str(bucket * frame)
    if kind == "tbf":
        return [["qdisc", "replace", "dev", link, "root", "tbf", "rate", _bits(pps, size),
                 "burst", burst, "limit", str(queue * frame)]]
    if kind == "htb":
        return [["qdisc", "replace", "dev", link, "root", "handle", "1:", "htb", "default", "1"],
                ["class", "add", "dev", link, "parent", "1:", "classid", "1:1", "htb",
                 "rate", _bits(pps, size), "ceil", _bits(pps, size),
                 "burst", burst, "cburst", burst],
                ["qdisc", "add", "dev", link, "parent", "1:1", "handle", "10:", "pfifo",
                 "limit", str(queue)]]
    raise ValueError(f"no shaper {kind!r}")


def nft_script(table: str, link: str, pps: float, bucket: int) -> str:
    """One nft transaction: a netdev table whose ingress chain on link drops
    what goes over the rate (counted)."""
    return (f"add table netdev {table}; "
            f"add chain netdev {table} policer {{ type filter hook ingress device \"{link}\" "
            f"priority {PRIORITY}; policy accept; }}; "
            f"add rule netdev {table} policer limit rate over {round(pps)}/second "
            f"burst {bucket} packets counter drop")


def police_args(link: str, pps: float, bucket: int) -> list[list[str]]:
    """tc's police action on link's ingress: a filter matching every frame (u32's
    empty match) that drops what exceeds pkts_rate and pkts_burst (so iproute2
    parses them; its man page's pkt_rate is refused)."""
    return [["qdisc", "add", "dev", link, "ingress"],
            ["filter", "add", "dev", link, "ingress", "protocol", "all", "u32", "match", "u32",
             "0", "0", "action", "police",
             "pkts_rate", f"{round(pps)}", "pkts_burst", str(bucket),
             "conform-exceed", "drop/ok"]]


def _in(netns: str | None, argv: list[str]) -> list[str]:
    return ["ip", "netns", "exec", netns, *argv] if netns else argv


def shape(journal: Journal, kind: str, link: str, netns: str | None, pps: float,
          bucket: int, queue: int, size: int) -> None:
    journal.add("qdisc", f"{link} root", link=link, netns=netns, parent="root", qdisc=kind)
    for args in shaper_args(kind, link, pps, bucket, queue, size):
        ip(*args, netns=netns, tool="tc")


def police(journal: Journal, kind: str, link: str, netns: str | None, pps: float,
           bucket: int) -> None:
    if kind == "nft":
        journal.add("nft", link, netns=netns)
        run(_in(netns, ["nft", nft_script(link, link, pps, bucket)]),
            what=f"the policer on {link}")
        return
    journal.add("qdisc", f"{link} ingress", link=link, netns=netns, parent="ingress",
                qdisc="ingress")
    for args in police_args(link, pps, bucket):
        ip(*args, netns=netns, tool="tc")


def _gone(e: CommandFailed) -> bool:
    """The link or its namespace went first (and what was on it with them)."""
    text = f"{e} {e.stderr}".lower()
    return any(w in text for w in ("cannot find device", "no such file", "does not exist",
                                   "no such device", "cannot open network namespace",
                                   "invalid handle", "no such process", "handle of zero"))


def _undo_qdisc(name: str, info: dict[str, Any]) -> bool:
    try:
        ip("qdisc", "del", "dev", info["link"], info.get("parent", "root"),
           netns=info.get("netns"), tool="tc")
    except CommandFailed as e:
        if _gone(e):
            return False
        raise
    return True


def _undo_nft(name: str, info: dict[str, Any]) -> bool:
    try:
        run(_in(info.get("netns"), ["nft", "delete", "table", "netdev", name]),
            what=f"the policer on {name}")
    except CommandFailed as e:
        if _gone(e):
            return False
        raise
    return True


def remove(journal: Journal, made: list[tuple[str, str, dict[str, Any]]]) -> None:
    """Removes what shape() and police() made (kind, name, info), newest first."""
    for kind, name, info in reversed(made):
        UNDO[kind](name, info)
        journal.discard(kind, name)
    made.clear()


def dropped(kind: str, name: str, info: dict[str, Any]) -> int | None:
    """Frames what remove() would undo (kind, name, info as made) dropped so far:
    nftables' counter, a qdisc's drops (htb's count its queue's; an ingress
    qdisc's the police action's); None when they cannot be read (it is gone)."""
    netns = info.get("netns")
    try:
        if kind == "nft":
            out = run(_in(netns, ["nft", "list", "table", "netdev", name]))
            for line in out.splitlines():
                words = line.split()
                if "counter" in words:   # counter packets N bytes M
                    return int(words[words.index("counter") + 2])
            return None
        shown = json.loads(ip("-s", "-j", "qdisc", "show", "dev", info["link"], netns=netns,
                              tool="tc") or "[]")
    except (CommandFailed, ValueError):
        return None
    parent = info.get("parent", "root")
    for q in shown:   # the one made (a link's own default qdisc is root too)
        if q.get("kind") == info.get("qdisc") and (parent == "ingress" or q.get("root")):
            return int(q.get("drops") or 0)
    return None


UNDO: dict[str, Callable[[str, dict[str, Any]], bool]] = {
    "qdisc": _undo_qdisc,
    "nft": _undo_nft,
}
