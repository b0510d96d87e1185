"""SR-IOV virtual functions: every port a VF of one NIC (its physical
function, the PF: sriov_pf), the NIC's embedded switch joining them by MAC.

The point's VFs are made on the PF when it starts (host/sriov.py: its state
journaled first), each given its port's MAC from the PF, spoof checking off
(a network function forwards frames of the tester's MACs) and trust on. A
port whose engine has a kernel api (raw, mmap, xdp, udp) gets its VF as a
netdev: its kernel driver takes it, and it moves, named like its port, into
its node's netns, as macvlan's children do. A port with api dpdk gets its VF
as a PCI device bound to DPDK's driver (vfio-pci behind an IOMMU, else
uio_pci_generic), which the engine's EAL opens by address, from hugepages of
the point's. stop() removes every VF by setting the PF's VF count back to
what it was: their netdevs and bindings go with them, in whatever netns.

The NIC switches between its VFs: a frame to a MAC none of them has leaves on
the PF's wire. Counters are each VF's as the NIC counts them, in the VF's view
(counter_view node): from the PF where its driver reports them, else from the
VF's driver, else the VF netdev's own (host/vf_counts.py; applied() says
which, per port). A DPDK VF the PF does not count has only its engine's.
"""
from __future__ import annotations

import time
from dataclasses import replace
from typing import Sequence

from cnfperf.dataplanes import dpdk_args
from cnfperf.dataplanes.base import Attachment, PortCounters
from cnfperf.dataplanes.kernel import KernelPlane
from cnfperf.host import pci, sriov, tools, vf_counts
from cnfperf.host.hugepages import OwnDir, pages_for
from cnfperf.host.journal import RUN_DIR
from cnfperf.host.links import ip, link_flags
from cnfperf.plan import Link, Port
from cnfperf.runtimes import RUNTIMES


# A VF's link after it is brought up: its driver's watchdog (every two seconds
# for igbvf) asks the PF; an emulated one under TCG takes longer, and on a
# busy host once more than 10 s.
LINK_S = 30.0


class SriovPlane(KernelPlane):
    name = "sriov"
    description = "SR-IOV virtual functions of one NIC, joined by its embedded switch"
    style = 12
    kernel_links = {}
    counter_view = "node"      # the VFs, inside their nodes
    vm_refusal = ("a virtual machine takes a virtual function by PCI passthrough, which needs "
                  "an IOMMU: not offered yet")
    undo = {**KernelPlane.undo, **sriov.UNDO}

    def __init__(self, journal, home=None):
        super().__init__(journal, home)
        self.vfs: sriov.Vfs | None = None
        self._vf: dict[str, int] = {}      # port name -> its VF's index
        self._dpdk: dict[str, str] = {}    # a DPDK port's name -> its VF's PCI address
        self._counted: dict[str, str | None] = {}   # port name -> vf_counts.source()
        self._drivers: dict[str, str] = {}          # port name -> its VF's driver
        self.hugepages: OwnDir | None = None

    @classmethod
    def check(cls, host) -> list[str]:
        problems = [] if host.root else ["needs root (virtual functions, network namespaces)"]
        problems += tools.problems("ip", "ethtool")   # ethtool: a VF's NIC counters
        if not sriov.pfs():
            problems.append("no NIC on this host has SR-IOV virtual functions")
        return problems

    @classmethod
    def scenario_problem(cls, s, links: int) -> tuple[str, str] | None:
        """A DPDK engine opens its VF's PCI device and the uio or vfio device
        file: the host's own /sys and /dev, which the netns runtime sees."""
        dpdk = s.api == "dpdk" or (s.nfs and s.nf_api == "dpdk")
        if dpdk and not RUNTIMES[s.runtime].host_files:
            return "runtime", ("a DPDK engine on a virtual function opens its PCI device, "
                               "which only a runtime whose engines see the host's own files "
                               "does: runtime netns")
        return super().scenario_problem(s, links)

    @classmethod
    def scenario_host_problems(cls, s) -> list[str]:
        """sriov_pf held against this host's NICs, for the VFs a point of two
        ports per node on each link needs (the most it can; an NF kind of
        fewer ports needs fewer: start() holds the placed count)."""
        if not sriov.pfs():
            return []      # check() says so
        try:
            sriov.choose(s.sriov_pf, 2 * s.pairs * (s.nfs + 1))
        except sriov.SriovError as e:
            return [str(e)]
        return []

    @classmethod
    def scenario_host_refusal(cls, s) -> tuple[str, str] | None:
        """sriov_pf naming a NIC this host lacks or one without SR-IOV, or
        auto where several have it, on a host that has one (a host with none:
        check() says so, exit 1)."""
        if sriov.pfs() and (why := sriov.unknown(s.sriov_pf)) is not None:
            return "sriov_pf", why
        return None

    @classmethod
    def versions(cls, host) -> dict[str, str]:
        """The NICs with SR-IOV here: driver, PCI ids, and whether QEMU emulates
        them (the lab's igb): stored with each point."""
        return {"sriov_nics": "; ".join(sriov.describe(pf) for pf in sriov.pfs())}

    def setup(self) -> None:
        point = self.point
        ports = [p for pair in point.paths for link in pair.links
                 if point.joined_at(link) == point.host
                 for p in (link.a, link.b) if not point.nic(p.name)]
        pf = sriov.choose(point.scenario.sriov_pf, len(ports))
        dpdk = [p for p in ports if p.api == "dpdk"]
        if dpdk:
            memory = dpdk_args.endpoint_mb(point.scenario.size) * len(dpdk)
            self.hugepages = OwnDir(pages_for(memory), point.prefix,
                                    RUN_DIR / f"{point.prefix}-{self.name}", self.journal)
            self.hugepages.__enter__()
        s = point.scenario
        settings = sriov.Settings(vlan=s.sriov_vlan, spoofchk=s.sriov_spoofchk,
                                  trust=s.sriov_trust, max_tx_rate=s.sriov_max_tx_rate)
        self.vfs = sriov.make(self.journal, pf, len(ports), up=bool(settings.max_tx_rate))
        for index, port in enumerate(ports):
            self._vf[port.name] = index
            sriov.configure(pf, index, port.mac, settings)

    def applied(self) -> dict:
        """Each VF's settings as the PF reads them back (switch_facts' applied)."""
        if self.vfs is None:
            return {}
        vfs = []
        for vf in sriov.applied(self.vfs.pf):
            vlans = [v.get("vlan", 0) for v in vf.get("vlan_list") or []]
            vfs.append({"vf": vf.get("vf"), "mac": vf.get("address"),
                        "vlan": vlans[0] if vlans else vf.get("vlan", 0),
                        "max_tx_rate": (vf.get("rate") or {}).get("max_tx", 0),
                        "spoofchk": vf.get("spoofchk"), "trust": vf.get("trust")})
        return {"pf": self.vfs.pf.name, "vfs": vfs, "drivers": dict(self._drivers),
                "counters": dict(self._counted)}

    def connect(self, link: Link) -> None:
        assert self.vfs is not None
        for port in (link.a, link.b):
            address = self.vfs.pci[self._vf[port.name]]
            if port.api == "dpdk":
                self._drivers[port.name] = sriov.bind_dpdk(self.vfs.pf, address)
                self._dpdk[port.name] = address
                self._counted[port.name] = vf_counts.source(self.vfs.pf.driver, None)
                continue
            netdev = sriov.bind_kernel(self.vfs.pf, address)
            ip("link", "set", "dev", netdev, "name", port.name, "netns", port.node)
            self.count_port(port.name, port.node)
            self._drivers[port.name] = pci.driver(address)
            self._counted[port.name] = vf_counts.source(self.vfs.pf.driver,
                                                        self._drivers[port.name])

    def start(self, point) -> None:
        super().start(point)
        self._wait_links()

    def counters(self) -> dict[str, PortCounters]:
        """Each VF's counts as the NIC keeps them (host/vf_counts.py): the
        PF's, drops included; the NIC's registers through the VF's driver,
        beside the netdev's drops; else the VF netdev's own."""
        found = super().counters()
        if self.vfs is None:
            return found
        by_vf = vf_counts.from_pf(self.vfs.pf.name) \
            if "pf" in self._counted.values() else {}
        nodes = {p.name: p.node for p in self.point.ports} if self.point else {}
        for name, how in self._counted.items():
            if how == "pf" and self._vf[name] in by_vf:
                found[name] = PortCounters(**by_vf[self._vf[name]])
            elif how == "vf" and name in found:
                found[name] = replace(found[name], **vf_counts.from_vf(name, nodes.get(name)))
        return found

    def _wait_links(self) -> None:
        """Every kernel VF's link up before a frame is sent: the VF's driver
        learns it from the PF (igbvf's watchdog asks every two seconds), and
        a netdev without one drops what it is given."""
        waiting = {p.name: p.node for p in self.point.ports
                   if p.name in self._vf and p.name not in self._dpdk}
        deadline = time.monotonic() + LINK_S
        while waiting:
            for name, node in list(waiting.items()):
                if "LOWER_UP" in link_flags(name, node):
                    del waiting[name]
            if not waiting:
                return
            if time.monotonic() > deadline:
                raise sriov.SriovError(f"virtual function {', '.join(waiting)}: no link "
                                       f"{LINK_S:g} s after it was brought up")
            time.sleep(0.05)

    def _up(self, port: Port) -> None:
        if port.name in self._dpdk:
            return      # a PCI device of its engine's: no netdev
        # its MAC is the PF's to set (configure): the VF asking for one again
        # would be refused where the two differed
        ip("link", "set", "dev", port.name, "mtu", str(self.mtu), "up", netns=port.node)

    def attach(self, port: Port) -> Attachment:
        address = self._dpdk.get(port.name)
        if address is None:
            return super().attach(port)
        # the EAL numbers its PCI ports in the bus's order, whatever -a's
        node = sorted(self._dpdk[p.name] for p in self.point.ports
                      if p.node == port.node and p.name in self._dpdk)
        return Attachment(mac=port.mac, port=node.index(address), pci=address)

    def eal_args(self, node: str, attachments: Sequence[Attachment]) -> tuple[str, ...]:
        devices = [a.pci for a in attachments if a.pci]
        if not devices:
            return super().eal_args(node, attachments)
        assert self.hugepages is not None
        memory = dpdk_args.endpoint_mb(self.point.scenario.size) * len(devices)
        return tuple(dpdk_args.pci_eal_args(node, str(self.hugepages.mount_point), memory,
                                            sorted(devices)))

    def stop(self) -> None:
        try:
            super().stop()
        finally:
            try:
                if self.vfs is not None:
                    vfs, self.vfs = self.vfs, None
                    sriov.remove(self.journal, vfs.pf.name, vfs.found)
            finally:
                self._vf.clear()
                self._dpdk.clear()
                self._counted.clear()
                self._drivers.clear()
                if self.hugepages is not None:
                    hugepages, self.hugepages = self.hugepages, None
                    hugepages.close()      # its mount and directory gone, its pages given back
