"""Switches and NF frameworks built from source (switches/build.sh; `make
switches`): where each is installed, whether it is built, and what doctor says.

Debian packages none of VPP, Snabb and Click. `switches/build.sh` builds each
into its own directory under one prefix, CNFPERF_SWITCHES (default: .switches
in the checkout cnfperf runs from), with a stamp beside it; the data planes
and NF kinds that use one ask here for its programs, and a missing build is a
problem that names the command which makes it.
"""
from __future__ import annotations

import os
import subprocess
from dataclasses import dataclass
from pathlib import Path

PREFIX_ENV = "CNFPERF_SWITCHES"
CHECKOUT = Path(__file__).resolve().parents[1]


@dataclass(frozen=True)
class Build:
    name: str            # switches/build.sh's NAME: its directory under the prefix
    what: str            # what it is, for doctor
    programs: tuple[str, ...]   # files inside its directory that must be there (the first: its program)


BUILDS: dict[str, Build] = {b.name: b for b in (
    Build("vpp", "FD.io VPP with its vhost-user and memif plugins",
          ("bin/vpp", "bin/vppctl", "lib/vpp_plugins/vhost_plugin.so",
           "lib/vpp_plugins/memif_plugin.so")),
    Build("snabb", "Snabb (LuaJIT apps: VhostUser, learning bridge)", ("bin/snabb",)),
    Build("click", "Click modular router, userlevel (kernel interfaces)", ("bin/click",)),
    Build("click-dpdk", "Click modular router, userlevel with DPDK", ("bin/click",)),
)}


def prefix() -> Path:
    env = os.environ.get(PREFIX_ENV)
    return Path(env) if env else CHECKOUT / ".switches"


def home(name: str) -> Path:
    """The build's install directory (its `bin/`, `lib/`, ...)."""
    return prefix() / BUILDS[name].name


def program(name: str, path: str | None = None) -> Path:
    """A program of a build (default: its first); check problems() first."""
    return home(name) / (path or BUILDS[name].programs[0])


def problems(*names: str) -> list[str]:
    """What is missing, one line per build, naming how to make it. A build
    without its stamp is missing too: build.sh writes the stamp last."""
    found = []
    for name in names:
        missing = [p for p in BUILDS[name].programs if not (home(name) / p).is_file()]
        what = f"{home(name)}/{missing[0]} missing" if missing else \
            f"no {prefix()}/{name}.stamp" if stamp(name) is None else None
        if what:
            found.append(f"{name} not built ({what}: make switches, or switches/build.sh {name})")
    return found


def stamp(name: str) -> str | None:
    """The checksum its build recorded (sources, patches, recipe), or None."""
    try:
        return (prefix() / f"{name}.stamp").read_text().strip() or None
    except OSError:
        return None


def states() -> dict[str, str]:
    """What switches/build.sh --check says of each build ("up to date", "stale",
    "not built", "no sources"); {} when it cannot say (no script beside us)."""
    script = CHECKOUT / "switches" / "build.sh"
    try:
        out = subprocess.run([str(script), "--check", *BUILDS], capture_output=True, text=True,
                             timeout=60).stdout
    except (OSError, subprocess.TimeoutExpired):
        return {}
    return {name: state for line in out.splitlines()
            for _, name, state in [line.split(": ", 2)] if line.count(": ") >= 2}


def facts() -> dict[str, dict]:
    """doctor's rows: per build, where it is, whether it is usable, its stamp,
    and whether its sources, patches or recipe changed since (stale)."""
    known = states()
    return {name: {"what": b.what, "path": str(home(name)), "stamp": (stamp(name) or "")[:12],
                   "state": known.get(name), "problem": next(iter(problems(name)), None)}
            for name, b in BUILDS.items()}
