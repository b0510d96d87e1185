"""BESS (the Berkeley Extensible Software Switch) as a switch: its daemon, the
control that configures and reads it, and what its port counts mean.

bessd runs in the foreground (its log on a terminal a thread drains), its
gRPC server on a unix socket in the point's directory (no TCP port to collide
with another run's), its pid file there too (bessd refuses a second instance
by its pid file). Its EAL arguments are its own (it builds them: --legacy-mem,
--huge-unlink, the master lcore on its other cores) plus cnfperf's file
prefix, hugetlbfs and --no-pci (patches/bess/0004).

It is configured and read through its own Python API, pybess, by bess_ctl.py
running under Debian's python3 (python3-grpcio, python3-protobuf), one JSON
line each way per request; cnfperf's own Python need not have gRPC.

The pipeline, per link k between ports A and B (PMDPort on net_vhost vdevs),
as the scenario's forward says:

  mac (its own way, paper 001's L2 switch):
    in_A :: PortInc(A) -> l2fwdk :: L2Forward -> [gate 0] out_A :: PortOut(A)
    in_B :: PortInc(B) ----^                  -> [gate 1] out_B :: PortOut(B)
    with l2fwdk's entries the two ends' MACs: a frame goes out of the port
    whose node has its destination MAC;
  port: in_A -> out_B and in_B -> out_A, no lookup;
  reflect (the link's two ends are one port P, plan.reflect_links: the switch
  alone is the tester's peer, paper 001's baseline):
    in_P :: PortInc(P) -> macswap_P :: MACSwap -> out_P :: PortOut(P)

One L2Forward per link, not one for every port: a module is run by one
worker, and a link's modules all run on the worker its PortIncs are attached
to (links dealt over the workers in turn).

Counters, the switch's view of port P whose link's other end is Q (BESS's port
stats: packets taken from and given to the PMD, and what PortOut could not
give, counted as the port's out dropped):
    inc packets(P)                                   rx_packets
    out packets(P)                                   tx_packets
    out dropped(P)  frames for P's node that its virtqueue had no room for
                                                     tx_dropped
    inc dropped(P) + inc(P) - out(Q) - out dropped(Q)
                    from P, not sent on towards Q (a MAC L2Forward does not
                    have, or the PMD's own drops)   rx_dropped
"""
from __future__ import annotations

import contextlib
import json
import select
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping, Sequence

from cnfperf.dataplanes.base import PortCounters
from cnfperf.dataplanes.procs import DAEMON_STOP_TIMEOUT, Daemon, Launch, ProcessError
from cnfperf.host.system import CommandFailed, spawn

# DPDK's EAL maps every hugepage it can with --legacy-mem before it keeps
# what it asked for; a few seconds at most.
START_TIMEOUT = 60
REPLY_TIMEOUT = 30
# Where BESS reads how many NUMA nodes it makes memory and buffers on (its
# NumNumaNodes: `0-N`, else one).
NODES = Path("/sys/devices/system/node/possible")
# The Python that has pybess's gRPC and protobuf: Debian's.
PYTHON = "/usr/bin/python3"
CONTROL = Path(__file__).with_name("bess_ctl.py")


def numa_nodes(possible: Path = NODES) -> int:
    """The NUMA nodes bessd takes its -m and --buffers on, each (as it counts them)."""
    try:
        text = possible.read_text().strip()
    except OSError:
        return 1
    first, _, last = text.partition("-")
    return int(last) + 1 if first == "0" and last.isdigit() else 1


@dataclass(frozen=True)
class LinkPlan:
    """One link as BESS runs it: its two ports' names in BESS (one port twice
    where it reflects), their nodes' MACs, the worker its modules run on, and
    how it forwards (mac, port or reflect: see the module's docstring)."""

    a: str
    b: str
    macs: tuple[str, str]
    worker: int
    forward: str = "mac"


def request(links: Sequence[LinkPlan], ports: Mapping[str, str],
            workers: Mapping[int, int]) -> dict:
    """The setup request bess_ctl.py takes (see its docstring): `ports` each
    port's vdev, `workers` each worker's core."""
    return {"do": "setup", "workers": sorted(workers.items()), "ports": dict(ports),
            "links": [{"ports": [l.a, l.b], "worker": l.worker,
                       "macs": list(l.macs) if l.forward == "mac" else None}
                      for l in links if l.forward != "reflect"],
            "reflect": [{"port": l.a, "worker": l.worker}
                        for l in links if l.forward == "reflect"]}


def port_counters(stats: Mapping[str, Sequence[int]], port: str,
                  peer: str | None) -> PortCounters:
    """The switch's view of `port` (see the module's docstring); `peer`: its
    link's other end (None: a reflector, its frames sent back out of itself)."""
    inc, inc_dropped, out, out_dropped = stats[port]
    q_out, q_dropped = (stats[peer][2], stats[peer][3]) if peer else (out, out_dropped)
    return PortCounters(rx_packets=inc, tx_packets=out, tx_dropped=out_dropped,
                        rx_dropped=inc_dropped + max(0, inc - q_out - q_dropped))


def cost(begun: Mapping[str, Sequence[int]],
         now: Mapping[str, Sequence[int]]) -> dict[str, Any] | None:
    """Its workers' own cost between two reads of bess_ctl.py's usage (each
    worker's root traffic class: [runs, cycles, packets]): the TSC cycles its
    tasks took per packet taken in (an empty poll's run too: BESS's default
    scheduler counts every run) and the packets per run, over all workers and
    each; None where no packet came in."""
    workers = []
    for tc, (runs, cycles, packets) in sorted(now.items()):
        runs0, cycles0, packets0 = begun.get(tc, (0, 0, 0))
        workers.append({"thread": tc, "runs": runs - runs0, "cycles": cycles - cycles0,
                        "packets": packets - packets0})

    def said(w: dict[str, Any]) -> dict[str, Any]:
        return {"packets": w["packets"],
                "cycles_per_packet": w["cycles"] / w["packets"] if w["packets"] else None,
                "vectors_per_call": w["packets"] / w["runs"] if w["runs"] else None}
    total = {k: sum(w[k] for w in workers) for k in ("runs", "cycles", "packets")}
    if total["packets"] <= 0:
        return None
    return {"source": "bessctl get_tc_stats", **said(total),
            "threads": [{"thread": w["thread"], **said(w)} for w in workers]}


class Control:
    """bess_ctl.py, running: one request, one reply. What else it prints (pybess,
    gRPC) goes to `log`. Whatever fails, it is gone again before the error
    reaches the caller."""

    def __init__(self, build: Path, url: str, log: Path, name: str = "bess"):
        self.name = name
        self.log = log
        with open(log, "ab") as err:
            try:
                self.proc = spawn([PYTHON, str(CONTROL), str(build), url],
                                  what=f"{name} control", stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE, stderr=err, text=True)
            except CommandFailed as e:
                raise ProcessError(f"{name}: its control cannot start: {e}") from None
        try:
            self.version = self._reply(START_TIMEOUT).get("ready")
        except BaseException:
            self.close()
            raise

    def _said(self) -> str:
        """The last line it wrote to its log, to say why it failed."""
        try:
            lines = [l for l in self.log.read_text(errors="replace").splitlines() if l.strip()]
        except OSError:
            return ""
        return f" (its log {self.log.name}: {lines[-1].strip()[:300]})" if lines else ""

    def _reply(self, timeout: float) -> dict:
        # one line per request, nothing more: select sees it on the pipe
        if not select.select([self.proc.stdout], [], [], timeout)[0]:
            self.close()   # a late reply would answer the next request
            raise ProcessError(f"{self.name}: its control did not answer within {timeout:g} s"
                               + self._said())
        line = self.proc.stdout.readline()
        if not line:
            raise ProcessError(f"{self.name}: its control exited (code {self.proc.poll()})"
                               + self._said())
        try:
            reply = json.loads(line)
        except ValueError:
            raise ProcessError(f"{self.name}: its control said {line.strip()[:300]!r}") from None
        if "error" in reply:
            raise ProcessError(f"{self.name}: {reply['error']}")
        return reply

    def ask(self, req: dict):
        try:
            self.proc.stdin.write(json.dumps(req) + "\n")
            self.proc.stdin.flush()
        except (BrokenPipeError, ValueError):
            raise ProcessError(f"{self.name}: its control is gone "
                               f"(code {self.proc.poll()})" + self._said()) from None
        return self._reply(REPLY_TIMEOUT)["ok"]

    def close(self) -> None:
        """Told to quit (its stdin closed), then killed if it does not."""
        with contextlib.suppress(OSError, ValueError):
            if self.proc.poll() is None:
                self.proc.stdin.write(json.dumps({"do": "quit"}) + "\n")
            self.proc.stdin.close()
        try:
            self.proc.wait(5)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        with contextlib.suppress(OSError):
            self.proc.stdout.close()


class Bessd(Daemon):
    """One bessd, in the foreground, on a terminal (procs.Console), and its control."""

    def __init__(self, binary: str, build: Path, directory: Path, eal: Sequence[str],
                 memory_mb: int, buffers: int, name: str = "bessd",
                 launch: Launch | None = None):
        self.socket = directory / "bess.sock"
        self.url = f"unix:{self.socket}"
        self.log = directory / "bess_ctl.log"   # what its control prints beside its replies
        self.build = build
        super().__init__([binary, "-f", "-i", str(directory / "bessd.pid"),
                          "--grpc_url", self.url, "-m", str(memory_mb),
                          "--buffers", str(buffers), "--iova", "va", "--no_crashlog",
                          "--eal", " ".join(eal)], name, launch)
        self.control: Control | None = None

    def ready(self, timeout: float = START_TIMEOUT) -> None:
        """Return once its control is connected (bessd listens once its DPDK and
        packet pools are up); ProcessError with its last words if it exits first."""
        deadline = time.monotonic() + timeout
        while not self.socket.exists():
            self.exited()
            if time.monotonic() > deadline:
                raise ProcessError(f"{self.name}: no control socket within {timeout:g} s; "
                                   f"last output: {self.console.last_lines()}")
            time.sleep(0.05)
        try:
            self.control = Control(self.build, self.url, self.log, self.name)
        except ProcessError as e:
            raise ProcessError(f"{e}; bessd's last output: {self.console.last_lines()}") \
                from None

    def ask(self, req: dict):
        if self.control is None or self.console is None:
            raise ProcessError(f"{self.name}: not started")
        try:
            return self.control.ask(req)
        except ProcessError as e:
            if self.console.proc.poll() is None:
                raise
            raise ProcessError(f"{e}; bessd exited: {self.console.last_lines()}") from None

    def stop(self, timeout: float = DAEMON_STOP_TIMEOUT) -> int | None:
        """Its control closed, then bessd stopped (SIGINT: it stops its workers
        and exits; escalated if it does not)."""
        if self.control is not None:
            self.control.close()
            self.control = None
        return super().stop(timeout)
