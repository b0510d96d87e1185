"""The images a switch's processes run in when it has a container of its own
(switch_in = container or pod; DataPlane.image): the full image (the engine and
a shell) and the switch's programs at their host paths, with their closures (the
DPDK drivers come with librte_eal as for the engine).

SWITCH holds the Debian packages' switches where this host has them:
dpdk-testpmd, ovsdb-server, the DPDK ovs-vswitchd and the default one (kernel
OVS's); a switch's own check names what it lacks, the image holds what there
is. A switch built from source (VPP, Snabb, Click: switches/) has an image of
its own (built()), holding its build's program and what that loads from disk.
Their processes start line-buffered (rootfs.LINE_BUFFERED, procs.inside), and
ovs-vswitchd with the engine build's vhost_retry() where it was built."""
from __future__ import annotations

import os
from typing import Callable, Sequence

from cnfperf.host import tools
from cnfperf.host.builds import PREFIX_ENV
from cnfperf.dataplanes.ovs_host import TOOLS as OVS_TOOLS, vhost_retry, vswitchd_binary
from cnfperf.runtimes import ContainerError, Found, Image
from cnfperf.runtimes.oci import MOUNTED_OVER
from cnfperf.runtimes.rootfs import LIBSTDBUF


def _line_buffered(image: str) -> tuple[str, ...]:
    """The preload that makes a process line-buffered (procs.inside)."""
    if not os.path.exists(LIBSTDBUF):
        raise ContainerError(f"image {image}: {tools.not_found(LIBSTDBUF, 'coreutils')}")
    return (LIBSTDBUF,)


def _found() -> Found:
    binaries = [b for b in (tools.find(tools.TESTPMD), tools.find("ovsdb-server", OVS_TOOLS),
                            vswitchd_binary(), tools.find("ovs-vswitchd", OVS_TOOLS)) if b]
    if not binaries:
        raise ContainerError(f"image switch: {tools.missing(tools.TESTPMD)}; "
                             f"{tools.missing('ovs-vswitchd-dpdk', OVS_TOOLS)}")
    retry = vhost_retry()
    return Found(tools=tuple(binaries), preloads=(*_line_buffered("switch"),
                                                  *([retry] if retry else [])))


SWITCH = Image("switch", "a switch in a container of its own: the full image, "
               "dpdk-testpmd, OVS's daemons", found=_found, budget_mb=192)


def built(name: str, about: str, files: Callable[[], Sequence[str]], budget_mb: float) -> Image:
    """The image of a switch built from source: the full image and `files()`,
    the host paths of its program and of what it loads from disk (VPP's
    plugins), which it finds inside at the same paths. `files` raises
    LookupError (or returns a path that is not there) where the switch is not
    built: the image is refused, naming why."""
    def found() -> Found:
        try:
            paths = tuple(map(str, files()))
        except LookupError as e:
            raise ContainerError(f"image {name}: {e}") from None
        if missing := [p for p in paths if not os.path.exists(p)]:
            raise ContainerError(f"image {name}: {missing[0]} is not there (make switches)")
        for path in paths:
            if over := next((d for d in MOUNTED_OVER if path.startswith(d + "/")), None):
                raise ContainerError(f"image {name}: {path} is under {over}, which a container "
                                     "mounts its own over: keep the build elsewhere "
                                     f"(XDG_CACHE_HOME, {PREFIX_ENV})")
        return Found(tools=paths, preloads=_line_buffered(name))
    return Image(name, f"{about} in a container of its own: the full image and {about}'s "
                 "build", found=found, budget_mb=budget_mb)
