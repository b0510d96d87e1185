"""A test point's testbed, as a graph: nodes and the links between them.

The nodes are the tester's ends, one per endpoint (its netns and the container
its engine runs in), the network functions on each pair's path (the same, with
two ports), and the switch (the data plane). The edges are
the plan's links, each joining two nodes' ports (plan.Link): the data plane
joins them directly or through the switch, and says for every port what the
engine of its node needs to reach it (its Attachment). Remote hosts, VMs and
noise are further kinds of node.

A testbed is built from the placed TestPoint: namespaces, switch, links,
containers. Each step's undo goes on the point's Teardown the moment the step
is taken, and each resource is in the journal before it exists (data planes
and runtimes journal their own), so a failure halfway leaves nothing behind.
"""
from __future__ import annotations

import shutil
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, TypeVar

from cnfperf import SystemFailure, nfs
from cnfperf.host import builds
from cnfperf.nfs import click as click_nfs
from cnfperf.dataplanes import DATAPLANES, Attachment, DataPlane, PortCounters, dpdk_args
from cnfperf.dataplanes.nic import NicPlane
from cnfperf.host.links import add_netns, del_netns
from cnfperf.host.facts import engine_facts, static_engine
from cnfperf.plan import NF, Endpoint, Port, TestPoint, nf_places
from cnfperf.run import daemons, noise, wires
from cnfperf.run.keep import Keeper, keepable
from cnfperf.run.noise import Noise
from cnfperf.runtimes import (CONTAINER, FULL, RUNTIMES, Container, Image, ImageInfo, Journal,
                              Mount, Quota, Runtime, gathered, placed)
from cnfperf.runtimes.images import ENGINE, STATIC
from cnfperf.scenario import Scenario
from cnfperf.run.teardown import Teardown
from cnfperf.remote import parts
from cnfperf.remote.client import Lost
from cnfperf.remote.hosts import Hosts


NOISE_SUFFIX = "nz"   # the noisy neighbour's netns and container: run prefix + this
# The io stressor's files: on a disk, since the container's own /tmp is memory;
# a directory named like its container, directly here, so nothing stays behind.
IO_DIR = Path("/var/tmp")


@dataclass(frozen=True)
class Tester:
    """One end of the traffic: an endpoint's netns and the container its engine runs in."""

    endpoint: Endpoint
    container: Container


@dataclass(frozen=True)
class Switch:
    """The data plane the testers are attached to."""

    name: str
    dataplane: DataPlane


@dataclass(frozen=True)
class NetworkFunction:
    """A network function on a pair's path: its netns and the container its engine runs in."""

    nf: NF
    container: Container


@dataclass(frozen=True)
class Neighbour:
    """A noisy neighbour (noise.py): stress-ng or the user's command in a container of its own;
    on another host, its agent's (parts.RemoteNoise)."""

    name: str
    noise: Noise | parts.RemoteNoise


Node = Tester | Switch | NetworkFunction | Neighbour
N = TypeVar("N", Endpoint, NF)


@dataclass
class Testbed:
    """What a point's trials run on: nodes by name, the links between their ports,
    and how each port is reached, by port name."""

    point: TestPoint
    nodes: dict[str, Node] = field(default_factory=dict)
    attachments: dict[str, Attachment] = field(default_factory=dict)
    # Seconds each NF's container took to create: the first part of its startup.
    create_s: dict[str, float] = field(default_factory=dict)
    # The switch's counters as the point began (switch.json), which its first
    # trial takes as its `before` instead of reading them again.
    start_counters: dict[str, PortCounters] | None = None
    # Each NF's daemons' directory (run/daemons.py), by NF name: none without.
    homes: dict[str, Path] = field(default_factory=dict)
    # The nodes whose VM was kept from the point before (run/keep.py): booted
    # and prepared for a point made alike, so neither made nor prepared again.
    kept: set[str] = field(default_factory=set)

    def container(self, name: str) -> Container:
        """The container of a tester's end or a network function."""
        node = self.nodes[name]
        if not isinstance(node, (Tester, NetworkFunction)):
            raise KeyError(f"{name}: not a tester end or a network function")
        return node.container

    def label(self, name: str) -> str:
        """An NF's name as the user gave it (its graph's), else its own."""
        return next((nf.label for nf in self.point.nfs if nf.name == name and nf.label), name)

    def facts(self) -> dict[str, dict[str, Any]]:
        """What the nodes' containers say of how they run, by node (a pod's QoS
        class and cores: Container.facts), the switch's container's by its
        name; only those that say something."""
        found = {}
        for name, node in self.nodes.items():
            c = node.dataplane.container if isinstance(node, Switch) else \
                node.container if isinstance(node, (Tester, NetworkFunction)) else None
            if c is not None and (said := c.facts()):
                found[c.name if isinstance(node, Switch) else name] = said
        return found

    def ports(self, node: str) -> list[Attachment]:
        """How the node's engine reaches its ports, in slot order (its port 1, 2)."""
        ports = sorted((p for p in self.point.ports if p.node == node), key=lambda p: p.slot)
        return [self.attachments[p.name] for p in ports]

    def eal_args(self, node: str) -> tuple[str, ...]:
        """A DPDK engine's EAL arguments: the data plane's, or in a virtual
        machine on DPDK ports its guest's (its NICs are PCI devices there)."""
        c = self.container(node)
        if isinstance(c, parts.RemoteContainer):
            return tuple(c.eal)
        ports = self.ports(node)
        if any(a.nic and a.nic.dpdk for a in ports):
            memory = dpdk_args.endpoint_mb(self.point.scenario.size) * len(ports)
            return tuple(self.container(node).eal_args(memory, node))
        return self.plane_here.eal_args(node, ports)

    def inside(self, node: N) -> N:
        """A tester's end or an NF as its engine sees itself: in a virtual
        machine its cores are the guest's vCPUs (the host pins each vCPU to its
        planned core; eal_args() gives its NICs); in a pod those the kubelet
        gave it (Container.guest_cpu)."""
        c = self.container(node.name)
        if isinstance(c, parts.RemoteContainer):   # placed on its host's cores
            return c.placed(node)
        # a container's cores are the host's (a pod's those its kubelet gave)
        cores = tuple(c.guest_cpu(core) for core in node.cores)
        return replace(node, cpu=c.guest_cpu(node.cpu), cores=cores)

    def floating(self, node: str) -> tuple[int, ...]:
        """What an unpinned NF's threads float over (TestPoint.floating); in a
        virtual machine nothing: the host places its vCPUs."""
        c = self.container(node)
        if isinstance(c, parts.RemoteContainer):
            return tuple(c.floating)
        return () if c.own_kernel else self.point.floating

    @property
    def dataplane(self) -> DataPlane:
        """The point's switch (its `switch`); a point that spans hosts also has
        the tester's NICs (NicPlane) on the tester's host."""
        switch = self.point.scenario.switch
        switches = [n for n in self.nodes.values() if isinstance(n, Switch)]
        return next((n.dataplane for n in switches
                     if n.name == switch or n.name.startswith(switch + "@")),
                    switches[0].dataplane)

    @property
    def plane_here(self) -> DataPlane:
        """The data plane this host's nodes' ports are on: the point's switch
        if it runs here (its EAL arguments take a NIC's vdev too), else this
        host's NICs (NicPlane: a tester's host)."""
        here = [n for n in self.nodes.values()
                if isinstance(n, Switch) and not isinstance(n.dataplane, parts.RemoteSwitch)]
        return next((n.dataplane for n in here if not isinstance(n.dataplane, NicPlane)),
                    here[0].dataplane)

    def counters(self) -> dict[str, PortCounters]:
        """Every switch's port counters: the point's switch's by port name, the
        tester's NICs' (on another host than the switch) by `host:interface`."""
        found: dict[str, PortCounters] = {}
        for node in self.nodes.values():
            if isinstance(node, Switch):
                found.update(node.dataplane.counters())
        return found

    def cost_begin(self) -> None:
        """Every switch's own account of its cost starts over (DataPlane.cost)."""
        for node in self.nodes.values():
            if isinstance(node, Switch):
                node.dataplane.cost_begin()

    def cost(self) -> dict[str, Any] | None:
        """The point's switch's own per-packet cost since cost_begin, where it
        reports one (None: it does not)."""
        found = [c for node in self.nodes.values() if isinstance(node, Switch)
                 if (c := node.dataplane.cost())]
        return found[0] if found else None

    def first_counters(self) -> dict[str, PortCounters]:
        """The counters a trial starts from: those read as the point began, once
        (nothing has run since), then the switch's own."""
        found, self.start_counters = self.start_counters, None
        return found if found is not None else self.counters()

    @property
    def noise(self) -> Noise | parts.RemoteNoise | None:
        return next((n.noise for n in self.nodes.values() if isinstance(n, Neighbour)), None)

    def hops(self, nf: NF) -> tuple[str, ...]:
        """The MACs of the ports facing the NF's (its kind's prepare)."""
        return self.point.pairs[nf.pair].hops(nf)

    def restore(self, ports: Sequence[Port]) -> bool:
        """After a fault brought `ports` up again at their nodes (run/fault.py):
        what each NF's kind keeps through them that the kernel dropped with the
        down, put back (a router's routes and neighbours: NfKind.restore); true
        if any NF put something back."""
        s = self.point.scenario
        kind = nfs.kind(s.nf)
        restored = False
        for nf in self.point.nfs:
            ifaces = [i for p in ports if p.node == nf.name
                      if (i := self.attachments[p.name].iface)]
            if ifaces:
                restored |= kind.restore(nf.name, nf, self.ports(nf.name), self.hops(nf),
                                         self.point.pairs[nf.pair], s, ifaces)
        return restored


class Namespaces:
    """The kernel's named network namespaces (a test without root passes its own)."""

    def add(self, journal: Journal, name: str) -> None:
        add_netns(journal, name)

    def remove(self, journal: Journal, name: str) -> None:
        del_netns(journal, name)   # it kills what still runs inside first


@dataclass
class SwitchHome:
    """A switch's container (switch_in = container; dataplanes.base.Home): a
    netns and a container of one name, from the switch image, held to the
    point's switch_quota. The data plane removes it in its stop(), after its
    processes stopped cleanly; both are journaled, for a killed run's cleanup."""

    runtime: Runtime
    image: Image          # the data plane's (DataPlane.image)
    quota: Quota | None
    namespaces: Namespaces
    journal: Journal

    def create(self, name: str, cpus: Sequence[int], mounts: Sequence[Mount]) -> Container:
        self.namespaces.add(self.journal, name)
        try:
            return self.runtime.create(name, cpus, name, mounts, image=self.image,
                                       quota=self.quota)
        except BaseException:
            self.namespaces.remove(self.journal, name)
            raise

    def remove(self, container: Container) -> None:
        try:
            container.destroy()
        finally:
            self.namespaces.remove(self.journal, container.netns)


class Builder:
    """Builds one run's testbeds. A runtime prepares each of its images once per
    run, in the run's state directory (tmpfs), which goes with the run's teardown.

    An image is its declaration's (runtimes.images.Image), asked of whoever
    needs it: the tester's ends run in the full image; a network function in
    the one its kind says (NfKind.image: the minimal one for the engine on a
    kernel api it was built with, the tools one for testpmd and commands,
    Click's own…); a switch in a container (switch_in = container) in its
    data plane's (DataPlane.image); the noisy neighbour in its own
    (noise.IMAGE). The declaration says which program the runtime is handed
    (program): the engine, the static engine beside it (host.static_engine)
    or a build's (builds.program)."""

    def __init__(self, journal: Journal, state: Path, engine: Path, teardown: Teardown,
                 dataplanes: Mapping[str, type[DataPlane]] = DATAPLANES,
                 runtimes: Mapping[str, type[Runtime]] = RUNTIMES,
                 namespaces: Namespaces | None = None,
                 hosts: Hosts | None = None):
        self.journal = journal
        self.hosts = hosts    # the agents of the run's other hosts
        self.state = state
        self.engine = engine
        self.static_engine = static_engine(engine)
        self.dataplanes = dataplanes
        self.runtimes = runtimes
        self.namespaces = namespaces or Namespaces()
        self._runtimes: dict[str, Runtime] = {}
        self._images: dict[tuple[str, Image], ImageInfo] = {}
        self._static_apis: list[str] | None = None
        self._state_dir(teardown)
        self._teardown = teardown    # the run's: what runtimes share goes with it
        # The switch kept between points; stopped before the state directory goes.
        # Its VMs (and their netns) kept with it: one the keeper drops takes its netns along.
        self.keeper = Keeper(gone=lambda name: self.namespaces.remove(self.journal, name))
        teardown.push(None, self.keeper.drop)

    def image(self, runtime: str, image: Image = FULL) -> ImageInfo:
        """That image in that runtime, prepared on first use."""
        self._runtime(runtime, image)
        return self._images[(runtime, image)]

    def image_of(self, nf: NF, value: str) -> Image:
        """The image a network function's container is made from: the choice of
        the kind `value` (its nf) names (NfKind.image: one with testpmd for a
        command of its own, Click's for Click, the minimal one on a kernel api)."""
        return nfs.kind(value).image(nf.ports[0].api, lambda: self.static_apis)

    def ends_image(self, point: TestPoint) -> ImageInfo:
        """The image the point's tester ends ran in (in VMs: their guest's)."""
        return self.image(self.runtime_of(point.engines[0], point.scenario))

    def nf_image(self, point: TestPoint) -> ImageInfo | None:
        """The image the point's network functions ran in, when not the ends' one."""
        s = point.scenario
        made = {(self.runtime_of(nf, s), self.image_of(nf, s.nf)) for nf in point.nfs}
        made -= {(self.runtime_of(point.engines[0], s), FULL)}
        return self.image(*min(made, key=lambda m: (m[0], m[1].name))) if made else None

    @staticmethod
    def nf_runtime(s: Scenario) -> str:
        """The runtime network functions' containers are made in: their kind's
        (NfKind.runtime: a user's image is podman's), else the scenario's."""
        return (nfs.kind(s.nf).runtime if s.nfs else None) or s.runtime

    @property
    def static_apis(self) -> list[str]:
        """What the static engine has (its --version; none if it was not built)."""
        if self._static_apis is None:
            facts = engine_facts(self.static_engine)
            self._static_apis = [] if facts.problem else facts.apis
        return self._static_apis

    def build(self, point: TestPoint, teardown: Teardown,
              say: Callable[[str], None] | None = None) -> Testbed:
        """The point's testbed; `say` hears how far the containers are (a chain
        of many NFs takes seconds to create)."""
        s = point.scenario
        total = len(point.engines) + len(point.nfs)

        def made(n: int) -> None:
            if say:
                say(f"containers {n}/{total}")
        if self.hosts is not None:
            point = replace(point, nics=tuple(
                (p, i) for p, i in parts.nics_on(point, point.host, self.hosts.wiring(point))),
                shared=tuple(
                (p, i) for p, i in parts.nics_on(point, point.host, self.hosts.shares(point))))
        bed = Testbed(point)
        # The kept switch first: one this point cannot have is stopped before
        # anything of the point exists.
        kept = None
        if point.links_joined_here():
            kept = self.keeper.take(point)
        else:
            self.keeper.drop()
        engines = [ep for ep in point.engines if point.here(ep.name)]
        nfs_here = [nf for nf in point.nfs if point.here(nf.name)]
        try:
            for name in (*(ep.name for ep in engines), *(nf.name for nf in nfs_here)):
                self._netns(name, teardown)
            wires.share(self.journal, point, teardown)
        except BaseException:   # before its teardown holds the kept switch: it goes now
            if kept is not None:
                self.keeper.abandon(kept)
            raise
        switch, nic = self._switch(point, teardown, kept), self._nics(point, teardown)
        for node in (switch, nic):
            if node is not None:
                bed.nodes[node.name] = node
        # VMs go with a kept switch: their NICs are its ports (run/keep.py)
        keeps = switch is not None and switch.dataplane.keeps and keepable(point)
        direct = {port.name for port in point.direct_ports()}
        bed.attachments = {port.name: (nic if port.name in direct else switch).dataplane.attach(port)
                           for port in point.ports if point.here(port.node)}
        for n, ep in enumerate(engines):
            made(n)
            # A tester end's one process is the engine, which can be its init.
            bed.nodes[ep.name] = Tester(ep, self._container(
                self.runtime_of(ep, s), FULL, bed, ep.name, ep.all_cores,
                Quota.of(s.of_pair(ep.pair).endpoint_quota, s.quota_period), teardown,
                lazy=True, keeps=keeps))
        for n, nf in enumerate(nfs_here, len(engines)):
            made(n)
            runtime = self.runtime_of(nf, s)
            image = self.image_of(nf, s.nf)
            maker = self._runtime(runtime, image)
            guest, later = maker.own_kernel, maker.own_kernel or maker.takes_ports
            if not later:   # before its container mounts the netns's /sys read-only
                self._prepare(bed, nf)
            start = time.monotonic()
            # In a VM a vCPU each (pinned to it, or floating: VmRuntime.configure).
            bed.nodes[nf.name] = NetworkFunction(nf, self._container(
                runtime, image, bed, nf.name,
                point.cpuset(nf.cores), Quota.of(s.of_pair(nf.pair).nf_quota, s.quota_period),
                teardown,
                lazy=nfs.kind(s.nf).lazy, keeps=keeps))
            bed.create_s[nf.name] = time.monotonic() - start
            if later and nf.name not in bed.kept:   # its guest's kernel, or its pod's netns
                self._prepare(bed, nf, bed.container(nf.name) if guest else None, placed=True)
        if nfs_here:   # their routing daemons (frr), up once every NF is there
            bed.homes = daemons.start(nfs.kind(s.nf), point, nfs_here, bed.ports, self.state,
                                      self.journal, teardown, say)
        if switch is not None:   # every point: a kept switch's last steering undone too
            kernel = bool(nfs_here) and nfs.kind(s.nf).kernel
            switch.dataplane.steer(self._steered(bed, nfs_here) if kernel else ())
        if noise.runs_process(s.noise) and point.here(point.name(NOISE_SUFFIX)):
            bed.nodes[point.name(NOISE_SUFFIX)] = self._neighbour(point, bed, teardown)
        if self.hosts is not None:
            for host in parts.other_hosts(point):
                if say:
                    say(f"host {host}")
                self._part(self.hosts.agent(host), bed, teardown)
        made(total)
        if bed.kept and say:
            say(f"VMs kept from the point before: {', '.join(sorted(bed.kept))}")
        return bed

    @staticmethod
    def _steered(bed: Testbed, nfs_here: Sequence[NF]) -> tuple[int, ...]:
        """The cores the switch steers its frames to (DataPlane.steer): the
        pinned kernel NFs' in containers here, as they see them; none when
        they float, or a VM's kernel forwards (its own vCPUs' steering)."""
        if bed.point.floating:
            return ()
        return tuple(sorted({core for nf in nfs_here if not bed.container(nf.name).own_kernel
                             for core in bed.inside(nf).cores}))

    @staticmethod
    def _prepare(bed: Testbed, nf: NF, guest: Container | None = None,
                 placed: bool = False) -> None:
        """What the NF's kind makes of its netns before any trial (a router's
        addresses and routes: NfKind.prepare), with the MACs of the hops before
        and after it, and its cores when it is pinned; `guest`: its VM, whose
        kernel it concerns; `placed`: its container exists (its cores are
        those it sees, Testbed.inside). Undone with its netns."""
        point = bed.point
        inside = bed.inside(nf) if placed else nf
        cores = () if point.floating else inside.cores
        nfs.kind(point.scenario.nf).prepare(nf.name, guest, inside, bed.ports(nf.name),
                                            bed.hops(nf), point.pairs[nf.pair], point.scenario,
                                            cores)

    def _part(self, agent: parts.Agent, bed: Testbed, teardown: Teardown) -> None:
        """Another host's part of the point, built there by its agent: its
        nodes and ports beside this host's."""
        point = bed.point

        def undo() -> None:
            try:
                answer = agent.call("teardown")
            except Lost:
                # its agent undoes its part as its session ends; a new one checks
                self.hosts.recover(agent.name, point.run_id)
                return
            if answer["failed"]:
                raise SystemFailure(f"host {agent.name} left: " + "; ".join(answer["failed"]))
        teardown.push(f"host {agent.name}'s part", undo)
        part = parts.build(agent, point, self.hosts.wiring(point), self.hosts.shares(point))
        if part.switch is not None:   # named for its host: each host may run one
            bed.nodes[part.switch.name] = Switch(part.switch.name, part.switch)
        bed.attachments.update(part.attachments)
        for ep in point.engines:
            if ep.name in part.containers:
                bed.nodes[ep.name] = Tester(ep, part.containers[ep.name])
        for nf in point.nfs:
            if nf.name in part.containers:
                bed.nodes[nf.name] = NetworkFunction(nf, part.containers[nf.name])
        if part.noise is not None:
            bed.nodes[point.name(NOISE_SUFFIX)] = Neighbour(point.name(NOISE_SUFFIX), part.noise)

    def _neighbour(self, point: TestPoint, bed: Testbed, teardown: Teardown) -> Neighbour:
        """stress-ng's container, in a netns of its own (it needs no network), on
        the noise's cores; the io stressor writes to a directory on disk."""
        s = point.scenario
        name = point.name(NOISE_SUFFIX)
        self._netns(name, teardown)
        mounts: tuple[Mount, ...] = ()
        if s.noise == "io":
            io_dir = IO_DIR / name
            self.directory(io_dir, teardown)
            mounts = () if self._instance(s.runtime).host_files else \
                (Mount(str(io_dir), noise.IO_TARGET),)
        cores = noise.cores(point, bed.dataplane.cpus)
        if noise.command(s.noise) is not None:
            # the user's programs are the host's: a runtime of the host's files
            # (netns) runs them from there
            host = next(n for n in self.runtimes
                        if self._instance(n).host_files and not self._instance(n).own_kernel)
            c = self._runtime(host, FULL).create(name, cores, name)
        else:
            c = self._runtime(s.runtime, noise.IMAGE).create(name, cores, name, mounts,
                                                             image=noise.IMAGE)
        teardown.push(f"container {name}", c.destroy)
        neighbour = noise.Noise(c, s.noise, cores, io_dir=str(IO_DIR / name) if not mounts else None)
        # a trial that fails while it runs leaves it to this (stop() is a no-op once stopped)
        teardown.push(neighbour.what, neighbour.stop)
        return Neighbour(name, neighbour)

    def runtime_of(self, node: Endpoint | NF, s: Scenario) -> str:
        """The runtime a node runs in: the one its placement names (nf_in,
        endpoint_in: vm puts it in a VM); else an NF's (nf_runtime) or the
        scenario's."""
        if isinstance(node, NF):
            place = nf_places(s.nf_in, s.nfs)[node.index]
        else:   # a noise pair's ends (the pair after the point's) are in containers
            place = s.endpoint_in if node.pair < s.pairs else CONTAINER
        return placed(place) or (self.nf_runtime(s) if isinstance(node, NF) else s.runtime)

    def _container(self, runtime: str, image: Image, bed: Testbed, name: str,
                   cpus: tuple[int, ...], quota: Quota | None, teardown: Teardown,
                   lazy: bool = False, keeps: bool = False) -> Container:
        """A node's container in its netns, from that image, seeing what its ports
        need (one mount once; a VM's NICs), on `cpus` for at most `quota` of their
        time; `lazy`: started with its process (Runtime.create). `keeps`: the
        point's switch may be kept, and a VM with it: the one kept from the
        point before if the keeper offers it (it is in bed.kept then), and at
        the point's end handed to the keeper instead of destroyed."""
        ports = bed.ports(name)
        mounts = gathered(m for a in ports for m in a.mounts)
        nics = tuple(a.nic for a in ports if a.nic is not None)
        maker = self._runtime(runtime, image)
        keeps = keeps and maker.keeps
        c = self.keeper.guest(name) if keeps else None
        if c is not None:
            bed.kept.add(name)
        else:
            maker.configure_for(bed.point.scenario)
            c = maker.create(name, cpus, name, mounts, image=image, quota=quota, nics=nics,
                             lazy=lazy)
        teardown.push(f"container {name}", (lambda: self.keeper.park(bed.point, name, c))
                      if keeps else c.destroy)
        return c

    def _netns(self, name: str, teardown: Teardown) -> None:
        """The node's netns; kept with its node's VM (run/keep.py): neither made
        nor removed while the keeper holds that VM."""
        def remove() -> bool | None:
            if self.keeper.holds(name):
                return False
            self.namespaces.remove(self.journal, name)
            return None
        teardown.push(f"netns {name}", remove)
        if not self.keeper.holds(name):
            self.namespaces.add(self.journal, name)

    def _nics(self, point: TestPoint, teardown: Teardown) -> Switch | None:
        """This host's nodes' ports that are NICs themselves, wired to another
        host's switch (NicPlane: the tester's on a tester's host); None if none."""
        if not point.direct_ports():
            return None
        nic = NicPlane(self.journal)
        teardown.push("data-plane nic", nic.stop)
        nic.start(point)
        return Switch(nic.name, nic)

    def _switch(self, point: TestPoint, teardown: Teardown,
                kept: DataPlane | None = None) -> Switch | None:
        """The point's switch, where it joins links here: the one kept from the
        previous point (the keeper has reset it), else a fresh one; else None.
        The point's teardown hands it back to the keeper, which keeps it for
        the next point or stops it (run/keep.py)."""
        s = point.scenario
        if not point.links_joined_here():
            return None
        name = s.switch
        if kept is not None:
            teardown.push(f"data-plane {name}", lambda: self.keeper.hand_back(point, kept))
            return Switch(name, kept)
        plane = self.dataplanes[name]
        home = None
        if s.switch_in != "host" and plane.image:
            # a container of the scenario's runtime, or a pod (the place's runtime)
            runtime = self._runtime(placed(s.switch_in) or s.runtime, plane.image)
            runtime.configure_for(s)
            home = SwitchHome(runtime, plane.image, Quota.of(s.switch_quota, s.quota_period),
                              self.namespaces, self.journal)
        dataplane = plane(self.journal, home=home)
        # Before start: stop() undoes a partial start too (a point that did
        # not measure never hands its switch on).
        teardown.push(f"data-plane {name}", lambda: self.keeper.hand_back(point, dataplane))
        dataplane.start(point)
        return Switch(name, dataplane)

    def _state_dir(self, teardown: Teardown) -> None:
        self.directory(self.state, teardown)

    def directory(self, path: Path, teardown: Teardown) -> None:
        """A directory of the run's, journaled before it exists, removed with it."""
        def remove() -> None:
            shutil.rmtree(path, ignore_errors=True)
            self.journal.discard("dir", str(path))
        self.journal.add("dir", str(path))
        teardown.push(f"directory {path}", remove)
        path.mkdir(parents=True)

    def _instance(self, name: str) -> Runtime:
        """The run's runtime of that name (its capabilities: Runtime)."""
        if name not in self._runtimes:
            runtime = self._runtimes[name] = self.runtimes[name](self.journal, self.state)
            self._teardown.push(None, runtime.close)   # said by what it removes
            # a kept switch may be in one of its containers (a pod): it goes first
            self._teardown.push(None, self.keeper.drop)
        return self._runtimes[name]

    def _runtime(self, name: str, image: Image = FULL) -> Runtime:
        """The runtime, with that image prepared."""
        runtime = self._instance(name)
        if (name, image) not in self._images:
            self._images[(name, image)] = runtime.prepare(self.program(image), image)
        return runtime

    def program(self, image: Image) -> Path:
        """The program an image is built around, as its declaration says."""
        if image.program == ENGINE:
            return self.engine
        if image.program == STATIC:
            return self.static_engine
        assert image.build is not None    # Image checks it
        return builds.program(image.build)
