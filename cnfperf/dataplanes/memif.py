"""memif: a direct shared-memory packet interface per link, no switch.

The link's end that starts first (the receiver's side) is the memif server (it
listens on the socket and the client's rings live in memory the client shares);
the other end is the client.
Two DPDK 22.11 memif PMD limits to know: its port counters reset when the peer
disconnects (only the engines' own counts are trusted here), and it unmaps the
shared regions from its control thread when the peer disconnects, unsynchronised
with a thread still polling them: a peer that closed its port while the other
still polled segfaulted the one that stayed in 47 of 200 runs. The runner's
two-phase stop (trial.py) closes ports only once no engine polls any more.
"""
from __future__ import annotations

from cnfperf.dataplanes import dpdk_args
from cnfperf.dataplanes.dpdk_base import DpdkPlane
from typing import TYPE_CHECKING

from cnfperf.plan import Port

if TYPE_CHECKING:
    from cnfperf.scenario import Scenario


class MemifPlane(DpdkPlane):
    name = "memif"
    description = "direct memif shared-memory link: the receiving end is server, the other client"
    style = 4
    joins = "link"
    forwards = ("port",)       # a link's two ports joined to each other
    # Stopping a command or Click NF closes its ports while its neighbour may
    # still poll the link between them, and the neighbour crashes (above).
    neighbours_may_close = False
    # memif refuses both ends of one socket in one process.
    single_tester = False

    # memif's rings live in memory its two processes share: no guest is one of them.
    vm_refusal = "memif's shared memory does not reach into a virtual machine"

    @classmethod
    def ends_queues_problem(cls, s: Scenario) -> str | None:
        # A memif queue reaches the same queue of its peer, and the engine opens
        # as many as it polls: sender and receiver on one link, queue to queue,
        # keep each flow on one queue. An NF between them polls one queue.
        if s.nfs:
            return ("an NF between the ends polls one queue of each port, and memif takes a "
                    "queue to the same queue of its peer: endpoint_cores > 1 runs without NFs")
        return None

    def vdev(self, port: Port) -> str:
        index, link = self.link_of(port)
        socket = str(self.sock_dir / f"l{index}.sock")
        role = "server" if port == link.first else "client"
        return dpdk_args.memif(port.slot, socket, role, mac=port.mac,
                               frame_size=self.point.scenario.size)
