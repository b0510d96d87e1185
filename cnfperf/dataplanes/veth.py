"""veth: the two ports of every link joined directly, like a patch cable."""
from __future__ import annotations

from cnfperf.dataplanes.kernel import KernelPlane
from cnfperf.plan import Link


class VethPlane(KernelPlane):
    name = "veth"
    description = "a veth pair per link, no switch between its ends"
    style = 0
    joins = "link"
    forwards = ("port",)       # a link's two ports joined to each other
    counter_view = "node"      # each end's own interface

    def connect(self, link: Link) -> None:
        a, b = link.a, link.b
        # Created directly in both namespaces: the host's namespace never holds it.
        self.add_link(a.name, a.node, "type", "veth", "peer", "name", b.name, "netns", b.node)
        self.count_port(a.name, a.node)
        self.count_port(b.name, b.node)
