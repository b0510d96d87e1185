"""CPU use per node over a trial's measured window, and where every thread ran.

Nodes: each tester end that runs an engine, each network function, and the
switch when it has processes of its own (a DPDK switch). A kernel data plane
(bridge, veth, macvlan) has none: its work is softirq on the cores the traffic
crosses, which every node's softirq column shows for its cores.

Where a node's CPU time is read:
- a container with a cgroup of its own (runc, podman): the group's user and
  system time (cgroups.cpu_times), every process in it counted (podman's
  conmon, which watches the container, is in a group of its own: not counted);
  a VM's (its QEMU process in a group of its own: every vCPU and I/O thread,
  so the guest kernel's work and the emulator's, TCG's translation included);
- otherwise (the netns runtime, a switch on the host) its processes'
  /proc/PID/stat utime and stime, which count every thread each has had,
  exited ones included. This misses a process started after the window opened
  (its time before that counts in full) or gone before it closed (its time does
  not count), its children (cutime, for processes that exec as the engine does:
  none), and the kernel's work on its behalf on other tasks (softirq,
  ksoftirqd, vhost threads).

Softirq is /proc/stat's per core: the kernel's per-packet work runs in
whatever task the core was in, and is not charged to the container whose
packets it moved (paper 002). It is summed over a node's cores, so nodes that
share a core show the same time.

A node on another host is metered there: its agent keeps a Meter over its
part of the point, opened and closed with this one's (RemoteMeter), and its
rows join this host's.

A Meter samples every node when the window opens (the senders' warm-up is
over: window_opens_ns) and when it closes (every sender has printed its
summary); usage() turns the two samples, and the packets each node handled,
into model.CpuUsage rows. What it can do before the window it does as the
senders' warm-up begins (prepare): a container's cgroup is looked up then (one
whose process is its init has none before it runs), every thread listed, and
a switch with counters sampled, its CPU times and its counters, so that its
row spans the warm-up and the window (the same traffic) and no process of
ours (ovs-ofctl, ovs-appctl) starts inside the window: on a host whose cores
all have a busy poller, those took the pollers' cores (docs/cpu.md, Stalls).
The switch's packets are its ports' rx between two reads of its counters, each
right after the CPU times: testpmd answers at once, OVS's ovs-ofctl can take
a fraction of a second on a busy host, and what its ports took in meanwhile
goes uncounted (its cycles per packet are then high).
"""
from __future__ import annotations

import contextlib
import functools
import os
import statistics
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Sequence

from cnfperf import SystemFailure, nfs
from cnfperf.host import cgroups
from cnfperf.dataplanes.base import DataPlane, PortCounters
from cnfperf.plan import TestPoint
from cnfperf.results.model import CpuUsage
from cnfperf.runtimes.base import Container, cpu_list
from cnfperf.scenario import Scenario, parse_cpus
from cnfperf.host.system import USER_HZ, CommandFailed, proc_stat, run
from cnfperf.run.noise import Noise
from cnfperf.remote.client import Agent
from cnfperf.run.testbed import NetworkFunction, Neighbour, Node, Switch, Testbed, Tester

PROC = Path("/proc")


@dataclass(frozen=True)
class Times:
    user_s: float = 0.0
    system_s: float = 0.0

    def __sub__(self, other: Times) -> Times:
        return Times(self.user_s - other.user_s, self.system_s - other.system_s)

    def __add__(self, other: Times) -> Times:
        return Times(self.user_s + other.user_s, self.system_s + other.system_s)


@dataclass
class Account:
    """A node, and where its CPU time is read: its cgroup, or its processes."""

    node: str
    kind: str                            # model.CPU_KINDS
    quota: float | None = None
    cores: tuple[int, ...] = ()          # (): its threads' allowed cores
    group: Path | None = None
    pids: Callable[[], list[int]] = list     # without a group, asked at every sample
    problem: str = ""                    # why its time cannot be read
    # Its group, looked up when the window opens (locate): a container whose
    # process is its init (a lazy one) has none before that process runs.
    find: Callable[[], Path | None] | None = None
    # Its work is softirq on its cores (a pinned router NF): CpuUsage.softirq_counts
    softirq_counts: bool = False

    def locate(self) -> None:
        """Its group, once, from `find`; what keeps it from being found is its problem."""
        if self.find is None or self.problem:
            return
        try:
            self.group = self.find()
        except (OSError, KeyError, ValueError, SystemFailure) as e:
            self.problem = f"its cgroup: {e}"
        self.find = None

    def processes(self) -> list[int]:
        return cgroups.procs(self.group) if self.group else self.pids()

    def times(self) -> dict[Any, Times]:
        """Its CPU time so far, by what it is read from (the group; each pid)."""
        if self.group:
            return {"group": Times(*cgroups.cpu_times(self.group))}
        found = {}
        for pid in self.pids():
            stat = proc_stat(pid)
            if stat is not None:
                found[pid] = Times(stat.user_s, stat.system_s)
        return found


def used(start: dict[Any, Times], end: dict[Any, Times]) -> Times:
    """What was used between two readings: a source new at the end counts in
    full, one gone by then not at all."""
    return sum((t - start.get(k, Times()) for k, t in end.items()), Times())


def softirq_by_core(stat: str) -> dict[int, float]:
    """/proc/stat's softirq seconds per core (the `cpuN` lines' 7th value)."""
    found = {}
    for line in stat.splitlines():
        words = line.split()
        if words and words[0].startswith("cpu") and words[0][3:].isdigit():
            found[int(words[0][3:])] = int(words[7]) / USER_HZ
    return found


def allowed_cores(status: str) -> str:
    """Cpus_allowed_list of /proc/PID/status: the cores a thread may run on."""
    for line in status.splitlines():
        key, _, value = line.partition(":")
        if key == "Cpus_allowed_list":
            return value.strip()
    return ""


def threads(pids: list[int], proc: Path = PROC) -> list[dict[str, Any]]:
    """Every thread of these processes: its name, the cores it may run on and
    the one it last ran on (field 39 of its stat)."""
    found = []
    for pid in pids:
        with contextlib.suppress(OSError):
            for tid in sorted(int(t) for t in os.listdir(proc / str(pid) / "task")):
                task = proc / str(pid) / "task" / str(tid)
                with contextlib.suppress(OSError):
                    stat = proc_stat(pid, tid)
                    found.append({"pid": pid, "tid": tid,
                                  "name": (task / "comm").read_text().strip(),
                                  "allowed": allowed_cores((task / "status").read_text()),
                                  "core": stat.core if stat else None})
    return found


@dataclass
class Sample:
    at: float
    times: dict[str, dict[Any, Times] | None]     # node -> its readings (None: unreadable)
    softirq: dict[int, float]
    counters: dict[str, PortCounters] = field(default_factory=dict)


# How long a live reading waits for another host's agent (its nodes' CPU for
# --metrics-port): a reading of /proc there, well within a measuring tick's slack.
LIVE_TIMEOUT = 5.0
# The shortest span a live reading says a share over: a few ms of CPU time
# read in jiffies or as one burst would say 0 or several cores.
LIVE_SPAN = 0.1


class Meter:
    """Samples nodes when the window opens (start) and closes (stop); `counters`:
    the switch's port counters, read with them when the switch is a node."""

    def __init__(self, accounts: list[Account],
                 counters: Callable[[], dict[str, PortCounters]] | None = None,
                 clock: Callable[[], float] = time.monotonic,
                 stat: Callable[[], str] = lambda: (PROC / "stat").read_text(),
                 others: Sequence[RemoteMeter] = ()):
        self.accounts = accounts
        self.others = others    # other hosts' nodes, each metered there
        self.counters = counters
        self.clock = clock
        self.stat = stat
        self.first: Sample | None = None
        self.last: Sample | None = None
        self.early: Sample | None = None   # the switch's, in the warm-up (prepare)
        self.live: Sample | None = None    # the last shares() read
        self.threads: dict[str, list[dict[str, Any]]] = {}
        self.prepared = False

    @property
    def started(self) -> bool:
        return self.first is not None

    def prepare(self) -> None:
        """Before the window opens (the senders' warm-up), once: every node's
        group, and where every thread is, so that the window's first sample is
        only the readings of times. Each read of /proc runs on some core, and on
        a host whose cores all have a busy poller, inside the window that core
        is a poller's (docs/cpu.md, Stalls)."""
        if self.prepared:
            return
        self.prepared = True
        for a in self.accounts:
            a.locate()
        for a in self.accounts:
            with contextlib.suppress(OSError, ValueError):
                self.threads[a.node] = threads(a.processes()) if not a.problem else []
        # A switch's counters take a command or two (ovs-ofctl, testpmd's
        # prompt): read with its times now, so its row spans the warm-up and
        # the window alike, at the same traffic, and no process of ours starts
        # inside the window.
        if self.counters:
            self.early = self._sample([a for a in self.accounts if a.kind == "switch"], True)
        for other in self.others:
            other.step("prepare")

    def start(self) -> None:
        """Opens the window, once (prepared first if it was not)."""
        if self.first is None:
            self.prepare()
            self.first = self._sample([a for a in self.accounts
                                       if a.kind != "switch" or self.early is None],
                                      self.early is None)
            for other in self.others:
                other.step("start")

    def stop(self) -> None:
        if self.first is not None and self.last is None:
            self.last = self._sample(self.accounts, True)
            for other in self.others:
                other.step("stop")

    def shares(self) -> dict[str, float]:
        """Each node's CPU use since the last call (the window's opening, the
        first time), in cores (1.0: one core's time), other hosts' nodes read
        there; a node whose times could not be read is left out. For whoever
        watches a run live (run/live.py): each call reads /proc, and asks each
        other host's agent, so only when asked."""
        if self.first is None:
            return {}
        out = self._shares()
        for other in self.others:
            # a host that does not answer in time is left out, as a node that
            # could not be read: the trial's own calls there say what is wrong
            with contextlib.suppress(SystemFailure):
                out.update(other.shares())
        return out

    def _shares(self) -> dict[str, float]:
        """This host's nodes' part of shares(): none over a span shorter than
        LIVE_SPAN (the tick that opens the window asks at once), which the
        next reading then covers."""
        before = self.live or self.first
        if self.clock() - before.at < LIVE_SPAN:
            return {}
        # the switch's first reading may be the warm-up's (early): from the second call
        now = self._sample(self.accounts, False)
        self.live = now
        wall = now.at - before.at
        out = {}
        for node, end in now.times.items():
            start = before.times.get(node)
            if start is not None and end is not None and wall > 0:
                t = used(start, end)
                out[node] = (t.user_s + t.system_s) / wall
        return out

    def _sample(self, accounts: list[Account], counters: bool) -> Sample:
        times: dict[str, dict[Any, Times] | None] = {}
        for a in accounts:
            times[a.node] = None
            if not a.problem:
                with contextlib.suppress(OSError, KeyError, ValueError):
                    times[a.node] = a.times()
        sample = Sample(self.clock(), times, softirq_by_core(self.stat()))
        # After the clock: a switch's counters take a command or two to read
        # (testpmd's prompt, ovs-ofctl), which is no CPU time of the window.
        if self.counters and counters:
            with contextlib.suppress(SystemFailure):
                sample.counters = self.counters()
        return sample

    def _start_of(self, a: Account) -> Sample:
        """Where a node's span starts: the switch's in the warm-up (prepare)."""
        assert self.first is not None
        return self.early if a.kind == "switch" and self.early is not None else self.first

    def switch_rx(self) -> int | None:
        """Frames the switch took in at its ports within its span; None when a
        port's count is unknown (its data plane does not keep it)."""
        if not self.first or not self.last:
            return None
        first = self.early or self.first
        if self.last.counters and not first.counters:
            return None    # the first read failed: what came in since is unknown, not 0
        counts = [(c - first.counters[port]).rx_packets
                  for port, c in self.last.counters.items() if port in first.counters]
        return None if None in counts else sum(counts)

    def usage(self, packets: dict[str, int], tsc: tuple[float | None, str]) -> list[CpuUsage]:
        """A row per node; none when the window never opened or closed. `packets`:
        what each engine handled in it (the switch's come from its counters)."""
        if not self.first or not self.last:
            return []
        rows = []
        for a in self.accounts:
            first = self._start_of(a)
            wall = self.last.at - first.at
            start, end = first.times[a.node], self.last.times[a.node]
            t = used(start, end) if start is not None and end is not None else None
            cores = a.cores or _allowed(self.threads.get(a.node, []))
            softirq = sum(self.last.softirq.get(c, 0) - first.softirq.get(c, 0)
                          for c in cores)
            rows.append(CpuUsage(
                node=a.node, kind=a.kind, cores=cpu_list(cores), quota=a.quota,
                user_s=None if t is None else t.user_s,
                system_s=None if t is None else t.system_s, softirq_s=softirq, wall_s=wall,
                packets=self.switch_rx() if a.kind == "switch" else packets.get(a.node, 0),
                tsc_hz=tsc[0], tsc_source=tsc[1],
                threads=self.threads.get(a.node, []), softirq_counts=a.softirq_counts))
        return rows + [row for other in self.others for row in other.usage(packets, tsc)]


class RemoteMeter:
    """Another host's nodes (its switch, its engines' containers, its noisy
    neighbour), metered there by its agent with a Meter of its own over its
    part (run/agent.py), told when this one's window opens and closes: their
    CPU times, threads and softirq are that host's to read. Its rows count
    cycles at `tsc` as this host's do (the engines' calibration)."""

    def __init__(self, agent: Agent):
        self.agent = agent

    def step(self, step: str) -> None:
        """prepare (a new meter there), start or stop, as Meter's."""
        self.agent.call("meter", step=step)

    def shares(self) -> dict[str, float]:
        """Its nodes' CPU use since the last call, as Meter.shares; SystemFailure
        when its agent does not answer within LIVE_TIMEOUT (the measuring tick
        that asks waits for it)."""
        return self.agent.call("shares", timeout=LIVE_TIMEOUT)

    def usage(self, packets: dict[str, int], tsc: tuple[float | None, str]) -> list[CpuUsage]:
        rows = self.agent.call("usage", packets=packets, tsc=list(tsc))
        return [CpuUsage(**row) for row in rows]


def _allowed(found: list[dict[str, Any]]) -> tuple[int, ...]:
    cores: set[int] = set()
    for t in found:
        with contextlib.suppress(ValueError):
            cores.update(parse_cpus(t["allowed"]) or ())
    return tuple(sorted(cores))


def window_opens_ns(starts: list[dict[str, Any] | None], warmup: float) -> int | None:
    """When the measured window opens (wall clock, ns): a warm-up after the last
    sender began its own (its `start` record: a DPDK engine takes a second or
    more to start, and a tester or a client first settles the path, none of it
    warm-up); None until every sender has. The CPU meter and a fault both time
    themselves by it."""
    if not starts or None in starts:
        return None
    return max(int(r["wall_ns"]) for r in starts) + int(warmup * 1e9)


# -- this process, aside from the pollers -------------------------------------------

def busy_cores(point: TestPoint, switch: tuple[int, ...] = ()) -> set[int]:
    """The cores the point's pollers spin on: its engines', its NFs', the
    switch's poll threads' (`switch`); unpinned (pin = false), every core of
    the point, over which the switch and the NFs float."""
    cores = {c for ep in point.engines for c in ep.all_cores} | set(switch)
    for nf in point.nfs:
        cores.update(nf.cores or (nf.cpu,))
    if not point.scenario.pin:
        cores.update(point.cpus)
    return cores


def aside(busy: set[int], task: Path = PROC / "self" / "task") -> Callable[[], None]:
    """Every thread of this process off the `busy` cores, when it may run on
    others (a thread it starts later inherits its starter's cores); returns
    what puts each back. None to spare (every core has a poller): nothing. A
    thread woken on a busy poller's core takes that core from the poller for
    as long as it runs (docs/cpu.md, Stalls)."""
    spare = os.sched_getaffinity(0) - busy
    if not spare:
        return lambda: None
    before: dict[int, set[int]] = {}
    for tid in map(int, os.listdir(task)):
        with contextlib.suppress(OSError):   # a thread that ended meanwhile
            before[tid] = os.sched_getaffinity(tid)
            os.sched_setaffinity(tid, spare)

    def back() -> None:
        # every thread now, those started meanwhile too (they inherited `spare`):
        # its cores from before, else the process's
        whole = before.get(os.getpid(), set(spare) | busy)
        for tid in map(int, os.listdir(task)):
            with contextlib.suppress(OSError):
                os.sched_setaffinity(tid, before.get(tid, whole))
    return back


# -- the nodes of a testbed -------------------------------------------------------

def meter(bed: Testbed, s: Scenario) -> Meter:
    """A Meter of the testbed's nodes: its engines' containers, the switch last."""
    found = []
    others: dict[str, RemoteMeter] = {}
    for name, node in bed.nodes.items():
        if (agent := _agent_of(node)) is not None:   # metered there
            others.setdefault(agent.name, RemoteMeter(agent))
        elif isinstance(node, Tester):
            # the ends of a noise stream (noise = traffic) are the neighbour's
            kind = "noise" if node.endpoint.pair >= s.pairs else node.endpoint.role
            found.append(of_container(name, kind, s.of_pair(node.endpoint.pair).endpoint_quota,
                                      node.container))
        elif isinstance(node, NetworkFunction):   # a pair's own quota: its profile's
            account = of_container(name, "nf", s.of_pair(node.nf.pair).nf_quota, node.container)
            # a kernel NF (router) pinned: its RPS map puts its forwarding on its cores
            # (in a VM its guest's softirq is in its vCPUs' time already)
            account.softirq_counts = nfs.kind(s.nf).kernel and s.pin and \
                not node.container.own_kernel
            found.append(account)
        elif isinstance(node, Neighbour) and isinstance(node.noise, Noise):
            found.append(of_container(name, "noise", None, node.noise.container))
    switch = of_switch(s.switch, bed.dataplane, s.switch_quota)
    if switch is None:
        return Meter(found, others=list(others.values()))
    return Meter([*found, switch], counters=bed.dataplane.counters, others=list(others.values()))


def _agent_of(node: Node) -> Agent | None:
    """The agent of the host a node runs on, when that is another host."""
    held = node.container if isinstance(node, (Tester, NetworkFunction)) else \
        node.dataplane if isinstance(node, Switch) else node.noise
    return getattr(held, "agent", None)


@functools.cache
def _accounting() -> cgroups.Controller | None:
    return cgroups.layout().controllers.get("cpuacct")


def of_container(node: str, kind: str, quota: float | None, c: Container) -> Account:
    """A container's account: its cgroup when it has one, else its processes."""
    account = Account(node, kind, quota, cores=tuple(c.cpus), pids=lambda: c.pids)

    def group() -> Path | None:
        pid = c.init_pid
        if pid is None:
            return None
        controller = _accounting()
        if controller is None:
            raise SystemFailure("no cpuacct controller")
        return cgroups.group_of(pid, controller)
    account.find = group
    return account


def of_switch(node: str, dataplane: DataPlane, quota: float | None) -> Account | None:
    """The switch's account: its container, else its processes; None for a kernel
    data plane (no process of its own)."""
    if dataplane.container is not None:
        return of_container(node, "switch", quota, dataplane.container)
    if not dataplane.pids():
        return None
    return Account(node, "switch", quota, pids=dataplane.pids)


# -- packets ----------------------------------------------------------------------

def packets(point: TestPoint, summaries: dict[str, dict[str, Any]]) -> dict[str, int]:
    """What each engine of the point handled in the window, from its summary."""
    found = {}
    for pair in point.paths:
        for ep in pair.engines:
            found[ep.name] = end_packets(summaries[ep.name])
        warmup = warmup_frames(summaries[pair.sender.name], summaries.get(pair.receiver.name))
        for nf in pair.nfs:
            found[nf.name] = nf_packets(summaries[nf.name], warmup)
    return found


def end_packets(summary: dict[str, Any]) -> int:
    """A tester end's packets in the window: what it sent and what it received."""
    return int(summary.get("tx_packets") or 0) + int(summary.get("rx_packets") or 0)


def warmup_frames(sender: dict[str, Any], receiver: dict[str, Any] | None) -> int:
    """Frames of a pair's warm-up that cross its NFs: what the sender sent in it,
    and what a server echoed of them (its warmup_packets; a receiver echoes none)."""
    echoed = receiver.get("warmup_packets") if receiver and receiver.get("role") == "server" \
        else 0
    return int(sender.get("warmup_tx_packets") or 0) + int(echoed or 0)


def nf_packets(summary: dict[str, Any], warmup: int) -> int:
    """An NF's packets in the window: the frames its ports received, less the
    warm-up's (an NF counts every frame it gets; lost warm-up frames make this low)."""
    rx = sum(int(p.get("rx_packets") or 0) for p in summary.get("ports") or [])
    return max(0, rx - warmup)


# -- TSC --------------------------------------------------------------------------

def tsc_hz(readies: list[dict[str, Any] | None]) -> tuple[float | None, str]:
    """(Hz, source): the engines' own calibration (their `ready` records'
    tick_hz where the clock is the TSC), else the kernel's (kernel_tsc_hz)."""
    ticks = [float(r["tick_hz"]) for r in readies
             if r and r.get("clock") == "tsc" and r.get("tick_hz")]
    if ticks:
        return statistics.median(ticks), "engine calibration"
    return kernel_tsc_hz()


@functools.cache   # once per run
def kernel_tsc_hz() -> tuple[float | None, str]:
    """The TSC rate as the kernel knows it: tsc_freq_khz (where the kernel
    exports it), its boot log's refined calibration, else /proc/cpuinfo's
    `cpu MHz` (the core clock when read: the TSC's only without frequency
    scaling, as on a VM), saying which."""
    with contextlib.suppress(OSError, ValueError):
        khz = Path("/sys/devices/system/cpu/cpu0/tsc_freq_khz").read_text()
        return int(khz) * 1e3, "tsc_freq_khz"
    with contextlib.suppress(CommandFailed):
        hz = tsc_from_log(run(["dmesg"], timeout=10))
        if hz:
            return hz, "kernel log"
    with contextlib.suppress(OSError):
        hz = cpu_mhz((PROC / "cpuinfo").read_text())
        if hz:
            return hz, "cpu MHz (no TSC rate found in the kernel's files or log)"
    return None, "none found"


def tsc_from_log(log: str) -> float | None:
    """`tsc: Refined TSC clocksource calibration: 2445.402 MHz`, else
    `tsc: Detected 2445.402 MHz processor` (the first estimate), in Hz."""
    detected = None
    for line in log.splitlines():
        if "tsc: Refined TSC clocksource calibration:" in line:
            return _mhz(line)
        if "tsc: Detected" in line and detected is None:
            detected = _mhz(line)
    return detected


def cpu_mhz(cpuinfo: str) -> float | None:
    for line in cpuinfo.splitlines():
        if line.startswith("cpu MHz"):
            return float(line.split(":", 1)[1]) * 1e6
    return None


def _mhz(line: str) -> float | None:
    words = line.split()
    with contextlib.suppress(ValueError, IndexError):
        return float(words[words.index("MHz") - 1]) * 1e6
    return None
