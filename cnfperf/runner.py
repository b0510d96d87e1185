"""Runs a plan: one host lock, a journal on disk, and for every test point

    netns per endpoint -> data plane -> containers -> receivers (wait for `ready`)
    -> senders (wait for their summaries) -> drain -> SIGINT receivers (summaries)
    -> release senders, then receivers (they close their ports and exit) -> store

The stop has two phases because closing a port while its peer still polls
can crash the peer (DPDK 22.11's memif unmaps the shared rings from a control
thread): every engine first stops polling and prints its summary, keeping its
ports open (--hold); only then are they told, by the end of their stdin, to
close them. Senders go first and are gone before receivers close, so no two
ends of one link tear it down at once.

with every step's undo registered on an ExitStack the moment the step is taken,
so teardown runs in reverse on success, error, SIGINT and SIGTERM alike.

A point whose rate is a search (ndr, pdr:X%) keeps its testbed and runs one
trial after another on it (receivers, senders, summaries), as the search asks.
Each point is stored before the next starts; `--resume` skips stored points.
"""
from __future__ import annotations

import contextlib
import json
import os
import secrets
import shutil
import signal
import subprocess
import time
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

from cnfperf import PREFIX, SystemFailure, tools
from cnfperf.dataplanes import DATAPLANES
from cnfperf.dataplanes.kernel import add_netns, del_netns, netns_list, netns_pids
from cnfperf.engine import EngineOutput, argv as engine_argv
from cnfperf.experiments import stats, sweep, trials
from cnfperf.host import HostFacts
from cnfperf.journal import RUN_DIR, Journal, journal_path
from cnfperf.lock import HostLock
from cnfperf.plan import Endpoint, TestPoint, place, run_prefix
from cnfperf.results import model
from cnfperf.results.store import Store
from cnfperf.runtimes import RUNTIMES, ImageInfo, Runtime
from cnfperf.scenario import Scenario, Sweep, canonical, is_search

READY_TIMEOUT = 15.0    # container start + engine opening its api
EXIT_MARGIN = 10.0      # beyond warm-up + duration (+ client drain) for a sender to end
DRAIN = 0.3             # frames still in flight when the last sender ends
STOP_TIMEOUT = 5.0      # for a receiver to print its summary after SIGINT, or to exit once released
CLIENT_DRAIN = 0.5      # the engine's default --drain
TRAFFIC_SLACK = 0.05    # s: a receiver's clock starts at its first frame, not the sender's


class Interrupted(Exception):
    def __init__(self, signum: int):
        super().__init__(f"interrupted by {signal.Signals(signum).name}")
        self.signum = signum


@dataclass
class Progress:
    """What the runner reports while it works; the CLI decides how it looks."""

    point: TestPoint
    phase: str                 # setup | measuring | trial | teardown | done | failed
    elapsed: float = 0.0
    expected: float = 0.0
    rx_pps: float | None = None
    eta: float | None = None   # seconds left in the run, once a point has finished
    detail: str = ""           # a search's trial: what it asks or what it measured


@dataclass
class RunOutcome:
    run_id: str
    status: str                # done | failed | interrupted
    error: str | None = None
    cleaned: list[str] = field(default_factory=list)
    left: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    signal: int | None = None  # the signal that interrupted the run
    already_done: int = 0      # points a resumed run found stored
    resumed_cleanup: list[str] = field(default_factory=list)  # a killed run's leftovers


class _Signals:
    """SIGINT/SIGTERM become an exception, except while tearing down: a second
    Ctrl-C must not cut teardown short, so it is held until teardown ends."""

    def __init__(self) -> None:
        self.held: int | None = None
        self._holding = 0
        self._saved: dict[int, Any] = {}

    def install(self) -> None:
        for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
            self._saved[sig] = signal.signal(sig, self._handle)

    def restore(self) -> None:
        for sig, handler in self._saved.items():
            signal.signal(sig, handler)

    def _handle(self, signum: int, _frame: Any) -> None:
        if self._holding:
            self.held = self.held or signum
            return
        raise Interrupted(signum)

    @contextlib.contextmanager
    def holding(self) -> Iterator[None]:
        self._holding += 1
        try:
            yield
        finally:
            self._holding -= 1


class Teardown:
    """An ExitStack whose steps are named, never stop each other, and are recorded."""

    def __init__(self, signals: _Signals):
        self.signals = signals
        self.stack = contextlib.ExitStack()
        self.cleaned: list[str] = []
        self.failed: list[str] = []

    def push(self, what: str | None, undo: Callable[[], Any]) -> None:
        """`what` names a resource for the report; None for housekeeping."""
        def step() -> None:
            try:
                undo()
                if what:
                    self.cleaned.append(what)
            except Exception as e:  # every other step must still run
                self.failed.append(f"{what or undo}: {e}")
        self.stack.callback(step)

    def close(self) -> None:
        with self.signals.holding():
            self.stack.close()


@dataclass
class RunOptions:
    engine: Path
    results: Path              # results directory: made once the host checks pass
    host: HostFacts
    command: list[str]
    progress: Callable[[Progress], None] = lambda p: None
    resume: str | None = None  # continue this run: its stored points are skipped


def new_run_id(results: Path) -> str:
    taken = _stored_ids(results)
    taken |= {p.name.removeprefix(PREFIX)[:4] for p in RUN_DIR.glob(PREFIX + "*")}
    taken |= {n.removeprefix(PREFIX)[:4] for n in netns_list() if n.startswith(PREFIX)}
    while True:
        run_id = secrets.token_hex(2)
        if run_id not in taken:
            return run_id


def _stored_ids(results: Path) -> set[str]:
    try:
        store = Store(results, create=False)
    except FileNotFoundError:
        return set()
    try:
        return store.run_ids()
    finally:
        store.close()


def preflight(scenarios: list[Scenario], host: HostFacts) -> None:
    """Host problems found before anything is created (SystemFailure)."""
    problems = []
    if host.engine.problem:
        problems.append(f"engine: {host.engine.problem}")
    for s in {(s.switch, s.api, s.runtime): s for s in scenarios}.values():
        problems += [f"{s.switch}: {p}" for p in DATAPLANES[s.switch].check(host)]
        problems += [f"runtime {s.runtime}: {p}" for p in RUNTIMES[s.runtime].check()]
        if host.engine.apis and s.api not in host.engine.apis:
            problems.append(f"api {s.api}: {tools.engine_without(s.api)} "
                            f"(it has {', '.join(host.engine.apis)})")
    if problems:
        raise SystemFailure("this host cannot run the scenario: " + "; ".join(dict.fromkeys(problems)))


def execute(planned: Sweep | list[Scenario], opts: RunOptions) -> RunOutcome:
    swept = planned if isinstance(planned, Sweep) else _as_sweep(planned)
    lock = HostLock()
    run_id = opts.resume or new_run_id(opts.results)
    lock.acquire(run_id)  # HostBusy propagates: nothing created yet
    try:
        # Under the lock: another run's switch or links must not look like a
        # problem of this host (that run gets "host busy" above instead).
        preflight(swept.scenarios, opts.host)
        store = Store(opts.results)
        signals = _Signals()
        signals.install()
        try:
            return _Run(run_id, test_points(swept, run_id), opts, store, signals, swept).execute()
        finally:
            signals.restore()
            store.close()
    finally:
        lock.release()


def test_points(swept: Sweep, run_id: str) -> list[TestPoint]:
    """The plan's points placed on this host, in order, each with its sweep key."""
    total = len(swept.scenarios)
    return [replace(place(s, run_id, i, total), key=p.key, group=p.group, rep=p.rep,
                    label=p.label(swept.plan.axes, swept.plan.repeat))
            for i, (p, s) in enumerate(zip(swept.plan.points, swept.scenarios))]


def _as_sweep(scenarios: list[Scenario]) -> Sweep:
    points = []
    for i, s in enumerate(scenarios):
        group = sweep.point_hash(canonical(s))
        points.append(sweep.Point(i, canonical(s), 0, group, f"{group}-0"))
    return Sweep(sweep.Plan(points, {}, {}), list(scenarios))


class _Run:
    def __init__(self, run_id: str, points: list[TestPoint], opts: RunOptions, store: Store,
                 signals: _Signals, swept: Sweep):
        self.store = store
        self.swept = swept
        self.eta: sweep.Progress | None = None
        self.run_id = run_id
        self.prefix = run_prefix(run_id)
        self.points = points
        self.opts = opts
        self.signals = signals
        self.run_dir = store.directory / "runs" / run_id
        self.outcome = RunOutcome(run_id=run_id, status="running")
        self.runtimes: dict[str, tuple[Runtime, ImageInfo]] = {}

    def execute(self) -> RunOutcome:
        done: set[str] = set()
        if self.opts.resume:
            done = self._resume()
        else:
            self.run_dir.mkdir(parents=True)
            self.store.begin_run(self.run_id, self.opts.command, len(self.points),
                                      self.run_dir, self.opts.host.to_dict(),
                                      self.opts.host.engine.version, self.swept.spec)
        self.eta = sweep.Progress(self.swept.plan, done)
        self.journal = Journal(journal_path(self.prefix))
        run_teardown = Teardown(self.signals)
        try:
            try:
                self._state_dir(run_teardown)
                todo = [point for point in self.points if point.key not in done]
                failed: list[str] = []
                for point in todo:
                    self.outcome.warnings += point.warnings
                    # A point the killed run had begun starts over in a clean directory.
                    shutil.rmtree(self.run_dir / f"point{point.index}", ignore_errors=True)
                    started = time.monotonic()
                    left = len(self.outcome.left)
                    try:
                        self._point(point)
                    except Interrupted:
                        raise
                    except Exception as e:
                        # Its teardown has run: when it left nothing behind the next
                        # point starts on a clean host, and an unattended sweep
                        # loses this point (`--resume` retries it), not the rest.
                        if len(todo) == 1 or len(self.outcome.left) > left:
                            raise
                        failed.append(f"point {point.index + 1} "
                                      f"({point.label or point.scenario.describe()}): "
                                      + (str(e) if isinstance(e, SystemFailure) else _describe(e)))
                        continue
                    self.eta.done(self.swept.plan.points[point.index],
                                  time.monotonic() - started)
                if failed:
                    raise SystemFailure(f"{len(failed)} of {len(todo)} points failed; "
                                        + "; ".join(failed))
                self.outcome.status = "done"
            finally:
                run_teardown.close()
                self.outcome.cleaned += run_teardown.cleaned
                self.outcome.left += run_teardown.failed
        except Interrupted as e:
            self.outcome.status, self.outcome.error = "interrupted", str(e)
            self.outcome.signal = e.signum
        except Exception as e:  # whatever failed, the run is recorded and reported
            self.outcome.status = "failed"
            self.outcome.error = str(e) if isinstance(e, SystemFailure) else _describe(e)
        if self.signals.held and self.outcome.status == "done":
            self.outcome.status = "interrupted"
            self.outcome.signal = self.signals.held
            self.outcome.error = f"interrupted by {signal.Signals(self.signals.held).name}"
        self.outcome.left += [f"{e.kind} {e.name}" for e in self.journal.live()]
        self.journal.close(remove=not self.outcome.left)
        self.store.finish_run(self.run_id, self.outcome.status, self.outcome.error)
        return self.outcome

    def _resume(self) -> set[str]:
        """Leftovers of the interrupted run go first (a SIGKILL left them, journal
        included); its unfinished points are forgotten; its finished ones stay."""
        from cnfperf.cleanup import cleanup

        removed, failed = cleanup(force=True, run_id=self.run_id)   # we hold the lock
        if failed:
            raise SystemFailure(f"run {self.run_id}: could not remove what it left: "
                                + "; ".join(failed))
        self.outcome.resumed_cleanup = removed
        self.store.resume_run(self.run_id, len(self.points))
        done = self.store.done_keys(self.run_id)
        self.outcome.already_done = sum(p.key in done for p in self.points)
        self.run_dir.mkdir(parents=True, exist_ok=True)
        return done

    def _report(self, progress: Progress) -> None:
        if self.eta is not None:
            progress.eta = self.eta.eta()
        # Whoever reads our stderr may be gone (a closed pipe): reporting must
        # never cost the teardown.
        try:
            self.opts.progress(progress)
        except Exception:
            pass

    def _state_dir(self, teardown: Teardown) -> None:
        """Where runtimes keep bundles; tmpfs, gone with the run."""
        self.state_dir = RUN_DIR / self.prefix
        self.journal.add("dir", str(self.state_dir))
        self.state_dir.mkdir(parents=True)

        def remove() -> None:
            shutil.rmtree(self.state_dir, ignore_errors=True)
            self.journal.discard("dir", str(self.state_dir))
        teardown.push(f"directory {self.state_dir}", remove)

    def _runtime(self, name: str) -> tuple[Runtime, ImageInfo]:
        if name not in self.runtimes:
            runtime = RUNTIMES[name](self.journal, self.state_dir)
            self.runtimes[name] = (runtime, runtime.prepare(self.opts.engine))
        return self.runtimes[name]

    def _point(self, point: TestPoint) -> None:
        started = time.time()
        s = point.scenario
        params = s.model_dump()
        record = dict(placement=[asdict(p) for p in point.pairs], warnings=list(point.warnings),
                      versions={"cnfperf": self.opts.host.cnfperf,
                                "engine": self.opts.host.engine.version,
                                "kernel": self.opts.host.kernel, "runc": self.opts.host.runc})
        record.update(key=point.key or None, group=point.group or None, rep=point.rep)
        image = None
        teardown = Teardown(self.signals)
        try:
            try:
                self._report(Progress(point, "setup"))
                runtime, image = self._runtime(s.runtime)
                measuring = _Point(point, self, runtime, teardown)
                found: dict[str, Any] = {}
                if is_search(s.rate):
                    result, found = measuring.search()
                else:
                    result = measuring.measure()
                # Committed before teardown: a failing teardown must not cost the data.
                self.store.add_point(self.run_id, point.index, params, status="done",
                                          started=started, result=result, image=image,
                                          search=found.get("search"),
                                          trials=found.get("trials", ()), **record)
            finally:
                self._report(Progress(point, "teardown"))
                teardown.close()
                self.outcome.cleaned += teardown.cleaned
                self.outcome.left += teardown.failed
        except BaseException as e:
            status = "interrupted" if isinstance(e, (Interrupted, KeyboardInterrupt)) else "failed"
            self.store.add_point(self.run_id, point.index, params, status=status,
                                      started=started, error=str(e), image=image, **record)
            self._report(Progress(point, "failed"))
            raise
        self._report(Progress(point, "done"))


def _close_stdin(proc: subprocess.Popen) -> None:
    if proc.stdin is not None:
        with contextlib.suppress(OSError):
            proc.stdin.close()


def _describe(e: BaseException) -> str:
    return f"{type(e).__name__}: {e}" if str(e) else type(e).__name__


class _Point:
    def __init__(self, point: TestPoint, run: _Run, runtime: Runtime, teardown: Teardown):
        self.point = point
        self.run = run
        self.runtime = runtime
        self.teardown = teardown
        self.journal = run.journal
        self.dir = run.run_dir / f"point{point.index}"
        self.out = self.dir             # where the current trial's engine files go
        self.scenario = point.scenario  # what the current trial measures
        self.detail = ""
        self.outputs: dict[str, EngineOutput] = {}
        self.procs: dict[str, subprocess.Popen] = {}

    def measure(self) -> model.PointResult:
        self.setup()
        return self.trial(self.point.scenario, self.dir)

    def setup(self) -> None:
        """Namespaces, data plane and containers: the testbed every trial runs on."""
        p, s = self.point, self.point.scenario
        self.dir.mkdir(parents=True)
        # The run directory describes itself without the database.
        (self.dir / "point.json").write_text(json.dumps(
            {"scenario": s.model_dump(), "pairs": [asdict(pair) for pair in p.pairs],
             "cpus": p.cpus, "warnings": p.warnings, "key": p.key, "rep": p.rep},
            indent=1) + "\n")
        for ep in p.endpoints:
            self._netns(ep.name)
        self.dataplane = DATAPLANES[s.switch](self.journal)
        self.teardown.push(f"data-plane {s.switch}", self.dataplane.stop)
        self.dataplane.start(p)
        self.att = {ep.name: self.dataplane.attach(ep) for ep in p.endpoints}
        self.containers = {}
        for ep in p.endpoints:
            c = self.runtime.create(ep.name, [ep.cpu], ep.name, self.att[ep.name].mounts)
            self.teardown.push(f"container {ep.name}", c.destroy)
            self.containers[ep.name] = c

    def trial(self, s: Scenario, out: Path) -> model.PointResult:
        """One measurement on the testbed: receivers, senders, drain, summaries."""
        p, att, containers = self.point, self.att, self.containers
        self.scenario, self.out = s, out
        self.outputs, self.procs = {}, {}
        before = self.dataplane.counters()
        for pair in p.pairs:
            self._start(containers[pair.receiver.name], pair.receiver, pair.sender, att)
        self._wait_ready([pair.receiver for pair in p.pairs])
        for pair in p.pairs:
            self._start(containers[pair.sender.name], pair.sender, pair.receiver, att)
        senders, receivers = [pair.sender for pair in p.pairs], [pair.receiver for pair in p.pairs]
        self._wait_senders(senders)
        time.sleep(DRAIN)
        self._stop_receivers(receivers)
        after = self.dataplane.counters()
        # No engine polls any more: ports may close now.
        self._release(senders)
        self._release(receivers)
        return self._result(before, after)

    def search(self) -> tuple[model.PointResult, dict[str, Any]]:
        """NDR/PDR on this point's testbed, set up once (experiments/trials.py)."""
        self.setup()
        return trials.search(self.point.scenario, self._trial_in, self._say)

    def _trial_in(self, s: Scenario, n: int, what: str) -> model.PointResult:
        self.detail = f"trial {n} {what}"
        out = self.dir / f"trial{n}"
        out.mkdir()
        return self.trial(s, out)

    def _say(self, detail: str) -> None:
        self.run._report(Progress(self.point, "trial", detail=detail))

    def _netns(self, name: str) -> None:
        def remove() -> None:
            # A process still inside would keep the namespace alive unnamed.
            for pid in netns_pids(name):
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
            del_netns(self.journal, name)
        self.teardown.push(f"netns {name}", remove)
        add_netns(self.journal, name)

    def _start(self, container: Any, ep: Endpoint, peer: Endpoint, att: dict) -> None:
        args = engine_argv(container.engine, ep, att[ep.name], peer, att[peer.name],
                           self.scenario)
        (self.out / f"{ep.name}.argv.json").write_text(json.dumps(args) + "\n")
        raw = open(self.out / f"{ep.name}.jsonl", "w")
        self.teardown.push(None, raw.close)
        with open(self.out / f"{ep.name}.stderr", "wb") as err:
            proc = container.exec(args, stderr=err, stdin=subprocess.PIPE)
        self.procs[ep.name] = proc
        out = EngineOutput(ep.name, raw)
        out.follow(proc.stdout)
        self.outputs[ep.name] = out

        def stop() -> None:
            # Only on the way out of a failure: a finished engine has exited.
            _close_stdin(proc)
            if proc.poll() is None:
                proc.kill()
            proc.wait(timeout=STOP_TIMEOUT)
            out.join(STOP_TIMEOUT)
        self.teardown.push(f"engine {ep.role} in {ep.name}", stop)

    def _failed(self, ep: Endpoint, what: str) -> SystemFailure:
        tail = ""
        with contextlib.suppress(OSError):
            lines = (self.out / f"{ep.name}.stderr").read_text(errors="replace").split("\n")
            tail = " | ".join(l for l in lines if l.strip())[-400:]
        problems = self.outputs[ep.name].problems
        if problems:
            tail = (tail + " | " if tail else "") + problems[0]
        return SystemFailure(f"engine {ep.role} in {ep.name} {what}" + (f": {tail}" if tail else ""))

    def _wait_ready(self, eps: list[Endpoint]) -> None:
        self._await(eps, "ready", READY_TIMEOUT, "before it was ready")

    def _await(self, eps: list[Endpoint], record: str, timeout: float, when: str,
               every: float = 0.05, tick: Callable[[], None] | None = None) -> None:
        """Until each engine has printed its `ready` or `summary` record; an
        engine that exits first, or a timeout, fails the point. `tick` runs
        every `every` seconds while it waits."""
        deadline = time.monotonic() + timeout
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
            if tick:
                tick()
            time.sleep(every)

    def _wait_senders(self, eps: list[Endpoint]) -> None:
        """Until every sender has printed its summary (it then holds its port)."""
        s = self.scenario
        expected = s.warmup + s.duration + (CLIENT_DRAIN if s.mode == "latency" else 0)
        start = time.monotonic()

        def progress() -> None:
            self.run._report(Progress(self.point, "measuring", time.monotonic() - start,
                                      expected, self._rx_rate(), detail=self.detail))
        self._await(eps, "summary", expected + EXIT_MARGIN, "before its summary",
                    every=0.25, tick=progress)

    def _rx_rate(self) -> float | None:
        rates = []
        for pair in self.point.pairs:
            ep = pair.sender if self.point.scenario.mode == "latency" else pair.receiver
            last = self.outputs[ep.name].last_interval
            if last:
                rates.append(float(last.get("rx_pps", 0) or 0))
        return sum(rates) if rates else None

    def _stop_receivers(self, eps: list[Endpoint]) -> None:
        """SIGINT: each receiver stops polling and prints its summary (and holds)."""
        for ep in eps:
            if self.procs[ep.name].poll() is None:
                self.procs[ep.name].send_signal(signal.SIGINT)
        self._await(eps, "summary", STOP_TIMEOUT, "after SIGINT")

    def _release(self, eps: list[Endpoint]) -> None:
        """End of stdin: the engines close their ports and exit."""
        for ep in eps:
            _close_stdin(self.procs[ep.name])
        for ep in eps:
            try:
                code = self.procs[ep.name].wait(timeout=STOP_TIMEOUT)
            except subprocess.TimeoutExpired:
                raise self._failed(ep, f"did not exit within {STOP_TIMEOUT:g} s "
                                       "of being released") from None
            self.outputs[ep.name].join(STOP_TIMEOUT)
            if code != 0:
                raise self._failed(ep, f"exited with code {code} while closing its port")

    def _result(self, before: dict, after: dict) -> model.PointResult:
        p = self.point
        for ep in p.endpoints:
            self.outputs[ep.name].join(STOP_TIMEOUT)
            if self.outputs[ep.name].summary is None:
                raise self._failed(ep, "printed no summary")
        metrics = {ep.name: model.endpoint_metrics(ep.pair, ep.name, ep.role, ep.cpu,
                                                   self.outputs[ep.name].summary)
                   for ep in p.endpoints}
        pairs = [model.pair_result(pair.index, metrics[pair.sender.name],
                                   metrics[pair.receiver.name], p.scenario.mode)
                 for pair in p.pairs]
        for pair, result in zip(p.pairs, pairs):
            counting = pair.sender if p.scenario.mode == "latency" else pair.receiver
            result.steady_rx_pps = self._steady_rx_pps(counting)
        counters = {port: after[port] - before[port] for port in after if port in before}
        return model.PointResult(pairs=pairs, total=model.total(pairs),
                                 endpoints=list(metrics.values()), counters=counters)

    def _steady_rx_pps(self, ep: Endpoint) -> float | None:
        """The received rate of the intervals after the warm-up, without the last
        partial one, nor one the sender stopped inside; None if none qualifies."""
        intervals = [r for r in self.outputs[ep.name].records if r["type"] == "interval"]
        s = self.scenario
        try:
            # Receivers' clocks start at their first frame, about when the sender
            # starts; TRAFFIC_SLACK covers the difference.
            kept = stats.steady_state(intervals, warmup=s.warmup,
                                      until=s.warmup + s.duration + TRAFFIC_SLACK)
        except (KeyError, TypeError, ValueError):
            return None
        return stats.interval_rate(kept, "rx_packets") if kept else None
