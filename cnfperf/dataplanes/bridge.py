"""bridge: a Linux bridge, each endpoint on a veth port (every paper's baseline)."""
from __future__ import annotations

from cnfperf.dataplanes.kernel import KernelDataPlane, ip
from cnfperf.plan import Endpoint, Pair


class Bridge(KernelDataPlane):
    name = "bridge"
    description = "Linux bridge; each endpoint on a veth port"
    uses_switch_netns = True
    link_types = ("veth", "bridge")
    # The receiver's port egresses through the bridge's own qdisc, whatever the api.
    limit_at_sender = False

    def setup(self) -> None:
        self.bridge = self.point.name("sw")  # the switch, in its namespace of the same name
        # STP off: ports forward at once instead of after the forward delay.
        # Multicast off (before the device is up): it would send IGMP reports
        # into the measurement.
        self.add_link(self.bridge, self.switch_netns, "type", "bridge", "stp_state", "0",
                      "mcast_snooping", "0")
        ip("link", "set", self.bridge, "mtu", str(self.mtu), "multicast", "off",
           netns=self.switch_netns)
        ip("link", "set", self.bridge, "up", netns=self.switch_netns)

    def connect(self, pair: Pair) -> None:
        for ep in pair.endpoints:
            self._port(ep)

    def limit_link(self, pair: Pair) -> tuple[str, str]:
        return pair.receiver.name + "h", self.switch_netns

    def _port(self, ep: Endpoint) -> None:
        sw = self.switch_netns
        port = ep.name + "h"
        self.add_link(port, sw, "type", "veth", "peer", "name", ep.name, "netns", ep.name,
                      counted=True)
        ip("link", "set", port, "master", self.bridge, "mtu", str(self.mtu), "up", netns=sw)
        # A receiver never sends in throughput mode, so the bridge would never
        # learn its MAC and flood every frame to every port.
        ip("fdb", "replace", ep.mac, "dev", port, "master", "static", netns=sw, tool="bridge")
