"""vhost: a direct vhost-user link per pair, no switch in between.

The receiver's engine is the vhost-user backend (net_vhost, it creates the
socket and maps its peer's memory); the sender attaches as virtio-user. The
runner starts receivers first, so the socket exists when the sender connects.
"""
from __future__ import annotations

from cnfperf.dataplanes import dpdk_args
from cnfperf.dataplanes.dpdk_base import DpdkDataPlane
from cnfperf.plan import Endpoint


class Vhost(DpdkDataPlane):
    name = "vhost"
    description = "direct vhost-user link per pair: receiver is the backend, sender virtio-user"

    def vdev(self, ep: Endpoint) -> str:
        socket = str(self.sock_dir / f"p{ep.pair}.sock")
        if ep.receives_first:
            return dpdk_args.vhost(0, socket)
        return dpdk_args.virtio_user(0, socket, mac=ep.mac)
