"""What the kernel data planes share: their apis, their links' counters and MTU,
and the base class that wires endpoints into namespaces (cnfperf.host.links).
"""
from __future__ import annotations

from dataclasses import replace
from operator import add
from typing import TYPE_CHECKING, ClassVar, Mapping, Sequence

from cnfperf.host import buckets, tools
from cnfperf.dataplanes import dpdk_args
from cnfperf.dataplanes.base import Attachment, DataPlane, PortCounters, unknown_or
from cnfperf.host.hugepages import remove_dpdk_files
from cnfperf.host.links import (add_netns, del_link, del_netns, give_back_all, ip, lend_nic,
                                link_stats, quiet_links, tap_index)
from cnfperf.plan import nf_places
from cnfperf.runtimes import in_guest
from cnfperf.runtimes.base import Nic

if TYPE_CHECKING:
    from cnfperf.host.facts import HostFacts
    from cnfperf.plan import Endpoint, Link, Pair, Port, TestPoint
    from cnfperf.runtimes.base import Journal
    from cnfperf.scenario import Scenario

# dpdk: through the af_packet PMD on the port's interface (dpdk_args.kernel_eal_args).
KERNEL_APIS = frozenset({"udp", "raw", "mmap", "xdp", "dpdk"})


def link_counters(netns: str | None, names: set[str]) -> dict[str, PortCounters]:
    return {name: PortCounters(**stats) for name, stats in link_stats(netns).items()
            if name in names}


def mtu_for(frame_size: int) -> int:
    """The L3 MTU that carries a frame of this size (RFC 2544 counts the 4-byte FCS)."""
    return max(1500, frame_size - 18)


def queue_args(queues: int) -> list[str]:
    """`ip link add`'s words for an interface with `queues` Rx and Tx queues
    (none for one: the default)."""
    return ["numtxqueues", str(queues), "numrxqueues", str(queues)] if queues > 1 else []


class KernelPlane(DataPlane):
    """Ports are kernel interfaces inside their node's netns, named like the port.

    Subclasses create both ports of a link in `connect()`; this class configures
    them (MAC, MTU, and on a tester's end with udp the address and a static
    neighbour so that no ARP exchange precedes the first packet), reads counters
    and removes everything it journaled.

    A virtual machine's port (Port.vm) is a NIC of its guest, named like the
    port there: vm_nic() says which device on the host its QEMU opens. Here
    (veth) a macvtap in passthru mode on the port's interface in the node's
    netns; the bridge gives the VM a tap on the bridge instead, macvlan a
    macvtap beside its macvlans. (Tester ends in VMs are a single tester's, on
    an L2 api: no udp end is ever a VM's, testers.refusal.)
    """

    kind = "kernel"
    apis: ClassVar[frozenset[str]] = KERNEL_APIS
    cut_at: ClassVar[tuple[str, ...]] = ("node",)
    cut_refusal = "its links join the nodes' interfaces directly: it has no port of its own"
    vm_refusal = None
    vm_links: ClassVar[Mapping[str, str]] = {"macvtap": "MACVTAP"}
    # Whether the data plane keeps its own devices (bridge, parent link) in a
    # separate namespace `<prefix>sw`.
    uses_switch_netns: ClassVar[bool] = False
    kernel_links: ClassVar[Mapping[str, str]] = {"veth": "VETH"}
    undo = buckets.UNDO   # its links' policers and shapers (host/buckets.py)
    # Whether the shaper of the link into a receiver (limit, shaper = tbf | htb)
    # sits on the interface of the node before it: veth and macvlan have no
    # device of theirs between the two ends.
    shaped_at_sender: ClassVar[bool] = True

    def __init__(self, journal: Journal, home=None):
        super().__init__(journal, home)   # no process of its own: run/checks/ refuses a home
        self._links: list[tuple[str, str | None]] = []   # (name, netns) created here
        self._ports: list[tuple[str, str | None]] = []   # (name, netns) counted
        self._switch_netns: str | None = None
        self._nics: dict[str, Nic] = {}    # port name -> its VM's NIC (Port.vm)
        self._lent: list[tuple[str, dict]] = []   # wires' NICs lent to it (lend())
        self._made: list[tuple[str, str, dict]] = []   # policers and shapers (_buckets)
        self.mtu = 1500

    @classmethod
    def check(cls, host: HostFacts) -> list[str]:
        problems = [] if host.root else ["needs root (network namespaces, links)"]
        problems += tools.problems("ip", "bridge", "tc")
        problems += [f"kernel has no {t} links" for t, option in cls.kernel_links.items()
                     if not host.kernel_has(t, option)]
        return problems

    @classmethod
    def scenario_problem(cls, s: Scenario, links: int) -> tuple[str, str] | None:
        """A limit on the sender's own interface (shaped_at_sender) would sit in
        the guest when the node before the receiver is a virtual machine."""
        if s.limit.pps and cls.shaped_at_sender:
            try:
                before = [s.endpoint_in, *nf_places(s.nf_in, s.nfs)][-1]
            except ValueError:
                return None    # checks.check names the mistake
            if in_guest(before):
                return "limit", (f"{cls.name} shapes on the interface of the node before the "
                                 "receiver, here a virtual machine's own: use the bridge")
        return None

    # It makes its NFs' interfaces as veths with a port's queues (plan.Port.queues)
    # and sends into them through the kernel's stack (a bridge): each frame to
    # the queue its flow hashes to, where an AF_XDP socket per queue takes it. (A
    # veth takes the queue its peer sent on, and a packet socket that bypasses
    # the qdisc, as the tester's do, sends on its CPU's: one.)
    veth_queues: ClassVar[bool] = False

    @classmethod
    def queues_problem(cls, api: str) -> str | None:
        """raw and mmap spread a port's frames over the NF's threads themselves
        (a PACKET_FANOUT group, by flow hash), on any interface, as dpdk's
        af_packet PMD does with a queue pair per thread (attach); xdp binds a
        socket to each of the interface's queues, which only a veth made with
        them has."""
        if api != "xdp" or cls.veth_queues:
            return None
        return ("its nodes' interfaces have one queue each, and AF_XDP binds a thread to one "
                "(raw, mmap or dpdk spreads a port's frames over threads on any interface)")

    @classmethod
    def limit_problem(cls, api: str) -> str | None:
        """A shaped link (tbf) sits on a qdisc that every api but udp bypasses
        where the qdisc is the sender's own (shaped_at_sender)."""
        if cls.shaped_at_sender and api != "udp":
            return (f"a sender with api {api} bypasses the qdisc of its interface, where the "
                    "limit would sit; use api udp or the bridge")
        return None

    @classmethod
    def bucket_problem(cls, s: Scenario, what: str) -> str | None:
        """Without a device of the switch's between the ends (shaped_at_sender),
        a shaper is the qdisc of the interface of the node before the receiver,
        which only the kernel's udp sends through (a packet socket bypasses it,
        as an NF's L2 api does); a policer sits at the receiver's own netdev
        ingress, which a packet socket's tap and XDP see frames before."""
        if not cls.shaped_at_sender:
            return None
        if what == "shaper" and (s.nfs or s.api != "udp"):
            sender = f"a network function with nf_api {s.nf_api}" if s.nfs \
                else f"a sender with api {s.api}"
            return (f"{sender} bypasses the qdisc of its interface, where the shaper would sit; "
                    "use api udp without network functions, or the bridge")
        if what == "policer" and s.api != "udp":
            return (f"a receiver with api {s.api} takes its frames before the ingress hook the "
                    "policer would sit at; use api udp or the bridge")
        return None

    def police_link(self, pair: Pair) -> tuple[str, str]:
        """(link, netns) whose netdev ingress takes the pair's frames on their
        last link: here the receiver's own port."""
        last = pair.last.b
        return last.name, last.node

    def shaper_link(self, pair: Pair) -> tuple[str, str]:
        """(link, netns) whose egress delivers the pair's frames to its receiver:
        here the port the last link starts at."""
        last = pair.last.a
        return last.name, last.node

    @property
    def switch_netns(self) -> str:
        assert self._switch_netns, "start() first"
        return self._switch_netns

    def start(self, point: TestPoint) -> None:
        self.point = point
        self.mtu = mtu_for(point.scenario.size)
        if self.uses_switch_netns:
            self._switch_netns = point.name("sw")
            self.make_switch_netns(self._switch_netns)
        self.setup()
        for pair in point.paths:
            for link in pair.links:
                if point.joined_at(link) != point.host:
                    continue    # another host's switch joins it (a NIC here: NicPlane)
                self.connect(link)
                for port in (link.a, link.b):
                    if point.nic(port.name):
                        continue    # a NIC, as lend() left it
                    self._up(port)
                    if port.vm:
                        self._nics[port.name] = self.vm_nic(port)
            if point.scenario.api == "udp":
                self._address(pair.sender, pair.receiver, pair.first.b)
                self._address(pair.receiver, pair.sender, pair.last.a)
            if point.joined_at(pair.last) == point.host:   # where its receiver's link is
                self._buckets(pair, point.scenario.of_pair(pair.index))   # a pair's own limit

    def setup(self) -> None:
        """Create the shared switch device, if any."""

    def connect(self, link: Link) -> None:
        """Create both ports of the link, each in its node's netns."""
        raise NotImplementedError

    def vm_nic(self, port: Port) -> Nic:
        """The NIC of a virtual machine's port, once connect() made the port: a
        macvtap in passthru mode on the port's interface (every frame it gets
        goes to the guest, every frame of the guest's leaves through it)."""
        tap = port.name + "t"
        self.add_link(tap, port.node, *tap_index(), "link", port.name, "address", port.mac,
                      "type", "macvtap", "mode", "passthru")
        ip("link", "set", "dev", tap, "mtu", str(self.mtu), "up", netns=port.node)
        return Nic(mac=port.mac, name=port.name, mtu=self.mtu, tap=tap, netns=port.node,
                   macvtap=True)

    def attach(self, port: Port) -> Attachment:
        nic = self._nics.get(port.name)
        # In a guest the NIC is named like the port: the same vdev serves it.
        if port.api == "dpdk":
            vdev = dpdk_args.af_packet(port.slot, port.name, self.point.scenario.size,
                                       queues=port.queues)
            return Attachment(mac=port.mac, port=port.slot, vdev=vdev, nic=nic)
        return Attachment(mac=port.mac, iface=port.name, nic=nic)

    def eal_args(self, node: str, attachments: Sequence[Attachment]) -> tuple[str, ...]:
        vdevs = [a.vdev for a in attachments if a.vdev]
        if not vdevs:
            return ()
        return tuple(dpdk_args.kernel_eal_args(node, vdevs, self.point.scenario.size))

    def counters(self) -> dict[str, PortCounters]:
        by_netns: dict[str | None, set[str]] = {}
        for name, netns in self._ports:
            by_netns.setdefault(netns, set()).add(name)
        found: dict[str, PortCounters] = {}
        for netns, names in by_netns.items():
            found.update(link_counters(netns, names))
        # what a policer or shaper on a port dropped: a device counts none of it
        for kind, name, info in self._made:
            port = found.get(info.get("link", name))
            drops = buckets.dropped(kind, name, info) if port else None
            if port and drops:
                key = info.get("link", name)
                found[key] = replace(port, tx_dropped=unknown_or(port.tx_dropped, drops, add)) \
                    if info.get("parent") == "root" else \
                    replace(port, rx_dropped=unknown_or(port.rx_dropped, drops, add))
        # a wire's NIC by `host:interface`, as the tester's host names its own
        for iface, _ in self._lent:
            if iface in found and self.point is not None:
                found[f"{self.point.host}:{iface}"] = found.pop(iface)
        return found

    def lend(self, port: Port, netns: str | None) -> str:
        """The NIC that is the port of a node on another host (TestPoint.nics),
        moved into netns for the point; given back in stop()."""
        assert self.point is not None
        iface = self.point.nic(port.name)
        assert iface is not None, f"{port.name}: no NIC carries it"
        self._lent.append((iface, lend_nic(self.journal, iface, netns, self.mtu)))
        self.count_port(iface, netns)
        return iface

    def stop(self) -> None:
        if self.point is not None and any(p.api == "dpdk" for p in self.point.ports
                                          if self.point.here(p.node)):
            remove_dpdk_files(self.point.prefix)  # the netns runtime's EALs run on the host
        buckets.remove(self.journal, self._made)
        # before the netns they are in goes: deleting it would destroy a virtual NIC
        give_back_all(self.journal, self._lent)
        for name, netns in reversed(self._links):
            del_link(name, netns)
            self.journal.discard("link", name)
        self._links.clear()
        self._ports.clear()
        self._nics.clear()
        if self._switch_netns:
            netns, self._switch_netns = self._switch_netns, None
            self.remove_switch_netns(netns)

    def make_switch_netns(self, name: str) -> None:
        """The switch's namespace (uses_switch_netns), journaled first; a
        switch with processes of its own may make it its container's."""
        add_netns(self.journal, name)

    def remove_switch_netns(self, name: str) -> None:
        """It goes with what is left in it, after every link of the point."""
        del_netns(self.journal, name)

    def add_tap(self, name: str, netns: str | None, counted: bool = False) -> None:
        """A persistent tap device (`ip tuntap add`) in netns, journaled first: a
        virtual machine's QEMU opens it by name; it goes as links go."""
        self.journal.add("link", name, netns=netns)
        self._links.append((name, netns))
        ip("tuntap", "add", "dev", name, "mode", "tap", netns=netns)
        if counted:
            self._ports.append((name, netns))

    def add_link(self, name: str, netns: str | None, *spec: str, counted: bool = False,
                 tool: str | None = None) -> None:
        """`ip link add <name> <spec…>` in netns, journaled first; `tool`: an
        `ip` of its own (host/iproute.py), where the host's lacks the type."""
        self.journal.add("link", name, netns=netns)
        self._links.append((name, netns))
        ip("link", "add", name, *spec, netns=netns, tool=tool or "ip")
        if netns is None:   # the host's own netns is not quiet as a point's are (add_netns)
            quiet_links(None, [name, *_peer_here(spec)])
        if counted:
            self._ports.append((name, netns))

    def count_port(self, name: str, netns: str | None) -> None:
        self._ports.append((name, netns))

    def cut(self, port: Port, at: str, up: bool) -> None:
        """`ip link set down|up` on the node's interface (a veth's other end
        loses its carrier), or on the switch's side of it (switch_port)."""
        name, netns = (port.name, port.node) if at == "node" else self.switch_port(port)
        ip("link", "set", "dev", name, "up" if up else "down", netns=netns)

    def switch_port(self, port: Port) -> tuple[str, str | None]:
        """(interface, netns) of the switch's own port for a node's port
        (cut_at has "switch")."""
        raise NotImplementedError(f"{self.name} has no port of its own for {port.name}")

    def _buckets(self, pair: Pair, s: Scenario) -> None:
        """The kernel policer and shaper of the point (host/buckets.py) on the
        pair's last link: what the receiver gets; a pair's `limit` is a tbf
        shaper there too (buckets.limit_shaper: run/checks/ refuses both). Each
        is journaled before it is made, and removed in stop() before the links
        go; what it drops counts at that link (counters())."""
        shaper = (s.shaper, s.shaper_rate.pps, s.shaper_bucket, s.shaper_queue) \
            if s.shaper in buckets.SHAPERS else \
            ("tbf", s.limit.pps, *buckets.limit_shaper(s.limit.pps, s.burst)) \
            if s.limit.pps else None
        # each noted before it is made, as the journal has it: a step of it
        # that fails leaves stop() what the steps before it made
        if shaper is not None:
            kind, pps, bucket, queue = shaper
            link, netns = self.shaper_link(pair)
            self._made.append(("qdisc", f"{link} root", {"link": link, "netns": netns,
                                                         "parent": "root", "qdisc": kind}))
            buckets.shape(self.journal, kind, link, netns, pps, bucket, queue, s.size)
        if s.policer in buckets.POLICERS:
            link, netns = self.police_link(pair)
            self._made.append(("nft", link, {"netns": netns}) if s.policer == "nft" else
                              ("qdisc", f"{link} ingress", {"link": link, "netns": netns,
                                                            "parent": "ingress",
                                                            "qdisc": "ingress"}))
            buckets.police(self.journal, s.policer, link, netns, s.policer_rate.pps,
                           s.policer_bucket)

    def _up(self, port: Port) -> None:
        ip("link", "set", "dev", port.name, "address", port.mac, "mtu", str(self.mtu), "up",
           netns=port.node)

    def _address(self, ep: Endpoint, peer: Endpoint, hop: Port) -> None:
        """The kernel's udp needs an address and, for the peer's, the MAC of the
        next hop (raw/mmap/xdp build their own frames; without an address the
        netns kernel drops them quietly instead of answering with ICMP errors)."""
        ns = ep.port.node
        ip("addr", "add", f"{ep.ip}/{ep.prefixlen}", "dev", ep.name, netns=ns)
        ip("neigh", "replace", peer.ip, "lladdr", hop.mac, "dev", ep.name,
           "nud", "permanent", netns=ns)


def _peer_here(spec: Sequence[str]) -> list[str]:
    """The peer `ip link add … peer name X` makes beside the link (no `netns`
    after it): [X], else []."""
    if "peer" not in spec:
        return []
    after = list(spec[spec.index("peer"):])
    return [after[2]] if after[1:2] == ["name"] and "netns" not in after else []
