"""dpdk-testpmd driven over its interactive prompt: started, asked for counters
while it forwards, quit cleanly. Used as the `testpmd` switch and as a peer
endpoint (txonly/rxonly) in tests and benchmarks."""
from __future__ import annotations

import re
from typing import NamedTuple, Sequence

from cnfperf.host import tools
from cnfperf.dataplanes.procs import Console, Launch, ProcessError

BINARY = tools.TESTPMD
PROMPT = "testpmd> "
# EAL init with a few vdevs takes well under a second; give slow hosts room.
START_TIMEOUT = 60

_FWD = re.compile(r"Forward statistics for port (\d+).*?"
                  r"RX-packets:\s*(\d+)\s+RX-dropped:\s*(\d+).*?"
                  r"TX-packets:\s*(\d+)\s+TX-dropped:\s*(\d+)", re.S)
_NIC = re.compile(r"NIC statistics for port (\d+).*?"
                  r"RX-packets:\s*(\d+)\s+RX-missed:\s*(\d+).*?RX-errors:\s*(\d+).*?"
                  r"RX-nombuf:\s*(\d+).*?TX-packets:\s*(\d+)\s+TX-errors:\s*(\d+)", re.S)


# What `start` prints per forwarding lcore, then one line per stream it polls:
#   Logical Core 1 (socket 0) forwards packets on 1 streams:
#     RX P=0/Q=0 (socket 0) -> TX P=1/Q=0 (socket 0) peer=02:00:00:00:00:01
_LCORE = re.compile(r"Logical Core (\d+) \(socket \d+\) forwards packets on")
_STREAM = re.compile(r"RX P=(\d+)/Q=(\d+) \(socket \d+\) -> TX P=(\d+)/Q=(\d+)")


class Stream(NamedTuple):
    """A forwarding stream: lcore `lcore` polls Rx queue `queue` of `port`."""

    lcore: int
    port: int
    queue: int


def parse_streams(text: str) -> list[Stream]:
    streams = []
    lcore = None
    for line in text.splitlines():
        if m := _LCORE.search(line):
            lcore = int(m[1])
        elif (m := _STREAM.search(line)) and lcore is not None:
            streams.append(Stream(lcore, int(m[1]), int(m[2])))
    return streams


def mbuf_size(frame_size: int) -> int:
    """testpmd's mbufs: its default (2176) or the frame and 128 bytes of headroom."""
    return max(2176, frame_size + 128)


def frame_args(frame_size: int) -> list[str]:
    """Application arguments that let testpmd take frames of this size."""
    return [f"--mbuf-size={mbuf_size(frame_size)}", f"--max-pkt-len={max(1518, frame_size)}"]


def ring_args(rxd: int | None, txd: int | None) -> list[str]:
    """--rxd and --txd where given: the descriptors of every Rx and Tx queue."""
    return [f"--{name}={n}" for name, n in (("rxd", rxd), ("txd", txd)) if n]


# `show config rxtx`: per port, then per queue:
#   io packet forwarding packets/burst=32
#     nb forwarding cores=1 - nb forwarding ports=2
#     port 0: RX queue number: 1 Tx queue number: 1
#       Rx offloads=0x0 Tx offloads=0x0
#       RX queue: 0
#         RX desc=128 - RX free threshold=0
#       …
#       TX queue: 0
#         TX desc=128 - TX free threshold=0
_CONFIG_PORT = re.compile(r"^\s*port (\d+): RX queue number")
_CONFIG_DESC = re.compile(r"^\s*(RX|TX) desc=(\d+)")


def parse_config_rxtx(text: str) -> dict[int, dict[str, int]]:
    """Each port's Rx and Tx descriptors (its first queue's: every queue of a
    port gets the same), as rxd and txd; none where testpmd left the PMD its
    own default (it shows 0)."""
    found: dict[int, dict[str, int]] = {}
    port = None
    for line in text.splitlines():
        if m := _CONFIG_PORT.match(line):
            port = int(m[1])
            found[port] = {}
        elif (m := _CONFIG_DESC.match(line)) and port is not None:
            if int(m[2]):   # 0: the PMD's own default, testpmd set none
                found[port].setdefault("rxd" if m[1] == "RX" else "txd", int(m[2]))
    return found


def parse_fwd_stats(text: str) -> dict[int, dict[str, int]]:
    return {int(m[1]): {"rx_packets": int(m[2]), "rx_dropped": int(m[3]),
                        "tx_packets": int(m[4]), "tx_dropped": int(m[5])}
            for m in _FWD.finditer(text)}


# `show fwd stats all` with --record-core-cycles, since `start`:
#   CPU cycles/packet=43.67 (total cycles=3774887622 / total io packets=86435488) at 2600 MHz Clock
# (DPDK 22.11's words; later ones say busy cycles for the same count)
_CYCLES = re.compile(r"CPU cycles/packet=\S+ \((?:total|busy) cycles=(\d+) / total \S+ "
                     r"packets=(\d+)\)")


def parse_core_cycles(text: str) -> tuple[int, int] | None:
    """(cycles its forwarding cores spent on bursts that moved packets, those
    packets) since `start`: the last line that says (the accumulated one);
    None without one (no packet yet, or not recorded)."""
    found = _CYCLES.findall(text)
    return (int(found[-1][0]), int(found[-1][1])) if found else None


def parse_port_stats(text: str) -> dict[int, dict[str, int]]:
    return {int(m[1]): {"rx_packets": int(m[2]), "rx_missed": int(m[3]),
                        "rx_errors": int(m[4]), "rx_nombuf": int(m[5]),
                        "tx_packets": int(m[6]), "tx_errors": int(m[7])}
            for m in _NIC.finditer(text)}


class TestPmd:
    __test__ = False  # a class named Test* that is not a test suite
    """One testpmd process. `app_args` follow `--` (e.g. --forward-mode=io)."""

    def __init__(self, eal: Sequence[str], app_args: Sequence[str], name: str = "testpmd",
                 cpus: Sequence[int] | None = None, binary: str = BINARY,
                 launch: Launch | None = None):
        self.argv = [binary, *eal, "--", "-i", *app_args]
        self.name = name
        self.cpus = cpus
        self.launch = launch
        self.console: Console | None = None
        # (cycles, packets) as the last fwd_stats read them (--record-core-cycles)
        self.cycles: tuple[int, int] | None = None

    def start(self, timeout: float = START_TIMEOUT) -> None:
        """Return once its prompt is up: ports configured, vhost sockets bound."""
        self.console = Console(self.argv, self.name, self.cpus, self.launch)
        try:
            self.console.read_until(PROMPT, timeout)
        except ProcessError:
            self.console.close(timeout=2)
            raise

    @property
    def pid(self) -> int | None:
        return self.console.pid if self.console else None

    def command(self, line: str, timeout: float = 10) -> str:
        if self.console is None:
            raise ProcessError(f"{self.name}: not started")
        self.console.send(line)
        return self.console.read_until(PROMPT, timeout).removesuffix(PROMPT)

    def forward(self) -> str:
        """Start forwarding; what it says: its streams, each lcore's (parse_streams)."""
        return self.command("start")

    def fwd_stats(self) -> dict[int, dict[str, int]]:
        """Per port, what forwarding saw since `start`: rx, tx and the drops
        (rx: the port missed it; tx: the peer's ring was full)."""
        text = self.command("show fwd stats all")
        self.cycles = parse_core_cycles(text)
        return parse_fwd_stats(text)

    def port_stats(self) -> dict[int, dict[str, int]]:
        """Per port, the PMD's own counters since the port started."""
        return parse_port_stats(self.command("show port stats all"))

    def stop(self, timeout: float = 15) -> int | None:
        """quit: forwarding stops, ports close (vhost sockets are unlinked), EAL
        cleans up. Escalates to signals if it does not exit in time."""
        if self.console is None:
            return None
        console, self.console = self.console, None
        if console.proc.poll() is None:
            try:
                console.send("quit")
            except ProcessError:
                pass
        return console.close(timeout)

    def __enter__(self) -> "TestPmd":
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()
