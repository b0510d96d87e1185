"""`cnfperf agent`: a host's part of a run, driven by the controller over SSH.

The controller (remote/client.py) starts it on each other host of a run, one
per host and run, and speaks JSON lines on its stdin and stdout (the protocol
is in client.py's docstring). It runs only what cnfperf's own code does with
the values it is given: it places a point from its scenario as the controller
did (plan.place: the same names, MACs and addresses; its own cores), builds
the nodes this host runs (testbed.Builder: netns, switch, containers, the
wires' NICs), starts processes in their containers, reads the switch's
counters, and tears the point down. Its host's lock and journal are its own,
so `cnfperf cleanup` on that host removes what a killed agent left.

When its stdin ends (the controller finished, or its connection was lost),
or the controller has been silent for SILENCE_S (it pings every
remote/client.py PING_S: a cut cable ends no session by itself), or it gets
SIGTERM, it stops every process it started and undoes its part, then exits:
a host is never left holding a run whose controller is gone.
"""
from __future__ import annotations

import contextlib
import json
import os
import queue
import signal
import subprocess
import sys
import threading
import time
from dataclasses import asdict, replace
from pathlib import Path
from typing import IO, Any

from cnfperf import SystemFailure, UserError, __version__
from cnfperf.dataplanes import DATAPLANES
from cnfperf.engine import find_engine
from cnfperf.host.facts import HostFacts, checkout_commit, slowdown as host_slowdown
from cnfperf.run.declared import gather
from cnfperf.host.journal import RUN_DIR, Journal, journal_path
from cnfperf.host.links import missing_ends, rx_queues
from cnfperf.host.lock import HostBusy, HostLock
from cnfperf.plan import run_prefix
from cnfperf.host import frames, pci
from cnfperf.run.checks import host_problems, host_refusals, host_wide, matrix, place_point
from cnfperf.cluster.node import Member
from cnfperf.run import cluster, cpu
from cnfperf.run.cleanup import cleanup
from cnfperf.run.teardown import Signals, Teardown
from cnfperf.run.testbed import Builder, NetworkFunction, Switch, Testbed, Tester
from cnfperf.scenario import validate

STOP_S = 5.0     # for a process to exit once its stdin ended or it was killed
SILENCE_S = 15.0  # the controller pings every few seconds: this long without a word, it is gone
CLOCKSOURCE = "/sys/devices/system/clocksource/clocksource0/current_clocksource"


class Agent:
    def __init__(self, out: IO[bytes]):
        self.out = out
        self._write = threading.Lock()
        self.host: HostFacts | None = None
        self.engine: Path | None = None
        self.name = ""
        self.lock: HostLock | None = None
        self.journal: Journal | None = None
        self.signals = Signals()
        self.run_teardown: Teardown | None = None
        self.builder: Builder | None = None
        self.point_teardown: Teardown | None = None
        self.bed: Testbed | None = None
        self.meter: cpu.Meter | None = None    # this host's part's, in a trial (op_meter)
        self.procs: dict[int, subprocess.Popen] = {}
        self.next_proc = 1
        self.listeners: dict[str, frames.Listener] = {}
        self.gone = False
        self.heard = time.monotonic()     # when the controller last said anything
        self.node: contextlib.ExitStack | None = None   # this host a node of a cluster (op_join)

    # -- the channel -------------------------------------------------------------------
    def send(self, message: dict[str, Any]) -> None:
        if self.gone:
            return
        try:
            with self._write:
                self.out.write((json.dumps(message) + "\n").encode())
                self.out.flush()
        except (OSError, ValueError):
            self.gone = True      # the controller went away: stdin ends next

    def serve(self, inp: IO[bytes], silence: float = SILENCE_S) -> None:
        """Requests one at a time, until stdin ends or the controller falls
        silent. A thread reads them as they come (answering pings at once, a
        long build in the main thread notwithstanding)."""
        requests: queue.Queue[dict[str, Any] | None] = queue.Queue()
        threading.Thread(target=self._read, args=(inp, requests), daemon=True,
                         name="requests").start()
        try:
            while True:
                try:
                    request = requests.get(timeout=1.0)
                except queue.Empty:
                    if time.monotonic() - self.heard > silence:
                        print(f"cnfperf agent: the controller said nothing for {silence:g} s: "
                              "undoing this host's part", file=sys.stderr)
                        return
                    continue
                if request is None:
                    return
                self.answer(request)
        finally:
            self.end()
            self.gone = True
            with contextlib.suppress(OSError, ValueError):
                self.out.close()     # the controller reads to here: this host is done

    def _read(self, inp: IO[bytes], requests: queue.Queue) -> None:
        with contextlib.suppress(OSError, ValueError):
            for raw in iter(inp.readline, b""):
                self.heard = time.monotonic()
                try:
                    request = json.loads(raw)
                except ValueError:
                    continue
                if request.get("op") == "ping":
                    self.send({"id": request.get("id", 0), "ok": None})
                else:
                    requests.put(request)
        requests.put(None)     # stdin ended

    def answer(self, request: dict[str, Any]) -> None:
        n, op = request.pop("id", 0), request.pop("op", "")
        handler = getattr(self, f"op_{op}", None)
        try:
            if handler is None:
                raise SystemFailure(f"unknown request {op!r}")
            result = handler(**request)
        except UserError as e:
            self.send({"id": n, "error": str(e), "user": True})
        except Exception as e:    # the controller says which host failed, and why
            self.send({"id": n, "error": str(e) or type(e).__name__})
        else:
            if n:
                self.send({"id": n, "ok": result})

    # -- requests ----------------------------------------------------------------------
    def op_hello(self, name: str) -> dict[str, Any]:
        """Who answers: cnfperf's version, root or not, this host's facts."""
        self.name = name
        self.engine = find_engine()
        self.host = gather(self.engine)
        versions = {name: d.versions(self.host) for name, d in DATAPLANES.items()}
        return {"version": __version__, "commit": checkout_commit(), "root": os.geteuid() == 0,
                "facts": {**self.host.to_dict(), "clock": clock_source(), "versions": versions}}

    def op_preflight(self, scenarios: list[dict[str, Any]]) -> dict[str, list]:
        """What keeps this host from running its part of the scenarios: knobs
        naming what it has not (`refused`: [field, why], bad input) and its
        `problems`."""
        assert self.host is not None, "hello first"
        problems = host_problems(self.host, here=self.name)
        found = host_wide(self.host)
        valid = [validate(raw) for raw in scenarios]
        for s in valid:
            found += problems(s)
        return {"refused": [list(r) for r in host_refusals(valid, here=self.name)],
                "problems": list(dict.fromkeys(found))}

    def op_interfaces(self, names: list[str]) -> list[str]:
        """Which of these wire ends (interfaces, PCI addresses) this host lacks."""
        return missing_ends(names)

    def op_rx_queues(self, names: list[str]) -> dict[str, int]:
        """The receive queues of these wire ends (interfaces) of this host."""
        return {name: rx_queues(name) for name in names}

    def op_pci(self, addresses: list[str]) -> dict[str, tuple[bool, str]]:
        """Wire ends' PCI devices: here or not, their drivers (doctor's row)."""
        return pci.survey(addresses)

    def op_matrix(self) -> dict[str, Any]:
        """What this host can run (doctor's table)."""
        assert self.host is not None, "hello first"
        return matrix(self.host)

    def op_listen(self, ifaces: list[str]) -> dict[str, str]:
        """Listen for wire test frames on these interfaces; the ones that cannot be heard."""
        self._stop_listening()
        self.listeners = {i: frames.Listener(i) for i in ifaces}
        for listener in self.listeners.values():
            listener.start()
        return {i: l.problem for i, l in self.listeners.items() if l.problem}

    def op_send(self, frames_to_send: list[list[str]]) -> dict[str, str]:
        """Send a test frame with each token on its interface; why one could not be."""
        found = {iface: frames.send(iface, token) for iface, token in frames_to_send}
        return {iface: why for iface, why in found.items() if why}

    def op_heard(self) -> dict[str, list[str]]:
        """What each listener heard; they stop."""
        heard = {i: sorted(l.stop()) for i, l in self.listeners.items()}
        self.listeners = {}
        return heard

    def _stop_listening(self) -> None:
        for listener in self.listeners.values():
            listener.stop()
        self.listeners = {}

    def op_begin(self, run_id: str) -> None:
        """The run begins here: this host's lock, journal and state directory."""
        assert self.engine is not None, "hello first"
        if self.lock is not None:
            raise SystemFailure(f"run {run_id}: this agent has begun a run already")
        self.lock = HostLock()
        try:
            self.lock.acquire(run_id)
        except HostBusy as e:
            self.lock = None
            raise SystemFailure(str(e)) from None
        prefix = run_prefix(run_id)
        self.journal = Journal(journal_path(prefix))
        self.run_teardown = Teardown(self.signals)
        self.builder = Builder(self.journal, RUN_DIR / prefix, self.engine, self.run_teardown)

    def op_build(self, scenario: dict[str, Any], run_id: str, index: int, total: int,
                 nics: list[list[str]], shared: list[list[str]]) -> dict[str, Any]:
        """This host's part of a point: placed as the controller placed it, on
        this host's cores; what the controller needs to run its engines."""
        assert self.builder is not None, "begin first"
        self.op_teardown()
        point = place_point(validate(scenario), run_id, index, total)
        point = replace(point, host=self.name, nics=tuple((p, i) for p, i in nics),
                        shared=tuple((p, i) for p, i in shared))
        self.point_teardown = Teardown(self.signals)
        self.bed = self.builder.build(point, self.point_teardown)
        return describe(self.bed)

    def op_exec(self, node: str, argv: list[str]) -> dict[str, int]:
        assert self.bed is not None, "build first"
        proc = self.bed.container(node).exec(argv, stdout=subprocess.PIPE,
                                              stderr=subprocess.PIPE, stdin=subprocess.PIPE)
        n, self.next_proc = self.next_proc, self.next_proc + 1
        self.procs[n] = proc
        threading.Thread(target=self._relay, args=(n, proc), daemon=True,
                         name=f"proc {n}").start()
        return {"proc": n, "pid": proc.pid}

    def _relay(self, n: int, proc: subprocess.Popen) -> None:
        """Its output as events, then its exit: in that order, so the controller
        has read every line when it learns the process ended."""
        # a pod's process (runtimes/pod/process.py) has no stderr pipe
        errors = threading.Thread(target=self._lines, args=(n, proc.stderr, "err"), daemon=True) \
            if proc.stderr is not None else None
        if errors is not None:
            errors.start()
        self._lines(n, proc.stdout, "out")
        if errors is not None:
            errors.join()
        self.send({"proc": n, "exit": proc.wait()})

    def _lines(self, n: int, stream: IO[bytes], kind: str) -> None:
        with contextlib.suppress(OSError, ValueError):
            for raw in iter(stream.readline, b""):
                self.send({"proc": n, kind: raw.decode(errors="replace")})

    def op_stdin_close(self, proc: int) -> None:
        p = self.procs.get(proc)
        if p is not None and p.stdin is not None:
            with contextlib.suppress(OSError):
                p.stdin.close()

    def op_signal(self, proc: int, signal: int) -> None:
        p = self.procs.get(proc)
        if p is not None and p.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                p.send_signal(signal)

    def op_counters(self) -> dict[str, dict[str, int]]:
        assert self.bed is not None, "build first"
        return {port: asdict(c) for port, c in self.bed.counters().items()}

    def op_window(self, open: bool) -> None:
        assert self.bed is not None, "build first"
        self.bed.dataplane.window(open)

    def op_queues(self) -> list[dict[str, Any]]:
        assert self.bed is not None, "build first"
        return self.bed.dataplane.queues()

    def op_cost_begin(self) -> None:
        assert self.bed is not None, "build first"
        self.bed.dataplane.cost_begin()

    def op_cost(self) -> dict[str, Any] | None:
        assert self.bed is not None, "build first"
        return self.bed.dataplane.cost()

    def op_applied(self) -> dict[str, Any]:
        assert self.bed is not None, "build first"
        return self.bed.dataplane.applied()

    def op_noise_start(self) -> None:
        """The noisy neighbour this host runs starts (trial.py's, for a
        neighbour here); its output goes to a directory of the point's."""
        assert self.bed is not None and self.builder is not None and \
            self.point_teardown is not None, "build first"
        neighbour = self.bed.noise
        assert neighbour is not None, "no noisy neighbour on this host"
        out = RUN_DIR / f"{self.bed.point.prefix}-noise"
        if not out.exists():
            self.builder.directory(out, self.point_teardown)
        neighbour.start(out)

    def op_noise_stop(self) -> dict[str, Any]:
        """It stops: what it did (Noise.stop's record) and its output."""
        assert self.bed is not None and self.bed.noise is not None, "build first"
        neighbour = self.bed.noise
        record = neighbour.stop()
        return {"record": record, "output": neighbour.output()}

    def op_meter(self, step: str) -> None:
        """The controller's CPU meter (run/cpu.py) takes a step: `prepare` (a
        new trial: a meter of this host's part), `start` (the window opens),
        `stop` (it closes); this host's nodes are sampled here."""
        assert self.bed is not None, "build first"
        if step == "prepare":
            self.meter = cpu.meter(self.bed, self.bed.point.scenario)
        assert self.meter is not None, "prepare first"
        {"prepare": self.meter.prepare, "start": self.meter.start,
         "stop": self.meter.stop}[step]()

    def op_shares(self) -> dict[str, float]:
        """This host's nodes' CPU use since the last call (Meter.shares), for
        a controller that serves it live; none before the window opens."""
        return self.meter.shares() if self.meter is not None else {}

    def op_usage(self, packets: dict[str, int], tsc: list[Any]) -> list[dict[str, Any]]:
        """This host's nodes' rows of the trial's CPU use (Meter.usage)."""
        meter, self.meter = self.meter, None
        if meter is None:
            return []
        return [asdict(row) for row in meter.usage(packets, (tsc[0], tsc[1]))]

    def op_teardown(self) -> dict[str, list[str]]:
        """The point's part undone: its processes stopped, its nodes removed."""
        self._stop_procs()
        found: dict[str, list[str]] = {"cleaned": [], "failed": []}
        if self.point_teardown is not None:
            self.point_teardown.close()
            found = {"cleaned": self.point_teardown.cleaned, "failed": self.point_teardown.failed}
            self.point_teardown = None
        self.bed = None
        self.meter = None
        return found

    def op_cleanup(self, run_id: str | None = None, force: bool = False) -> dict[str, list[str]]:
        """`cnfperf cleanup` on this host (cleanup --hosts)."""
        try:
            removed, failed = cleanup(force=force, run_id=run_id)
        except HostBusy as e:    # a run (an old session's agent) holds this host
            return {"busy": str(e)}
        return {"removed": removed, "failed": failed}

    def op_join(self, node: str, address: str, server: str, pems: dict[str, str],
                hugepages_mb: int = 0) -> None:
        """This host a node of the controller's test cluster (run/cluster.py
        members()) until this agent ends."""
        if self.node is not None:
            raise SystemFailure("this host joined a cluster already")
        stack = contextlib.ExitStack()
        try:
            joining = Member(node, address, server, pems, hugepages_mb)
            stack.enter_context(cluster.joined(joining,
                                               lambda line: print(f"cnfperf agent: {line}",
                                                                  file=sys.stderr, flush=True)))
        except BaseException:
            stack.close()
            raise
        self.node = stack

    # -- the end -----------------------------------------------------------------------
    def _stop_procs(self) -> None:
        for p in self.procs.values():
            if p.poll() is None:
                with contextlib.suppress(OSError):
                    if p.stdin is not None:
                        p.stdin.close()
                with contextlib.suppress(ProcessLookupError):
                    p.kill()
        for p in self.procs.values():
            with contextlib.suppress(subprocess.TimeoutExpired):
                p.wait(STOP_S)
        self.procs.clear()

    def end(self) -> None:
        """stdin ended: whatever is left of the run here goes."""
        self._stop_listening()
        self.op_teardown()
        left: list[str] = []
        if self.run_teardown is not None:
            self.run_teardown.close()
            left = self.run_teardown.failed
        if self.journal is not None:
            left += [f"{e.kind} {e.name}" for e in self.journal.live()]
            self.journal.close(remove=not left)
        if self.lock is not None:
            self.lock.release()
        if self.node is not None:      # once the run's pods on it are gone
            try:
                self.node.close()
            except Exception as e:
                left.append(f"its node: {e}")
            self.node = None
        if left:
            print(f"cnfperf agent: left behind: {'; '.join(left)} (cnfperf cleanup)",
                  file=sys.stderr)


def describe(bed: Testbed) -> dict[str, Any]:
    """What the controller needs of this host's part: each node's container
    (its engine's path there, its cores as placed here), each of its ports'
    attachment, each DPDK node's EAL arguments, its data planes (the point's
    switch where it joins links here, `nic` for its NICs)."""
    nodes: dict[str, Any] = {}
    for name, node in bed.nodes.items():
        if isinstance(node, (Tester, NetworkFunction)):
            placed = node.endpoint if isinstance(node, Tester) else node.nf
            c = node.container
            # a node on a host that is itself emulated (the lab's) is as slow
            # to start and stop as one in a TCG guest: the controller waits as long
            nodes[name] = {"engine": str(c.engine), "own_kernel": c.own_kernel,
                           "slowdown": max(c.slowdown, host_slowdown()),
                           "netns": c.netns, "cpus": list(c.cpus),
                           "cpu": placed.cpu, "cores": list(getattr(placed, "cores", ()) or ()),
                           "floating": list(bed.floating(name)),
                           "eal": list(bed.eal_args(name)),
                           "facts": c.facts()}      # a pod's, on this host's node
    planes = [n.name for n in bed.nodes.values() if isinstance(n, Switch)]
    neighbour = bed.noise
    return {"nodes": nodes, "planes": planes,
            "noise": neighbour.what if neighbour is not None else None,
            "attachments": {port: asdict(a) for port, a in bed.attachments.items()}}


def _terminated(signum: int, _frame: Any) -> None:
    raise SystemExit(128 + signum)


def clock_source() -> str:
    """The kernel's clock source (tsc, kvm-clock…): what one-way latencies
    between two hosts' clocks would rest on."""
    try:
        return Path(CLOCKSOURCE).read_text().strip()
    except OSError:
        return ""


def main() -> int:
    """Serve one controller on stdin/stdout until its stdin ends."""
    # The controller's SIGINT reaches the processes through requests. The
    # session's end is stdin's (SIGHUP ignored); SIGTERM (sshd going, a
    # shutdown) ends the loop, and the teardown runs.
    signal.signal(signal.SIGHUP, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, _terminated)
    out = os.fdopen(os.dup(sys.stdout.fileno()), "wb")
    # Nothing else may write to the channel: stray prints go to stderr.
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())
    Agent(out).serve(sys.stdin.buffer)
    return 0
