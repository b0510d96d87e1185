"""Which VPP a run uses: cnfperf's build (switches/vpp/, declared here as
BUILD) or a system one, the plugins it has, its version and doctor's row.

VPP may also come from FD.io's Debian packages (vpp, vpp-plugin-core): vpp()
says which one a run uses; problems(BUILD) asks find_vpp() (the build's lookup).
"""
from __future__ import annotations

import functools
import os
import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from cnfperf.host import builds
from cnfperf.host.builds import Build
from cnfperf.host.facts import Probe

VPP_ENV = "CNFPERF_VPP"

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


def _lookup() -> list[str]:
    """Why no VPP is to be had, if none is (BUILD's lookup)."""
    found = find_vpp()
    return [] if isinstance(found, Vpp) else [found]


# af_packet_plugin.so is not required: a build from before it was built
# still runs every point without a wire's NIC as a port (find_vpp: `has`).
BUILD = Build("vpp", "FD.io VPP with its vhost-user, memif and af_packet plugins",
              ("bin/vpp", "bin/vppctl", "lib/vpp_plugins/vhost_plugin.so",
               "lib/vpp_plugins/memif_plugin.so"), lookup=_lookup)


def find_vpp() -> Vpp | str:
    """The VPP a run uses, or why there is none: the one CNFPERF_VPP names if
    it is set (then no other), else cnfperf's build, else the system's (vpp on
    PATH: FD.io's packages install /usr/bin/vpp)."""
    if env := os.environ.get(VPP_ENV):
        found = _vpp_at(Path(env), VPP_ENV)
        return found if isinstance(found, Vpp) else f"{VPP_ENV}={env}: {found}"
    if not builds.missing(BUILD):
        plugins = builds.home(BUILD) / "lib" / "vpp_plugins"
        return Vpp(builds.program(BUILD), builds.program(BUILD, "bin/vppctl"), plugins, "build",
                   _plugins_in(plugins))
    if system := shutil.which("vpp"):
        found = _vpp_at(Path(system), "system")
        return found if isinstance(found, Vpp) else f"the system's VPP: {found} ({VPP_PACKAGES})"
    return f"{builds.missing(BUILD)[0]}, and no vpp on PATH ({VPP_PACKAGES})"


def vpp() -> Vpp:
    """The VPP a run uses; problems(BUILD) says first whether there is one."""
    found = find_vpp()
    if not isinstance(found, Vpp):
        raise LookupError(found)
    return found


def vpp_plugin_problems(plugin: str) -> list[str]:
    """Why the VPP a run uses cannot run a data plane that needs `plugin` (one
    of VPP_PLUGINS), if it cannot; problems(BUILD) says whether there is one."""
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




# doctor's VPP row, and what every VPP point stores (VppPlane.versions)
PROBE = Probe("vpp", "VPP", describe_vpp)


def _output(argv: list[str]) -> str | None:
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=5,
                              stdin=subprocess.DEVNULL)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return done.stdout.strip() if done.returncode == 0 else None
