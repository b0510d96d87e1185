"""macvlan (bridge mode): ports as MAC-addressed children of one parent link.

A virtual machine's port is a macvtap child of the same parent instead (the
KVM side of paper 002's macvtap vs macvlan), in the VM's netns, its MAC the
guest's; QEMU opens its character device.

Where a link's other port is a node on another host, the wire's NIC stands for
that port (TestPoint.nics) and is the parent of this port's child instead: the
way containers reach a host's NIC on a macvlan network. Frames from the wire
reach the child by its MAC; the child's go out on the wire. macvlan joins
children to their parent, not two parents: a link whose two ports are both
NICs has nothing to join it (run/checks/placement.py refuses it: nic_to_nic).
"""
from __future__ import annotations

from typing import Sequence

from cnfperf.dataplanes.kernel import KernelPlane
from cnfperf.host.links import ip, tap_index
from cnfperf.host.rps import rps_script
from cnfperf.host.system import run
from cnfperf.plan import Link, Port
from cnfperf.runtimes.base import Nic


class MacvlanPlane(KernelPlane):
    name = "macvlan"
    description = "macvlan children in bridge mode on a shared parent link"
    style = 2
    uses_switch_netns = True
    kernel_links = {"veth": "VETH", "macvlan": "MACVLAN"}
    counter_view = "node"      # the children, inside their nodes
    nic_ports = True
    nic_to_nic = False

    def setup(self) -> None:
        # The parent is one end of a veth pair: macvlan switches between its
        # children itself, so the parent only has to be an Ethernet device with
        # carrier, and unlike dummy (often not built) veth exists wherever the
        # veth data plane does. The host's NICs are never touched.
        # A pod's ports made by Multus' macvlan plugin (cni = macvlan, the
        # plugin of this plane's name) are children of a parent the plugin
        # finds where it runs: the host's netns.
        sw = self.parent_netns = None if self.point.scenario.cni == self.name \
            else self.switch_netns
        self.parent = self.point.name("mv")
        self.add_link(self.parent, sw, "mtu", str(self.mtu), "type", "veth",
                      "peer", "name", self.parent + "p", "mtu", str(self.mtu))
        ip("link", "set", self.parent + "p", "up", netns=sw)
        ip("link", "set", self.parent, "up", netns=sw)

    def steer(self, cores: Sequence[int]) -> None:
        """A frame from one child to another in bridge mode is handed to their
        shared parent (dev_forward_skb to the lower device), which passes it
        to the receiving child in the same softirq: the parent's RPS map, not
        the child's, picks the core. Set to the routers' cores, every frame on
        the parent is taken there, theirs and the ends' alike: one map shared
        by all (paper 002's point against macvlan)."""
        script = rps_script([self.parent], cores)
        run(["sh", "-ec", script] if self.parent_netns is None else
            ["ip", "netns", "exec", self.parent_netns, "sh", "-ec", script],
            what=f"macvlan parent {self.parent}: RPS map")

    def connect(self, link: Link) -> None:
        sw = self.parent_netns
        parent = self.parent
        wired = [port for port in (link.a, link.b) if self.point.nic(port.name)]
        if wired:   # the wire's NIC is the other port's parent (never both: nic_to_nic)
            parent = self.lend(wired[0], sw)
        for port in (link.a, link.b):
            if port in wired:
                continue
            # Created next to the parent, then moved: the MAC is set at creation
            # so macvlan's address table is right from the first frame; a
            # macvtap keeps its ifindex (tap_index) through it: the node's netns
            # has none that high.
            kind = [*tap_index(), "link", parent, "address", port.mac, "type", "macvtap"] \
                if port.vm else ["link", parent, "address", port.mac, "type", "macvlan"]
            self.add_link(port.name, sw, *kind, "mode", "bridge")
            ip("link", "set", port.name, "netns", port.node, netns=sw)
            self._links[-1] = (port.name, port.node)
            self.journal.add("link", port.name, netns=port.node)
            self.count_port(port.name, port.node)

    def vm_nic(self, port: Port) -> Nic:
        return Nic(mac=port.mac, name=port.name, mtu=self.mtu, tap=port.name, netns=port.node,
                   macvtap=True)
