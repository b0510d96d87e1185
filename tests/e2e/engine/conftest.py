"""Fixtures for the engine's end-to-end tests: network namespaces joined by
veth pairs, and engine processes that never outlive a test. Everything made
here is named cnfpk<random>… and goes away on teardown; `no_leftovers` checks it did."""
from __future__ import annotations

import contextlib
import secrets
import subprocess
from dataclasses import dataclass

import pytest

from engines import engines as engine_processes


@dataclass(frozen=True)
class End:
    """One side of a veth pair: its namespace, interface and addresses."""
    netns: str
    iface: str
    mac: str
    ip: str


def end(netns: str, tag: str, name: str, net: int, host: int) -> End:
    """An end on 198.18.<net>.0/24, its MAC saying the same."""
    return End(netns, f"cnfpk{tag}{name}", f"02:c7:0e:00:{net:02x}:{host:02x}",
               f"198.18.{net}.{host}")


def _ip(*args: str) -> None:
    subprocess.run(["ip", *args], check=True, capture_output=True, text=True, timeout=20)


@contextlib.contextmanager
def namespaces(tag: str, names: list[str]):
    """Namespaces with loopback up and IPv6 off (no router or neighbour
    solicitations: only the test's own frames and ARP flow); deleted on exit,
    which also deletes the veths inside."""
    made: list[str] = []
    try:
        for name in names:
            ns = f"cnfpk{tag}{name}"
            _ip("netns", "add", ns)
            made.append(ns)
            subprocess.run(["ip", "netns", "exec", ns, "sysctl", "-qw", "net.ipv6.conf.all.disable_ipv6=1",
                            "net.ipv6.conf.default.disable_ipv6=1"], check=True, timeout=20)
            _ip("-n", ns, "link", "set", "lo", "up")
        yield made
    finally:
        for ns in made:
            subprocess.run(["ip", "netns", "del", ns], capture_output=True, timeout=20)


def veth(a: End, b: End, queues: int = 1) -> None:
    """queues: each end's Rx and Tx queues (veth spreads flows over them by hash)."""
    many = ["numtxqueues", str(queues), "numrxqueues", str(queues)] if queues > 1 else []
    _ip("link", "add", a.iface, "netns", a.netns, "address", a.mac, *many, "type", "veth",
        "peer", "name", b.iface, "netns", b.netns, "address", b.mac, *many)
    for end in (a, b):
        _ip("-n", end.netns, "addr", "add", f"{end.ip}/24", "dev", end.iface)
        _ip("-n", end.netns, "link", "set", end.iface, "up")


@pytest.fixture
def pair(no_leftovers):
    """Two namespaces joined by one veth pair (addresses from 198.18.0.0/15, the
    benchmarking range)."""
    tag = secrets.token_hex(2)
    with namespaces(tag, ["a", "b"]) as (na, nb):
        a = End(na, f"cnfpk{tag}a", "02:c7:0e:00:00:0a", "198.18.0.1")
        b = End(nb, f"cnfpk{tag}b", "02:c7:0e:00:00:0b", "198.18.0.2")
        veth(a, b)
        yield a, b


@pytest.fixture
def chain(no_leftovers):
    """sender | nf | receiver: three namespaces, two veth pairs. Returns the
    sender's end, the nf's two ends (port 1, port 2), and the receiver's end."""
    tag = secrets.token_hex(2)
    with namespaces(tag, ["s", "f", "r"]) as (ns, nf, nr):
        s, f_in = end(ns, tag, "s", 1, 1), end(nf, tag, "fi", 1, 2)
        f_out, r = end(nf, tag, "fo", 2, 2), end(nr, tag, "r", 2, 1)
        veth(s, f_in)
        veth(f_out, r)
        yield s, f_in, f_out, r


@pytest.fixture
def loop(no_leftovers):
    """A tester holding both ends of a path through an nf: two namespaces, two
    veth pairs. Returns the tester's port 1 and 2 and the nf's port 1 and 2
    (tester port 1 - nf port 1, nf port 2 - tester port 2)."""
    with looped() as ends:
        yield ends


@pytest.fixture
def loop2q(no_leftovers):
    """loop with two Rx and Tx queues on every veth (an nf's --threads 2 over xdp)."""
    with looped(queues=2) as ends:
        yield ends


@contextlib.contextmanager
def looped(queues: int = 1):
    tag = secrets.token_hex(2)
    with namespaces(tag, ["t", "f"]) as (nt, nf):
        t1, f1 = end(nt, tag, "t1", 3, 1), end(nf, tag, "f1", 3, 2)
        f2, t2 = end(nf, tag, "f2", 4, 2), end(nt, tag, "t2", 4, 1)
        veth(t1, f1, queues)
        veth(f2, t2, queues)
        yield t1, t2, f1, f2


@pytest.fixture
def engines(no_leftovers):
    """start(netns, argv) -> EngineProcess; none outlives the test."""
    with engine_processes() as start:
        yield lambda netns, argv: start(argv, netns)
