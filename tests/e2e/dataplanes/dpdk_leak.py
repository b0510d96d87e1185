"""tests/leak.py's check. On a development host where other runs come and go,
CNFPERF_SHARED_HOST=1 narrows it to one run's prefix (and our daemons'
fixed-name devices); everywhere else, CI included, it is the full check."""
from __future__ import annotations

import contextlib
import os

import leak

FIXED_NAMES = ("ovs-netdev",)


def _cmdline(pid: str) -> str:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return f.read().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


def ours(left: dict[str, set[str]], prefix: str) -> dict[str, set[str]]:
    if not os.environ.get("CNFPERF_SHARED_HOST"):
        return left
    found = {}
    for kind, items in left.items():
        mine = set()
        for item in items:
            if prefix in item or item in FIXED_NAMES:
                mine.add(item)
            elif kind == "processes" and prefix in _cmdline(item.split(":", 1)[0]):
                mine.add(item)
        if mine:
            found[kind] = mine
    return found


@contextlib.contextmanager
def no_leftovers(prefix: str):
    before = leak.snapshot()
    yield
    left = ours(leak.diff(before, leak.snapshot()), prefix)
    assert not left, f"left behind: {left}"
