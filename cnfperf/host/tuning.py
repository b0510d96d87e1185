"""How this host is tuned, as far as a packet's cost may follow it: the CPU's
microcode, its frequency governor and turbo, SMT, the cores kept from the
scheduler (isolcpus, nohz_full), NUMA nodes, transparent hugepages and
whether irqbalance moves interrupts. Read-only, each a short text ("" where
this host has none of it: no cpufreq in a VM). A run stores them with the
host's other facts, and compare names the ones that changed between runs
(report/explain.py)."""
from __future__ import annotations

import os
from pathlib import Path

SYS_CPU = Path("/sys/devices/system/cpu")
PROC = Path("/proc")


def read() -> dict[str, str]:
    return {"microcode": _microcode(), "governor": _governors(), "turbo": _turbo(),
            "smt": _text(SYS_CPU / "smt" / "control"),
            "isolated": _text(SYS_CPU / "isolated"), "nohz_full": _text(SYS_CPU / "nohz_full"),
            "numa_nodes": str(len(list(Path("/sys/devices/system/node").glob("node[0-9]*")))),
            "thp": _chosen(Path("/sys/kernel/mm/transparent_hugepage/enabled")),
            "irqbalance": "running" if _running("irqbalance") else "not running"}


def _text(path: Path) -> str:
    try:
        return path.read_text().strip()
    except OSError:
        return ""


def _chosen(path: Path) -> str:
    """`always [madvise] never` -> madvise."""
    text = _text(path)
    return text.split("[", 1)[1].split("]", 1)[0] if "[" in text else text


def _microcode() -> str:
    for line in _text(PROC / "cpuinfo").splitlines():
        key, _, value = line.partition(":")
        if key.strip() == "microcode":
            return value.strip()
    return ""


def _governors() -> str:
    """The usable cores' governors, each once (`performance`; two differ:
    `performance,powersave`)."""
    found = [_text(SYS_CPU / f"cpu{c}" / "cpufreq" / "scaling_governor")
             for c in sorted(os.sched_getaffinity(0))]
    return ",".join(dict.fromkeys(g for g in found if g))


def _turbo() -> str:
    no_turbo = _text(SYS_CPU / "intel_pstate" / "no_turbo")
    if no_turbo:
        return "off" if no_turbo == "1" else "on"
    boost = _text(SYS_CPU / "cpufreq" / "boost")
    return {"1": "on", "0": "off"}.get(boost, "")


def _running(name: str) -> bool:
    for stat in PROC.glob("[0-9]*/comm"):
        if _text(stat) == name:
            return True
    return False
