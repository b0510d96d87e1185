"""bridge: a Linux bridge, each port on a veth to the bridge (every paper's baseline).

A virtual machine's port is a tap on the bridge instead, as libvirt and every
KVM host wire a guest: no veth between the bridge and the guest's NIC.
"""
from __future__ import annotations

from cnfperf.dataplanes.kernel import KernelPlane, queue_args
from cnfperf.host.links import ip
from cnfperf.plan import Link, Pair, Port
from cnfperf.runtimes.base import Nic


class BridgePlane(KernelPlane):
    name = "bridge"
    description = "Linux bridge; each port on a veth to the bridge"
    style = 1
    uses_switch_netns = True
    kernel_links = {"veth": "VETH", "bridge": "BRIDGE"}
    veth_queues = True
    vm_links = {"tun": "TUN"}
    # The receiver's port egresses through the bridge's own qdisc, whatever the api.
    shaped_at_sender = False
    nic_ports = True
    cut_at = ("node", "switch")

    def setup(self) -> None:
        self.bridge = self.point.name("sw")  # the switch, in its namespace of the same name
        # A pod's ports made by Multus' bridge plugin (cni = bridge, the plugin
        # of this plane's name) are veths on a bridge the plugin finds where it
        # runs: the host's netns, with its ports.
        self.bridge_netns = None if self.point.scenario.cni == self.name else self.switch_netns
        # STP off: ports forward at once instead of after the forward delay.
        # Multicast off (before the device is up): it would send IGMP reports
        # into the measurement.
        self.add_link(self.bridge, self.bridge_netns, "type", "bridge", "stp_state", "0",
                      "mcast_snooping", "0")
        ip("link", "set", self.bridge, "mtu", str(self.mtu), "multicast", "off",
           netns=self.bridge_netns)
        ip("link", "set", self.bridge, "up", netns=self.bridge_netns)

    def switch_port(self, port: Port) -> tuple[str, str | None]:
        """The bridge's side of the port's veth (or the VM's tap, or the wire's
        NIC for a node on another host): a port of the bridge."""
        return self.point.nic(port.name) or port.name + "h", self.bridge_netns

    def cut(self, port: Port, at: str, up: bool) -> None:
        """At the switch the bridge stops forwarding on its port (its STP
        state disabled, then forwarding again): the node's interface keeps
        its carrier and learns nothing, as behind a switch whose port failed:
        only what the node itself notices (a routing protocol's hellos, BFD)
        can tell. At the node, its interface down (KernelPlane.cut)."""
        if at != "switch":
            return super().cut(port, at, up)
        name, netns = self.switch_port(port)
        ip("link", "set", "dev", name, "state", "3" if up else "0", netns=netns, tool="bridge")

    def connect(self, link: Link) -> None:
        self._port(link.a)
        self._port(link.b)

    def shaper_link(self, pair: Pair) -> tuple[str, str | None]:
        return self.switch_port(pair.last.b)

    def police_link(self, pair: Pair) -> tuple[str, str | None]:
        """The bridge's port the node before the receiver sends into: its netdev
        ingress comes before the bridge takes the frame, whatever api sent it."""
        return self.switch_port(pair.last.a)

    def vm_nic(self, port: Port) -> Nic:
        return Nic(mac=port.mac, name=port.name, mtu=self.mtu, tap=port.name + "h",
                   netns=self.bridge_netns)

    def _up(self, port: Port) -> None:
        if not port.vm:    # a VM's port is its guest's: it sets the MAC, MTU and state
            super()._up(port)

    def _port(self, port: Port) -> None:
        sw = self.bridge_netns
        host_side = port.name + "h"
        if self.point.nic(port.name):
            host_side = self.lend(port, sw)   # the wire's end is the bridge's port
        elif port.vm:
            self.add_tap(host_side, sw, counted=True)
        else:
            many = queue_args(port.queues)
            self.add_link(host_side, sw, *many, "type", "veth", "peer", "name", port.name, *many,
                          "netns", port.node, counted=True)
        ip("link", "set", host_side, "master", self.bridge, "mtu", str(self.mtu), "up",
           netns=sw)
        # A receiver never sends in throughput mode, so the bridge would never
        # learn its MAC and flood every frame to every port.
        ip("fdb", "replace", port.mac, "dev", host_side, "master", "static", netns=sw,
           tool="bridge")
