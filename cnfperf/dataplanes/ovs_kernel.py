"""ovs-kernel: Open vSwitch over the kernel's datapath (the openvswitch
module), each port on a veth to it, as the Linux bridge's are: the OVS that
paper 000 measured beside OVS-DPDK, and what a host runs without DPDK.

Its own ovsdb-server and ovs-vswitchd (ovsdb.py, datapath `system`: any
build of ovs-vswitchd has it), started in the switch's netns, where the
datapath and its ports are; forwarding by MAC (NORMAL, each port's MAC
learnt statically: a receiver never sends) or port to port, with the DPDK
plane's rules. Refused where the kernel has no openvswitch module (check()).

In a container of its own (switch_in = container), the switch's netns is
that container's and the two daemons run in it, from the switch image; the
frames are still forwarded by the kernel, in the softirq of whoever sent
them, so the container's cgroup (and its switch_quota) holds the daemons
only: the OVS of a host whose control plane runs in a pod.
"""
from __future__ import annotations

import shutil
from pathlib import Path

from cnfperf.dataplanes import ovsdb, procs
from cnfperf.dataplanes.bridge import BridgePlane
from cnfperf.dataplanes.ovs import rules
from cnfperf.dataplanes.ovs_host import TOOLS
from cnfperf.dataplanes.switch_image import SWITCH
from cnfperf.fields import AUTO
from cnfperf.host.journal import RUN_DIR
from cnfperf.host.links import ip
from cnfperf.host.system import CommandFailed, run
from cnfperf.plan import Link
from cnfperf.runtimes.base import Mount


class OvsKernelPlane(BridgePlane):
    """The bridge's ports (a veth each, its host side in the switch's netns:
    switch_port, the shaper's and the policer's links), OVS's bridge instead
    of Linux's."""
    name = "ovs-kernel"
    description = ("Open vSwitch, kernel datapath (the openvswitch module); each port on a "
                   "veth to it, NORMAL switching or port-to-port rules")
    style = 14
    # openvswitch: the module of its datapath (a link type of its own: its
    # datapath's netdev), asked as the link types are
    kernel_links = {"veth": "VETH", "openvswitch": "OPENVSWITCH"}
    vm_links = {}
    forwards = ("mac", "port")
    nic_ports = False
    vm_refusal = "a virtual machine's port on kernel OVS (a tap on its bridge) is not offered yet"
    tools = TOOLS
    processes = True
    image = SWITCH

    def __init__(self, journal, home=None):
        super().__init__(journal, home)
        self.ovs: ovsdb.Ovs | None = None
        self.bridge = ""
        self._ofports: dict[str, int] = {}
        self._dir: Path | None = None     # the daemons' files, under RUN_DIR (a container's mount)

    @classmethod
    def check(cls, host) -> list[str]:
        return super().check(host) + ovsdb.problems(ovsdb.SYSTEM)

    @classmethod
    def versions(cls, host) -> dict[str, str]:
        """`3.1.0 (/usr/sbin/ovs-vswitchd)`: stored with each point."""
        binary = ovsdb.vswitchd(ovsdb.SYSTEM)
        try:
            said = run([binary, "--version"], timeout=10).splitlines()[0] if binary else ""
        except CommandFailed:
            said = ""
        return {"ovs_kernel": f"{said.rsplit(' ', 1)[-1] or '?'} ({binary})" if binary else "?"}

    @property
    def forward(self) -> str:
        forward = self.point.scenario.forward
        return self.forwards[0] if forward == AUTO else forward

    def make_switch_netns(self, name: str) -> None:
        """Its directory first (a container mounts it), then the netns: the
        container's where it has one."""
        self._dir = RUN_DIR / f"{self.point.prefix}-{self.name}"
        self.journal.add("dir", str(self._dir))
        self._dir.mkdir(parents=True)
        if self.home is None:
            super().make_switch_netns(name)
        else:
            self.container = self.home.create(name, self.point.cpus,
                                              (Mount(str(self._dir), str(self._dir)),))
            assert self.container.netns == name

    def remove_switch_netns(self, name: str) -> None:
        try:
            if self.container is not None:
                container, self.container = self.container, None
                self.home.remove(container)     # its netns too
            else:
                super().remove_switch_netns(name)
        finally:
            if self._dir is not None:
                shutil.rmtree(self._dir, ignore_errors=True)
                self.journal.discard("dir", str(self._dir))
                self._dir = None

    def setup(self) -> None:
        sw = self.switch_netns
        launch = procs.inside(self.container) if self.container else procs.in_netns(sw)
        self.ovs = ovsdb.Ovs(self._dir / "ovs", f"{self.point.prefix}ovsk", "", 0, pmd_cpus=(),
                             journal=self.journal, launch=launch, datapath=ovsdb.SYSTEM)
        self.ovs.start()
        self.bridge = self.point.name("br")
        self.ovs.add_bridge(self.bridge)
        ip("link", "set", self.bridge, "up", netns=sw)

    def connect(self, link: Link) -> None:
        assert self.ovs is not None
        for port in (link.a, link.b):
            host_side = port.name + "h"
            self.add_link(host_side, self.switch_netns, "type", "veth", "peer", "name", port.name,
                          "netns", port.node, counted=True)
            ip("link", "set", host_side, "mtu", str(self.mtu), "up", netns=self.switch_netns)
            self._ofports[port.name] = ofport = len(self._ofports) + 1
            self.ovs.add_system_port(self.bridge, host_side, ofport)
            if self.forward == "mac":
                self.ovs.learn(self.bridge, host_side, port.mac)

    def start(self, point) -> None:
        super().start(point)
        # the rules once every port has its OpenFlow number
        number = self._ofports
        peers = {number[end.name]: number[other.name] for link in self.point.links_joined_here()
                 for end, other in ((link.a, link.b), (link.b, link.a))}
        ports = [(number[p.name], p.mac) for p in self.point.ports_joined_here()]
        self.ovs.add_flows(self.bridge, rules(self.forward, ports, peers))

    def pids(self) -> list[int]:
        return self.ovs.pids() if self.ovs else []

    def stop(self) -> None:
        try:
            if self.ovs is not None:
                ovs, self.ovs = self.ovs, None
                ovs.stop()      # exit --cleanup: the datapath and its ports go
        finally:
            self._ofports.clear()
            super().stop()
