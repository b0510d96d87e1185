"""Placement: which endpoint runs where, with which names, addresses and cores.

Names are kernel interface names too, so they are planned to fit IFNAMSIZ (15):
`cnfp` + run id (4 hex) + `p<pair>` + `s|r` = at most 13 characters, leaving two
for a data plane's own suffix (a bridge port's host side adds `h`).
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field

from cnfperf import PREFIX
from cnfperf.fields import RX_PORT, TX_PORT
from cnfperf.scenario import Scenario

IFNAMSIZ = 15
# Threads that spin on the CPU per role, unless poll = interrupt. The engine's
# client paces and collects echoes in one thread when it polls, so it is one.
# An adaptive poller spins whenever traffic flows: it counts.
POLLERS = {"send": 1, "recv": 1, "client": 1, "server": 1}
ROLES = {"throughput": ("send", "recv"), "latency": ("client", "server")}


@dataclass(frozen=True)
class Port:
    """One end of a link: a node's port. On a kernel data plane it is an interface
    named `name` inside the node's netns; on a DPDK one, a vdev of the node's engine."""

    name: str          # interface name, unique in the run
    node: str          # the node it belongs to (its netns and container name)
    pair: int
    mac: str
    first: bool        # its node starts before the other end of the link: the
                       # side that listens (vhost-user backend, memif server)


@dataclass(frozen=True)
class Link:
    """Two adjacent ports on a pair's path: `a` towards the sender, `b` towards the
    receiver. A link data plane joins them directly (a veth, a memif or vhost-user
    socket); a switch data plane gives each its own switch port."""

    a: Port
    b: Port


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

    @property
    def port(self) -> Port:
        """A tester end has one port, named like itself."""
        return Port(self.name, self.name, self.pair, self.mac, self.receives_first)


@dataclass(frozen=True)
class Pair:
    index: int
    sender: Endpoint   # send or client
    receiver: Endpoint  # recv or server

    @property
    def endpoints(self) -> tuple[Endpoint, Endpoint]:
        return (self.sender, self.receiver)

    @property
    def links(self) -> tuple[Link, ...]:
        """The pair's path, sender to receiver."""
        return (Link(self.sender.port, self.receiver.port),)


@dataclass(frozen=True)
class TestPoint:
    index: int         # 0-based position in the run
    total: int         # points in the run
    run_id: str
    scenario: Scenario
    pairs: tuple[Pair, ...]
    cpus: tuple[int, ...]
    warnings: tuple[str, ...] = field(default=())
    # From the sweep (experiments/sweep.py): what --resume compares, the
    # repetition, and the values of the swept fields for progress lines.
    key: str = ""
    group: str = ""
    rep: int = 0
    label: str = ""

    @property
    def prefix(self) -> str:
        return run_prefix(self.run_id)

    @property
    def endpoints(self) -> list[Endpoint]:
        return [e for p in self.pairs for e in p.endpoints]

    @property
    def links(self) -> list[Link]:
        return [link for p in self.pairs for link in p.links]

    @property
    def ports(self) -> list[Port]:
        """Every port, each pair's in path order."""
        return [port for link in self.links for port in (link.a, link.b)]

    def name(self, suffix: str) -> str:
        """A run-scoped name for a data plane's own resource (e.g. `br` → cnfp1a2bbr)."""
        name = self.prefix + suffix
        if len(name) > IFNAMSIZ:
            raise ValueError(f"{name}: longer than {IFNAMSIZ} characters")
        return name


def run_prefix(run_id: str) -> str:
    return f"{PREFIX}{run_id}"


def usable_cpus() -> tuple[int, ...]:
    return tuple(sorted(os.sched_getaffinity(0)))


def place(s: Scenario, run_id: str, index: int = 0, total: int = 1,
          host_cpus: tuple[int, ...] | None = None, switch_pollers: int = 0) -> TestPoint:
    """Where each endpoint runs. `switch_pollers`: threads the data plane itself
    spins on (its DataPlane.poll_threads), counted against the cores."""
    cpus = s.cpus or host_cpus or usable_cpus()
    sender_role, receiver_role = ROLES[s.mode]
    octets = bytes.fromhex(run_id.rjust(4, "0")[-4:])
    pairs = []
    for k in range(s.pairs):
        # Receivers first on the core list, so that with two cores every pair gets
        # one core per side instead of both sides on one.
        pairs.append(Pair(
            index=k,
            sender=_endpoint(run_id, k, "s", sender_role, cpus[(2 * k + 1) % len(cpus)],
                             octets, host=1, udp_port=TX_PORT + k * s.flows),
            receiver=_endpoint(run_id, k, "r", receiver_role, cpus[(2 * k) % len(cpus)],
                               octets, host=2, udp_port=RX_PORT + k),
        ))
    return TestPoint(index=index, total=total, run_id=run_id, scenario=s, pairs=tuple(pairs),
                     cpus=tuple(cpus), warnings=tuple(_warnings(s, pairs, cpus, switch_pollers)))


def _endpoint(run_id: str, pair: int, side: str, role: str, cpu: int, octets: bytes,
              host: int, udp_port: int) -> Endpoint:
    # Locally administered unicast (02:…), unique per run, pair and side, so that
    # a bridge shared by several pairs never sees two ports claim one MAC.
    mac = f"02:c7:{octets[0]:02x}:{octets[1]:02x}:{pair:02x}:{host:02x}"
    return Endpoint(name=f"{run_prefix(run_id)}p{pair}{side}", pair=pair, role=role, cpu=cpu,
                    mac=mac, ip=f"10.77.{pair}.{host}", prefixlen=24, udp_port=udp_port)


def _warnings(s: Scenario, pairs: list[Pair], cpus: tuple[int, ...],
              switch_pollers: int) -> list[str]:
    pollers = 0 if s.poll == "interrupt" else \
        sum(POLLERS[e.role] for p in pairs for e in p.endpoints)
    pollers += switch_pollers
    if pollers <= len(cpus):
        return []
    return [f"{pollers} busy-polling threads share {len(cpus)} cores: "
            "results show CPU contention, not only the data plane"]
