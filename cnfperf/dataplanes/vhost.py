"""vhost: a direct vhost-user link between the two ports of every link, no switch.

The end that starts first (the receiver's side) is the vhost-user backend
(net_vhost, it creates the socket and maps its peer's memory); the other end
attaches as virtio-user. The runner starts receivers first, so the socket
exists when the sender connects.
"""
from __future__ import annotations

from cnfperf.dataplanes import dpdk_args
from cnfperf.dataplanes.dpdk_base import DpdkPlane
from cnfperf.plan import Port


class VhostPlane(DpdkPlane):
    name = "vhost"
    description = "direct vhost-user link: the receiving end is the backend, the other virtio-user"
    style = 3
    joins = "link"
    forwards = ("port",)       # a link's two ports joined to each other
    rx_interrupts = True
    # net_vhost opens its socket only once configured, after EAL has probed the
    # virtio-user port that should connect to it: not both in one process.
    single_tester = False
    # A VM would be a front end of the link, and QEMU does not start before its
    # vhost-user peer is there, while the peer here is an engine, started
    # only once every node exists.
    vm_refusal = ("QEMU waits at its start for its vhost-user peer, here an engine that "
                  "starts after it: use testpmd or ovs between them")

    def vdev(self, port: Port) -> str:
        index, link = self.link_of(port)
        socket = str(self.sock_dir / f"l{index}.sock")
        if port == link.first:
            return dpdk_args.vhost(port.slot, socket)
        return dpdk_args.virtio_user(port.slot, socket, mac=port.mac)
