"""What OVS-DPDK needs of the host, and what doctor says of it: an
ovs-vswitchd built with DPDK (Debian ships that build as an alternative of the
default one), and the library it starts preloaded with where the engine's
build made it (engine/src/preload/vhost_retry.c: its vhost-user client ports
retry a missing server every 10 ms instead of every second).
"""
from __future__ import annotations

import os

from cnfperf.host import tools
from cnfperf.host.engine_path import find_engine
from cnfperf.host.facts import Probe, alternatives, beside_engine, first_built_with
from cnfperf.host.tools import Tool

VSWITCHD_ENV = "CNFPERF_OVS_VSWITCHD"
VHOST_RETRY = "libcnfperf-vhost-retry.so"

# OVS's programs and the Debian packages they come in (tools.find's table for
# them: OvsPlane.tools; the Makefile installs the packages).
TOOLS: dict[str, Tool] = {
    "ovsdb-tool": Tool("openvswitch-common"),
    "ovsdb-server": Tool("openvswitch-common"),
    "ovs-appctl": Tool("openvswitch-common"),
    "ovs-ofctl": Tool("openvswitch-common"),
    "ovs-vsctl": Tool("openvswitch-switch"),
    "ovs-vswitchd": Tool("openvswitch-switch"),    # an alternative: DPDK's build or not
    "ovs-vswitchd-dpdk": Tool("openvswitch-switch-dpdk",
                              ("/usr/lib/openvswitch-switch-dpdk/ovs-vswitchd-dpdk",)),
}


def _dpdk_vswitchd() -> tuple[str, str] | None:
    """(binary, its --version output) of the first candidate built with DPDK:
    $CNFPERF_OVS_VSWITCHD, the default, every registered alternative, and the
    DPDK build where Debian's package puts it."""
    candidates = [os.environ.get(VSWITCHD_ENV), tools.find("ovs-vswitchd", TOOLS),
                  *alternatives("ovs-vswitchd"), tools.find("ovs-vswitchd-dpdk", TOOLS)]
    return first_built_with(tuple(c for c in candidates if c), "DPDK")


def vswitchd_binary() -> str | None:
    """An ovs-vswitchd built with DPDK: the default one if it is, otherwise any
    other (Debian ships the DPDK build as an alternative)."""
    found = _dpdk_vswitchd()
    return found[0] if found else None


def vhost_retry() -> str | None:
    """The library ovs-vswitchd starts preloaded with, built beside the engine
    cnfperf runs (engine_path.find_engine); None if that build has none."""
    return beside_engine(find_engine(), VHOST_RETRY)


def describe_vswitchd() -> str | None:
    """`3.1.0 (DPDK 22.11.11, /usr/lib/…/ovs-vswitchd-dpdk; vhost reconnect every
    10 ms)`, for `cnfperf doctor` and every OVS point's stored versions: how
    often it retries a missing vhost-user server (vhost_retry) is said too."""
    found = _dpdk_vswitchd()
    if found is None:
        return None
    binary, lines = found[0], found[1].splitlines()
    ovs = lines[0].rsplit(" ", 1)[-1]
    dpdk = next((l.split()[-1] for l in lines if l.startswith("DPDK")), "?")
    retry = "10 ms" if vhost_retry() else "1 s"
    return f"{ovs} (DPDK {dpdk}, {binary}; vhost reconnect every {retry})"


# doctor's OVS-DPDK row, and what every OVS point stores (OvsPlane.versions)
PROBE = Probe("ovs_dpdk", "OVS-DPDK", describe_vswitchd,
              lambda: tools.missing("ovs-vswitchd-dpdk", TOOLS))
