"""One private VPP process: its startup configuration, its CLI (vppctl on a
socket in its directory), the counters and queue placement it prints, its stop.

Everything VPP would put in /run/vpp, /var/log/vpp or /dev/shm goes to run_dir
(unix runtime-dir, cli-listen, log; the API socket; the stats segment's
socket; the API segment's prefix names its /dev/shm file after the point, and
stop() removes it if VPP did not), so a point's VPP never meets another one
or a system VPP.
"""
from __future__ import annotations

import contextlib
import re
import subprocess
import time
from pathlib import Path
from typing import Any, Sequence

from cnfperf import SystemFailure
from cnfperf.dataplanes import dpdk_args, procs, vpp_install
from cnfperf.dataplanes.base import PortCounters
from cnfperf.host.system import CommandFailed, run

# VPP names its threads vpp_main and vpp_wk_N (its process is vpp_main, once
# it has started its threads; vpp before).
COMMS = ("vpp_main", "vpp")
START_TIMEOUT = 30
COMMAND_TIMEOUT = 10


class VppError(SystemFailure):
    """VPP exited, did not come up, or refused a command; the message says which."""


def data_size(frame_size: int) -> int:
    """VPP's buffer data size: a whole frame in one buffer (chained buffers are
    slower and not what a switch is measured with)."""
    return max(dpdk_args.STD_BUFFER, dpdk_args.round_up(frame_size, 1024))


def memif_buffer(frame_size: int) -> str:
    """A memif interface's buffer size: the frame in one ring slot."""
    return f"buffer-size {data_size(frame_size)}"


# The point's `poll` as VPP's rx-mode (VPP has all three). It is the default
# of every interface's queues: a vhost-user port has none to set a mode on
# until its peer connects.
RX_MODES = {"busy": "polling", "adaptive": "adaptive", "interrupt": "interrupt"}
# A wire's NIC (af_packet) queue starts in interrupt mode whatever the default,
# so its mode is set; af_packet has no adaptive mode: with `adaptive` the
# kernel wakes VPP for it (interrupt), as an idle adaptive queue would be.
NIC_RX_MODES = {**RX_MODES, "adaptive": "interrupt"}


# What each plugin a data plane uses (vpp_install.VPP_PLUGINS) adds to the startup
# configuration. VPP's vhost-user output would call (interrupt) a sleeping peer
# only every 32 frames or 1 ms (its coalescing): with poll = adaptive or
# interrupt that is up to 1 ms of delay no other switch adds, so it calls at
# once. (VPP refuses the section when the plugin is not loaded.)
PLUGIN_CONF = {"vhost_plugin.so": "vhost-user { coalesce-frames 0 coalesce-time 0 }\n",
               "memif_plugin.so": "", vpp_install.AF_PACKET: ""}


def startup_conf(run_dir: Path, cpus: Sequence[int], frame_size: int, shm_prefix: str,
                 plugins: Path, enabled: Sequence[str], poll: str = "busy") -> str:
    """VPP's startup configuration: private paths, the plugins its ports need
    alone (a system VPP may lack the others), 4 KB pages (VPP copies to and
    from its peers: no hugepages needed), the main thread on the switch core,
    the rx-mode that `poll` asks for. `plugins`: the VPP's plugin directory
    (vpp_install.Vpp.plugins); `enabled`: the data plane's (VppPlane.plugin), and
    af_packet's where a wire's NIC is a port (VppPlane.plugins)."""
    cpu = f"main-core {cpus[0]}"   # it polls the ports itself: no workers (VppPlane.max_cores)
    sections = "".join(PLUGIN_CONF[p] for p in enabled)
    enables = "".join(f"  plugin {p} {{ enable }}\n" for p in enabled)
    return f"""unix {{
  nodaemon
  nosyslog
  nocolor
  runtime-dir {run_dir}/run
  cli-listen {run_dir}/cli.sock
  log {run_dir}/vpp.log
  cli-no-pager
}}
api-segment {{ prefix {shm_prefix} }}
socksvr {{ socket-name {run_dir}/api.sock }}
statseg {{ socket-name {run_dir}/stats.sock page-size 4K }}
memory {{ main-heap-size 256M main-heap-page-size 4K }}
buffers {{ buffers-per-numa 32768 page-size 4K default data-size {data_size(frame_size)} }}
cpu {{ {cpu} }}
interface {{ default-rx-mode {RX_MODES[poll]} }}
{sections}plugins {{
  path {plugins}
  plugin default {{ disable }}
{enables}}}
"""


class VppProcess:
    """VPP in run_dir, its main thread (and workers) on cpus."""

    def __init__(self, run_dir: Path, name: str, cpus: Sequence[int], size: int,
                 plugins: Sequence[str], poll: str = "busy", launch: procs.Launch | None = None):
        self.run_dir = Path(run_dir)
        self.name = name
        self.cpus = tuple(cpus)
        self.size = size
        self.plugins = tuple(plugins)    # the plugins it loads (startup_conf: enabled)
        self.poll = poll
        self.launch = launch or procs.on_host(self.cpus)
        self.install = vpp_install.vpp()   # which VPP: cnfperf's build, or a system one
        self.shm_prefix = self.run_dir.parent.name
        self.proc: subprocess.Popen | None = None
        # VPP thread index -> its core: the main thread (0) only
        self.thread_cpus: dict[int, int] = {0: self.cpus[0]}

    @property
    def pid(self) -> int | None:
        return self.proc.pid if self.proc else None

    @property
    def cli_socket(self) -> Path:
        return self.run_dir / "cli.sock"

    def start(self, journal, prefix: str) -> None:
        """Started, journaled (its shm files before they exist, the process once
        it does), and answering its CLI."""
        journal.add("vpp-shm", self.shm_prefix)
        (self.run_dir / "run").mkdir(parents=True, exist_ok=True)
        conf = self.run_dir / "startup.conf"
        conf.write_text(startup_conf(self.run_dir, self.cpus, self.size, self.shm_prefix,
                                     self.install.plugins, self.plugins, self.poll))
        with open(self.run_dir / "vpp.out", "wb") as out:
            self.proc = self.launch([str(self.install.program), "-c", str(conf)],
                                    what=self.name, stdin=subprocess.DEVNULL,
                                    stdout=out, stderr=subprocess.STDOUT)
        procs.journal_process(journal, f"{prefix}vpp", self.pid)
        deadline = time.monotonic() + START_TIMEOUT
        while True:
            if self.proc.poll() is not None:
                raise VppError(f"{self.name} exited with code {self.proc.returncode}: "
                               f"{self._last_lines()}")
            if self.cli_socket.exists():
                with contextlib.suppress(VppError):
                    self.cli("show version")
                    return
            if time.monotonic() > deadline:
                raise VppError(f"{self.name}: no CLI within {START_TIMEOUT} s: "
                               f"{self._last_lines()}")
            time.sleep(0.05)

    def cli(self, command: str) -> str:
        """One CLI command's output."""
        try:
            return run([str(self.install.vppctl), "-s", str(self.cli_socket),
                        *command.split()], timeout=COMMAND_TIMEOUT)
        except CommandFailed as e:
            raise VppError(f"{self.name}: vppctl {command}: {e}") from None

    def configure(self, command: str) -> str:
        """A configuration command: what it created (an interface's name), or
        nothing. vppctl exits 0 whatever VPP says, and VPP's errors are lines
        like "unknown input `…'" or "set interface l2 bridge: unknown interface"."""
        out = self.cli(command).strip()
        if out.startswith("unknown input") or ":" in out:
            raise VppError(f"{self.name}: {command}: {out.splitlines()[0]}")
        return out

    def _last_lines(self, n: int = 3) -> str:
        lines: list[str] = []
        for f in ("vpp.out", "vpp.log"):
            with contextlib.suppress(OSError):
                lines += [l.strip() for l in (self.run_dir / f).read_text(errors="replace")
                          .splitlines() if l.strip()]
        return " | ".join(lines[-n:]) or "(no output)"

    def stop(self) -> None:
        """SIGTERM (VPP exits cleanly on it), then SIGKILL; its /dev/shm files go
        too. A VPP of this run directory that outlived its handle goes as well."""
        if self.proc is not None:
            self.proc.terminate()
            procs.stop(self.proc, timeout=5)
            self.proc = None
        procs.kill_all(str(self.run_dir), COMMS)
        remove_shm(self.shm_prefix)


def shm_files(shm_prefix: str) -> list[Path]:
    """What VPP's API segment left in /dev/shm under this prefix."""
    return sorted(Path("/dev/shm").glob(f"{shm_prefix}-*"))


def remove_shm(shm_prefix: str) -> None:
    for f in shm_files(shm_prefix):
        with contextlib.suppress(FileNotFoundError):
            f.unlink()


def unjournal(journal, prefix: str, vpp: VppProcess) -> None:
    journal.discard("process", f"{prefix}vpp")
    journal.discard("vpp-shm", vpp.shm_prefix)


# `cnfperf cleanup`: a killed run's VPP shared memory files.
UNDO = {"vpp-shm": lambda name, info: remove_shm(name)}


# `show interface`: a line per interface with its first counter, then a line per
# further counter:
#   VirtualEthernet0/0/0    1  up   9000/0/0/0  rx packets   1000
#                                               rx bytes    64000
#                                               drops          12
_IFACE = re.compile(r"^(\S+)\s+\d+\s+(?:up|down)\s+\S+\s*(.*)$")
_COUNT = re.compile(r"^\s+(\S[\w -]*?)\s+(\d+)\s*$")
_PAIR = re.compile(r"^(\S[\w -]*?)\s+(\d+)$")


def parse_show_interface(text: str) -> dict[str, dict[str, int]]:
    found: dict[str, dict[str, int]] = {}
    current = None
    for line in text.splitlines():
        if m := _IFACE.match(line):
            current = found.setdefault(m[1], {})
            if (pair := _PAIR.match(m[2].strip())):
                current[pair[1]] = int(pair[2])
        elif current is not None and (m := _COUNT.match(line)):
            current[m[1]] = int(m[2])
    return found


def port_counters(counts: dict[str, int], tx_errors: int, tx_drops_in_drops: bool
                  ) -> PortCounters:
    """The switch's view of a port from its VPP interface's counters and the
    errors of its tx node (frames its peer's full ring refused): rx what it
    took in from the engine, tx what reached the engine's ring (VPP counts a
    frame as tx before its device tries the ring), drops of what came in. A
    counter `show interface` leaves out of a listed interface counted nothing
    (it prints only those that counted): 0, not unknown."""
    drops = counts.get("drops", 0) - (tx_errors if tx_drops_in_drops else 0)
    return PortCounters(rx_packets=counts.get("rx packets", 0),
                        tx_packets=counts.get("tx packets", 0) - tx_errors,
                        rx_dropped=drops + counts.get("rx-miss", 0),
                        tx_dropped=tx_errors)


# `show errors`: a line per (node, reason) that counted something:
#      Count                  Node                              Reason               Severity
#        256       VirtualEthernet0/0/1-tx        tx packet drops (no available descriptors)   error
_ERROR = re.compile(r"^\s*(\d+)\s+(\S+)\s+(.*?)\s+\S+\s*$")
# The reasons of a port's tx node that count frames it dropped, one each
# (vhost-user's, memif's, af_packet's); others count events, as vhost's "mmap
# failure" (once per batch copied), memif's "no enough space in tx buffers" or
# af_packet's "tx sendto temporary failure" (once per kick of the kernel).
TX_DROPS = ("tx packet drops", "vhost vring not ready", "vhost interface is down",
            "indirect descriptor table overflow", "no free tx slots",
            "tx frame not ready", "tx ring overrun")


def parse_show_errors(text: str) -> dict[str, dict[str, int]]:
    """Error counts per node and reason."""
    found: dict[str, dict[str, int]] = {}
    for line in text.splitlines():
        if m := _ERROR.match(line):
            reasons = found.setdefault(m[2], {})
            reasons[m[3]] = reasons.get(m[3], 0) + int(m[1])
    return found


# `show runtime`: per thread a header, then a row per graph node since
# `clear runtime`:
#   Thread 1 vpp_wk_0 (lcore 1)
#   …
#   Name          State    Calls    Vectors  Suspends  Clocks  Vectors/Call
#   memif-input   polling  123456   10000    0         5.67e2  0.08
# Clocks are per vector where the node had any (else per call): a node's own
# clocks per packet. An input node's include its empty polls.
_RUNTIME_THREAD = re.compile(r"^Thread \d+ (\S+)")
_RUNTIME_NODE = re.compile(r"^\s*(\S+)\s+(.+?)\s+(\d+)\s+(\d+)\s+(\d+)\s+([0-9.]+e[+-]?\d+|[0-9.]+)"
                           r"\s+([0-9.]+)\s*$")
# A device's input node polls, or waits for its interrupt; a node of the
# graph it feeds (ethernet-input, l2-input…) is `active` when it runs.
INPUT_STATES = ("polling", "interrupt wait")
RUNTIME_NODES = 8   # the costliest nodes kept per point


def parse_show_runtime(text: str) -> dict[str, Any] | None:
    """VPP's own cost: the clocks its graph spent per packet taken in (every
    node's clocks per vector times its vectors, over the vectors its device
    input nodes took: INPUT_STATES), those nodes' vectors per call (how full
    its batches were), each thread's and the costliest nodes'; None when no
    input node took a packet."""
    threads: dict[str, list[dict[str, Any]]] = {}
    rows: list[dict[str, Any]] = []
    for line in text.splitlines():
        if m := _RUNTIME_THREAD.match(line):
            rows = threads.setdefault(m[1], [])
        elif m := _RUNTIME_NODE.match(line):
            rows.append({"name": m[1], "input": m[2].strip() in INPUT_STATES,
                         "calls": int(m[3]), "vectors": int(m[4]), "clocks": float(m[6])})
    if not threads and rows:
        threads["vpp_main"] = rows

    def said(nodes: list[dict[str, Any]]) -> dict[str, Any] | None:
        inputs = [n for n in nodes if n["input"] and n["vectors"]]
        packets = sum(n["vectors"] for n in inputs)
        if not packets:
            return None
        clocks = sum(n["clocks"] * n["vectors"] for n in nodes if n["vectors"])
        return {"packets": packets, "cycles_per_packet": clocks / packets,
                "vectors_per_call": packets / sum(n["calls"] for n in inputs)}
    every = [n for nodes in threads.values() for n in nodes]
    total = said(every)
    if total is None:
        return None
    costliest = sorted((n for n in every if n["vectors"]),
                       key=lambda n: -n["clocks"] * n["vectors"])[:RUNTIME_NODES]
    return {"source": "vppctl show runtime", **total,
            "threads": [{"thread": name, **found} for name, nodes in threads.items()
                        if (found := said(nodes))],
            "nodes": [{"name": n["name"], "clocks": n["clocks"], "vectors": n["vectors"],
                       "vectors_per_call": n["vectors"] / n["calls"] if n["calls"] else None}
                      for n in costliest]}


def tx_drops(reasons: dict[str, int]) -> int:
    """Frames a port's tx node dropped, from its reasons (parse_show_errors)."""
    return sum(n for reason, n in reasons.items() if reason.startswith(TX_DROPS))


def xconnects(ifaces: dict[str, str], links) -> list[str]:
    """The commands that cross-connect each link's two interfaces (`ifaces`:
    by port name), both ways: an L2 xconnect is one direction each."""
    found = []
    for link in links:
        a, b = ifaces[link.a.name], ifaces[link.b.name]
        found += [f"set interface l2 xconnect {a} {b}", f"set interface l2 xconnect {b} {a}"]
    return found


def parse_show_mode(text: str) -> dict[str, str]:
    """`show mode`, a line per interface (`l3 local0`, `l2 xconnect
    VirtualEthernet0/0/0 VirtualEthernet0/0/1`, `l2 bridge VirtualEthernet0/0/1
    bd_id 1 shg 0`): each interface's mode, `bridge bd_id 1 shg 0`,
    `xconnect <its peer>`, or `l3`."""
    found = {}
    for line in text.splitlines():
        words = line.split()
        if line.startswith("l2 ") and len(words) >= 3:   # l2 MODE IFACE [what follows]
            found[words[2]] = " ".join([words[1], *words[3:]])
        elif len(words) >= 2:                            # l3 IFACE: no L2 mode
            found[words[1]] = words[0]
    return found


# `show interface rx-placement`:
#   Thread 1 (vpp_wk_0):
#     node vhost-user-input:
#       VirtualEthernet0/0/0 queue 0 (polling)
_THREAD = re.compile(r"^Thread (\d+)")
_QUEUE = re.compile(r"^\s+(\S+) queue (\d+)")


def parse_rx_placement(text: str) -> list[dict[str, Any]]:
    found, thread = [], None
    for line in text.splitlines():
        if m := _THREAD.match(line):
            thread = int(m[1])
        elif (m := _QUEUE.match(line)) and thread is not None:
            found.append({"iface": m[1], "queue": int(m[2]), "thread": thread})
    return found

