"""The DataPlane interface: one class per switch, one file each.

What a data plane is, as class attributes and class methods (every caller asks
the class: run/checks/ names no data plane, it asks these):
    name, description, kind ("kernel" or "dpdk"), apis, style (its report style)
    kernel_links  kernel link types its links need -> the config option of each
    joins, counter_view, max_links, forwards, pins_rxq, rings, nic_rings, poll_threads,
    max_cores, max_rxq, max_size, processes, rx_interrupts, floats,
    neighbours_may_close, single_tester, vm_refusal, vm_dpdk: capabilities
    undo          journal kinds of its own -> how `cnfperf cleanup` undoes one
    cut_at, cut_refusal  where it takes a port down for a fault (run/fault.py)
    check(host), scenario_problem(s, links), input_problem(s), limit_problem(api),
    pollers(s, cores),
    versions(host), stored(): what checks, plan, runner and the store ask

Lifecycle for one test point, driven by testbed.Builder and trial.py:
    check(host)   class-level: problems that make the data plane unusable here
    start(point)  create the switch and join every link's two ports (node netns exist)
    attach(port)  what the engine of the port's node needs to reach it
    eal_args(node, attachments)  a DPDK engine's EAL arguments for its ports
    counters()    switch-side packet counters per port, read before and after
    queues()      which poll thread serves which Rx queue of which port, read
                  while the engines' ports are up
    applied()     how it was configured, as read back from it (its forwarding
                  rules, queue affinity, descriptors): stored with the point
    pids()        the switch's own processes (CPU accounting), or its `container`
    cut(port, at, up)  a port down or up again, inside a trial (a fault)
    window(open)  the trial's measured window opens or closes: what the plane
                  does on the host by itself (OVS's drop sampling) waits
    stop()        remove what start() created; safe to call after a partial start
A switch a run keeps between points (keeps; run/keep.py) also has:
    release()     the point is over, its engines gone: the switch stays up
    reuse(point)  the next point, made alike: counters and learned state reset
    stale()       why the kept switch cannot serve again (a process gone), or None
Every resource is added to the journal before it is created.

A switch with processes of its own (ovs, testpmd, vpp, snabb, click) runs them
on the host, or, given a Home (switch_in = container or pod), in a container
of its own made from its `image`: `container` is then that container (its
cgroup holds every thread of the switch).
"""
from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any, Callable, ClassVar, Mapping, Protocol, Sequence

if TYPE_CHECKING:
    from cnfperf.host.builds import Build
    from cnfperf.host.facts import HostFacts, Probe
    from cnfperf.host.tools import Tool
    from cnfperf.plan import Port, TestPoint
    from cnfperf.scenario import Scenario
    from cnfperf.runtimes.base import Container, Journal, Mount, Nic
    from cnfperf.runtimes.images import Image


class Home(Protocol):
    """Where a switch's processes go when not on the host: a container of its
    own in a netns of the same name, made from the switch image, with the
    point's switch_quota (testbed.SwitchHome makes them)."""

    def create(self, name: str, cpus: Sequence[int], mounts: Sequence[Mount]) -> Container:
        """The container and its netns; journaled before they exist."""

    def remove(self, container: Container) -> None:
        """Both gone again (what still runs inside is killed)."""


@dataclass(frozen=True)
class Attachment:
    """How a node's engine reaches one of its ports."""

    mac: str
    iface: str | None = None          # kernel interface, inside the node's netns
    port: int | None = None           # DPDK port id
    vdev: str | None = None           # the DPDK virtual device that is the port
    mounts: tuple[Mount, ...] = ()    # sockets/hugepages the container must see
    nic: Nic | None = None            # a virtual machine's NIC for the port (Port.vm)
    pci: str | None = None            # the PCI device DPDK opens as the port (a VF)


@dataclass(frozen=True)
class PortCounters:
    """A port's counts. None: the switch does not keep that count (OVS prints
    `?`), or it could not be read: unknown, never 0 (no drops)."""

    rx_packets: int | None = 0
    tx_packets: int | None = 0
    rx_dropped: int | None = 0
    tx_dropped: int | None = 0

    def __sub__(self, other: PortCounters) -> PortCounters:
        return PortCounters(**{k: unknown_or(v, getattr(other, k), lambda a, b: a - b)
                               for k, v in asdict(self).items()})


def unknown_or(a: int | None, b: int | None, op) -> int | None:
    """op(a, b), or None (unknown) when either is: an unknown count stays
    unknown through arithmetic."""
    return None if a is None or b is None else op(a, b)


class DataPlane(ABC):
    name: ClassVar[str]
    description: ClassVar[str]
    # What its ports are: "kernel" (interfaces in the nodes' netns) or "dpdk"
    # (vdevs of the engines' EALs). KernelPlane and DpdkPlane set it.
    kind: ClassVar[str]
    apis: ClassVar[frozenset[str]]
    # Its colour and marker in every report: report/style.py's style number
    # `style`, below style.PLANE_STYLES. A number of its own, never reused or
    # changed (a unit test holds them apart): stored with each point, so an
    # old run is drawn as it was; a place in the registry would move when a
    # data plane is added before it.
    style: ClassVar[int]
    # Kernel link types its links are (`ip link add type …`) -> the kernel config
    # option that provides each (CONFIG_<option>, or the module of the type's
    # name): check() asks the host for them (HostFacts.kernel_has), and doctor
    # lists what was asked.
    kernel_links: ClassVar[Mapping[str, str]] = {}
    # Journal kinds it writes of its own (beyond run/cleanup.py's: netns, link,
    # dir, file, process, container) -> fn(name, info) that undoes an entry of a
    # killed run: `cnfperf cleanup` asks every registered data plane.
    undo: ClassVar[Mapping[str, Callable[[str, dict[str, Any]], Any]]] = {}
    # How it joins a link's two ports: through its own switch port for each
    # ("switch": network functions form a chain, every hop crossing the switch)
    # or directly ("link": a pipeline, only the path's ends reach the tester).
    joins: ClassVar[str] = "switch"
    # Whose view counters() take of a port: "switch" (rx = what the switch took in
    # from the port's node, tx = what it delivered to it; a bridge's ports are its
    # host sides, named with `h`) or "node" (the node's own interface: tx = what the
    # node put on the link, rx = what reached it).
    counter_view: ClassVar[str] = "switch"
    # None: any number of links (a pair's path has nfs + 1), each on its own ports.
    max_links: ClassVar[int | None] = None
    # How it forwards a frame (the scenario's `forward`: fields.FORWARDS), the
    # ways it can, its own first (what auto is): "mac" by the frame's
    # destination MAC (a MAC table), "port" from each port to the other port of
    # its link (a cross-connect; a link data plane joins the two ports itself),
    # "reflect" back out of the port it came in on (a link whose two ends are
    # one port, the single tester's: plan.reflect_links).
    forwards: ClassVar[tuple[str, ...]] = ("mac",)
    # Whether it pins its ports' Rx queues to its poll cores when asked
    # (rxq_affinity = pinned); one that cannot places them itself.
    pins_rxq: ClassVar[bool] = False
    # Whether it sizes its ports' rings when asked (switch_rxd, switch_txd): its
    # vhost-user ports' rings through their front ends; and (nic_rings) the
    # descriptors of its DPDK ports on wires' NICs (nic_ports).
    rings: ClassVar[bool] = False
    nic_rings: ClassVar[bool] = False
    # Threads the switch itself spins on (testpmd, OVS PMD threads): they compete
    # with the endpoints for cores, so the plan counts them.
    poll_threads: ClassVar[int] = 0
    # What it can be asked for (checks.switch_problem holds a scenario against
    # these: `cnfperf run` refuses a point beyond them, a study leaves it out):
    # the most poll cores (switch_cores) and Rx queues per port (switch_rxq), None
    # for any; the largest frame (size), None for the engines' own limit.
    max_cores: ClassVar[int | None] = 1
    max_rxq: ClassVar[int | None] = 1
    max_size: ClassVar[int | None] = None

    @classmethod
    def pollers(cls, s: Scenario, cores: int) -> int:
        """Threads it spins on for a scenario placed on `cores` cores: poll_threads
        per switch core."""
        return cls.poll_threads * s.switch_cores

    # Processes of its own that can run in a container (switch_in = container).
    processes: ClassVar[bool] = False
    image: ClassVar[Image | None] = None     # what its processes' container is made from
    # Whether an engine's DPDK port on it has Rx interrupts (poll = interrupt):
    # DPDK 22.11's virtio-user and vhost PMDs do; memif and af_packet do not.
    rx_interrupts: ClassVar[bool] = False
    # Whether its poll threads can float over the point's cores (pin = no); a
    # switch that always pins its threads itself cannot.
    floats: ClassVar[bool] = True
    # Whether two network functions that close their ports when they stop (a
    # command, a Click NF) may be neighbours on it, one still polling the link
    # between them while the other closes it (memif: no, see memif.py).
    neighbours_may_close: ClassVar[bool] = True
    # Whether one engine (the single tester) can hold both ends of one of its
    # links, as a path without network functions asks (testers.refusal).
    single_tester: ClassVar[bool] = True
    # Why it gives a virtual machine's node no port (Port.vm); None: it gives it
    # a NIC its QEMU opens (a tap, a macvtap, a vhost-user socket: Attachment.nic).
    vm_refusal: ClassVar[str | None] = "it has no way to give a virtual machine a port"
    # Kernel link types its VM ports need beyond kernel_links (a macvtap, a tap),
    # as kernel_links: asked only of a point with a virtual machine.
    vm_links: ClassVar[Mapping[str, str]] = {}
    # Whether a virtual machine's NICs on it are DPDK devices in its guest
    # (vm_nic's Nic.dpdk): the guest's engine holds hugepages for their ports,
    # which the VM's memory must hold (vm_memory).
    vm_dpdk: ClassVar[bool] = False

    # Whether it takes a NIC of its host as the port of a node on another host
    # (TestPoint.nics: the tester's ports when tester_host is not dut_host).
    nic_ports: ClassVar[bool] = False
    # Whether it joins two such NICs to each other (a link whose two ports are
    # both nodes on other hosts: the tester's, with no NF between them).
    nic_to_nic: ClassVar[bool] = True
    # The nic_driver values it opens such a NIC with (fields.NIC_DRIVERS); ():
    # the kernel holds the NIC for it (the bridge enslaves it), none is used.
    nic_drivers: ClassVar[tuple[str, ...]] = ()

    # Where it takes a port down and up for a fault (run/fault.py): "node" (the
    # node's own interface, a kernel one), "switch" (its own port for it); ()
    # where it has no way while it forwards, and cut_refusal says why.
    cut_at: ClassVar[tuple[str, ...]] = ()
    cut_refusal: ClassVar[str] = "it has no way to take a port down while it forwards"

    # Whether a run may keep it up between consecutive points made alike
    # (switch_keep; run/keep.py): it implements release, reuse and stale.
    keeps: ClassVar[bool] = False

    # What it declares of the host: the switch build its program comes from
    # (switches/NAME/, host/builds.py; None: a system package's), the facts
    # doctor prints for it and its versions() read back (host/facts.py's
    # probes), and the programs it alone runs with their Debian packages
    # (host/tools.py's table for them).
    build: ClassVar[Build | None] = None
    probes: ClassVar[tuple[Probe, ...]] = ()
    tools: ClassVar[Mapping[str, Tool]] = {}

    def __init__(self, journal: Journal, home: Home | None = None):
        self.journal = journal
        self.home = home
        self.point: TestPoint | None = None
        self.cpus: tuple[int, ...] = ()    # its poll threads' cores, once started
        # Set when the switch runs in a container of its own (switch_in =
        # container, made by its home): its CPU use is that container's cgroup's.
        self.container: Container | None = None

    def pids(self) -> list[int]:
        """Host pids of the switch's own processes, whose CPU use is the switch's;
        [] for a kernel data plane, which has none (its work is softirq)."""
        return []

    @classmethod
    def check(cls, host: HostFacts) -> list[str]:
        return []

    @classmethod
    def scenario_host_problems(cls, s: Scenario) -> list[str]:
        """What keeps this host from serving this scenario's own knobs, beyond
        check() (sriov_pf: a NIC it has): asked where the switch runs, by a
        run's preflight and a study's plan (checks.host_problems)."""
        return []

    @classmethod
    def scenario_host_refusal(cls, s: Scenario) -> tuple[str, str] | None:
        """(field, why) when a knob names what this host has not (sriov_pf: a
        NIC it lacks): bad input, refused by a run's preflight with exit 2
        before anything is made (checks.host_refusals); also among
        scenario_host_problems, which a study's plan leaves such points out by."""
        return None

    @classmethod
    def nic_problems(cls, host: HostFacts) -> list[str]:
        """What keeps this host's switch from taking a wire's NIC as a port
        (nic_ports), beyond check(): asked only of a point whose switch here
        joins a port of a node on another host (checks.host_problems)."""
        return []

    @classmethod
    def scenario_problem(cls, s: Scenario, links: int) -> tuple[str, str] | None:
        """(field, why) for a rule of its own that ties fields together, beyond
        the capabilities above (checks.switch_problem asks); None when it can.
        `links`: how many links the point makes (its NF kind's ports decide:
        plan.links_per_path)."""
        return None

    @classmethod
    def input_problem(cls, s: Scenario) -> tuple[str, str] | None:
        """(field, why) for values of its own knobs it never takes, on any host
        and in any plan (checks.check asks: exit 2, where a study leaves out a
        point scenario_problem refuses); None when it takes them."""
        return None

    @classmethod
    def limit_problem(cls, api: str) -> str | None:
        """Why it cannot apply a scenario's `limit` (a shaped link) with this
        api, or None when it can (checks.check asks when limit is set)."""
        return None

    @classmethod
    def queues_problem(cls, api: str) -> str | None:
        """Why an NF that polls a queue of each port per core (plan.Port.queues
        > 1: the engine's with nf_cores > 1) on `api` would not have its
        frames spread over them, or None when it would."""
        return "its ports have one queue"

    @classmethod
    def ends_queues_problem(cls, s: Scenario) -> str | None:
        """Why the tester's ends cannot poll a queue of their port per core
        (endpoint_cores > 1: checks/ends.py), or None: where a node's ports
        have queues whose frames are spread by flow, an NF's rule is theirs."""
        return cls.queues_problem(s.api)

    @classmethod
    def bucket_problem(cls, s: Scenario, what: str) -> str | None:
        """Why its links cannot hold the scenario's kernel policer or shaper
        (`what`: policer at the ingress, shaper at the egress of the link into
        the receiver), or None when they can (checks.check asks)."""
        return None

    @classmethod
    def versions(cls, host: HostFacts) -> dict[str, str]:
        """Versions of what it runs beyond the host's usual ones (cnfperf,
        engine, kernel, runc), stored with each point it served."""
        return {}

    @classmethod
    def stored(cls) -> dict[str, Any]:
        """What a report needs of it, stored with every point it served
        (results/store.py: points.switch_facts): the report reads a run through
        these, never through today's data planes."""
        return {"name": cls.name, "description": cls.description, "kind": cls.kind,
                "counter_view": cls.counter_view, "joins": cls.joins, "style": cls.style}

    @abstractmethod
    def start(self, point: TestPoint) -> None: ...

    @abstractmethod
    def attach(self, port: Port) -> Attachment: ...

    def vm_nic(self, port: Port) -> Nic:
        """The NIC a virtual machine's QEMU opens for its port (Port.vm), made in
        start(); a plane without vm_refusal gives one."""
        raise NotImplementedError(f"{self.name} gives no virtual machine a port: {self.vm_refusal}")

    def eal_args(self, node: str, attachments: Sequence[Attachment]) -> tuple[str, ...]:
        """The EAL arguments of a node's DPDK engine holding these ports (its
        file prefix, memory and vdevs); () when its engine does not run DPDK."""
        return ()

    @abstractmethod
    def counters(self) -> dict[str, PortCounters]: ...

    def cost_begin(self) -> None:
        """In a trial's warm-up, where its CPU time starts being counted: the
        switch's own account of its cost (cost) starts over. Nothing by default."""

    def cost(self) -> dict[str, Any] | None:
        """The switch's own per-packet cost since cost_begin, where it reports
        one (OVS-DPDK's pmd-stats-show, VPP's show runtime, testpmd's
        --record-core-cycles): {source, cycles_per_packet, packets, and where
        said busy_share, vectors_per_call, threads, nodes}; None where it
        reports none. Read as soon as the senders are done."""
        return None

    def window(self, open: bool) -> None:
        """The trial's measured window opens (True) or closes. Work the plane
        does on the host by itself, on a timer, waits while it is open: on a
        host whose cores all have a busy poller it would run on a poller's
        core (docs/cpu.md, Stalls). Nothing by default."""

    def steer(self, cores: Sequence[int]) -> None:
        """Where the switch's own receive path picks the core that takes a
        frame onward (macvlan's shared parent: its RPS map, not a port's,
        decides), that path's frames go to `cores`, the point's kernel NFs'
        (a router's); none: no steering, as it was made. Nothing by default:
        a port's own RPS map decides (the NF's kind sets it)."""

    def queues(self) -> list[dict[str, Any]]:
        """Queue-to-core affinity: one {port, queue, core} per Rx queue the switch
        polls (port: the point's port name; core: the CPU its poll thread is on,
        None where it floats); [] for a switch without poll threads."""
        return []

    def applied(self) -> dict[str, Any]:
        """How the switch was configured for the point's forward, rxq_affinity,
        switch_rxd and switch_txd, as read back from the switch itself (its
        rules, its database, its own show commands), once it has started; the
        runner stores it with the point (switch_facts' `applied`). {}: nothing
        to say beyond the scenario (a kernel data plane)."""
        return {}

    def cut(self, port: Port, at: str, up: bool) -> None:
        """Takes the port down (up = False) or up again, at its node's own
        interface (at = "node") or at the switch's port for it ("switch"): one
        of cut_at."""
        raise NotImplementedError(f"{self.name} takes no port down: {self.cut_refusal}")

    @abstractmethod
    def stop(self) -> None: ...

    # --- a switch kept between points (keeps) --------------------------------
    def release(self) -> None:
        """The point is over and its engines are gone; the switch stays up for
        the next point (nothing of the point's may stay in it but its ports)."""
        raise NotImplementedError(f"{self.name} is not kept between points")

    def reuse(self, point: TestPoint) -> None:
        """Serve the next point, made alike (run/keep.py's switch_key): its
        counters and whatever it learned reset, as after start()."""
        raise NotImplementedError(f"{self.name} is not kept between points")

    def stale(self) -> str | None:
        """Why the kept switch cannot serve another point (a process exited, a
        port gone), or None when it can."""
        return None
