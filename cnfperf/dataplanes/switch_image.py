"""The image a switch's processes run in when it has a container of its own
(switch_in = container; DataPlane.image): the full image, dpdk-testpmd,
ovsdb-server, the DPDK ovs-vswitchd and the default one (kernel OVS's) where
this host has them (a switch's own check names what it lacks; the image
holds what there is), with their closures (the DPDK drivers come with
librte_eal as for the engine).
Its processes start line-buffered (rootfs.LINE_BUFFERED, procs.inside), and
ovs-vswitchd with the engine build's vhost_retry() where it was built."""
from __future__ import annotations

import os

from cnfperf.host import tools
from cnfperf.dataplanes.ovs_host import TOOLS as OVS_TOOLS, vhost_retry, vswitchd_binary
from cnfperf.runtimes import ContainerError, Found, Image
from cnfperf.runtimes.rootfs import LIBSTDBUF


def _found() -> Found:
    binaries = [b for b in (tools.find(tools.TESTPMD), tools.find("ovsdb-server", OVS_TOOLS),
                            vswitchd_binary(), tools.find("ovs-vswitchd", OVS_TOOLS)) if b]
    if not binaries:
        raise ContainerError(f"image switch: {tools.missing(tools.TESTPMD)}; "
                             f"{tools.missing('ovs-vswitchd-dpdk', OVS_TOOLS)}")
    if not os.path.exists(LIBSTDBUF):
        raise ContainerError(f"image switch: {tools.not_found(LIBSTDBUF, 'coreutils')}")
    retry = vhost_retry()
    return Found(tools=tuple(binaries), preloads=(LIBSTDBUF, *([retry] if retry else [])))


SWITCH = Image("switch", "a switch in a container of its own: the full image, "
               "dpdk-testpmd, OVS's daemons", found=_found, budget_mb=192)
