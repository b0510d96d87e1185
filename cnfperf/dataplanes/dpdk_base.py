"""What the DPDK data planes share.

A test point gets one directory `/run/cnfperf/<prefix>-<switch>/` holding the
vhost-user/memif sockets and a private hugetlbfs. Both are bind-mounted into
every container at the same path they have on the host, so one EAL argument
list is right for the runc and the netns runtime alike, and a switch on the
host and an engine in a container name a socket the same way. A switch in a
container of its own (switch_in = container) has the whole directory mounted
the same way (OVS's database, logs and control sockets are in it too), so the
tools that talk to it (ovs-vsctl, ovs-appctl) still run on the host.

Where a switch's threads run: its poll threads (OVS PMD threads, testpmd's
forwarding lcores) on `cpus`, switch_cores of them, one each; unpinned (pin =
no) they float over the point's cores. Its other threads (testpmd's main lcore,
OVS's main, revalidator and other threads, which sleep nearly always) on the
host float over the point's cores (testpmd's main lcore shares its first poll
core: dpdk_args.lcores); in a container they share its cpuset: the
poll cores when pinned, every core of the point when not. So a pinned switch
container runs on its poll cores only, and its cgroup's CPU time and quota are
the switch's alone.
"""
from __future__ import annotations

import shutil
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar, Sequence

from cnfperf.host import builds
from cnfperf.dataplanes import dpdk_args, procs
from cnfperf.dataplanes.base import Attachment, DataPlane, PortCounters
from cnfperf.host.hugepages import POOL, Hugepages, pages_for
from cnfperf.host.journal import RUN_DIR
from cnfperf.host.links import give_back_all, lend_nic
from cnfperf.plan import has_vms, nf_hosts
from cnfperf.runtimes.base import Mount, Nic
from cnfperf.scenario import tester_hosts

if TYPE_CHECKING:
    from cnfperf.host.facts import HostFacts
    from cnfperf.plan import Link, Port, TestPoint
    from cnfperf.scenario import Scenario


@dataclass(frozen=True)
class Frontend:
    """How a port's node reaches a vhost-user port: as its virtio front end, on
    `socket`, creating it (`server`: the switch connects as a client, as OVS's
    vhostuserclient ports and Snabb do) or connecting to the switch's; offering `queues`
    queue pairs of `ring` descriptors each (a vhost-user ring's size is the
    front end's to choose). An engine does it with DPDK's virtio-user PMD, a
    virtual machine with QEMU's vhost-user netdev: one fact, two front ends."""

    socket: str
    server: bool = False
    queues: int = dpdk_args.QUEUES
    ring: int | None = None     # descriptors per virtqueue (None: the front end's own)


def switch_cpus(point: TestPoint, n: int) -> tuple[int, ...]:
    """Cores for the switch's poll threads: free cores first; when there are
    none, the least shared ones (the plan has already warned about the contention)."""
    if n <= 0:
        return ()
    load = Counter([*(c for ep in point.engines for c in ep.all_cores),
                    *(c for nf in point.nfs for c in nf.cores)])
    ranked = sorted(point.cpus, key=lambda c: (load[c], -c))
    return tuple(sorted(ranked[:n]))


def _vhost_ports(s: Scenario) -> bool:
    """Whether the switch joins a port of a node of its own host (a vhost-user
    port), not only NICs wired to the tester's ends (both of them, with no NF)."""
    hosts = nf_hosts(s) or (s.dut_host,)
    sender, receiver = tester_hosts(s)
    return bool(s.nfs) or sender == hosts[0] or receiver == hosts[-1]


def _has_vms(s: Scenario) -> bool:
    try:
        return has_vms(s)
    except ValueError:
        return False     # checks.check names the mistake


class DpdkPlane(DataPlane):
    kind = "dpdk"
    apis: ClassVar[frozenset[str]] = frozenset({"dpdk"})
    # A virtual machine reaches a vhost-user port as its front end, as an engine
    # does (frontend()); a plane whose ports are not vhost-user says why not.
    vm_refusal = None
    # A link joined directly (vhost, memif) is two engines' vdevs: nothing
    # between them to take down; a switch says what it has (cut_at) or lacks.
    cut_refusal = "its links are the engines' own ports joined directly, with no switch between"
    vm_dpdk = True     # vm_nic: a vhost-user socket, the guest's DPDK's virtio device

    def __init__(self, journal, home=None):
        super().__init__(journal, home)
        self.dir: Path | None = None
        self.hugepages: Hugepages | None = None
        self._lent: list[tuple[str, dict]] = []   # wires' NICs it holds (nic_vdev)

    @classmethod
    def check(cls, host: HostFacts) -> list[str]:
        problems = [] if host.root else ["needs root (hugepages, DPDK)"]
        if not POOL.exists():
            problems.append(f"no 2 MB hugepages in this kernel ({POOL} missing)")
        return problems + (builds.problems(cls.build) if cls.build else [])

    @classmethod
    def limit_problem(cls, api: str) -> str | None:
        return "only the kernel data planes shape a link (tbf)"

    @classmethod
    def queues_problem(cls, api: str) -> str | None:
        # vhost-user and memif have no RSS: the peer picks the queue, by its
        # own thread (one switch thread: one queue), unless it hashes (ovs)
        return ("its ports' peers send every frame of a port to one queue (vhost-user and "
                "memif have no RSS): switch = ovs hashes flows over an NF's queues")

    @classmethod
    def ends_queues_problem(cls, s: Scenario) -> str | None:
        # the ends' vhost-user ports offer one queue pair (their front ends' queues)
        return ("the tester's ends reach it through one queue pair each: endpoint_cores > 1 "
                "runs on memif without NFs, or on a kernel data plane")

    @classmethod
    def input_problem(cls, s: Scenario) -> tuple[str, str] | None:
        """switch_rxd and switch_txd (on a plane that sizes its rings): one size
        both ways where a vhost-user port's front end sizes its ring (ring), and
        no virtual machine's."""
        given = [f for f in ("switch_rxd", "switch_txd") if getattr(s, f) is not None]
        if len(given) == 2 and s.switch_rxd != s.switch_txd and _vhost_ports(s):
            return "switch_txd", (f"{s.switch_txd} ≠ switch_rxd {s.switch_rxd}: a vhost-user "
                                  "port's ring is one size both ways (its front end's "
                                  "queue_size); different sizes only on NICs")
        if given and _has_vms(s):
            return given[0], ("a virtual machine's vhost-user ring is QEMU's, not sized by "
                              "cnfperf: no virtual machine (nf_in, endpoint_in) with it")
        return None

    # --- what a subclass provides -------------------------------------------
    def switch_mb(self) -> int:
        """Hugepage memory the switch process needs (0: no switch process)."""
        return 0

    def setup(self) -> None:
        """Start the switch, if any; sockets go to self.sock_dir."""

    def frontend(self, port: Port) -> Frontend | None:
        """The vhost-user port its node reaches as a front end; None where the
        node reaches it otherwise (memif: vdev() says how)."""
        return None

    def vdev(self, port: Port) -> str:
        """The vdev through which the engine of the port's node reaches it: a
        virtio-user port on its front end, unless a subclass says otherwise."""
        f = self.frontend(port)
        assert f is not None, f"{self.name}: neither frontend() nor vdev() for {port.name}"
        return dpdk_args.virtio_user(port.slot, f.socket, mac=port.mac, server=f.server,
                                     queues=f.queues, ring=f.ring)

    def teardown(self) -> None:
        """Stop what setup() started; called after a partial setup too."""

    # --- the DataPlane interface ---------------------------------------------
    def start(self, point: TestPoint) -> None:
        self.point = point
        # poll_threads per switch core (the plan counts them the same way)
        self.cpus = switch_cpus(point, self.poll_threads * point.scenario.switch_cores)
        self.dir = RUN_DIR / f"{point.prefix}-{self.name}"
        self.journal.add("dir", str(self.dir))
        self.dir.mkdir(parents=True)
        self.sock_dir.mkdir()
        self.hugepages = Hugepages(self.pages(point), point.prefix, self.dir, self.journal)
        self.hugepages.__enter__()
        if self.home is not None:
            # its hugepages are in its folder: named too, with what it takes of them
            huge = (Mount(self.huge_dir, self.huge_dir, hugepages_mb=self.switch_mb()),) \
                if self.switch_mb() else ()
            self.container = self.home.create(point.name("sw"), self.poll_cpuset,
                                              (Mount(str(self.dir), str(self.dir)), *huge))
            # where its poll threads run: a pod's cores are those its kubelet gave
            self.cpus = tuple(map(self.container.guest_cpu, self.cpus))
        self._lend_nics()
        self.setup()

    def _lend_nics(self) -> None:
        """The NICs that are ports of nodes on another host (TestPoint.nics), in
        the switch's netns, up and promiscuous, for its af_packet or af_xdp ports."""
        from cnfperf.dataplanes.kernel import mtu_for
        for port in self.point.ports_joined_here():
            iface = self.point.nic(port.name)
            if iface:
                info = lend_nic(self.journal, iface, self.netns, mtu_for(self.point.scenario.size))
                self._lent.append((iface, info))

    def nic_vdev(self, index: int, port: Port) -> str | None:
        """The vdev (DPDK's af_packet or af_xdp PMD on a kernel interface: the
        scenario's nic_driver) through which the switch reaches a NIC that is a
        port (TestPoint.nics); None for a port of this host's nodes."""
        iface = self.point.nic(port.name)
        s = self.point.scenario
        # switch_rxq queues: af_xdp's, the NIC's own (the preflight asked them:
        # remote/hosts.py)
        return dpdk_args.nic(index, iface, s.nic_driver, s.size, s.switch_rxq) if iface else None

    @property
    def ring(self) -> int | None:
        """The descriptors of a vhost-user port's ring, which its front end sizes
        both ways alike: switch_rxd or switch_txd (input_problem refuses two
        different ones); None: the front end's own (rings: where the plane
        sizes them)."""
        s = self.point.scenario
        return (s.switch_rxd or s.switch_txd) if self.rings else None

    @property
    def poll_cpuset(self) -> tuple[int, ...]:
        """Where the poll threads may run: their cores, or unpinned every core of the point."""
        return self.point.cpuset(self.cpus)

    @property
    def other_cpus(self) -> tuple[int, ...]:
        """Where the switch's other threads run (see the module's docstring)."""
        c = self.container
        return tuple(map(c.guest_cpu, c.cpus)) if c else self.point.cpus

    def launch(self, cpus: Sequence[int] | None = None) -> procs.Launch:
        """How the switch starts its processes: in its container, or on the host
        on `cpus` (default: the point's cores, over which its non-poll threads
        float)."""
        if self.container:
            return procs.inside(self.container)
        return procs.on_host(self.point.cpus if cpus is None else cpus)

    @property
    def netns(self) -> str | None:
        """The switch's network namespace: its container's; None: the host's."""
        return self.container.netns if self.container else None

    @property
    def sock_dir(self) -> Path:
        assert self.dir is not None, "start() first"
        return self.dir / "sock"

    @property
    def huge_dir(self) -> str:
        assert self.hugepages is not None, "start() first"
        return str(self.hugepages.mount_point)

    def pages(self, point: TestPoint) -> int:
        mb = dpdk_args.endpoint_mb(point.scenario.size)
        # A VM's engine takes its DPDK memory from its guest's own hugepages.
        ports = Counter(port.node for port in point.ports
                        if not port.vm and point.here(port.node))
        return sum(pages_for(mb * n) for n in ports.values()) + pages_for(self.switch_mb())

    def link_of(self, port: Port) -> tuple[int, Link]:
        """The link the port is an end of, and its index among the point's links."""
        return next((i, link) for i, link in enumerate(self.point.links_joined_here())
                    if port in (link.a, link.b))

    def attach(self, port: Port) -> Attachment:
        if port.vm:
            return Attachment(mac=port.mac, port=port.slot, nic=self.vm_nic(port))
        return Attachment(mac=port.mac, port=port.slot, vdev=self.vdev(port),
                          mounts=self.mounts())

    def vm_nic(self, port: Port) -> Nic:
        """A virtual machine's NIC for the port: QEMU as the vhost-user front end
        where an engine would be virtio-user, the guest's DPDK on its virtio PMD."""
        f = self.frontend(port)
        assert f is not None, f"{self.name} gives no virtual machine a port (vm_refusal)"
        return Nic(mac=port.mac, name=port.name, dpdk=True, socket=f.socket, server=f.server)

    def eal_args(self, node: str, attachments: Sequence[Attachment]) -> tuple[str, ...]:
        # Each port's api instance has its own mbuf pool.
        memory = dpdk_args.endpoint_mb(self.point.scenario.size) * len(attachments)
        return tuple(dpdk_args.eal_args(node, self.huge_dir, memory,
                                        [a.vdev for a in attachments if a.vdev]))

    def mounts(self) -> tuple[Mount, ...]:
        """A port's: the sockets, and the hugepages its engine's memory
        (eal_args: one pool per port) comes from."""
        mb = dpdk_args.endpoint_mb(self.point.scenario.size)
        return (Mount(str(self.sock_dir), str(self.sock_dir)),
                Mount(self.huge_dir, self.huge_dir, hugepages_mb=mb))

    def counters(self) -> dict[str, PortCounters]:
        return {}

    # --- kept between points (keeps): a subclass with a switch process sets
    # keeps and provides reset() and alive() ------------------------------------
    def release(self) -> None:
        """Its ports stay: the next point made alike (run/keep.py) names them
        the same, and its engines reconnect as a search's next trial's do. Its
        hugepages and run directory stay for them too."""

    def reuse(self, point: TestPoint) -> None:
        self.point = point
        self.reset()

    def reset(self) -> None:
        """Its counters (and anything it learned) back to zero."""
        raise NotImplementedError(f"{self.name} is not kept between points")

    def alive(self) -> bool:
        """Whether its switch process still runs and answers."""
        return False

    def stale(self) -> str | None:
        if self.dir is None or not self.dir.exists():
            return "its run directory is gone"
        return None if self.alive() else "its switch process is gone or does not answer"

    def stop(self) -> None:
        """Processes (teardown), then their container and netns (removing it
        kills what is left), hugepages, directory: each even if one before failed."""
        _each(self.teardown, self._give_back_nics, self._remove_container,
              self._release_hugepages, self._remove_dir)

    def _give_back_nics(self) -> None:
        give_back_all(self.journal, self._lent)

    def _remove_container(self) -> None:
        if self.container is not None:
            self.home.remove(self.container)
            self.container = None

    def _release_hugepages(self) -> None:
        if self.hugepages is not None:
            self.hugepages.close()
            self.hugepages = None

    def _remove_dir(self) -> None:
        if self.dir is not None:
            shutil.rmtree(self.dir, ignore_errors=True)
            if not self.dir.exists():
                self.journal.discard("dir", str(self.dir))
            self.dir = None


def _each(*steps) -> None:
    """Run every step, even when one before it raised (which then propagates)."""
    try:
        steps[0]()
    finally:
        if len(steps) > 1:
            _each(*steps[1:])
