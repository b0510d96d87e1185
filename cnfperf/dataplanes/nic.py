"""nic: a node's ports that are NICs themselves, wired to another host's switch.

Where a point spans hosts, each link is joined by one host's switch
(TestPoint.joined_at); a port of a node on another host reaches it over a
wire (TestPoint.crossings). On the node's host the port is the wire's NIC
(TestPoint.nics): the tester's ports on a tester's host (TG–DUT), an NF's
port towards the next host of a chain. For the point the NIC goes into the
node's netns, up and promiscuous, and its engine opens it as it would a
veth: raw, mmap or xdp sockets on it, or DPDK's af_packet or af_xdp PMD
(nic_driver: DPDK without a NIC driver of its own, the way 004 ran testpmd on
an unsupported NIC).
After the point it comes back as it was (host/links.py: lend_nic,
give_back_nic).

A wire's end named by its PCI address (the inventory's host:0000:03:00.0) is
a NIC DPDK drives itself: for the point it is bound to vfio-pci (behind an
IOMMU) or uio_pci_generic, its engine (api dpdk, netns runtime) opens it by
address from hugepages of the point's, and after it the NIC's kernel driver
takes it back, its netdev named as before (host/pci.py: lend, give_back).

It is no scenario's `switch`: the testbed takes it for those ports, so it
is not in the registry (nothing lists it, and nothing sweeps over it).
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Sequence

from cnfperf.dataplanes import dpdk_args
from cnfperf.dataplanes.base import Attachment, DataPlane, PortCounters
from cnfperf.dataplanes.kernel import link_counters, mtu_for
from cnfperf.host import pci, tools
from cnfperf.host.hugepages import OwnDir, pages_for, remove_dpdk_files
from cnfperf.host.journal import RUN_DIR
from cnfperf.host.links import give_back_all, lend_nic

if TYPE_CHECKING:
    from cnfperf.host.facts import HostFacts
    from cnfperf.plan import Port, TestPoint

# A tester's end on a NIC builds its own frames (the udp api would need the
# kernel's routes and neighbours across the wire).
NIC_APIS = frozenset({"raw", "mmap", "xdp", "dpdk"})


class NicPlane(DataPlane):
    name = "nic"
    description = "the tester's NICs, wired to the switch's host"
    kind = "kernel"
    apis = NIC_APIS
    style = 0

    def __init__(self, journal, home=None):
        super().__init__(journal, home)
        self._lent: list[tuple[str, dict]] = []   # (interface, its journal info)
        self._bound: list[tuple[str, dict]] = []  # (PCI address, its journal info)
        self.hugepages: OwnDir | None = None

    @classmethod
    def check(cls, host: HostFacts) -> list[str]:
        return ([] if host.root else ["needs root (moving NICs into namespaces)"]) + \
            tools.problems("ip")

    def start(self, point: TestPoint) -> None:
        self.point = point
        mtu = mtu_for(point.scenario.size)
        devices = [p for p in self._ports() if self._pci(p)]
        if devices:
            memory = dpdk_args.endpoint_mb(point.scenario.size) * len(devices)
            self.hugepages = OwnDir(pages_for(memory), point.prefix,
                                    RUN_DIR / f"{point.prefix}-{self.name}", self.journal)
            self.hugepages.__enter__()
        for port in self._ports():
            end = point.nic(port.name)
            assert end is not None
            if self._pci(port):
                info = pci.lend(self.journal, end)
                self._bound.append((end, info))
            else:
                self._lent.append((end, lend_nic(self.journal, end, port.node, mtu)))

    def _pci(self, port: Port) -> str | None:
        """The PCI address of the NIC the port is, where the wire's end names one."""
        assert self.point is not None
        end = self.point.nic(port.name)
        return end if end is not None and pci.ADDRESS.fullmatch(end) else None

    def _ports(self) -> list[Port]:
        assert self.point is not None
        return self.point.direct_ports()

    def attach(self, port: Port) -> Attachment:
        assert self.point is not None
        if (address := self._pci(port)) is not None:
            # the EAL numbers its PCI ports in the bus's order, whatever -a's
            node = sorted(a for p in self._ports() if p.node == port.node
                          and (a := self._pci(p)) is not None)
            return Attachment(mac=port.mac, port=node.index(address), pci=address)
        iface = self.point.nic(port.name)
        if port.api == "dpdk":
            s = self.point.scenario
            vdev = dpdk_args.nic(port.slot, iface, s.nic_driver, s.size, queues=port.queues)
            return Attachment(mac=port.mac, port=port.slot, vdev=vdev)
        return Attachment(mac=port.mac, iface=iface)

    def eal_args(self, node: str, attachments: Sequence[Attachment]) -> tuple[str, ...]:
        devices = sorted(a.pci for a in attachments if a.pci)
        if devices:
            assert self.point is not None and self.hugepages is not None
            memory = dpdk_args.endpoint_mb(self.point.scenario.size) * len(devices)
            return tuple(dpdk_args.pci_eal_args(node, str(self.hugepages.mount_point), memory,
                                                devices))
        vdevs = [a.vdev for a in attachments if a.vdev]
        if not vdevs:
            return ()
        assert self.point is not None
        return tuple(dpdk_args.kernel_eal_args(node, vdevs, self.point.scenario.size))

    def counters(self) -> dict[str, PortCounters]:
        """Each NIC's own counters, named `host:interface` (the switch's ports
        are named like the tester's ports they face)."""
        assert self.point is not None
        found: dict[str, PortCounters] = {}
        for port in self._ports():
            if self._pci(port):
                continue       # DPDK's: no netdev while it has it; the engine counts
            iface = self.point.nic(port.name)
            for name, c in link_counters(port.node, {iface}).items():
                found[f"{self.point.host}:{name}"] = c
        return found

    def stop(self) -> None:
        try:
            if self.point is not None and any(p.api == "dpdk" for p in self._ports()):
                remove_dpdk_files(self.point.prefix)
            give_back_all(self.journal, self._lent)
        finally:
            try:
                pci.give_back_all(self.journal, self._bound)
            finally:
                if self.hugepages is not None:
                    hugepages, self.hugepages = self.hugepages, None
                    hugepages.close()

