"""netkit: the two ports of every link joined directly by a netkit pair, the
veth successor (Linux 6.7) that Cilium puts in its pods: a BPF program at
each end is its only hook (none here: netkit's default policy forwards), and
a frame crosses to the peer without the backlog queue veth goes through.

L2 mode, so that the engine's frames keep their Ethernet headers (netkit's
default, L3, carries IP packets alone). Made with an `ip` that knows netkit
(host/iproute.py: the lab's where the host's iproute2 is older)."""
from __future__ import annotations

from cnfperf.dataplanes.veth import VethPlane
from cnfperf.host import iproute
from cnfperf.plan import Link


class NetkitPlane(VethPlane):
    """veth's links, each a netkit pair instead."""
    name = "netkit"
    description = "a netkit pair (L2 mode) per link, no switch between its ends"
    style = 13
    kernel_links = {"netkit": "NETKIT"}
    vm_refusal = "a virtual machine's port on a netkit link (a macvtap on it) is not offered yet"

    @classmethod
    def check(cls, host) -> list[str]:
        problems = super().check(host)
        if problem := iproute.netkit_problem():
            problems.append(problem)
        return problems

    def connect(self, link: Link) -> None:
        a, b = link.a, link.b
        # as veth's: made in both namespaces at once, never in the host's
        self.add_link(a.name, a.node, "type", "netkit", "mode", "l2", "peer", "name", b.name,
                      "netns", b.node, tool=iproute.netkit_ip())
        self.count_port(a.name, a.node)
        self.count_port(b.name, b.node)
