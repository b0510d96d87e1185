"""What the plugins declare of the host, collected from their registries: the
builds from source they run (host/builds.py: doctor's build rows), the facts
doctor prints for them and their stored versions read back (host/facts.py's
probes), and the programs a data plane alone runs (host/tools.py's table for
them). host/ knows no plugin: it is handed these (gather).
"""
from __future__ import annotations

from pathlib import Path

from cnfperf.dataplanes import DATAPLANES
from cnfperf.host import facts
from cnfperf.host.builds import Build
from cnfperf.host import tools as host_tools
from cnfperf.host.facts import HostFacts, Probe
from cnfperf.host.tools import Tool
from cnfperf.nfs import KINDS


def builds() -> tuple[Build, ...]:
    """Every build a data plane or an NF kind declares, once each, in their registries' order."""
    found = [*(dp.build for dp in DATAPLANES.values() if dp.build),
             *(b for kind in KINDS for b in kind.builds)]
    return tuple({b.name: b for b in found}.values())


def probes() -> tuple[Probe, ...]:
    """Every probe a data plane declares, once each (two planes may share one)."""
    return tuple({p.key: p for dp in DATAPLANES.values() for p in dp.probes}.values())


def tools() -> dict[str, Tool]:
    """Every program cnfperf runs: host/tools.py's table and each data plane's own."""
    return {**host_tools.TOOLS, **{name: tool for dp in DATAPLANES.values()
                                   for name, tool in dp.tools.items()}}


def gather(engine: Path | None, compare: bool = False) -> HostFacts:
    """The host's facts with every plugin's builds and probes (doctor, a run,
    an agent); compare: each build against its sources too (doctor's)."""
    return facts.gather(engine, builds(), probes(), compare)
