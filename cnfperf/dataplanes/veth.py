"""veth: the two endpoints of a pair joined directly, like a patch cable."""
from __future__ import annotations

from cnfperf.dataplanes.kernel import KernelDataPlane
from cnfperf.plan import Pair


class Veth(KernelDataPlane):
    name = "veth"
    description = "a veth pair per pair of endpoints, no switch between them"

    def connect(self, pair: Pair) -> None:
        s, r = pair.sender, pair.receiver
        # Created directly in both namespaces: the host's namespace never holds it.
        self.add_link(s.name, s.name, "type", "veth", "peer", "name", r.name, "netns", r.name)
        self.count_port(s.name, s.name)
        self.count_port(r.name, r.name)
