"""Fixtures for the engine's end-to-end tests: the engine binary (built when
missing), network namespaces joined by veth pairs, and engine processes that
never outlive a test. Everything made here is named cnfpk<random>… and goes
away on teardown; `no_leftovers` checks it did."""
from __future__ import annotations

import contextlib
import json
import queue
import secrets
import signal
import subprocess
import threading
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

import leak

REPO = Path(__file__).resolve().parents[3]
BUILD = REPO / "engine" / "build"


@pytest.fixture(scope="session")
def engine() -> Path:
    """The engine from engine/build, configured and built first if it is not there."""
    if not leak.is_root():
        pytest.skip("end-to-end: needs root")
    binary = BUILD / "cnfperf-engine"
    if not binary.exists():
        if not (BUILD / "build.ninja").exists():
            subprocess.run(["meson", "setup", str(BUILD), str(REPO / "engine")], check=True,
                           capture_output=True, timeout=300)
        subprocess.run(["ninja", "-C", str(BUILD)], check=True, capture_output=True, timeout=600)
    return binary


@dataclass(frozen=True)
class End:
    """One side of a veth pair: its namespace, interface and addresses."""
    netns: str
    iface: str
    mac: str
    ip: str


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


def veth(a: End, b: End) -> None:
    _ip("link", "add", a.iface, "netns", a.netns, "address", a.mac, "type", "veth",
        "peer", "name", b.iface, "netns", b.netns, "address", b.mac)
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
    """sender | fwd | receiver: three namespaces, two veth pairs. Returns the
    sender's end, the fwd's ingress and egress ends, and the receiver's end."""
    tag = secrets.token_hex(2)
    with namespaces(tag, ["s", "f", "r"]) as (ns, nf, nr):
        s = End(ns, f"cnfpk{tag}s", "02:c7:0e:00:01:01", "198.18.1.1")
        f_in = End(nf, f"cnfpk{tag}fi", "02:c7:0e:00:01:02", "198.18.1.2")
        f_out = End(nf, f"cnfpk{tag}fo", "02:c7:0e:00:02:02", "198.18.2.2")
        r = End(nr, f"cnfpk{tag}r", "02:c7:0e:00:02:01", "198.18.2.1")
        veth(s, f_in)
        veth(f_out, r)
        yield s, f_in, f_out, r


class EngineProcess:
    """One engine in a namespace. Its stdout must be JSON lines only; they are
    read on a thread so that waits can time out."""

    def __init__(self, argv: list[str], netns: str):
        self.argv = ["ip", "netns", "exec", netns, *map(str, argv)]
        self.proc = subprocess.Popen(self.argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                     stdin=subprocess.DEVNULL, text=True)
        self.records: list[dict] = []
        self.stderr_lines: list[str] = []
        self._q: queue.Queue = queue.Queue()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()
        threading.Thread(target=lambda: self.stderr_lines.extend(self.proc.stderr), daemon=True).start()

    def _read(self) -> None:
        for line in self.proc.stdout:
            rec = json.loads(line)
            self.records.append(rec)
            self._q.put(rec)
        self._q.put(None)

    def ready(self, timeout: float = 20) -> dict:
        end = time.monotonic() + timeout
        while True:
            try:
                rec = self._q.get(timeout=max(0.01, end - time.monotonic()))
            except queue.Empty:
                pytest.fail(f"no ready record in {timeout} s: {' '.join(self.argv)}")
            if rec is None:
                self.proc.wait(timeout=10)
                pytest.fail(f"exited {self.proc.returncode} before ready: {''.join(self.stderr_lines)}")
            if rec["type"] == "ready":
                return rec

    def summary(self, timeout: float = 20) -> dict:
        try:
            self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            pytest.fail(f"still running after {timeout} s: {' '.join(self.argv)}")
        self._reader.join(timeout=5)
        assert self.proc.returncode == 0, f"exit {self.proc.returncode}: {''.join(self.stderr_lines)}"
        found = [r for r in self.records if r["type"] == "summary"]
        assert len(found) == 1, f"{len(found)} summary records: {self.records}"
        return found[0]

    def interrupt(self) -> dict:
        """SIGINT, as the orchestrator stops receivers; the summary must still come."""
        self.proc.send_signal(signal.SIGINT)
        return self.summary()

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(timeout=10)


@pytest.fixture
def engines(no_leftovers):
    """start(netns, argv) -> EngineProcess; every process is killed on teardown
    (a passing test has already stopped them)."""
    started: list[EngineProcess] = []

    def start(netns: str, argv: list) -> EngineProcess:
        p = EngineProcess(argv, netns)
        started.append(p)
        return p
    yield start
    for p in started:
        p.kill()
