"""A trial: one measurement on a testbed.

    receivers, then network functions from the receiver's side (wait for `ready`;
    on kernel interfaces all at once)
    -> the noisy neighbour, if any -> senders (wait for their summaries)
    -> stop the neighbour
    -> SIGINT engine network functions and receivers (they take what is still on
       its way until it stops coming, then their summaries; they hold)
    -> SIGINT command network functions, from the sender's side (they exit)
    -> read counters
    -> release senders, network functions, receivers (they close their ports and exit)

The stop has two phases because closing a port while its peer still polls
can crash the peer (DPDK 22.11's memif unmaps the shared rings from a control
thread): every engine first stops polling and prints its summary, keeping its
ports open (--hold); only then are they told, by the end of their stdin, to
close them. Senders go first and are gone before the next node on the path
closes, so no two ends of one link tear it down at once.

Each engine's stop is on the point's Teardown from the moment it starts, for
the way out of a failure; a trial that ends well leaves none running, unless
the point keeps its engines across its trials (engine_keep: kept.py): then
they stay held after the first phase, and the next trial, instead of starting
them, sends each a line (receivers first, as they would be started): its
rate, duration and warm-up.
"""
from __future__ import annotations

import contextlib
import json
import signal
import subprocess
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cnfperf import SystemFailure, nfs
from cnfperf.host import kernel_drops, udp_errors
from cnfperf.run import cpu, fault as faults
from cnfperf.engine import INTERVAL, EngineOutput, argv as engine_argv, trial_line
from cnfperf.experiments import stats
from cnfperf.fields import LOCAL
from cnfperf.plan import NF, Endpoint, Pair, TestPoint, nf_hosts
from cnfperf.results import model
from cnfperf.scenario import Scenario, profile, tester_hosts
from cnfperf.strategies.base import Watch
from cnfperf.run import kept as keeping
from cnfperf.run.kept import KeptEngines
from cnfperf.run.teardown import Teardown
from cnfperf.run.testbed import Testbed

READY_TIMEOUT = 15.0    # container start + engine opening its api
EXIT_MARGIN = 10.0      # beyond warm-up + duration (+ client drain) for a sender to end
# An engine's failure quotes at most its last FAILED_LINES lines, FAILED_CHARS characters.
FAILED_LINES, FAILED_CHARS = 8, 1200
STOP_TIMEOUT = 5.0      # for a receiver to print its summary after SIGINT, or to exit once released
CLIENT_DRAIN = 0.5      # the engine's default --drain
TRAFFIC_SLACK = 0.05    # s: a receiver's clock starts at its first frame, not the sender's
# How often the trial looks at its engines while senders run: every TICK until
# the measured window is open (the CPU meter and a fault are timed by it), then
# once per interval record (the progress shows its rate). Each look wakes this
# process on some core, and on a host whose cores all have a busy poller that
# core is a poller's: at 20 looks a second the window lost a few ms a second
# to the orchestrator alone (docs/cpu.md, Stalls).
TICK = 0.05
WINDOW_TICK = INTERVAL
# How a command ends on SIGINT: exit 0, or killed by the signal it re-raised once
# done (testpmd does), seen directly or through a shell's or runc's 128 + 2.
INTERRUPTED = (0, -signal.SIGINT, 128 + signal.SIGINT)


@dataclass
class Progress:
    """What a run reports while it works; the CLI decides how it looks."""

    point: TestPoint
    # setup | measuring | trial | measured (a trial's result) | teardown | done | failed
    phase: str
    elapsed: float = 0.0
    expected: float = 0.0
    rx_pps: float | None = None
    eta: float | None = None   # seconds left in the run, once a point has finished
    detail: str = ""           # a search's trial: what it asks or what it measured
    # measuring, when an engine said more: each pair's latest interval as its
    # sender and its counting end printed them (engine/README.md), and what
    # reads each node's CPU use (in cores) since it was last asked: read only
    # by whoever wants it (run/live.py), as each read wakes a core
    pairs: list[dict[str, Any]] | None = None
    cpu: Callable[[], dict[str, float]] | None = None
    # measured: the trial's scenario (its rate and duration) and result
    scenario: Scenario | None = None
    result: model.PointResult | None = None


Report = Callable[[Progress], None]


def run(bed: Testbed, s: Scenario, out: Path, teardown: Teardown, report: Report,
        detail: str = "", watch: Watch | None = None,
        kept: KeptEngines | None = None) -> model.PointResult:
    """One trial of `s` on the testbed; the engines' files go to `out`. With
    `kept`, on the engines an earlier trial kept, and they stay after it (kept.py)."""
    return Trial(bed, s, out, teardown, report, detail, watch, kept).run()


RunTrial = Callable[..., model.PointResult]


class Trials:
    """What a strategy runs on: one point's testbed, set up once, and the point's
    directory. Implements cnfperf.strategies.base.Trials."""

    def __init__(self, bed: Testbed, directory: Path, teardown: Teardown, report: Report,
                 trial: RunTrial = run, keep: Callable[[list[dict]], None] | None = None,
                 kept: Callable[[], list[dict]] | None = None):
        self.bed = bed
        self.directory = directory
        self.teardown = teardown
        self.report = report
        self.trial = trial
        self._keep = keep
        self._kept = kept
        # the point's engines, kept across its trials where it allows (kept.py)
        s = bed.point.scenario
        self.engines: KeptEngines | None = None
        self.fresh_because = keeping.refusal(s, nfs.kind(s.nf) if s.nfs else None)
        if trial is run and self.fresh_because is None:
            self.engines = KeptEngines(patience=lambda name: bed.container(name).slowdown)
        self.trials = 0

    def measure(self, s: Scenario, name: str = "", detail: str = "",
                watch: Watch | None = None) -> model.PointResult:
        """A trial whose files go to the subdirectory `name` (none: the point's
        directory); `detail` shows in its progress; `watch` sees its intervals."""
        out = self.directory
        if name:
            out = self.directory / name
            out.mkdir()
        self.trials += 1
        if self.trials == 2 and self.fresh_because and s.engine_keep:
            self.say(f"fresh engines for every trial: {self.fresh_because}")
        if self.engines is not None:
            if not self.engines.fits(s):   # made for another trial than this one
                self.engines.release()
            result = self.trial(self.bed, s, out, self.teardown, self.report, detail, watch,
                                self.engines)
        elif watch is None:
            result = self.trial(self.bed, s, out, self.teardown, self.report, detail)
        else:
            result = self.trial(self.bed, s, out, self.teardown, self.report, detail, watch)
        # named as its samples are: its progress detail ("" for a point's one trial)
        self.report(Progress(self.bed.point, "measured", detail=detail, scenario=s,
                             result=result))
        return result

    def close(self) -> None:
        """The point's trials are over: its kept engines go (their ports close)."""
        if self.engines is not None:
            self.engines.release()

    def keep(self, rows: list[dict]) -> None:
        """Rows that outlive an interruption of the point: stored now."""
        if self._keep:
            self._keep(rows)

    def kept(self) -> list[dict]:
        """What an interrupted run of this point kept."""
        return self._kept() if self._kept else []

    def say(self, detail: str) -> None:
        self.report(Progress(self.bed.point, "trial", detail=detail))


class Trial:
    def __init__(self, bed: Testbed, s: Scenario, out: Path, teardown: Teardown,
                 report: Report, detail: str = "", watch: Watch | None = None,
                 kept: KeptEngines | None = None):
        self.bed = bed
        self.kept = kept
        self.resumed = kept is not None and kept.running   # on engines an earlier trial kept
        self.s = s
        self.watch = watch
        self._seen = 0   # engine records the watcher has been shown
        self._latest_seen: list[tuple[int, Any]] = []   # the intervals _latest last gave
        self.cost_begun = False   # the switch's own count of its cost (DataPlane.cost)
        self.out = out
        self.teardown = teardown
        self.report = report
        self.detail = detail
        self.outputs: dict[str, EngineOutput] = {}
        self.procs: dict[str, subprocess.Popen] = {}
        self.nodes: dict[str, Endpoint | NF] = {}   # whose each of procs is
        self.started_ns: dict[str, int] = {}   # wall clock when each engine was started
        self.commands: dict[str, nfs.Command] = {}   # each NF's
        self.kind = nfs.kind(s.nf) if s.nfs else None    # what they are
        self.fault: faults.Fault | None = None
        self.kernel: dict[str, dict | None] = {}   # a kernel NF's counters over the trial
        self.routing: dict[str, dict] = {}   # what its daemons' sessions did over the trial
        self.stderr: dict[str, Path] = {}    # each engine's stderr file
        if self.resumed:
            assert kept is not None
            self.procs, self.outputs, self.nodes = kept.procs, kept.outputs, kept.nodes
            self.commands, self.started_ns = kept.commands, kept.started_ns
            self.stderr = kept.stderr

    def run(self) -> model.PointResult:
        try:
            return self._run()
        except BaseException:
            if self.kept is not None:   # what failed mid-trial is no trial's to keep
                self.kept.abandon()
            raise

    def _run(self) -> model.PointResult:
        # A noise stream's pair (noise = traffic) runs like the others, unmeasured.
        pairs = self.bed.point.paths
        # A single tester is its pair's sender and receiver in one engine.
        senders = [p.sender for p in pairs]
        receivers = [p.receiver for p in pairs if p.receiver.runs_engine]
        # Each listens on its upstream link before its upstream neighbour starts.
        in_path = [nf for p in pairs for nf in reversed(p.nfs)]
        before = self.bed.first_counters()
        udp_before = self._udp_counters()
        kernel_before = self._kernel_counters()
        self.meter = cpu.meter(self.bed, self.s)   # opened and closed by the senders
        for ep in receivers:
            pair = pairs[ep.pair]
            self._start(ep, pair.sender, pair.peer(ep.port).mac)
        self._await(receivers, "ready", READY_TIMEOUT, "before it was ready")
        for depths in self._nf_starts(pairs):
            for depth in depths:
                for pair in pairs:
                    self._start_nf(pair.nfs[depth], pair)
            self._await_nfs([p.nfs[depth] for depth in depths for p in pairs])
        # The neighbour is there for as long as traffic flows, warm-up included.
        noise = self.bed.noise
        if noise is not None:
            noise.start(self.out)   # testbed.py stops it on the way out of a failure
        # Timed once the senders are ready (_wait_senders); its stop brings every
        # port up again (and what the kernel dropped with it: Testbed.restore), on
        # the way out of a failure too.
        self.fault = faults.create(self.bed.point, self.bed.dataplane, self.bed.restore)
        if self.fault is not None:
            self.teardown.push(f"fault {self.fault.target}", self.fault.stop)
        sending = time.time()
        for pair in pairs:
            self._start(pair.sender, pair.receiver, pair.peer(pair.sender.port).mac)
        back = self._aside()
        try:
            self._wait_senders(senders)
        finally:
            back()
            self.bed.dataplane.window(False)
        self.meter.stop()
        # at once: the switch idles from here; none where its count never began
        cost = self._cost(self.bed.cost) if self.cost_begun else None
        self.routing = self._routing(sending, time.time())
        noise_record = noise.stop() if noise is not None else None
        fault_record = self._fault_done()
        # While every engine still holds its ports (a vhost port's queues exist
        # in OVS only while its peer is connected).
        try:
            queues = self.bed.dataplane.queues()
        except SystemFailure as e:   # what is only written down does not fail a point
            queues = []
            self.report(Progress(self.bed.point, "trial", detail=f"no queue map: {e}"))
        # What is still on its way the receivers and NFs take before their
        # summaries: they drain until it has stopped coming (the engine's
        # run_keep_going), as a single tester does before its own.
        engine_nfs = [nf for nf in in_path if self.commands[nf.name].records]
        self._stop(engine_nfs + receivers)
        self._watched()   # the receivers' last intervals came with their summaries
        # A command NF closes its ports when it stops: only once no engine polls,
        # and one depth at a time from the sender's side, so two command NFs
        # never tear down the link between them at once.
        for depth in range(self.s.nfs):
            self._stop_commands([p.nfs[depth] for p in pairs if p.nfs[depth] not in engine_nfs])
        after = self.bed.counters()
        udp_after = self._udp_counters()
        self.kernel = {nf: kernel_drops.delta(kernel_before.get(nf), counters)
                       for nf, counters in self._kernel_counters().items()}
        # No engine polls any more: ports may close now. From the sender's side,
        # one depth at a time: no two ends of a link close at once.
        order = [senders, *([p.nfs[depth] for p in pairs if p.nfs[depth] in engine_nfs]
                            for depth in range(self.s.nfs)), receivers]
        if self.kept is None:
            for group in order:
                self._release(group)
        result = self._result(before, after)
        result.queues, result.switch_cost = queues, cost or None
        result.fault, result.noise = fault_record, noise_record
        for m in result.endpoints:
            for column, n in udp_errors.dropped(udp_before.get(m.endpoint),
                                                udp_after.get(m.endpoint)).items():
                setattr(m, column, n)
        if self.kept is not None:   # they stay for the next trial, held (kept.py)
            for out in self.outputs.values():
                out.raw.close()
            self.kept.keep(self.s, [[ep.name for ep in group] for group in order],
                           {"procs": self.procs, "outputs": self.outputs, "nodes": self.nodes,
                            "commands": self.commands, "started_ns": self.started_ns,
                            "stderr": self.stderr})
            return result
        # Every engine has exited and been read: a search's many trials must not
        # keep two descriptors per engine open until the point ends.
        for ep, out in self.outputs.items():
            out.raw.close()
            self.procs[ep].stdout.close()
        return result

    def _fault_done(self) -> dict | None:
        """The fault ended (every port up again) and what it did; one that
        never took its ports down fails the point: its outage was not measured."""
        if self.fault is None:
            return None
        record = self.fault.stop()
        if record is None:
            raise SystemFailure(f"fault {self.fault.target}: the senders ended before it "
                                f"was over ({self.s.fault_at:g} s into the measured window, "
                                f"for {self.s.fault_duration:g} s)")
        told = record["ports"] if record["at"] == faults.NODE else ()
        return {**record, **self._noticed(record["down_wall"], told)}

    def _routing(self, since: float, until: float) -> dict[str, dict]:
        """Each NF's daemons' sessions while the senders sent (warm-up included):
        how many, how often and how long down (a flap under load: paper 002's E2)."""
        if self.kind is None:
            return {}
        return {name: facts for name, home in self.bed.homes.items()
                for facts in [self.kind.routing(home, since, until)] if facts is not None}

    def _noticed(self, since: float, told: Sequence[str]) -> dict[str, Any]:
        """When the NFs' routing daemons first said a session went down after
        the fault's down (noticed_ms), and which and how (noticed). An NF
        whose own interfaces went down (`told`: those ports) learns it at
        once; the others (and every one, where the switch cut silently) only
        as their protocol detects it, which is what is measured."""
        cut_nfs = {port.node for port in self.bed.point.ports if port.name in told}
        found = [(when, f"{self.bed.label(name)}: {line}")
                 for name, home in self.bed.homes.items()
                 if self.kind is not None and name not in cut_nfs
                 for hit in [self.kind.noticed(home, since)] if hit is not None
                 for when, line in [hit]]
        if not found:
            return {}
        when, said = min(found)
        return {"noticed_ms": round((when - since) * 1e3, 3), "noticed": said}

    def _nf_starts(self, pairs: Sequence[Pair]) -> list[list[int]]:
        """The NFs' depths in the groups they start in, each group up before the
        next starts. One depth at a time, from the receiver's side, where an NF
        connects to its downstream neighbour (a DPDK port: vhost-user's or
        memif's server must listen first); NFs on kernel interfaces connect to
        nothing and start all at once, so a chain is up in one NF's time."""
        depths = list(reversed(range(self.s.nfs)))
        if all(nf.ports[0].api != "dpdk" for p in pairs for nf in p.nfs):
            return [depths] if depths else []
        return [[depth] for depth in depths]

    def _udp_counters(self) -> dict[str, dict[str, int] | None]:
        """With the udp api, each end's kernel UDP counters (udp_errors.py): a
        datagram its kernel drops never reaches the engine."""
        if self.s.api != "udp":
            return {}
        return {ep.name: udp_errors.read(self.bed.container(ep.name).netns)
                for pair in self.bed.point.pairs for ep in pair.engines}

    def _kernel_counters(self) -> dict[str, dict | None]:
        """With a kernel NF (router), the counters of each one's interfaces,
        netns and host (kernel_drops.py): its forwarding counts nothing else."""
        if self.kind is None or not self.kind.kernel:
            return {}
        return {nf.name: self.kind.counters(self.bed.container(nf.name), self.bed.ports(nf.name))
                for nf in self.bed.point.nfs}

    def _start(self, ep: Endpoint, peer: Endpoint, hop: str) -> None:
        """Start ep's engine; `hop`: the MAC its frames go to next (its peer's, or
        the nearest network function's)."""
        if self.resumed:
            return self._again(ep)
        engine = self.bed.container(ep.name).engine
        # each pair's engines run its own profile (engine.argv: Scenario.of_pair)
        self._spawn(ep, engine_argv(engine, self.bed.inside(ep), self.bed.ports(ep.name), peer,
                                    hop, self.s, self.bed.eal_args(ep.name)))

    def _start_nf(self, nf: NF, pair: Pair) -> None:
        """Start a network function; its frames go to the ports next to its own."""
        if self.resumed:
            return self._again(nf)
        # The ports facing its own; a one-port NF (mirror) sends back where
        # frames came from: no next hops.
        hops = pair.hops(nf)
        engine = self.bed.container(nf.name).engine
        assert self.kind is not None
        command = self.kind.command(engine, self.bed.inside(nf), self.bed.ports(nf.name), hops,
                                    pair, self.s.of_pair(pair.index), self.bed.eal_args(nf.name),
                                    self.bed.floating(nf.name))
        self.commands[nf.name] = command
        self._spawn(nf, command.argv, records=command.records)

    def _again(self, ep: Endpoint | NF) -> None:
        """A kept engine's next trial: its records to this trial's file, and the
        line that starts it (engine --keep)."""
        line = trial_line(ep, self.s, self.s.warmup)
        (self.out / f"{ep.name}.keep").write_text(line)
        raw = open(self.out / f"{ep.name}.jsonl", "w")
        self.teardown.push(None, raw.close)
        self.outputs[ep.name].renew(raw)
        proc = self.procs[ep.name]
        if proc.poll() is not None:
            raise self._failed(ep, f"exited with code {proc.returncode} between two trials")
        try:
            proc.stdin.write(line.encode())
            proc.stdin.flush()
        except OSError as e:
            raise self._failed(ep, f"took no next trial ({e})") from None

    def _spawn(self, ep: Endpoint | NF, args: list[str], records: bool = True) -> None:
        container = self.bed.container(ep.name)
        (self.out / f"{ep.name}.argv.json").write_text(json.dumps(args) + "\n")
        raw = open(self.out / f"{ep.name}.{'jsonl' if records else 'out'}", "w")
        self.teardown.push(None, raw.close)
        self.started_ns[ep.name] = time.time_ns()
        self.stderr[ep.name] = self.out / f"{ep.name}.stderr"
        with open(self.stderr[ep.name], "wb") as err:
            proc = container.exec(args, stderr=err, stdin=subprocess.PIPE)
        out = EngineOutput(ep.name, raw, parse=records)

        def stop() -> None:
            # Only on the way out of a failure: a finished engine has exited.
            _close_stdin(proc)
            if proc.poll() is None:
                proc.kill()
            proc.wait(timeout=STOP_TIMEOUT)
            out.join(STOP_TIMEOUT)
        self.teardown.push(f"engine {ep.role} in {ep.name}", stop)
        self.procs[ep.name] = proc
        self.nodes[ep.name] = ep
        out.follow(proc.stdout)
        self.outputs[ep.name] = out

    def _failed(self, ep: Endpoint | NF, what: str) -> SystemFailure:
        """What the engine said last (a DPDK port's cause is a few lines up), and
        the switch's state when it is gone: an engine on a vhost-user socket
        whose switch died fails first."""
        tail = ""
        with contextlib.suppress(OSError, KeyError):
            lines = self.stderr[ep.name].read_text(errors="replace").split("\n")
            tail = " | ".join([l for l in lines if l.strip()][-FAILED_LINES:])[-FAILED_CHARS:]
        problems = self.outputs[ep.name].problems
        if problems:
            tail = (tail + " | " if tail else "") + problems[0]
        plane = self.bed.dataplane
        switch = plane.stale() if plane.keeps else None   # keeps: it can tell
        return SystemFailure(f"engine {ep.role} in {ep.name} {what}"
                             + (f": {tail}" if tail else "")
                             + (f"; the switch: {switch}" if switch else ""))

    def _await(self, eps: list[Endpoint] | list[NF], record: str, timeout: float, when: str,
               every: float = TICK, tick: Callable[[], float | None] | None = None) -> None:
        """Until each engine has printed its `ready` or `summary` record; an
        engine that exits first, or a timeout, fails the point. `tick` runs
        every `every` seconds while it waits, or as long as it says it may
        wait. In a virtual machine it waits longer (Container.slowdown: an
        emulated guest is slow)."""
        deadline = time.monotonic() + self._patience(eps, timeout)
        while True:
            waiting = [ep for ep in eps if not self.outputs[ep.name].printed(record).is_set()]
            for ep in waiting:
                code = self.procs[ep.name].poll()
                if code is not None:
                    self.outputs[ep.name].join(1)
                    if code != 0 or not self.outputs[ep.name].printed(record).is_set():
                        raise self._failed(ep, f"exited with code {code} {when}")
            if not waiting:
                return
            if time.monotonic() > deadline:
                raise self._failed(waiting[0], f"printed no {record} record within {timeout:g} s")
            wait = every
            if tick:
                wait = tick() or every
            # woken by the record itself: a point must not wait out a poll interval
            self.outputs[waiting[0].name].printed(record).wait(
                min(wait, max(0.0, deadline - time.monotonic())) or every)

    def _aside(self) -> Callable[[], None]:
        """While the senders run, this process off its pollers' cores
        (cpu.aside), when every node runs on this host (another's cores are not
        ours to count); what puts it back. Only the engines' children are
        started after it, and they pin themselves."""
        s = self.s
        if {*tester_hosts(s), s.dut_host, *nf_hosts(s)} != {LOCAL}:
            return lambda: None
        return cpu.aside(cpu.busy_cores(self.bed.point, tuple(self.bed.dataplane.cpus)))

    def _wait_senders(self, eps: list[Endpoint]) -> None:
        """Until every sender has printed its summary (it then holds its port)."""
        s = self.s
        clients = any(self._mode(ep.pair) == "latency" for ep in eps)
        expected = s.warmup + s.duration + (CLIENT_DRAIN if clients else 0)
        start = time.monotonic()

        def progress() -> float:
            """Looks at the senders; how long it may wait before the next look."""
            opens = cpu.window_opens_ns([self.outputs[ep.name].start for ep in eps],
                                        s.warmup)
            if opens is not None and not self.meter.prepared:
                self.meter.prepare()   # in the warm-up: what need not be read in the window
                # the switch's own count of its cost spans what its CPU time does
                self.cost_begun = self._cost(self.bed.cost_begin) is not False
            if opens is not None and time.time_ns() >= opens and not self.meter.started:
                self.meter.start()   # the measured window opens
                self.bed.dataplane.window(True)
            if opens is not None and self.fault is not None and not self.fault.started:
                self.fault.start(opens / 1e9)
            self.report(Progress(self.bed.point, "measuring", time.monotonic() - start,
                                 expected, self._rx_rate(), detail=self.detail,
                                 pairs=self._latest(),
                                 cpu=self.meter.shares if self.meter.started else None))
            self._watched()
            self._running(eps)
            if opens is None:
                return TICK   # a sender is still settling: look again soon
            if not self.meter.started:   # wake when the window opens, not before
                return max(0.001, (opens - time.time_ns()) / 1e9)
            return WINDOW_TICK
        self._await(eps, "summary", expected + EXIT_MARGIN, "before its summary",
                    tick=progress)

    def _running(self, senders: list[Endpoint]) -> None:
        """Every receiver and NF still runs while the senders do: one that ended
        (it crashed, its host's connection was lost) fails the point now, not
        when the senders have had their whole duration."""
        sending = {ep.name for ep in senders}
        for name, proc in self.procs.items():
            if name not in sending and (code := proc.poll()) is not None:
                self.outputs[name].join(1)
                raise self._failed(self.nodes[name], f"exited with code {code} "
                                                     "while the senders ran")

    def _watched(self) -> None:
        """Hands the watcher every pair's interval records so far."""
        if self.watch is None:
            return
        pairs = self.bed.point.pairs
        seen = sum(len(self.outputs[ep.name].records) for p in pairs
                   for ep in (p.sender, self._counting(p)))
        if seen == self._seen:   # called every 50 ms: only when there is news
            return
        self._seen = seen

        def intervals(ep: Endpoint) -> list[dict]:
            return [r for r in list(self.outputs[ep.name].records) if r["type"] == "interval"]
        self.watch([(intervals(p.sender), intervals(self._counting(p))) for p in pairs])

    def _counting(self, pair: Pair) -> Endpoint:
        """Who counts what arrives: the client sees its echoes, a single tester
        its own frames, else the receiver."""
        if self._mode(pair.index) == "latency" or not pair.receiver.runs_engine:
            return pair.sender
        return pair.receiver

    def _mode(self, pair: int) -> str:
        """A pair's mode: its own (a profile), else the point's."""
        return self.s.of_pair(pair).mode

    def _cost(self, read: Callable[[], Any]) -> Any:
        """The switch's own cost, begun or read (False: that failed): what it
        says of itself is only written down, and never fails the point (said
        instead)."""
        try:
            return read()
        except SystemFailure as e:
            self.report(Progress(self.bed.point, "trial", detail=f"no switch cost: {e}"))
            return False

    def _latest(self) -> list[dict[str, Any]] | None:
        """Each pair's latest interval, when one is new since the last call
        (None: no news): {pair, phase (warmup, measure), elapsed_s, interval_s,
        tx_pps (its sender's), rx_pps, rx_packets, lost, latency (its counting
        end's)}."""
        found = []
        for pair in self.bed.point.pairs:
            ends = [self.outputs.get(ep.name) for ep in (pair.sender, self._counting(pair))]
            sent, counted = (o.last_interval if o else None for o in ends)
            if not sent or not counted:
                return None
            found.append({"pair": pair.index, "phase": counted.get("phase"),
                          "elapsed_s": counted.get("elapsed_s"),
                          "interval_s": counted.get("interval_s"),
                          "tx_pps": sent.get("tx_pps"), "rx_pps": counted.get("rx_pps"),
                          "rx_packets": counted.get("rx_packets"), "lost": counted.get("lost"),
                          "latency": counted.get("latency")})
        mark = [(p["pair"], p["elapsed_s"]) for p in found]
        if mark == self._latest_seen:
            return None
        self._latest_seen = mark
        return found

    def _rx_rate(self) -> float | None:
        rates = []
        for pair in self.bed.point.pairs:
            last = self.outputs[self._counting(pair).name].last_interval
            if last:
                rates.append(float(last.get("rx_pps", 0) or 0))
        return sum(rates) if rates else None

    def _await_nfs(self, group: list[NF]) -> None:
        """Until each NF's ports are up: an engine's `ready`, a command's line that
        says so, or a command's settle time without exiting."""
        engines = [nf for nf in group if self.commands[nf.name].records]
        self._await(engines, "ready", READY_TIMEOUT, "before it was ready")
        start = time.monotonic()
        waiting = [nf for nf in group if nf not in engines]
        # a command in an emulated guest takes as much longer to open its ports
        settle_s = self._patience(waiting, self.kind.settle_s if self.kind else 0.0)
        while waiting:
            for nf in waiting:
                if self.procs[nf.name].poll() is not None:
                    raise self._failed(nf, f"exited with code {self.procs[nf.name].returncode} "
                                           "before it was ready")
            ready = self.commands[waiting[0].name].ready
            waited = time.monotonic() - start
            waiting = [nf for nf in waiting
                       if not any(ready in line for line in self.outputs[nf.name].lines)] \
                if ready else ([] if waited >= settle_s else waiting)
            if waiting and waited > self._patience(waiting, READY_TIMEOUT):
                raise self._failed(waiting[0], f"was not up within "
                                               f"{self._patience(waiting, READY_TIMEOUT):g} s")
            time.sleep(0.05)

    def _stop_commands(self, group: list[NF]) -> None:
        """SIGINT: a command NF stops and exits (testpmd prints its statistics);
        one that ends otherwise fails the point."""
        for nf in group:
            if self.procs[nf.name].poll() is None:
                self.procs[nf.name].send_signal(signal.SIGINT)
        for nf in group:
            try:
                code = self.procs[nf.name].wait(timeout=self._patience([nf], STOP_TIMEOUT))
            except subprocess.TimeoutExpired:
                raise self._failed(nf, f"did not exit within "
                                       f"{self._patience([nf], STOP_TIMEOUT):g} s of SIGINT") \
                    from None
            self.outputs[nf.name].join(STOP_TIMEOUT)
            _close_stdin(self.procs[nf.name])   # a search's many trials must not keep it
            self.procs[nf.name].stdout.close()
            if code not in INTERRUPTED:
                raise self._failed(nf, f"exited with code {code} on SIGINT")

    def _patience(self, nodes: Sequence[Endpoint | NF], seconds: float) -> float:
        """How long to wait for what takes `seconds` on the host, the slowest of
        the nodes' containers considered (a virtual machine's guest, emulated
        under TCG, takes many times as long to start a process or stop one)."""
        return seconds * max((self.bed.container(n.name).slowdown for n in nodes), default=1.0)

    def _summary(self, ep: Endpoint | NF) -> dict | None:
        """An engine's summary record, or what a command NF's output says."""
        command = self.commands.get(ep.name)
        if command is None or command.records:
            return self.outputs[ep.name].summary
        assert self.kind is not None
        if self.kind.kernel:
            summary = kernel_drops.summary(self.kind.nf, self.kernel.get(ep.name))
            if ep.name in self.routing:
                summary["routing"] = self.routing[ep.name]
            return summary
        summary = self.kind.summary("\n".join(self.outputs[ep.name].lines))
        if self.kind.counted and not summary["ports"]:
            raise self._failed(ep, "printed no counters on SIGINT")
        return summary

    def _ready(self, nf: NF) -> dict | None:
        """An engine's ready record, or when a command NF said it was up (Click)."""
        out = self.outputs[nf.name]
        return out.ready or (self.kind.ready(out.lines) if self.kind else None)

    def _stop(self, eps: list[Endpoint | NF]) -> None:
        """SIGINT: each receiver or network function stops polling and prints its
        summary (and holds)."""
        for ep in eps:
            if self.procs[ep.name].poll() is None:
                self.procs[ep.name].send_signal(signal.SIGINT)
        self._await(eps, "summary", STOP_TIMEOUT, "after SIGINT")

    def _release(self, eps: list[Endpoint] | list[NF]) -> None:
        """End of stdin: the engines close their ports and exit."""
        for ep in eps:
            _close_stdin(self.procs[ep.name])
        for ep in eps:
            try:
                code = self.procs[ep.name].wait(timeout=self._patience([ep], STOP_TIMEOUT))
            except subprocess.TimeoutExpired:
                raise self._failed(ep, f"did not exit within "
                                       f"{self._patience([ep], STOP_TIMEOUT):g} s "
                                       "of being released") from None
            self.outputs[ep.name].join(STOP_TIMEOUT)
            if code != 0:
                raise self._failed(ep, f"exited with code {code} while closing its port")

    def _result(self, before: dict, after: dict) -> model.PointResult:
        p = self.bed.point
        engines = [*p.engines, *p.nfs]
        summaries = {}
        for ep in engines:
            if self.kept is None:   # a kept engine's reader goes on: its summary is in
                self.outputs[ep.name].join(STOP_TIMEOUT)
            summaries[ep.name] = self._summary(ep)
            if summaries[ep.name] is None:
                raise self._failed(ep, "printed no summary")
        engines = [ep for ep in engines if ep.pair < len(p.pairs)]   # not the noise's
        # A network function's metrics are stored beside the ends' (role nf), its
        # per-port counters in its summary.
        metrics = {ep.name: model.endpoint_metrics(ep.pair, ep.name, ep.role, ep.cpu,
                                                   summaries[ep.name])
                   for ep in engines}
        # an outage is a fault's measure: without one, a gap is only loss
        pairs = [model.pair_result(pair.index, metrics[pair.sender.name],
                                   metrics[pair.receiver.port.node], self._mode(pair.index),
                                   fault=self.fault is not None)
                 for pair in p.pairs]
        if self.s.pair:   # pairs that differ: what each was asked, stored with it
            for pair, result in zip(p.pairs, pairs):
                result.profile = profile(self.s, pair.index)
        for pair, result in zip(p.pairs, pairs):
            result.steady_rx_pps = self._steady_rx_pps(self._counting(pair))
        counters = {port: after[port] - before[port] for port in after if port in before}
        nf_results = [model.nf_result(nf.name, nf.pair, nf.index, nf.cpu, summaries[nf.name],
                                      self.bed.create_s.get(nf.name),
                                      self.started_ns.get(nf.name), self._ready(nf))
                      for nf in p.nfs]
        if self.kept is not None:   # how kept NFs started is their first trial's
            for nf in nf_results:
                nf.ready_s, nf.first_tx_s = self.kept.startup.setdefault(
                    nf.name, (nf.ready_s, nf.first_tx_s))
        usage = self.meter.usage(cpu.packets(p, summaries),
                                 cpu.tsc_hz([self.outputs[ep.name].ready for ep in engines]))
        return model.PointResult(pairs=pairs, total=model.total(pairs),
                                 endpoints=list(metrics.values()), counters=counters,
                                 nfs=nf_results, cpu=usage)

    def _steady_rx_pps(self, ep: Endpoint) -> float | None:
        """The received rate of the intervals after the warm-up, without the last
        partial one, nor one the sender stopped inside; None if none qualifies."""
        intervals = [r for r in self.outputs[ep.name].records if r["type"] == "interval"]
        s = self.s
        try:
            # Receivers' clocks start at their first frame, about when the sender
            # starts; TRAFFIC_SLACK covers the difference.
            kept = stats.steady_state(intervals, warmup=s.warmup,
                                      until=s.warmup + s.duration + TRAFFIC_SLACK)
        except (KeyError, TypeError, ValueError):
            return None
        return stats.interval_rate(kept, "rx_packets") if kept else None


def _close_stdin(proc: subprocess.Popen) -> None:
    if proc.stdin is not None:
        with contextlib.suppress(OSError):
            proc.stdin.close()
