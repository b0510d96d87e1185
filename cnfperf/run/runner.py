"""Runs a plan: one host lock, a journal on disk, and for every test point

    testbed (testbed.py) -> trials, as the point's experiment strategy asks
    (strategies/; one trial: trial.py) -> store -> teardown

Every step's undo is on the point's Teardown (teardown.py) the moment the step
is taken, and the run's own steps on the run's, so teardown runs in reverse on
success, error, SIGINT and SIGTERM alike. A point is stored before its
teardown (a failing teardown must not cost its data) and before the next point
starts. A point that fails in a sweep is recorded and the sweep goes on, as
long as its teardown left nothing behind. `--resume` first removes what the
interrupted run left (its journal says what), then skips the points it stored.
"""
from __future__ import annotations

import contextlib
import json
import secrets
import shutil
import time
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass, field, replace
from functools import partial
from pathlib import Path
from typing import Any

from cnfperf import PREFIX, SystemFailure, nfs, strategies
from cnfperf.run import baseline
from cnfperf.run.checks import dataplane_of, place_point, preflight
from cnfperf.run.cleanup import cleanup
from cnfperf.host.links import netns_list
from cnfperf.experiments import sweep
from cnfperf.host.facts import HostFacts
from cnfperf.host.journal import RUN_DIR, Journal, journal_path
from cnfperf.host.lock import LOCK_PATH, HostLock
from cnfperf.fields import LOCAL
from cnfperf.plan import TestPoint, nf_hosts, nf_places, run_prefix
from cnfperf.results.model import PointResult
from cnfperf.results.store import Store
from cnfperf.scenario import Scenario, Sweep, canonical, tester_hosts
from cnfperf.run.teardown import Interrupted, Signals, Teardown
from cnfperf.run.keep import Keeper
from cnfperf.run.testbed import Builder, Switch, Testbed
from cnfperf.remote.hosts import Hosts, open_hosts
from cnfperf.runtimes import RUNTIMES, in_guest, placed
from cnfperf.run.live import Live
from cnfperf.run.trial import Progress, RunTrial, Trials, run as run_trial


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


@dataclass
class RunOptions:
    engine: Path
    results: Path              # results directory: made once the host checks pass
    host: HostFacts
    command: list[str]
    progress: Callable[[Progress], None] = lambda p: None
    resume: str | None = None  # continue this run: its stored points are skipped
    # The machine: this host by default; tests without root pass a tmp_path and fakes.
    state: Path = RUN_DIR      # tmpfs: the host lock, journals, runtime bundles
    names: Callable[[], Iterable[str]] = netns_list   # taken here: a new run id avoids them
    check: Callable[[list[Scenario], HostFacts], None] = preflight
    # (removed, failed) of what a killed run left: `cnfperf cleanup`, forced: the lock is ours
    leftovers: Callable[..., tuple[list[str], list[str]]] = partial(cleanup, force=True)
    # (journal, the run's state directory, engine, the run's teardown)
    builder: Callable[[Journal, Path, Path, Teardown], Builder] = Builder
    trial: RunTrial = run_trial
    # The plan's other hosts, connected and asked before anything is created
    # (remote/hosts.py); None when every point runs here.
    hosts: Callable[[list[Scenario]], Hosts | None] = open_hosts
    # Whoever watches the run as it goes (events, metrics: run/live.py)
    live: Live | None = None


def new_run_id(results: Path, state: Path = RUN_DIR,
               names: Callable[[], Iterable[str]] = netns_list) -> str:
    """Four hex digits no stored run, journal or resource of this host uses."""
    taken = _stored_ids(results)
    taken |= {p.name.removeprefix(PREFIX)[:4] for p in state.glob(PREFIX + "*")}
    taken |= {n.removeprefix(PREFIX)[:4] for n in names() if n.startswith(PREFIX)}
    while True:
        run_id = secrets.token_hex(2)
        if run_id not in taken:
            return run_id


def _stored_ids(results: Path) -> set[str]:
    try:
        store = Store(results, create=False)
    except FileNotFoundError:
        return set()
    with contextlib.closing(store):
        return store.run_ids()


def execute(planned: Sweep | list[Scenario], opts: RunOptions) -> RunOutcome:
    swept = planned if isinstance(planned, Sweep) else _as_sweep(planned)
    lock = HostLock(opts.state / LOCK_PATH.name)
    run_id = opts.resume or new_run_id(opts.results, opts.state, opts.names)
    lock.acquire(run_id)  # HostBusy propagates: nothing created yet
    hosts = None
    try:
        # Under the lock: another run's switch or links must not look like a
        # problem of this host (that run gets "host busy" above instead).
        cores = tuple(swept.spec.get("cpus") or ()) or None
        opts.check([*swept.scenarios, *baseline.scenarios(swept.scenarios, cores)], opts.host)
        # Every other host's preflight too, before anything exists anywhere.
        hosts = opts.hosts(swept.scenarios)
        if hosts is not None:
            hosts.begin(run_id)
        store = Store(opts.results)
        signals = Signals()
        signals.install()
        try:
            outcome = Run(run_id, swept, opts, store, signals, hosts).execute()
        finally:
            signals.restore()
            store.close()
    finally:
        left = hosts.close() if hosts is not None else []
        lock.release()
    outcome.left += left
    return outcome


def test_points(swept: Sweep, run_id: str) -> list[TestPoint]:
    """The plan's points placed on this host, on the cores it was planned on, in
    order, each with its sweep key and its tester chosen (checks.place_point)."""
    total, cores = len(swept.scenarios), tuple(swept.spec.get("cpus") or ()) or None
    return [replace(place_point(s, run_id, i, total, cores), key=p.key, group=p.group, rep=p.rep,
                    label=p.label(swept.plan.axes), expect=p.expect)
            for i, (p, s) in enumerate(zip(swept.plan.points, swept.scenarios))]


def _as_sweep(scenarios: list[Scenario]) -> Sweep:
    points = []
    for i, s in enumerate(scenarios):
        group = sweep.point_hash(canonical(s))
        points.append(sweep.SweepPoint(i, canonical(s), 0, group, f"{group}-0"))
    return Sweep(sweep.Plan(points, {}, {}), list(scenarios))


class Run:
    """One run of a plan: its points in order, on this run's journal and store."""

    def __init__(self, run_id: str, swept: Sweep, opts: RunOptions, store: Store,
                 signals: Signals, hosts: Hosts | None = None):
        self.run_id = run_id
        self.hosts = hosts
        self.swept = swept
        self.opts = opts
        self.store = store
        self.signals = signals
        self.points = test_points(swept, run_id)
        self.measured = {p.key for p in self.points}   # a generator baseline has its own
        self.prefix = run_prefix(run_id)
        self.run_dir = store.directory / "runs" / run_id
        self.outcome = RunOutcome(run_id=run_id, status="running")
        self.eta: sweep.Progress | None = None
        self.limits: dict[str, float] = {}   # generator baselines' rx pps, by key

    def execute(self) -> RunOutcome:
        done = self._resume() if self.opts.resume else self._begin()
        self.eta = sweep.Progress(self.swept.plan, done)
        self.journal = Journal(self.opts.state / journal_path(self.prefix).name)
        todo = [point for point in self.points if point.key not in done]
        if self.opts.live:
            self.opts.live.run_start(self.run_id, len(self.points), len(todo),
                                     bool(self.opts.resume), self.opts.command)
        try:
            self._sweep(todo)
            if self.signals.held:   # it came during a teardown and waited for its end
                raise Interrupted(self.signals.held)
            self.outcome.status = "done"
        except Interrupted as e:
            self.outcome.status, self.outcome.error = "interrupted", str(e)
            self.outcome.signal = e.signum
        except Exception as e:  # whatever failed, the run is recorded and reported
            self.outcome.status, self.outcome.error = "failed", _why(e)
        self.outcome.left += [f"{e.kind} {e.name}" for e in self.journal.live()]
        self.journal.close(remove=not self.outcome.left)
        self.store.finish_run(self.run_id, self.outcome.status, self.outcome.error)
        if self.opts.live:
            self.opts.live.run_end(self.outcome.status, len(self.store.done_keys(self.run_id)),
                                   self.outcome.error)
        return self.outcome

    def _begin(self) -> set[str]:
        self.run_dir.mkdir(parents=True)
        host = self.opts.host
        self.store.begin_run(self.run_id, self.opts.command, len(self.points), self.run_dir,
                             host.to_dict(), host.engine.version, self.swept.spec)
        return set()

    def _resume(self) -> set[str]:
        """Leftovers of the interrupted run go first (a SIGKILL left them, journal
        included); its unfinished points are forgotten; its finished ones stay."""
        removed, failed = self.opts.leftovers(run_id=self.run_id)
        if failed:
            raise SystemFailure(f"run {self.run_id}: could not remove what it left: "
                                + "; ".join(failed))
        self.outcome.resumed_cleanup = removed
        self.store.resume_run(self.run_id, len(self.points))
        done = self.store.done_keys(self.run_id)
        self.outcome.already_done = sum(p.key in done for p in self.points)
        self.run_dir.mkdir(parents=True, exist_ok=True)
        return done

    def _sweep(self, todo: list[TestPoint]) -> None:
        teardown = Teardown(self.signals)
        try:
            builder = self.opts.builder(self.journal, self.opts.state / self.prefix,
                                        self.opts.engine, teardown)
            builder.hosts = self.hosts
            self._baselines(todo, builder)
            failed = []
            for point in todo:
                started, left = time.monotonic(), len(self.outcome.left)
                try:
                    self._point(point, builder)
                except Interrupted:
                    raise
                except Exception as e:
                    # Its teardown has run: when it left nothing behind the next
                    # point starts on a clean host, and an unattended sweep
                    # loses this point (`--resume` retries it), not the rest.
                    if len(todo) == 1 or len(self.outcome.left) > left:
                        raise
                    failed.append(f"point {point.index + 1} "
                                  f"({point.label or point.scenario.describe()}): {_why(e)}")
                    continue
                self.eta.done(self.swept.plan.points[point.index], time.monotonic() - started)
            if failed:
                raise SystemFailure(f"{len(failed)} of {len(todo)} points failed; "
                                    + "; ".join(failed))
        finally:
            self._close(teardown)

    def _baselines(self, todo: list[TestPoint], builder: Builder) -> None:
        """generator_baseline: the tester's limits, measured before the points
        that ask for them (run/baseline.py), each once; a resumed run keeps those
        it stored. One that fails is stored so and said; its points then have
        no share (the run goes on: its points do not depend on it)."""
        self.limits = {b["key"]: b["rx_pps"] for b in self.store.baselines(self.run_id)
                       if b["status"] == "done"}
        cores = tuple(self.swept.spec.get("cpus") or ()) or None
        for key, point in baseline.plan(todo, self.run_id, cores):
            if key in self.limits:
                continue
            started, params = time.time(), point.scenario.model_dump()
            try:
                result = self._baseline(point, builder)
            except Interrupted:
                raise
            except Exception as e:
                self.store.add_baseline(self.run_id, key, params, started=started, error=_why(e))
                self.outcome.warnings.append(
                    f"generator baseline {point.scenario.describe()} failed: {_why(e)}; the "
                    "points it was for have no share of it")
                self._report(Progress(point, "failed"))
                continue
            self.store.add_baseline(self.run_id, key, params, started=started, result=result)
            self.limits[key] = result.total.rx_pps
            self._report(Progress(point, "done"))

    def _baseline(self, point: TestPoint, builder: Builder) -> PointResult:
        """One baseline: its testbed, one unpaced trial (strategies' fixed), its
        teardown; its files in the run's baseline-KEY directory."""
        teardown = Teardown(self.signals)
        try:
            self._report(Progress(point, "setup"))
            bed = builder.build(point, teardown,
                                lambda d: self._report(Progress(point, "setup", detail=d)))
            directory = self.run_dir / f"baseline-{point.key}"
            shutil.rmtree(directory, ignore_errors=True)
            directory.mkdir(parents=True)
            trials = Trials(bed, directory, teardown, self._report, self.opts.trial)
            result, _ = strategies.choose(point.scenario).run(trials, point.scenario)
            trials.close()
            return result
        finally:
            with self.signals.holding():
                self._report(Progress(point, "teardown"))
                self._close(teardown)

    def _point(self, point: TestPoint, builder: Builder) -> None:
        self.outcome.warnings += point.warnings
        started, params, record = time.time(), point.scenario.model_dump(), self._record(point)
        image = nf_image = None
        teardown = Teardown(self.signals)
        live = self.opts.live
        if live:
            live.point_start(point)
        try:
            try:
                self._report(Progress(point, "setup"))
                # the images this host's nodes run in (another host makes its own)
                s = point.scenario
                image = builder.ends_image(point) if LOCAL in tester_hosts(s) else None
                nf_image = builder.nf_image(point) if LOCAL in nf_hosts(s) else None
                result, found = self._measure(point, builder, teardown, record)
                # a poller that lost its core for long marks the point (model.STALL_MARK)
                stalled = result.stall_warnings()
                record["warnings"] = [*record["warnings"], *stalled]
                self.outcome.warnings += stalled
                # Committed before teardown: a failing teardown must not cost the data.
                self.store.add_point(self.run_id, point.index, params, status="done",
                                     started=started, result=result, image=image,
                                     nf_image=nf_image, search=found.get("search"),
                                     trials=found.get("trials", ()),
                                     goals=found.get("goals", ()), **record)
                if live:
                    live.point_end(point, "done", time.time() - started, result, found)
            finally:
                with self.signals.holding():   # a Ctrl-C here must not skip the teardown
                    self._report(Progress(point, "teardown"))
                    self._close(teardown)
        except BaseException as e:
            status = "interrupted" if isinstance(e, (Interrupted, KeyboardInterrupt)) else "failed"
            self.store.add_point(self.run_id, point.index, params, status=status,
                                 started=started, error=str(e), image=image,
                                 nf_image=nf_image, **record)
            if live:
                live.point_end(point, status, time.time() - started, error=str(e))
            self._report(Progress(point, "failed"))
            raise
        self._report(Progress(point, "done"))

    def _measure(self, point: TestPoint, builder: Builder, teardown: Teardown,
                 record: dict[str, Any]) -> tuple[PointResult, dict[str, Any]]:
        """The point's testbed, set up once, and what its strategy measures on
        it; how its switch was configured goes into the `record`'s switch_facts."""
        directory = self._directory(point)

        def say(detail: str) -> None:
            self._report(Progress(point, "setup", detail=detail))
        bed = builder.build(point, teardown, say)
        if placed_facts := bed.facts():
            record["cluster_facts"] = {**(record.get("cluster_facts") or {}), "pods": placed_facts}
        applied = _switch_json(directory, bed, builder.keeper, say)
        if applied and record.get("switch_facts"):
            record["switch_facts"] = {**record["switch_facts"], "applied": applied}
        def keep(rows: list[dict[str, Any]]) -> None:
            self.store.keep_soak(self.run_id, point.index, rows)
            if self.opts.live:
                self.opts.live.seconds(point, rows)
        trials = Trials(bed, directory, teardown, self._report, self.opts.trial, keep=keep,
                        kept=lambda: self.store.soak(self.run_id, point.index))
        measured = strategies.choose(point.scenario).run(trials, point.scenario)
        trials.close()   # its kept engines close their ports (run/kept.py)
        builder.keeper.passed(point)   # its switch may serve the next point
        return measured

    def _directory(self, point: TestPoint) -> Path:
        """The point's directory: it describes itself without the database. A
        point the interrupted run had begun starts over in a clean one."""
        directory = self.run_dir / f"point{point.index}"
        shutil.rmtree(directory, ignore_errors=True)
        directory.mkdir(parents=True)
        (directory / "point.json").write_text(json.dumps(
            {"scenario": point.scenario.model_dump(), "pairs": [asdict(p) for p in point.paths],
             "cpus": point.cpus, "tester_why": point.tester_why, "pollers": point.pollers,
             "warnings": point.warnings, "key": point.key,
             "rep": point.rep}, indent=1) + "\n")
        return directory

    def _record(self, point: TestPoint) -> dict[str, Any]:
        """What the store keeps of a point besides its scenario and result."""
        host = self.opts.host
        versions = {"cnfperf": host.cnfperf, "engine": host.engine.version,
                    "kernel": host.kernel, "runc": host.runc}
        dataplane = dataplane_of(point.scenario)
        # e.g. which VPP ran it, on the host it ran on
        versions.update(self.hosts.switch_versions(point)
                        if self.hosts and point.scenario.dut_host != LOCAL
                        else dataplane.versions(host))
        return dict(placement=[asdict(p) for p in point.paths], warnings=list(point.warnings),
                    versions=versions, switch_facts=dataplane.stored(),
                    nf_facts=nfs.kind(point.scenario.nf).stored() if point.scenario.nfs else None,
                    vm_facts=vm_facts(point), cluster_facts=cluster_facts(point),
                    hosts=self.hosts.stored(point) if self.hosts else None,
                    key=point.key or None, group=point.group or None, rep=point.rep,
                    expect=list(point.expect), shape=point.shape,
                    tester_why=point.tester_why, pollers=point.pollers, point_cores=len(point.cpus),
                    baseline_pps=self.limits.get(baseline.key(point.scenario) or ""))

    def _close(self, teardown: Teardown) -> None:
        teardown.close()
        self.outcome.cleaned += teardown.cleaned
        self.outcome.left += teardown.failed

    def _report(self, progress: Progress) -> None:
        self.signals.check()    # a signal a finalizer swallowed stops the run here
        if self.eta is not None:
            progress.eta = self.eta.eta()
        # Whoever reads our stderr may be gone (a closed pipe): reporting must
        # never cost the teardown; a signal that lands meanwhile still counts.
        try:
            self.opts.progress(progress)
        except Interrupted:
            raise
        except Exception:
            pass
        # a run's points are watched, not its generator baselines; a watcher
        # that fails is dropped by Live itself
        if self.opts.live and progress.point.key in self.measured:
            self.opts.live.progress(progress)


def _why(e: BaseException) -> str:
    """A SystemFailure says what failed; anything else also says what it is."""
    if isinstance(e, SystemFailure):
        return str(e)
    return f"{type(e).__name__}: {e}" if str(e) else type(e).__name__


def _switch_json(directory: Path, bed: Testbed, keeper: Keeper,
                 say: Callable[[str], None]) -> dict[str, Any]:
    """switch.json: which switch served the point, whether it was kept from the
    point before (and how many points it has served) or fresh (and why), and
    so each VM on it (`guests`, each with its QEMU's pid), its counters as the
    point began (zero on a clean switch) and how it was
    configured, read back from it (DataPlane.applied), which it returns."""
    if not any(isinstance(n, Switch) for n in bed.nodes.values()):
        return {}
    bed.start_counters = bed.counters()
    dataplane = bed.dataplane
    try:
        applied = dataplane.applied()
    except SystemFailure as e:   # what is only written down does not fail a point
        applied = {}
        say(f"its configuration not read back: {e}")
    served = dict(keeper.served)
    # each VM with its QEMU's pid: a kept one's is the point before's
    served["guests"] = {name: {**how, "pid": bed.container(name).init_pid}
                        for name, how in served.get("guests", {}).items() if name in bed.nodes}
    (directory / "switch.json").write_text(json.dumps(
        {"switch": dataplane.name, "keeps": dataplane.keeps, **served,
         "pids": dataplane.pids(),
         "counters": {port: asdict(c) for port, c in sorted(bed.start_counters.items())},
         "applied": applied},
        indent=1) + "\n")
    return applied


def cluster_facts(point: TestPoint) -> dict[str, Any] | None:
    """The cluster the point's pods ran on (the pod runtime's facts: its
    Kubernetes version, node, CPU manager policy); None without pods. The
    testbed adds each pod's own (Container.facts: its QoS class and cores)."""
    s = point.scenario
    switch = (s.switch_in,) if s.switch_in != "host" else ()
    places = [p for p in dict.fromkeys((s.endpoint_in, *switch, *nf_places(s.nf_in, s.nfs)))
              if placed(p) and not in_guest(p) and (p in (s.endpoint_in, *switch) or s.nfs)]
    facts: dict[str, Any] = {}
    for place in places:
        facts.update(RUNTIMES[placed(place) or s.runtime].stored(s))
    return facts or None


def vm_facts(point: TestPoint) -> dict[str, Any] | None:
    """How the point's virtual machines run (the VM runtime's facts for its
    accel: auto resolved to kvm or tcg), and how many; None without VMs."""
    if not point.vms:
        return None
    s = point.scenario
    facts: dict[str, Any] = {}
    for place in dict.fromkeys((s.endpoint_in, *nf_places(s.nf_in, s.nfs))):
        if in_guest(place):
            facts.update(RUNTIMES[placed(place) or s.runtime].stored(s))
    return {**facts, "vms": len(point.vms)}
