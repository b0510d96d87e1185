"""Switches and NF frameworks built from source (switches/build.sh; `make
switches`): where each is installed, whether it is built, and what doctor says.

`switches/build.sh` builds each folder switches/NAME/ (its recipe) into a
per-user cache and links it into one prefix, CNFPERF_SWITCHES (default:
.switches in the checkout cnfperf runs from), as $prefix/NAME with a stamp
beside it. The data plane or NF kind that runs a build declares it (a Build:
its name, what it is, its programs); the data planes and NF kinds ask here for
its programs, and a missing build is a problem that names the command which
makes it. This module knows no build by name: doctor's rows are those of the
builds the plugins declare, handed down to facts().
"""
from __future__ import annotations

import os
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterable

PREFIX_ENV = "CNFPERF_SWITCHES"
CHECKOUT = Path(__file__).resolve().parents[2]


@dataclass(frozen=True)
class Build:
    """A build from source, as the data plane or NF kind that runs it declares it."""
    name: str            # its folder, switches/NAME/; its directory under the prefix
    what: str            # what it is, for doctor
    programs: tuple[str, ...]   # files inside its directory that must be there (the first: its program)
    # Where another install will do as well (a system one): what is missing of
    # every one, asked by problems() instead of the build's own (missing()).
    lookup: Callable[[], list[str]] | None = None


def prefix() -> Path:
    env = os.environ.get(PREFIX_ENV)
    return Path(env) if env else CHECKOUT / ".switches"


def linked(build: Build) -> Path:
    """Where the prefix holds the build: a link into the per-user cache."""
    return prefix() / build.name


def home(build: Build) -> Path:
    """The build's install directory (its `bin/`, `lib/`, ...): the folder in
    the per-user cache the prefix links to. Its files keep that path in a
    switch's container (switch_image.built), where a checkout under /tmp or
    /run would be hidden under the container's own mounts."""
    link = linked(build)
    return link.resolve() if link.exists() else link


def program(build: Build, path: str | None = None) -> Path:
    """A program of a build (default: its first); check problems() first."""
    return home(build) / (path or build.programs[0])


def problems(*builds: Build) -> list[str]:
    """What is missing, one line per build, naming how to make it. A build
    without its stamp is missing too: build.sh writes the stamp last. A build
    with a lookup is missing only when nothing it finds will do."""
    found = []
    for build in builds:
        found += build.lookup() if build.lookup else missing(build)
    return found


def missing(*builds: Build) -> list[str]:
    """What is missing of cnfperf's own builds."""
    found = []
    for build in builds:
        lacks = [p for p in build.programs if not (home(build) / p).is_file()]
        what = f"{home(build)}/{lacks[0]} missing" if lacks else \
            f"no {prefix()}/{build.name}.stamp" if stamp(build) is None else None
        if what:
            found.append(f"{build.name} not built ({what}: make switches, "
                         f"or switches/build.sh {build.name})")
    return found


def stamp(build: Build) -> str | None:
    """The checksum its build recorded (sources, patches, recipe), or None."""
    try:
        return (prefix() / f"{build.name}.stamp").read_text().strip() or None
    except OSError:
        return None


# What switches/build.sh --check says of a build: current; built for the current
# sources in the per-user cache by another checkout (make switches links it);
# built from other sources, or with another compiler or DPDK; not built.
STATES = ("up to date", "cached", "stale", "not built")


def states(names: Iterable[str] = ()) -> dict[str, str]:
    """What switches/build.sh --check says of each build named (default: every
    folder it finds; one of STATES); {} when it cannot say (no script beside us)."""
    script = CHECKOUT / "switches" / "build.sh"
    try:
        out = subprocess.run([str(script), "--check", *names], capture_output=True, text=True,
                             timeout=60).stdout
    except (OSError, subprocess.TimeoutExpired):
        return {}
    return {name: state for line in out.splitlines()
            for _, name, state in [line.split(": ", 2)] if line.count(": ") >= 2}


def facts(builds: Iterable[Build], compare: bool = False) -> dict[str, dict]:
    """doctor's rows: per build declared, where it is, whether it is usable,
    its stamp, and, compared, whether its sources, patches or recipe changed
    since (its state; None when not compared). Comparing hashes every source
    tree (about a second): doctor compares, a run stores the stamp it used."""
    builds = list(builds)
    known = states([b.name for b in builds]) if builds and compare else {}
    return {b.name: {"what": b.what, "path": str(linked(b)), "stamp": (stamp(b) or "")[:12],
                     "state": known.get(b.name), "problem": next(iter(missing(b)), None)}
            for b in builds}

