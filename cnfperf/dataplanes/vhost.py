"""vhost: a direct vhost-user link between the two ports of every link, no switch.

The end that starts first (the receiver's side) is the vhost-user backend
(net_vhost, it creates the socket and maps its peer's memory); the other end
attaches as virtio-user. The runner starts receivers first, so the socket
exists when the sender connects.

A virtual machine is always a front end (QEMU's vhost-user netdev is virtio),
and exists before any engine starts: on a link to a VM the VM serves the
socket from its start and the engine at the other end is the backend,
connecting to it as a client, whichever starts first. Two VMs cannot share a
link (both would be front ends): scenario_problem refuses it.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from cnfperf.dataplanes import dpdk_args
from cnfperf.dataplanes.dpdk_base import DpdkPlane, Frontend
from cnfperf.plan import Port, nf_places

if TYPE_CHECKING:
    from cnfperf.scenario import Scenario


class VhostPlane(DpdkPlane):
    name = "vhost"
    description = "direct vhost-user link: the receiving end is the backend, the other virtio-user"
    style = 3
    joins = "link"
    rx_interrupts = True
    # net_vhost opens its socket only once configured, after EAL has probed the
    # virtio-user port that should connect to it: not both in one process.
    single_tester = False

    @classmethod
    def scenario_problem(cls, s: Scenario, links: int) -> tuple[str, str] | None:
        try:
            places = [s.endpoint_in, *nf_places(s.nf_in, s.nfs), s.endpoint_in]
        except ValueError:
            return None    # checks.check names the mistake
        if any(a == b == "vm" for a, b in zip(places, places[1:])):
            field = "nf_in" if s.nfs and "vm" in s.nf_in else "endpoint_in"
            return field, ("vhost links two virtual machines directly, and both would be "
                           "vhost-user front ends: put a container between them, or use a "
                           "switch (testpmd, ovs)")
        return super().scenario_problem(s, links)

    def _socket(self, port: Port) -> str:
        index, _ = self.link_of(port)
        return str(self.sock_dir / f"l{index}.sock")

    def frontend(self, port: Port) -> Frontend:
        """A virtual machine's end: it serves the link's socket (see above)."""
        return Frontend(self._socket(port), server=True)

    def vdev(self, port: Port) -> str:
        _, link = self.link_of(port)
        peer = link.b if port == link.a else link.a
        if peer.vm:
            return dpdk_args.vhost(port.slot, self._socket(port), client=True)
        if port == link.first:
            return dpdk_args.vhost(port.slot, self._socket(port))
        return dpdk_args.virtio_user(port.slot, self._socket(port), mac=port.mac)
