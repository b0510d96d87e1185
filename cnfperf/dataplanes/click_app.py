"""Click (the modular router, built with DPDK) as a switch: the configuration it
runs, the control socket it is read through, and its process.

The configuration, per link k between DPDK ports A and B (net_vhostA, net_vhostB):

    inA :: FromDPDKDevice(net_vhostA, 0, BURST b) -> [0]swK :: EtherSwitch
    swK[0] -> toA :: Counter -> outA :: ToDPDKDevice(net_vhostA, 0, BURST b, ...)
    (and the same for B on the switch's port 1)

One EtherSwitch per link, not one for every port: in throughput mode a
receiver never sends, so no switch ever learns its MAC, and EtherSwitch
(which has no static entries) would flood each frame to every port of every
link. A switch of two ports floods to the link's other end only, as a real
switch that had learnt the receiver's MAC would forward; it still learns, and
drops a frame addressed to a MAC behind the port it came in on.

Every element of a link runs on one Click thread (StaticThreadSched): no
element is shared between threads, and ToDPDKDevice must run on the thread
that pushes into it, because its flush timer runs on its home thread and
flushes that thread's internal queue only (frames pushed from another thread
would wait there for a full burst). Thread 0 (DPDK's main lcore) holds no
task: it serves the control socket and sleeps in poll() otherwise.

Counters, the switch's view of each port P (read through the ControlSocket;
downstream elements first, so no difference goes negative while frames flow):
    inP.count    frames taken in from P's node                       rx_packets
    toP.count    frames the switch sent towards P
    outP.count   frames delivered to P's node (in its virtqueue)      tx_packets
    toP - outP   refused by a full internal queue, or still in it     tx_dropped
    inP - toQ    from P, not switched to its link's other port Q      rx_dropped
                 (EtherSwitch drops a frame for a MAC learnt on P)
"""
from __future__ import annotations

import contextlib
import socket
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping, Sequence

from cnfperf.dataplanes.base import PortCounters
from cnfperf.dataplanes.procs import Daemon, Launch, ProcessError

# EAL init with a few vdevs and a small mbuf pool takes well under a second.
START_TIMEOUT = 60
GREETING = b"Click::ControlSocket/"
# ToDPDKDevice's internal queue per thread (its default): frames wait there
# while the peer's virtqueue is full, and are dropped (counted) when it is full.
IQUEUE = 1024


def device(port: int) -> str:
    """The DPDK device name of port `port`: dpdk_args.vhost's vdev `net_vhost<port>`."""
    return f"net_vhost{port}"


@dataclass(frozen=True)
class LinkPlan:
    """One link as Click runs it: its two DPDK ports, the Click thread its
    elements run on, and the names of its ends (for the comments)."""

    a: int
    b: int
    thread: int
    names: tuple[str, str] = ("", "")


def configuration(links: Sequence[LinkPlan], burst: int, control: str, mbufs: int,
                  devices: Mapping[int, str] | None = None) -> str:
    """The Click configuration of the switch (see the module's docstring);
    `devices`: a port's DPDK device where it is not its vhost one (a wire's
    NIC on the af_packet PMD)."""
    devices = devices or {}
    lines = ["// cnfperf: Click as a switch, an EtherSwitch per link (see click_app.py)",
             f"DPDKInfo(NB_MBUF {mbufs});",
             f'ControlSocket(unix, "{control}");', ""]
    placed = []
    for k, link in enumerate(links):
        lines.append(f"// link {k}: {link.names[0]} <-> {link.names[1]}, thread {link.thread}")
        lines.append(f"sw{k} :: EtherSwitch;")
        for side, port in enumerate((link.a, link.b)):
            # BLOCKING false: a full queue drops (and counts) instead of spinning
            # with the Rx poll stopped. TIMEOUT 0: flush after each input burst.
            dev = devices.get(port, device(port))
            lines += [f"in{port} :: FromDPDKDevice({dev}, 0, BURST {burst}) "
                      f"-> [{side}]sw{k};",
                      f"sw{k}[{side}] -> to{port} :: Counter -> out{port} :: "
                      f"ToDPDKDevice({dev}, 0, BURST {burst}, "
                      f"IQUEUE {max(IQUEUE, burst)}, BLOCKING false, TIMEOUT 0);"]
            placed += [f"in{port} {link.thread}", f"out{port} {link.thread}"]
        lines.append("")
    lines.append(f"StaticThreadSched({', '.join(placed)});")
    return "\n".join(lines) + "\n"


def counter_handlers(ports: Sequence[int]) -> list[str]:
    """The handlers counters() reads, downstream first (see the module's docstring)."""
    return ([f"out{p}.count" for p in ports] + [f"to{p}.count" for p in ports]
            + [f"in{p}.count" for p in ports])


def port_counters(values: Mapping[str, int], port: int, peer: int) -> PortCounters:
    """The switch's view of `port` (its link's other end is `peer`)."""
    taken, delivered = values[f"in{port}.count"], values[f"out{port}.count"]
    return PortCounters(rx_packets=taken, tx_packets=delivered,
                        rx_dropped=max(0, taken - values[f"to{peer}.count"]),
                        tx_dropped=max(0, values[f"to{port}.count"] - delivered))


# --- the control socket ----------------------------------------------------------

@dataclass(frozen=True)
class Reply:
    code: int            # 200: OK; 5xx: no such element or handler, ...
    message: str
    data: bytes | None   # a successful READ's value


def parse_reads(buf: bytes) -> tuple[list[Reply], int]:
    """The complete replies to READ commands at the start of buf, and how many
    bytes they took. A reply is message lines ("200-…" continued, "200 …" last),
    then for a 200 a `DATA n` line and n bytes."""
    replies: list[Reply] = []
    pos = 0
    while True:
        start, messages, code = pos, [], 0
        while True:
            end = buf.find(b"\r\n", pos)
            if end < 0:
                return replies, start
            line = buf[pos:end].decode(errors="replace")
            pos = end + 2
            code = int(line[:3])
            messages.append(line[4:])
            if line[3:4] != "-":
                break
        data = None
        if code == 200:
            end = buf.find(b"\r\n", pos)
            if end < 0:
                return replies, start
            header = buf[pos:end].decode(errors="replace")
            if not header.startswith("DATA "):
                raise ProcessError(f"click: a READ answered {header!r}, not DATA")
            size = int(header[5:])
            if len(buf) < end + 2 + size:
                return replies, start
            data = buf[end + 2:end + 2 + size]
            pos = end + 2 + size
        replies.append(Reply(code, " ".join(messages), data))


class Control:
    """A connection to Click's ControlSocket (a unix socket)."""

    def __init__(self, path: str, timeout: float = 5):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(timeout)
        try:
            self.sock.connect(path)
            # The greeting comes once Click's driver runs: every element is
            # initialized then, its DPDK ports started and vhost sockets bound.
            self.buf = b""
            while b"\r\n" not in self.buf:
                self._recv()
            line, self.buf = self.buf.split(b"\r\n", 1)
            if not line.startswith(GREETING):
                raise ProcessError(f"click: its control socket said {line[:60]!r}")
        except BaseException:
            self.sock.close()
            raise

    def _recv(self) -> None:
        chunk = self.sock.recv(65536)
        if not chunk:
            raise ConnectionError("click closed its control socket")
        self.buf += chunk

    def read(self, handlers: Sequence[str]) -> dict[str, str]:
        """Every handler's value, asked in one go; ProcessError naming a failed one."""
        self.sock.sendall("".join(f"READ {h}\n" for h in handlers).encode())
        replies: list[Reply] = []
        while len(replies) < len(handlers):
            found, used = parse_reads(self.buf)
            replies += found
            self.buf = self.buf[used:]
            if len(replies) < len(handlers):
                self._recv()
        values = {}
        for handler, reply in zip(handlers, replies):
            if reply.code != 200:
                raise ProcessError(f"click: READ {handler}: {reply.code} {reply.message}")
            values[handler] = reply.data.decode(errors="replace").strip()
        return values

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self.sock.close()


# --- the process -----------------------------------------------------------------

class Click(Daemon):
    """One click process with DPDK: `click --dpdk EAL… -- -f CONFIG`. Its output
    goes to a terminal that a thread drains (procs.Console): DPDK's vhost
    library logs every connection, and a full pipe would block it. SIGINT
    stops every Click thread, cleans the router up, and it exits."""

    def __init__(self, binary: str, eal: Sequence[str], config: Path, control: str,
                 name: str = "click", launch: Launch | None = None):
        super().__init__([binary, "--dpdk", *eal, "--", "-f", str(config)], name, launch)
        self.control = control

    def ready(self, probe: str, timeout: float = START_TIMEOUT) -> None:
        """Return once its control socket answers a READ of `probe`; ProcessError
        (with its last words) if it exits or does not answer in time."""
        deadline = time.monotonic() + timeout
        while True:
            self.exited()
            try:
                self.read([probe])
                return
            except (OSError, ProcessError) as e:
                if time.monotonic() > deadline:
                    raise ProcessError(f"{self.name}: its control socket did not answer within "
                                       f"{timeout:g} s ({e}); last output: "
                                       f"{self.console.last_lines()}") from None
            time.sleep(0.05)

    def read(self, handlers: Sequence[str]) -> dict[str, str]:
        control = Control(self.control)
        try:
            return control.read(handlers)
        finally:
            control.close()

    def counts(self, handlers: Sequence[str]) -> dict[str, int]:
        """Counter handlers as numbers; ProcessError if one is not a number."""
        try:
            values = self.read(handlers)
        except OSError as e:
            raise ProcessError(f"{self.name}: control socket: {e}") from None
        try:
            return {h: int(v) for h, v in values.items()}
        except ValueError:
            raise ProcessError(f"{self.name}: a counter is not a number: {values}") from None

