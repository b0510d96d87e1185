"""Placement: which endpoint runs where, with which names, addresses and cores.

Names are kernel interface names too, so they are planned to fit IFNAMSIZ (15):
`cnfp` + run id (4 hex) + `p<pair>` + `s|r` = at most 13 characters, leaving two
for a data plane's own suffix (a bridge port's host side adds `h`). A network
function is `cnfp` + run id + `n<pair, 2 hex><index, 1 hex>` and its ports add
`a` (towards the sender) or `b` (towards the receiver), a graph's NF's ports
its letters (a, b, c…): 13 again.
"""
from __future__ import annotations

import os
from collections import Counter
from dataclasses import dataclass, field, replace
from typing import Protocol, Sequence

from cnfperf import PREFIX, fields, graph as graphs, polls, testers
from cnfperf.fields import LOCAL, MAX_NFS, NOISE_PLACES, PLACES, RX_PORT, TX_PORT
from cnfperf.runtimes import in_guest
from cnfperf.scenario import Scenario, in_turn, parse_cpus, tester_hosts

IFNAMSIZ = 15
# Threads that spin on the CPU per role, unless poll = interrupt. The engine's
# client paces and collects echoes in one thread when it polls, so it is one.
# An adaptive poller counts: it sleeps between frames at a moderate rate, but
# at a high one (a search's upper trials, an unpaced sender) it never does,
# and where its sleeps overshoot (a loaded core) it polls, yielding, instead.
POLLERS = {"send": 1, "recv": 1, "client": 1, "server": 1, "tester": 1}
ROLES = {"throughput": ("send", "recv"), "latency": ("client", "server")}
# tester = single: one engine holds both ends of a path, sending on its first port
# and receiving on its second; latency is one-way, on its one clock.
SINGLE = ("tester", "tester")


class NfFacts(Protocol):
    """What placing asks of the point's NF kind: cnfperf/nfs/'s NfKind answers
    it. plan does not import nfs (it is above): run/checks/ resolves the kind
    and hands it down, as it hands down the data plane's pollers."""

    @property
    def ports(self) -> int:
        """One (it sends frames back where they came from) or two."""

    def pollers(self, s: Scenario, cores: int) -> int:
        """Threads one NF spins on, given its cores."""

    def warnings(self, s: Scenario) -> tuple[str, ...]:
        """What the plan says about it (a udp checksum it may leave unfinished)."""

    def queues(self, s: Scenario) -> int:
        """The queues each of its ports has (Port.queues)."""


@dataclass(frozen=True)
class Port:
    """One end of a link: a node's port. On a kernel data plane it is an interface
    named `name` inside the node's netns; on a DPDK one, a vdev of the node's engine."""

    name: str          # interface name, unique in the run
    node: str          # the node it belongs to (its netns and container name)
    pair: int
    mac: str
    api: str           # its node's engine's packet I/O
    slot: int = 0      # its place among its node's ports: the engine's port 1 or 2,
                       # DPDK port id and vdev index
    vm: bool = False   # its node is a virtual machine: the data plane gives the VM a
                       # virtual NIC (a tap, a macvtap, a vhost-user socket) for it
    host: str = LOCAL  # the host its node runs on (tester_host, nf_host)
    queues: int = 1    # the queues its interface or vdev has: an NF polling a queue per
                       # thread (the engine's with nf_cores > 1) has one per core


@dataclass(frozen=True)
class Link:
    """Two adjacent ports on a pair's path: `a` towards the sender, `b` towards the
    receiver. A link data plane joins them directly (a veth, a memif or vhost-user
    socket); a switch data plane gives each its own switch port."""

    a: Port
    b: Port
    # The end whose engine starts first, so it listens (vhost-user backend, memif
    # server): the receiving side, as engines start from the receiver's end.
    first_is_a: bool = False

    @property
    def first(self) -> Port:
        return self.a if self.first_is_a else self.b

    @property
    def reflects(self) -> bool:
        """Whether the switch sends the frames of its one port back out of it
        (forward = reflect: reflect_links): its two ends are that port."""
        return self.a == self.b

    @property
    def ports(self) -> tuple[Port, ...]:
        """Its ends, each once."""
        return (self.a,) if self.reflects else (self.a, self.b)


@dataclass(frozen=True)
class Endpoint:
    name: str          # netns, container and interface name
    pair: int
    role: str          # send | recv | client | server
    cpu: int
    mac: str
    ip: str            # without prefix length
    prefixlen: int
    udp_port: int      # a sender's first source port, a receiver's port

    @property
    def receives_first(self) -> bool:
        """Receivers and servers must be ready before their peer starts sending."""
        return self.role in ("recv", "server")

    api: str           # its engine's packet I/O
    node: str = ""     # the node holding its port: itself, or with tester = single
                       # the sender, whose one engine holds both ends
    vm: bool = False   # it runs in a virtual machine (endpoint_in = vm)
    host: str = LOCAL  # the host it runs on (tester_host: the sender's, or the receiver's)
    cores: tuple[int, ...] = ()   # every core it was placed on (endpoint_cores), cpu first

    @property
    def all_cores(self) -> tuple[int, ...]:
        """The cores its engine runs on: its cores, or its one."""
        return self.cores or (self.cpu,)

    @property
    def queues(self) -> int:
        """Its port's queues: its engine polls one per core."""
        return len(self.all_cores)

    @property
    def port(self) -> Port:
        """A tester end's port, named like itself; the single tester's receiving
        end is its node's second port."""
        node = self.node or self.name
        return Port(self.name, node, self.pair, self.mac, self.api, slot=int(node != self.name),
                    vm=self.vm, host=self.host, queues=self.queues)

    @property
    def runs_engine(self) -> bool:
        return not self.node or self.node == self.name


@dataclass(frozen=True)
class NF:
    """A network function on a pair's path: a node (netns and container of that
    name) with a port towards the sender (`a`) and one towards the receiver (`b`)."""

    name: str
    pair: int
    index: int         # 0-based position on the path, counted from the sender
    cpu: int           # its first core (testpmd's main lcore, an engine's only one)
    ports: tuple[Port, ...]
    cores: tuple[int, ...] = ()   # every core it was placed on (nf_cores), cpu first
    vm: bool = False   # it runs in a virtual machine (nf_in)
    host: str = LOCAL  # the host it runs on (nf_host)
    label: str = ""    # its name in the scenario's graph (in, top…); "" in a chain
    role = "nf"        # what its engine does, as the tester's ends say send or recv


def chain_links(sender: Endpoint, nfs: Sequence[NF], receiver: Endpoint) -> tuple[Link, ...]:
    """A chain's links, sender to receiver: through each NF, in at one port
    and out at the other. A single tester starts after the NFs: on its
    receiving link the NF listens (and without NFs, the tester's first port,
    probed first)."""
    ends = [sender.port, *(p for nf in nfs for p in nf.ports)]
    if len(ends) % 2:   # else a one-port NF (mirror) sends frames back: the path ends
        ends.append(receiver.port)
    links = [Link(ends[i], ends[i + 1]) for i in range(0, len(ends), 2)]
    return _listening(links, receiver)


def reflect_links(sender: Endpoint) -> tuple[Link, ...]:
    """forward = reflect: the switch alone is the single tester's peer (paper
    001's baseline), sending each frame back out of the sender's port, MACs
    swapped. One link whose two ends are that port: the tester's engine holds
    it alone, sends and receives on it, as behind a mirror NF."""
    return (Link(sender.port, sender.port),)


def graph_links(sender: Endpoint, nfs: Sequence[NF], receiver: Endpoint,
                graph: graphs.Graph) -> tuple[Link, ...]:
    """A graph's links, in its order, each end the port it names (NF by
    index: the graph's order of names)."""
    index = {name: i for i, name in enumerate(graph.nfs)}

    def port(end: graphs.End) -> Port:
        if end.node in graphs.ENDS:
            return sender.port if end.node == graphs.SENDER else receiver.port
        return nfs[index[end.node]].ports[end.slot]
    return _listening([Link(port(e.a), port(e.b)) for e in graph.edges], receiver)


def _listening(links: list[Link], receiver: Endpoint) -> tuple[Link, ...]:
    """A single tester starts after the NFs: on its receiving link the NF
    listens (a link's b end otherwise)."""
    if not receiver.runs_engine:
        links = [replace(link, first_is_a=True) if link.b == receiver.port else link
                 for link in links]
    return tuple(links)


@dataclass(frozen=True)
class Pair:
    index: int
    sender: Endpoint   # send or client
    receiver: Endpoint  # recv or server
    nfs: tuple[NF, ...] = ()
    noise: bool = False   # a second stream through the switch, built and run, not measured
    # The pair's path, every port on one link: a chain's (chain_links) unless given.
    # Its users ask it by port (link_of, peer, hops), not by position.
    links: tuple[Link, ...] = ()

    def __post_init__(self) -> None:   # a graph's are given (graph_links)
        if not self.links:
            object.__setattr__(self, "links", chain_links(self.sender, self.nfs, self.receiver))

    @property
    def endpoints(self) -> tuple[Endpoint, Endpoint]:
        return (self.sender, self.receiver)

    def link_of(self, port: Port) -> Link:
        """The link a port is an end of."""
        return next(link for link in self.links if port in (link.a, link.b))

    def peer(self, port: Port) -> Port:
        """The port at the other end of a port's link."""
        link = self.link_of(port)
        return link.b if port == link.a else link.a

    @property
    def first(self) -> Link:
        """The link the sender puts its frames on."""
        return self.link_of(self.sender.port)

    @property
    def last(self) -> Link:
        """The link frames reach the receiver by: its port's, or, where a
        one-port NF sends them back (mirror), the path's last."""
        return next((link for link in self.links if self.receiver.port in (link.a, link.b)),
                    self.links[-1])

    def hops(self, nf: NF) -> tuple[str, ...]:
        """The MACs of the ports facing each of the NF's, in its ports' order;
        none for a one-port NF (mirror sends back where frames came from)."""
        return tuple(self.peer(p).mac for p in nf.ports) if len(nf.ports) > 1 else ()

    @property
    def engines(self) -> tuple[Endpoint, ...]:
        """The ends that run an engine of their own: both, or the single tester."""
        return tuple(ep for ep in self.endpoints if ep.runs_engine)


@dataclass(frozen=True)
class TestPoint:
    index: int         # 0-based position in the run
    total: int         # points in the run
    run_id: str
    scenario: Scenario
    pairs: tuple[Pair, ...]
    cpus: tuple[int, ...]
    warnings: tuple[str, ...] = field(default=())
    # Why its tester (testers.choose: "set", or auto's reason), and the busy
    # pollers it counted on its cores
    tester_why: str = testers.SET
    pollers: int = 0
    # From the sweep (experiments/sweep.py): what --resume compares, the
    # repetition, and the values of the swept fields for progress lines.
    key: str = ""
    group: str = ""
    rep: int = 0
    label: str = ""
    expect: tuple[str, ...] = ()   # its expectations, as written (results/expect.py)
    joins: str = "switch"   # the data plane's way of joining a link (DataPlane.joins)
    # noise = traffic: pairs after the measured ones, through the same switch
    noise_pairs: tuple[Pair, ...] = ()
    # The host this copy of the point is built on (each host builds its own
    # nodes: here()), and the NICs there that carry ports across hosts: port
    # name -> interface, the ends of the inventory's wires (wired_ports()).
    host: str = LOCAL
    nics: tuple[tuple[str, str], ...] = ()
    # share_wires: port name -> the wire's NIC there, whose macvlan child its
    # interface (nic()) is
    shared: tuple[tuple[str, str], ...] = ()

    @property
    def paths(self) -> tuple[Pair, ...]:
        """Every pair that is built and run: the measured ones, then the noise's."""
        return (*self.pairs, *self.noise_pairs)

    @property
    def prefix(self) -> str:
        return run_prefix(self.run_id)

    @property
    def shape(self) -> str:
        """How each pair's path is laid out: `pair` (the ends meet through the data
        plane), a `chain` (every NF's two ports on the switch, as FD.io CSIT calls
        it), a `pipeline` (NFs joined to their neighbours directly) or a
        `graph` (the scenario's: its NFs route over the links it names)."""
        if not self.scenario.nfs:
            return "pair"
        if self.scenario.graph:
            return "graph"
        return "chain" if self.joins == "switch" else "pipeline"

    def path(self) -> str:
        """`send → 3 × l2 (chain) → recv`: what --dry-run and the report show,
        with the hosts it runs on when they are not all this one."""
        pair, s = self.pairs[0], self.scenario
        path = describe_path(pair.sender.role, s.nfs, s.nf, self.shape, pair.receiver.role,
                             s.nf_in, s.endpoint_in)
        return path + hosts_said(s.tester_host, s.dut_host, s.nf_host if s.nfs else "",
                                 len(self.crossings()))

    @property
    def endpoints(self) -> list[Endpoint]:
        return [e for p in self.paths for e in p.endpoints]

    @property
    def nfs(self) -> list[NF]:
        return [nf for p in self.paths for nf in p.nfs]

    @property
    def engines(self) -> list[Endpoint]:
        """The tester's ends that run an engine (both, unless tester = single)."""
        return [e for p in self.paths for e in p.engines]

    @property
    def links(self) -> list[Link]:
        return [link for p in self.paths for link in p.links]

    @property
    def vms(self) -> list[str]:
        """The nodes that run in a virtual machine of their own, ends first."""
        return [n.name for n in (*self.engines, *self.nfs) if n.vm]

    @property
    def ports(self) -> list[Port]:
        """Every port, each pair's in path order."""
        return [port for link in self.links for port in link.ports]

    def host_of(self, node: str) -> str:
        """Where a node runs: a tester's end on tester_host, an NF on its
        nf_host (dut_host unless it says otherwise), anything else on dut_host."""
        for n in (*self.endpoints, *self.nfs):
            if n.name == node:
                return n.host
        return self.scenario.dut_host

    def here(self, node: str) -> bool:
        """Whether this copy's host builds the node."""
        return self.host_of(node) == self.host

    def joined_at(self, link: Link) -> str:
        """The host whose switch joins a link: its network function's (the one
        downstream first), else, between two tester ports, dut_host."""
        ends = {e.name for e in self.endpoints} | {e.node for e in self.endpoints}
        for port in (link.b, link.a):
            if port.node not in ends:
                return port.host
        return self.scenario.dut_host

    def crossings(self) -> list[tuple[Port, str]]:
        """(port, host) for each port whose link is joined on another host than
        its node's: a wire carries it there, in path order."""
        return [(port, at) for link in self.links for at in (self.joined_at(link),)
                for port in (link.a, link.b) if port.host != at]

    @property
    def spans_hosts(self) -> bool:
        """Whether a wire crosses between hosts (a tester on another host than
        the switch: the classic TG–DUT topology; NFs on several hosts)."""
        return bool(self.crossings())

    def wired_ports(self) -> list[Port]:
        """The ports a wire carries to another host's switch (crossings)."""
        return [port for port, _ in self.crossings()]

    def links_joined_here(self) -> list[Link]:
        """The links this copy's host's switch joins."""
        return [link for link in self.links if self.joined_at(link) == self.host]

    def ports_joined_here(self) -> list[Port]:
        """The ports of the links this copy's host's switch joins: its nodes',
        and the wires' ends that stand for other hosts' ports (nic())."""
        return [port for link in self.links_joined_here() for port in link.ports]

    def direct_ports(self) -> list[Port]:
        """This host's nodes' ports that are NICs themselves: their links are
        joined on another host, a wire away (dataplanes/nic.py)."""
        return [port for port, _ in self.crossings() if port.host == self.host]

    @property
    def hosts(self) -> list[str]:
        """Every host a part of the point runs on: its nodes' and its switches'."""
        found = [n.host for n in (*self.endpoints, *self.nfs)]
        found += [self.joined_at(link) for link in self.links]
        return list(dict.fromkeys(found))

    def nic(self, port: str) -> str | None:
        """The interface on this copy's host that carries the port across a wire."""
        return dict(self.nics).get(port)

    def cpuset(self, cores: tuple[int, ...]) -> tuple[int, ...]:
        """Where a switch or NF placed on `cores` may run: those cores if pinned,
        else every core of the point (the scheduler moves it as it likes)."""
        return self.floating or cores

    @property
    def floating(self) -> tuple[int, ...]:
        """What an unpinned switch's or NF's threads float over (pin = no): every
        core of the point; () when they are pinned. The one pinning rule."""
        return () if self.scenario.pin else self.cpus

    def name(self, suffix: str) -> str:
        """A run-scoped name for a data plane's own resource (e.g. `br` → cnfp1a2bbr)."""
        name = self.prefix + suffix
        if len(name) > IFNAMSIZ:
            raise ValueError(f"{name}: longer than {IFNAMSIZ} characters")
        return name


def roles(tester: str, mode: str) -> tuple[str, str]:
    """The engine roles of a path's two ends (one engine for a single tester)."""
    return SINGLE if tester == "single" else ROLES[mode]


def links_per_path(nfs: int, nf_ports: int, graph: str = "") -> int:
    """How many links Pair.links makes: a graph's; a chain's one before each
    NF and one after the last, unless that one sends frames back (an NF kind
    of one port): the path ends there."""
    if graph:
        return len(graphs.parse(graph).edges)
    return nfs + (0 if nfs and nf_ports == 1 else 1)


def describe_path(sender: str, nfs: int, nf: str, shape: str | None, receiver: str,
                  nf_in: str = "container", endpoint_in: str = "container") -> str:
    """`send → 3 × l2 (chain) → recv`; without NFs `send → recv`; nodes in
    virtual machines say so: `send in vm → 1 × l2 in vm (chain) → recv in vm`,
    `2 × l2 in vm+container`. The report rebuilds it from a stored point, whose
    shape may be unknown (None)."""
    # a place other than a container of the scenario's runtime (PLACES[0]) is said,
    # as the point stored it: the report draws old runs with it
    where = f" in {nf_in}" if nfs and set(nf_in.split("+")) != {PLACES[0]} else ""
    middle = f" → {nfs} × {fields.show('nf', nf)}{where}" + (f" ({shape})" if shape else "") \
        if nfs else ""
    ends = f" in {endpoint_in}" if endpoint_in != PLACES[0] else ""
    return f"{sender}{ends}{middle} → {receiver}{ends}"


def hosts_said(tester_host: str, dut_host: str, nf_host: str = "", wires: int | None = None) -> str:
    """What a path adds when it runs on other hosts: `  (tester on local,
    switch on dut+dut2, 3 wires)`: the switch runs where the NFs are (each
    host's joins the links into its NFs), else on dut_host; "" on this host alone."""
    switch = "+".join(dict.fromkeys(nf_host.split("+"))) if nf_host else dut_host
    if {tester_host, *switch.split("+")} == {LOCAL}:
        return ""
    said = [f"tester on {tester_host}", f"switch on {switch}"]
    if wires:
        said.append(f"{wires} wire{'' if wires == 1 else 's'}")
    return f"  ({', '.join(said)})"


# Flows spread over a router's prefixes (nf_routes, nf_unrouted): each pair's
# destinations are consecutive addresses in 10.128.0.0/9, a block of
# MAX_DESTINATIONS per pair; the engine's --ip-span addresses flow f to the
# block's first + f % destinations().
SPREAD_BLOCK = 0x0A800000   # 10.128.0.0
MAX_DESTINATIONS = fields.MAX_FLOWS   # the engine tracks that many flows, one per destination at least


def destinations(s: Scenario) -> int:
    """How many destination addresses each pair's flows take turns over: one
    (the receiver's own) unless router NFs have prefixes to spread them over."""
    return s.nf_routes + s.nf_unrouted if s.nfs else 1


def spread_address(pair: int, j: int = 0) -> str:
    """The j-th destination of a pair's spread flows (a /32 of a router's)."""
    n = SPREAD_BLOCK + pair * MAX_DESTINATIONS + j
    return ".".join(str(n >> shift & 0xff) for shift in (24, 16, 8, 0))


def run_prefix(run_id: str) -> str:
    return f"{PREFIX}{run_id}"


def usable_cpus() -> tuple[int, ...]:
    return tuple(sorted(os.sched_getaffinity(0)))


def place(s: Scenario, run_id: str, index: int = 0, total: int = 1,
          host_cpus: tuple[int, ...] | None = None, switch_pollers: int = 0,
          joins: str = "switch", nf: NfFacts | None = None,
          single_holds_link: bool = True) -> TestPoint:
    """Where each endpoint and network function runs, and with tester = auto,
    which tester (testers.choose: here the busy pollers are counted). The
    point's scenario has its tester chosen. `switch_pollers`: threads the data
    plane itself spins on (its DataPlane.pollers), counted against the cores;
    `joins`: how it joins a link (DataPlane.joins), `single_holds_link` whether
    one engine can hold a link's two ends (DataPlane.single_tester); `nf`: the
    NF kind, which a point with NFs needs (nfs.kind(s.nf))."""
    cpus = tuple(s.cpus or host_cpus or usable_cpus())
    if s.nfs and nf is None:
        raise ValueError(f"placing {s.nfs} NF(s) needs their kind's facts (nfs.kind)")

    def laid_out(tester: str) -> tuple[Scenario, list[Pair], list[Pair], int]:
        t = s if s.tester == tester else s.model_copy(update={"tester": tester})
        pairs = _pairs(t, run_id, cpus, nf.ports if nf else 2, nf.queues(t) if nf else 1)
        noise = [_noise_pair(t, run_id, pairs, cpus)] if t.noise == "traffic" else []
        return t, pairs, noise, busy_pollers(t, pairs + noise, switch_pollers, nf)

    tester, why = testers.choose(s, lambda t: laid_out(t)[3], len(cpus),
                                 nf.ports if nf and s.nfs else 2, single_holds_link)
    s, pairs, noise, pollers = laid_out(tester)
    warnings = nf.warnings(s) if nf and s.nfs else ()
    return TestPoint(index=index, total=total, run_id=run_id, scenario=s, pairs=tuple(pairs),
                     cpus=cpus, warnings=(*_warnings(pollers, cpus), *warnings),
                     joins=joins,
                     noise_pairs=tuple(noise), tester_why=why, pollers=pollers)


def first_sport(s: Scenario, pair: int) -> int:
    """A pair's first UDP source port: after the ports of the pairs before it,
    each as many as its flows (its own: Scenario.of_pair)."""
    return TX_PORT + sum(s.of_pair(k).flows for k in range(pair))


def _pairs(s: Scenario, run_id: str, cpus: tuple[int, ...], nf_ports: int,
           nf_queues: int = 1) -> list[Pair]:
    single = s.tester == "single"
    octets = _octets(run_id)
    engines = 1 if single else 2   # per pair, for the tester's ends
    hosts = nf_hosts(s)
    sender_host, receiver_host = tester_hosts(s)
    # each NF's port letters and name: a chain's two (one: mirror), a graph's own
    graph = graphs.parse(s.graph) if s.graph else None
    sides = [graphs.PORTS[:graph.ports(name)] for name in graph.nfs] if graph \
        else ["ab"[:nf_ports]] * s.nfs
    labels = graph.nfs if graph else ("",) * s.nfs
    # NFs take the cores after every pair's ends on the tester's host(s), in
    # path order; on a host of their own from its first core.
    per_end = s.endpoint_cores
    taken = Counter(dict.fromkeys((sender_host, receiver_host), engines * s.pairs * per_end))
    pairs = []
    for k in range(s.pairs):
        # Receivers first on the core list, so that with two cores every pair gets
        # one core per side instead of both sides on one; a single tester takes
        # one. Each end takes endpoint_cores in a row.
        def cores_from(first: int) -> tuple[int, ...]:
            return tuple(dict.fromkeys(cpus[(first + j) % len(cpus)] for j in range(per_end)))
        receiver_cores = cores_from(engines * k * per_end)
        sender_cores = receiver_cores if single else cores_from((2 * k + 1) * per_end)
        receiver_cpu, sender_cpu = receiver_cores[0], sender_cores[0]
        nf_cores = []
        for i in range(s.nfs):
            first = taken[hosts[i]]
            nf_cores.append(tuple(dict.fromkeys(cpus[(first + j) % len(cpus)]
                                                for j in range(s.nf_cores))))
            taken[hosts[i]] += s.nf_cores
        vm = in_guest(s.endpoint_in)
        sender_role, receiver_role = roles(s.tester, s.of_pair(k).mode)
        sender = _endpoint(run_id, k, "s", sender_role, sender_cpu, octets, octet=1,
                           udp_port=first_sport(s, k), api=s.api, vm=vm, host=sender_host,
                           cores=sender_cores if per_end > 1 else ())
        receiver = _endpoint(run_id, k, "r", receiver_role, receiver_cpu, octets, octet=2,
                             udp_port=RX_PORT + k, api=s.api, vm=vm, host=receiver_host,
                             cores=receiver_cores if per_end > 1 else ())
        if single:   # one engine, on one host (testers.refusal: tester_host a+b)
            receiver = replace(receiver, node=sender.name, host=sender.host)
        places = nf_places(s.nf_in, s.nfs)
        nfs = tuple(_nf(run_id, k, i, nf_cores[i], octets, s.nf_api, sides=sides[i],
                        vm=in_guest(places[i]), host=hosts[i], label=labels[i], queues=nf_queues)
                    for i in range(s.nfs))
        links = graph_links(sender, nfs, receiver, graph) if graph else \
            reflect_links(sender) if s.forward == "reflect" else ()
        pairs.append(Pair(index=k, sender=sender, receiver=receiver, nfs=nfs, links=links))
    return pairs


def nf_hosts(s: Scenario) -> tuple[str, ...]:
    """The host each of a path's NFs runs on (nf_host, in path order, places
    joined by + taken in turn, the last repeating; none: dut_host)."""
    return in_turn(s.nf_host or s.dut_host, s.nfs)


def _octets(run_id: str) -> bytes:
    return bytes.fromhex(run_id.rjust(4, "0")[-4:])


def _noise_pair(s: Scenario, run_id: str, pairs: list[Pair], cpus: tuple[int, ...]) -> Pair:
    """noise = traffic: one more pair of the same kind, straight through the
    switch (no NFs), its ends on the noise's cores."""
    k, octets = len(pairs), _octets(run_id)
    nf_cores = [c for p in pairs for nf in p.nfs for c in nf.cores]
    ends = [c for p in pairs for ep in p.engines for c in ep.all_cores]
    cores = noise_cores(s.noise_on, cpus, ends, nf_cores, ())
    sender_role, receiver_role = roles(s.tester, s.mode)
    sender = _endpoint(run_id, k, "s", sender_role, cores[-1], octets, octet=1,
                       udp_port=first_sport(s, k), api=s.api)
    receiver = _endpoint(run_id, k, "r", receiver_role, cores[0], octets, octet=2,
                         udp_port=RX_PORT + k, api=s.api)
    if s.tester == "single":
        receiver = replace(receiver, node=sender.name)
    return Pair(index=k, sender=sender, receiver=receiver, noise=True)


def noise_cores(noise_on: str, cpus: tuple[int, ...], ends: list[int], nf_cores: list[int],
                switch_cpus: tuple[int, ...]) -> tuple[int, ...]:
    """The noise's cores: `same` is where the switch's poll threads and the NFs
    run (the tester's ends when there are neither), `other` the cores no node
    was placed on, or, when every core has one (a small host), the least loaded
    one; else noise_on is a CPU list."""
    if noise_on not in NOISE_PLACES:
        return tuple(parse_cpus(noise_on) or ())
    if noise_on == "same":
        return tuple(sorted(set(switch_cpus) | set(nf_cores))) or tuple(sorted(set(ends)))
    load = Counter([*ends, *nf_cores, *switch_cpus])
    free = tuple(c for c in cpus if not load[c])
    return free or (min(cpus, key=lambda c: (load[c], -c)),)


def nf_places(nf_in: str, count: int) -> tuple[str, ...]:
    """Where each of a path's `count` NFs runs (nf_in): container or vm, in path
    order; places joined by + are taken in turn, the last repeating."""
    if any(p not in PLACES for p in nf_in.split("+")):
        raise ValueError(f"{nf_in!r}: not {' or '.join(PLACES)}, nor several of them joined "
                         "by + (vm+container)")
    return in_turn(nf_in, count)


def has_vms(s: Scenario) -> bool:
    """Whether a valid scenario puts any node in a virtual machine."""
    return in_guest(s.endpoint_in) or any(map(in_guest, nf_places(s.nf_in, s.nfs)))


def _endpoint(run_id: str, pair: int, side: str, role: str, cpu: int, octets: bytes,
              octet: int, udp_port: int, api: str, vm: bool = False,
              host: str = LOCAL, cores: tuple[int, ...] = ()) -> Endpoint:
    # Locally administered unicast (02:…), unique per run, pair and side, so that
    # a bridge shared by several pairs never sees two ports claim one MAC.
    mac = f"02:c7:{octets[0]:02x}:{octets[1]:02x}:{pair:02x}:{octet:02x}"
    return Endpoint(name=f"{run_prefix(run_id)}p{pair}{side}", pair=pair, role=role, cpu=cpu,
                    mac=mac, ip=f"10.77.{pair}.{octet}", prefixlen=24, udp_port=udp_port, api=api,
                    vm=vm, host=host, cores=cores)


def port_host(index: int, slot: int) -> int:
    """The last octet of NF `index`'s port `slot`'s MAC (and of a router's
    address on it): after the tester's ends (1 and 2), two per NF from 16; a
    graph's ports beyond two from 128, eight per NF (MAX_NFS × 8 end at 255)."""
    return 0x10 + 2 * index + slot if slot < 2 else 0x80 | index << 3 | slot


def _nf(run_id: str, pair: int, index: int, cores: tuple[int, ...], octets: bytes, api: str,
        sides: str = "ab", vm: bool = False, host: str = LOCAL, label: str = "",
        queues: int = 1) -> NF:
    assert index < MAX_NFS and pair < 256, "names hold the index in one hex digit, the pair in two"
    name = f"{run_prefix(run_id)}n{pair:02x}{index:x}"
    # Which end of a link listens is the link's (Link.first_is_a).
    ports = tuple(Port(name + side, name, pair,
                       f"02:c7:{octets[0]:02x}:{octets[1]:02x}:{pair:02x}:{port_host(index, n):02x}",
                       api=api, slot=n, vm=vm, host=host, queues=queues)
                  for n, side in enumerate(sides))
    return NF(name, pair, index, cores[0], ports, cores, vm=vm, host=host, label=label)


def busy_pollers(s: Scenario, pairs: list[Pair], switch_pollers: int,
                 nf: NfFacts | None = None) -> int:
    """Threads that spin on the point's cores: the tester's engines (unless
    poll = interrupt), the NFs as their kind says (NfFacts.pollers: the
    engine's as the tester's, testpmd one per core whatever `poll` says,
    Click on sockets none), the data plane's."""
    busy: Counter[str] = Counter()
    for p in pairs:   # a pair's own poll (its profile), the point's for noise
        if polls.mode(s.of_pair(p.index).poll).spins:
            for e in p.engines:
                busy[e.host] += POLLERS[e.role] * e.queues   # a thread per queue
    if nf:
        for p in pairs:
            for n in p.nfs:
                busy[n.host] += nf.pollers(s, len(n.cores or (n.cpu,)))
    # the switch's on every host that joins links: dut_host's, each NF's
    for host in {s.dut_host, *nf_hosts(s)}:
        busy[host] += switch_pollers
    # each host's cores are its own: the busiest host's count
    return max(busy.values(), default=0)


def _warnings(pollers: int, cpus: tuple[int, ...]) -> list[str]:
    if pollers <= len(cpus):
        return []
    return [f"{pollers} busy pollers share {len(cpus)} core{'' if len(cpus) == 1 else 's'}: "
            "results show CPU contention, not only the data plane"]
