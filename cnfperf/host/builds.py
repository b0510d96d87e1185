"""Switches and NF frameworks built from source (switches/build.sh; `make
switches`): where each is installed, whether it is built, and what doctor says;
and which VPP a run uses, cnfperf's build or a system one.

Debian packages none of VPP, Snabb and Click. `switches/build.sh` builds each
into a per-user cache and links it into one prefix, CNFPERF_SWITCHES (default:
.switches in the checkout cnfperf runs from), as $prefix/NAME with a stamp
beside it; the data planes and NF kinds that use one ask here for its programs,
and a missing build is a problem that names the command which makes it.

VPP may also come from FD.io's Debian packages (vpp, vpp-plugin-core): vpp()
says which one a run uses.
"""
from __future__ import annotations

import functools
import os
import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

PREFIX_ENV = "CNFPERF_SWITCHES"
VPP_ENV = "CNFPERF_VPP"
CHECKOUT = Path(__file__).resolve().parents[2]


@dataclass(frozen=True)
class Build:
    name: str            # switches/build.sh's NAME: its directory under the prefix
    what: str            # what it is, for doctor
    programs: tuple[str, ...]   # files inside its directory that must be there (the first: its program)


BUILDS: dict[str, Build] = {b.name: b for b in (
    # af_packet_plugin.so is not required: a build from before it was built
    # still runs every point without a wire's NIC as a port (find_vpp: `has`).
    Build("vpp", "FD.io VPP with its vhost-user, memif and af_packet plugins",
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
    without its stamp is missing too: build.sh writes the stamp last. VPP is
    missing only when no VPP is to be had (find_vpp)."""
    found = []
    for name in names:
        if name != "vpp":
            found += _missing(name)
        elif not isinstance(vpp := find_vpp(), Vpp):
            found.append(vpp)
    return found


def _missing(*names: str) -> list[str]:
    """What is missing of cnfperf's own builds."""
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


# What switches/build.sh --check says of a build: current; built for the current
# sources in the per-user cache by another checkout (make switches links it);
# built from other sources, or with another compiler or DPDK; not built.
STATES = ("up to date", "cached", "stale", "not built")


def states() -> dict[str, str]:
    """What switches/build.sh --check says of each build (one of STATES); {}
    when it cannot say (no script beside us)."""
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
                   "state": known.get(name), "problem": next(iter(_missing(name)), None)}
            for name, b in BUILDS.items()}


# --- VPP: cnfperf's build, or a system one ---------------------------------------

# The plugins cnfperf's VPP data planes use (vpp_plugin_problems): each one's
# ports (PORT_PLUGINS), and af_packet's for a wire's NIC taken as a port (a node
# on another host), which only a point with such a port needs.
PORT_PLUGINS = ("vhost_plugin.so", "memif_plugin.so")
AF_PACKET = "af_packet_plugin.so"
VPP_PLUGINS = (*PORT_PLUGINS, AF_PACKET)
VPP_PACKAGES = "FD.io's packages vpp and vpp-plugin-core"


@dataclass(frozen=True)
class Vpp:
    """The VPP a run uses: its programs, its plugins, and where it came from."""
    program: Path
    vppctl: Path
    plugins: Path      # the directory holding (some of) VPP_PLUGINS
    origin: str        # "build" (make switches), "system" (vpp on PATH) or VPP_ENV
    has: frozenset[str] = frozenset(VPP_PLUGINS)   # which of VPP_PLUGINS are there


def find_vpp() -> Vpp | str:
    """The VPP a run uses, or why there is none: the one CNFPERF_VPP names if
    it is set (then no other), else cnfperf's build, else the system's (vpp on
    PATH: FD.io's packages install /usr/bin/vpp)."""
    if env := os.environ.get(VPP_ENV):
        found = _vpp_at(Path(env), VPP_ENV)
        return found if isinstance(found, Vpp) else f"{VPP_ENV}={env}: {found}"
    if not _missing("vpp"):
        plugins = home("vpp") / "lib" / "vpp_plugins"
        return Vpp(program("vpp"), program("vpp", "bin/vppctl"), plugins, "build",
                   _plugins_in(plugins))
    if system := shutil.which("vpp"):
        found = _vpp_at(Path(system), "system")
        return found if isinstance(found, Vpp) else f"the system's VPP: {found} ({VPP_PACKAGES})"
    return f"{_missing('vpp')[0]}, and no vpp on PATH ({VPP_PACKAGES})"


def vpp() -> Vpp:
    """The VPP a run uses; problems("vpp") says first whether there is one."""
    found = find_vpp()
    if not isinstance(found, Vpp):
        raise LookupError(found)
    return found


def vpp_plugin_problems(plugin: str) -> list[str]:
    """Why the VPP a run uses cannot run a data plane that needs `plugin` (one
    of VPP_PLUGINS), if it cannot; problems("vpp") says whether there is one."""
    found = find_vpp()
    if not isinstance(found, Vpp) or plugin in found.has:
        return []
    # cnfperf's build from before it built the plugin: building again adds it
    remedy = "make switches" if found.origin == "build" else VPP_PACKAGES
    return [f"the VPP at {found.program} has no {plugin} in {found.plugins} ({remedy})"]


def _vpp_at(program: Path, origin: str) -> Vpp | str:
    """VPP laid out around its program as FD.io's packages (or cnfperf's build)
    lay it out, or what is missing: vppctl beside it, the plugins in
    ../lib/<multiarch>/vpp_plugins (packages: /usr/lib/x86_64-linux-gnu/vpp_plugins,
    where VPP itself looks) or ../lib/vpp_plugins (cnfperf's build). A link to
    the program (/usr/local/bin/vpp -> /opt/vpp/bin/vpp) is followed: its lib
    is the one beside the program itself. The plugin directory with the most of
    VPP_PLUGINS comes first; one with either port plugin will do for the data
    plane that uses it (and af_packet's for a point with a NIC as a port)."""
    real = program.resolve()
    if not (real.is_file() and os.access(real, os.X_OK)):
        return f"{program} is not an executable file"
    vppctl = next((c for c in dict.fromkeys((program.with_name("vppctl"), real.with_name("vppctl")))
                   if c.is_file() and os.access(c, os.X_OK)), None)
    if vppctl is None:
        return f"no vppctl beside {program}"
    lib = real.parent.parent / "lib"
    dirs = (*sorted(lib.glob("*/vpp_plugins")), lib / "vpp_plugins")
    found = [(plugins, _plugins_in(plugins)) for plugins in dirs]
    # the first with the most port plugins, then the most plugins
    plugins, has = max(found, key=lambda f: (len(f[1] & set(PORT_PLUGINS)), len(f[1])))
    if has & set(PORT_PLUGINS):
        return Vpp(program, vppctl, plugins, origin, has)
    return f"no {' or '.join(PORT_PLUGINS)} in {lib}/*/vpp_plugins or {lib}/vpp_plugins"


def _plugins_in(plugins: Path) -> frozenset[str]:
    """Which of VPP_PLUGINS a plugin directory holds."""
    return frozenset(p for p in VPP_PLUGINS if (plugins / p).is_file())


@functools.lru_cache(maxsize=None)
def vpp_version(found: Vpp) -> str | None:
    """Its version: the Debian package's that installed it, else what `vpp
    --version` says (VPP 26.02 and later; cnfperf's build is one of them)."""
    if found.origin != "build":
        owner = _output(["dpkg-query", "-S", str(found.program.resolve())])
        if owner and ":" in owner:
            version = _output(["dpkg-query", "-W", "-f=${Version}", owner.split(":")[0]])
            if version:
                return version
    said = re.match(r"vpp v(\S+)", _output([str(found.program), "--version"]) or "")
    return said.group(1) if said else None


ORIGINS = {"build": "cnfperf's build", "system": "the system's"}


def describe_vpp() -> str:
    """doctor's VPP row, and what the store records per point that runs it:
    its version and where it is (a cached build's path names its stamp), or
    why there is none."""
    found = find_vpp()
    if not isinstance(found, Vpp):
        return found
    lacks = [p for p in VPP_PLUGINS if p not in found.has]
    return f"{vpp_version(found) or 'version unknown'} at {found.program.resolve()} " \
           f"({ORIGINS.get(found.origin, found.origin)}" + \
           (f"; no {', '.join(lacks)}" if lacks else "") + ")"


def _output(argv: list[str]) -> str | None:
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=5,
                              stdin=subprocess.DEVNULL)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return done.stdout.strip() if done.returncode == 0 else None
