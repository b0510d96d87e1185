"""The runner on a make-believe machine: the real testbed Builder with a data
plane, a runtime and namespaces that only record, trials that return canned
results, and the lock, journal and state directory in tmp_path. No root, no
engine: what is tested is the run around the points (order, store, progress,
teardown, failures, resume), and last the real trial's two-phase stop on
stand-in engines. Real runs are tested end to end in tests/e2e/orchestrator."""
from __future__ import annotations

import functools
import json
import re
import signal
import subprocess
import sys

import jsonschema
import pytest

from cnfperf import SystemFailure
from cnfperf.run import live, runner, trial as trial_module
from cnfperf.run.checks import load_plan
from cnfperf.dataplanes import Attachment
from cnfperf.host.facts import EngineFacts, HostFacts, Hugepages
from cnfperf.results import model
from cnfperf.results.store import Store
from cnfperf.runtimes import FULL, ImageInfo
from cnfperf.run.testbed import Builder
from cnfperf.run.trial import Progress
from harness import REPO


class Machine:
    """Records what the run does to it, in order; `fail` makes steps fail."""

    def __init__(self) -> None:
        self.events: list[tuple] = []
        self.fail: dict[str, Exception] = {}    # step ("trial 1", "stop") -> what it raises

    def step(self, *event) -> None:
        self.events.append(event)
        name = " ".join(str(e) for e in event)
        for step, e in self.fail.items():
            if name.startswith(step):
                raise e

    def of(self, kind: str) -> list[tuple]:
        return [e for e in self.events if e[0] == kind]


class Switch:
    """A DataPlane that records its lifecycle."""

    name = "veth"
    poll_threads = 0
    container = None
    keeps = False
    cpus: tuple[int, ...] = ()   # no poll threads

    def window(self, open: bool) -> None:
        self.machine.step("window", "open" if open else "closed")

    def __init__(self, machine: Machine, journal, home=None) -> None:
        self.machine = machine

    def pids(self) -> list[int]:
        return []

    def start(self, point) -> None:
        self.machine.step("start", point.index)

    def attach(self, port):
        return Attachment(mac=port.mac, iface=port.name)

    def eal_args(self, node, attachments) -> tuple:
        return ()

    def counters(self) -> dict:
        return {}

    def cost_begin(self) -> None:
        self.machine.step("cost", "begin")

    def cost(self) -> dict:
        """What a switch says of its own cost (testpmd's --record-core-cycles)."""
        return {"source": "fake", "cycles_per_packet": 42.0, "packets": 1000}

    def queues(self) -> list:
        return []

    def steer(self, cores) -> None:
        self.machine.step("steer", tuple(cores))

    def applied(self) -> dict:
        """What a switch read back of its configuration (its rules)."""
        return {"forward": "port", "rules": ["in_port=1 actions=output:2"]}

    def stop(self) -> None:
        self.machine.step("stop")


class Runtime:
    """A container runtime whose containers only record (its images by name)."""

    own_kernel = False
    host_files = False
    takes_ports = False
    keeps = False
    place = None

    def __init__(self, machine: Machine, journal, state) -> None:
        self.machine = machine

    def configure_for(self, s) -> None:
        pass

    def close(self) -> None:
        return None

    def prepare(self, engine, image=FULL) -> ImageInfo:
        self.machine.step("prepare", image.name, engine.name)
        return ImageInfo(f"fake-{image.name}", "/fake", 1 if image == FULL else 2)

    def create(self, name, cpus, netns, mounts=(), image=FULL, quota=None, nics=(),
               lazy=False):
        machine = self.machine
        machine.step("create", name, image.name)
        return type("Container", (), {"engine": f"/engine-{image.name}", "own_kernel": False,
                                      "slowdown": 1.0, "facts": lambda self: {},
                                      "guest_cpu": lambda self, core: core, "init_pid": 1,
                                      "release": lambda self: machine.step("release", name),
                                      "stale": lambda self: None,
                                      "destroy": lambda self: machine.step("destroy", name)})()


class Namespaces:
    """Network namespaces that only record (testbed.Namespaces)."""

    def __init__(self, machine: Machine) -> None:
        self.machine = machine

    def add(self, journal, name) -> None:
        self.machine.step("netns", name)

    def remove(self, journal, name) -> None:
        self.machine.step("del-netns", name)


def result(tx_pps: float, rx_pps: float, seconds: float = 1.0) -> model.PointResult:
    sent, received = int(tx_pps * seconds), int(rx_pps * seconds)
    pair = model.PairResult(pair=0, offered_pps=tx_pps, sent=sent, received=received,
                            lost=sent - received, loss_ratio=(sent - received) / sent,
                            tx_pps=tx_pps, rx_pps=rx_pps, rx_bps=0.0, reordered=0,
                            duplicates=0, latency=None)
    sender = model.EndpointMetrics(pair=0, endpoint="a", role="send", cpu=0, tx_packets=sent,
                                   tx_pps=tx_pps, offered_pps=tx_pps, seconds=seconds)
    return model.PointResult(pairs=[pair], total=model.total([pair]), endpoints=[sender],
                             counters={})


def trial(machine: Machine, results, bed, s, out, teardown, report, detail=""):
    """A trial of a link that delivers 20k pps; it checks what is stored meanwhile."""
    machine.step("trial", bed.point.index, out.name, detail)
    store = Store(results)
    try:
        stored = store.run(bed.point.run_id)["points"]
    finally:
        store.close()
    machine.events.append(("stored before", bed.point.index, [p["idx"] for p in stored]))
    report(Progress(bed.point, "measuring", 0.5, 1.0, 20_000.0, detail=detail,
                    pairs=[{"pair": 0, "phase": "measure", "elapsed_s": 0.5, "interval_s": 0.5,
                            "tx_pps": 20_000.0, "rx_pps": 19_000.0, "rx_packets": 9_500,
                            "lost": 500, "latency": {"p50_ns": 4000, "p99_ns": 9000,
                                                     "max_ns": 12000}}],
                    cpu=lambda: {"p0s": 0.5}))
    tx = s.rate.pps or 100_000
    return result(tx, min(tx, 20_000))


@pytest.fixture
def machine():
    return Machine()


@pytest.fixture
def run(tmp_path, machine):
    """run(flags, **options) -> (outcome, progress seen, stored run)."""
    host = HostFacts(cores=2, usable_cpus=[0, 1], cpu_model="", kernel="6", root=False,
                     iproute2=True, kernel_links={}, hugepages=Hugepages(), runc=None,
                     busybox_static=None, dpdk=None, testpmd=None,
                     libxdp=None, kvm=False, engine=EngineFacts(version="0", apis=["udp"]),
                     probes={"vpp": "26.10-rc0 at /v/bin/vpp (cnfperf's build)"})
    results = tmp_path / "results"
    builder = functools.partial(
        Builder, dataplanes={"veth": functools.partial(Switch, machine)},
        runtimes={"runc": functools.partial(Runtime, machine)}, namespaces=Namespaces(machine))

    def run(flags: dict, **options):
        seen: list[Progress] = []
        options = {"leftovers": lambda run_id: ([], []), "builder": builder,
                   "trial": functools.partial(trial, machine, results), **options}
        opts = runner.RunOptions(
            engine=tmp_path / "engine", results=results, host=host, command=["test"],
            progress=seen.append, state=tmp_path / "state", names=list,
            check=lambda scenarios, host: None, **options)
        outcome = runner.execute(load_plan(None, {"switch": "veth", "api": "udp", **flags}), opts)
        store = Store(results)
        try:
            return outcome, seen, store.run(outcome.run_id)
        finally:
            store.close()
    return run


SWEEP = {"size": "64,128,256", "rate": "10k", "duration": 1}


def test_points_run_in_order_each_stored_before_the_next_starts(run, machine, tmp_path):
    outcome, seen, stored = run(SWEEP)
    assert outcome.status == "done" and outcome.error is None and outcome.left == []
    assert [p["idx"] for p in stored["points"]] == [0, 1, 2]
    assert [p["size"] for p in stored["points"]] == [64, 128, 256]
    assert all(p["status"] == "done" and p["rx_pps"] == 10_000 for p in stored["points"])
    assert machine.of("stored before") == [("stored before", i, list(range(i))) for i in range(3)]
    # one runtime image for the run; a testbed per point, torn down before the next
    assert len(machine.of("prepare")) == 1
    assert [e[0] for e in machine.events if e[0] in ("start", "stop")] == ["start", "stop"] * 3
    # nothing of the run is left in its state directory: lock, journal, bundles
    assert list((tmp_path / "state").iterdir()) == []


def test_a_watched_run_sends_its_events_in_order_each_as_the_schema_says(run, tmp_path):
    """--events: the runner's events for a sweep of two points (a run's start, each
    point's start, its sample, its trial, its end, the run's end), every one valid
    against docs/events.schema.json."""
    events: list[dict] = []
    sink = type("Sink", (), {"__call__": lambda self, e: events.append(e),
                             "close": lambda self: None})()
    outcome, _, _ = run({"size": "64,128", "rate": "10k", "duration": 1},
                        live=live.Live([sink], cpu=True))
    assert outcome.status == "done"
    assert [e["event"] for e in events] == [
        "run_start", *(["point_start", "sample", "trial", "point_end"] * 2), "run_end"]
    schema = json.loads((REPO / "docs" / "events.schema.json").read_text())
    for e in events:
        jsonschema.validate(e, schema)
        assert e["run"] == outcome.run_id and e["v"] == live.VERSION
    start, sample, trial_, end = events[1:5]
    assert (start["point"], start["size"], start["rate"]) == (0, 64, 10_000)
    [pair] = sample["pairs"]
    assert pair["loss_ratio"] == pytest.approx(500 / 10_000) and sample["nodes"] == {"p0s": 0.5}
    assert (trial_["offered_pps"], trial_["rx_pps"]) == (10_000, 10_000)
    assert (end["status"], end["rx_pps"], end["loss_ratio"]) == ("done", 10_000, 0)
    assert events[-1]["status"] == "done" and events[-1]["done"] == 2
    # a sink that fails is dropped with one warning; the run goes on
    said: list[str] = []

    def broken(event):
        raise BrokenPipeError("reader gone")
    broken.close = lambda: None
    outcome, _, _ = run({"rate": "10k"}, live=live.Live([broken], warn=said.append))
    assert outcome.status == "done" and len(said) == 1 and "reader gone" in said[0]


def test_a_point_records_what_measured_it_and_a_vpp_point_which_vpp(run, machine, tmp_path):
    _, _, stored = run({"rate": "10k"})
    assert stored["points"][0]["versions"] == {"cnfperf": HostFacts.cnfperf, "engine": "0",
                                               "kernel": "6", "runc": None}
    _, _, stored = run({"switch": "vpp", "api": "dpdk", "rate": "10k"},
                       builder=functools.partial(
                           Builder, dataplanes={"vpp": functools.partial(Switch, machine)},
                           runtimes={"runc": functools.partial(Runtime, machine)},
                           namespaces=Namespaces(machine)))
    assert stored["points"][0]["versions"]["vpp"] == "26.10-rc0 at /v/bin/vpp (cnfperf's build)"


def test_a_point_stores_the_configuration_its_switch_read_back(run, tmp_path):
    outcome, _, stored = run({"rate": "10k"})
    [point] = stored["points"]
    applied = {"forward": "port", "rules": ["in_port=1 actions=output:2"]}
    # beside what the report needs of the data plane (DataPlane.stored)
    assert point["switch_facts"]["applied"] == applied
    assert point["switch_facts"]["name"] == "veth"
    served = json.loads((tmp_path / "results" / "runs" / outcome.run_id / "point0" /
                         "switch.json").read_text())
    assert served["applied"] == applied


def static_engine(tmp_path, apis: str = '"udp", "raw", "mmap", "xdp"'):
    """A stand-in for cnfperf-engine-static beside the run's engine: its --version."""
    path = tmp_path / "engine-static"
    path.write_text(f"#!/bin/sh\necho '{{\"version\": \"0\", \"apis\": [{apis}]}}'\n")
    path.chmod(0o755)


def test_kernel_api_nfs_run_the_static_engine_in_the_minimal_image(run, machine, tmp_path):
    static_engine(tmp_path)
    outcome, _, stored = run({"rate": "10k", "nfs": 2, "nf_api": "raw", "size": "64,128"})
    assert outcome.status == "done", outcome.error
    # each image once for the run, each from its own engine
    assert machine.of("prepare") == [("prepare", "full", "engine"),
                                     ("prepare", "minimal", "engine-static")]
    # NFs are named …n<pair><index>, the ends …p<pair>s and …p<pair>r
    created = {re.search(r"(p\d+[sr]|n[0-9a-f]{3})$", name)[1]: image
               for _, name, image in machine.of("create")}
    assert created == {"p0s": "full", "p0r": "full", "n000": "minimal", "n001": "minimal"}
    for p in stored["points"]:
        assert (p["image_name"], p["image_size"]) == ("fake-full", 1)
        assert (p["nf_image_name"], p["nf_image_size"]) == ("fake-minimal", 2)


def test_without_a_static_engine_nfs_run_in_the_full_image(run, machine, tmp_path):
    static_engine(tmp_path, apis='"udp", "raw"')   # built without the NF's api (mmap)
    outcome, _, stored = run({"rate": "10k", "nfs": 1})
    assert outcome.status == "done", outcome.error
    assert machine.of("prepare") == [("prepare", "full", "engine")]
    assert {e[2] for e in machine.of("create")} == {"full"}
    [p] = stored["points"]
    assert p["image_name"] == "fake-full" and p["nf_image_name"] is p["nf_image_size"] is None


def test_the_image_of_a_network_function_follows_its_api(tmp_path):
    from types import SimpleNamespace

    journal = SimpleNamespace(add=lambda *a, **k: None, discard=lambda *a, **k: None)
    teardown = SimpleNamespace(push=lambda what, undo: None)
    builder = Builder(journal, tmp_path / "state", tmp_path / "cnfperf-engine", teardown)
    assert builder.static_engine == tmp_path / "cnfperf-engine-static"
    assert builder.static_apis == []     # not built: every NF in the full image
    builder._static_apis = ["udp", "raw", "mmap", "xdp", "dpdk"]

    def nf(api):
        return SimpleNamespace(ports=(SimpleNamespace(api=api), SimpleNamespace(api=api)))
    assert [builder.image_of(nf(api), "l2").name for api in ("raw", "mmap", "xdp", "dpdk")] == \
        ["minimal"] * 3 + ["full"]
    # a command of its own (testpmd, a user's) runs where testpmd is
    assert {builder.image_of(nf(api), kind).name for api in ("raw", "dpdk")
            for kind in ("testpmd", "cmd:my-nf {iface1}")} == {"tools"}


def test_progress_says_each_phase_of_each_point(run):
    outcome, seen, _ = run(SWEEP)
    phases = [(p.point.index, p.phase) for p in seen]
    assert list(dict.fromkeys(phases)) == [(i, phase) for i in range(3)
                                           for phase in ("setup", "measuring", "measured",
                                                         "teardown", "done")]
    # setup says how far the containers are
    assert [p.detail for p in seen if (p.point.index, p.phase) == (0, "setup")] == \
        ["", "containers 0/2", "containers 1/2", "containers 2/2"]
    assert seen[0].eta is None and seen[-1].eta is not None, "an ETA once a point is done"
    assert next(p for p in seen if p.phase == "measuring").rx_pps == 20_000.0


def test_teardown_is_the_setup_in_reverse_and_is_reported(run, machine):
    outcome, _, _ = run({"rate": "10k", "pairs": 2})
    creation = [e for e in machine.events if e[0] in ("netns", "start", "create")]
    undo = [e for e in machine.events if e[0] in ("del-netns", "stop", "destroy")]
    assert [e[0] for e in undo] == ["destroy"] * 4 + ["stop"] + ["del-netns"] * 4
    assert [e[1] for e in undo if e[0] == "destroy"] == \
        [e[1] for e in reversed(creation) if e[0] == "create"]
    assert sorted(item.split()[0] for item in outcome.cleaned) == \
        ["container"] * 4 + ["data-plane", "directory"] + ["netns"] * 4


def test_a_failing_point_in_a_sweep_is_recorded_and_the_others_run(run, machine):
    machine.fail["trial 1"] = SystemFailure("engine recv in cnfp… exited with code 1")
    outcome, seen, stored = run(SWEEP)
    assert outcome.status == "failed" and outcome.left == []
    assert outcome.error.startswith("1 of 3 points failed; point 2 (")
    assert "engine recv in cnfp… exited with code 1" in outcome.error
    assert [p["status"] for p in stored["points"]] == ["done", "failed", "done"]
    assert "exited with code 1" in stored["points"][1]["error"]
    assert list(dict.fromkeys(p.phase for p in seen if p.point.index == 1)) == \
        ["setup", "teardown", "failed"]
    assert len(machine.of("stop")) == 3, "the failed point's testbed was torn down too"


def test_a_failure_runs_every_teardown_step_and_reports_what_it_left(run, machine):
    machine.fail["trial 0"] = SystemFailure("no summary")
    machine.fail["stop"] = RuntimeError("bridge busy")
    outcome, _, stored = run(SWEEP)
    # what a point left behind could spoil the next: the sweep stops there
    assert outcome.status == "failed" and outcome.error == "no summary"
    assert [p["status"] for p in stored["points"]] == ["failed"]
    assert outcome.left == ["data-plane veth: bridge busy"]
    assert len(machine.of("destroy")) == 2 and len(machine.of("del-netns")) == 2, \
        "the steps after a failing one still ran"
    assert any(item.startswith("netns ") for item in outcome.cleaned)


def test_a_signal_stops_the_run_after_teardown(run, machine):
    machine.fail["trial 1"] = runner.Interrupted(signal.SIGTERM)
    outcome, seen, stored = run(SWEEP)
    assert (outcome.status, outcome.signal) == ("interrupted", signal.SIGTERM)
    assert outcome.error == "interrupted by SIGTERM"
    assert [p["status"] for p in stored["points"]] == ["done", "interrupted"]
    assert len(machine.of("stop")) == 2 and stored["status"] == "interrupted"


def test_resume_skips_the_stored_points(run, machine):
    machine.fail["trial 1"] = SystemFailure("engine failed")
    first, _, _ = run(SWEEP)
    machine.fail.clear()
    machine.events.clear()
    asked = []

    def leftovers(run_id):
        asked.append(run_id)
        return [f"netns cnfp{run_id}p0s"], []
    outcome, seen, stored = run(SWEEP, resume=first.run_id, leftovers=leftovers)
    assert outcome.run_id == first.run_id and asked == [first.run_id]
    assert outcome.status == "done" and outcome.already_done == 2
    assert outcome.resumed_cleanup == [f"netns cnfp{first.run_id}p0s"]
    assert [e[1] for e in machine.of("trial")] == [1]
    assert {p.point.index for p in seen} == {1}
    assert [(p["idx"], p["status"]) for p in sorted(stored["points"], key=lambda p: p["idx"])] \
        == [(0, "done"), (1, "done"), (2, "done")]


def test_resume_stops_when_the_leftovers_cannot_be_removed(run, machine):
    first, _, _ = run({"rate": "10k"})
    with pytest.raises(SystemFailure, match="could not remove what it left: netns x: busy"):
        run({"rate": "10k"}, resume=first.run_id,
            leftovers=lambda run_id: ([], ["netns x: busy"]))


def test_a_search_runs_its_trials_on_one_testbed_set_up_once(run, machine):
    outcome, seen, stored = run({"rate": "ndr", "search": "bisect", "latency_at": "none",
                                 "search_max": "40k", "trial_duration": 1})
    assert outcome.status == "done"
    trials = machine.of("trial")
    assert len(trials) > 3 and len(machine.of("start")) == len(machine.of("stop")) == 1
    assert [t[2] for t in trials] == [f"trial{n}" for n in range(1, len(trials) + 1)]
    assert trials[0][3] == "trial 1 at 40k"
    [point] = stored["points"]
    assert len(point["trials"]) == len(trials) and point["trials"][-1]["phase"] == "verify"
    assert 19_600 <= point["search_rate_pps"] <= 20_000 and point["search_verified"]
    assert [p.phase for p in seen].count("trial") == len(trials) + 1   # and the verdict


def test_an_mlrsearch_stores_its_goals_and_its_latency_trials(run, machine):
    outcome, _, stored = run({"rate": "ndr+pdr", "search_max": "40k", "trial_duration": 0.5,
                              "duration_sum": 1, "precision": 0.02, "latency_at": "min+50%"})
    assert outcome.status == "done"
    [point] = stored["points"]
    assert [g["loss_ratio"] for g in point["goals"]] == [0, 0.005]
    assert point["search_rate_pps"] == point["goals"][0]["conditional_pps"]
    assert len(point["trials"]) == len(machine.of("trial"))
    *searched, low, half = point["trials"]
    assert {t["duration"] for t in searched} == {0.5}
    assert (low["phase"], low["fraction"], half["fraction"]) == ("latency", 0, 0.5)
    assert isinstance(low["latency_histogram"], (list, type(None)))


def test_a_new_run_id_avoids_those_in_use(tmp_path, monkeypatch):
    (tmp_path / "cnfpab12.journal").touch()
    ids = iter(["ab12", "cd34", "ef56"])
    monkeypatch.setattr(runner.secrets, "token_hex", lambda n: next(ids))
    assert runner.new_run_id(tmp_path / "results", tmp_path, lambda: ["cnfpcd34p0s"]) == "ef56"


# An engine as far as the runner can tell: `ready`, then a receiver counts until
# SIGINT and a sender for its duration; each prints its summary, then holds its
# port until its stdin ends. What it does goes to a log, in order.
STAND_IN = """
import json, signal, sys, time
log, name, role = sys.argv[1], sys.argv[2], sys.argv[3]
def say(what):
    with open(log, "a") as f:
        f.write(f"{name} {what}\\n")
stop = []
signal.signal(signal.SIGINT, lambda *_: stop.append(1))
say("started")
print(json.dumps({"type": "ready"}), flush=True)
if role in ("send", "client"):   # its sending starts: the trial's window opens after warm-up
    print(json.dumps({"type": "start", "wall_ns": time.time_ns()}), flush=True)
if role in ("recv", "server", "nf"):
    while not stop:
        time.sleep(0.01)
else:
    time.sleep(0.2)
n = 1000 if role in ("send", "client") else 0
say("summary")   # before the record: the runner acts on the record at once
print(json.dumps({"type": "summary", "tx_packets": n, "rx_packets": 1000 - n,
                  "offered_pps": 5000, "tx_pps": 5000, "rx_pps": 5000 if not n else 0}),
      flush=True)
sys.stdin.read()
say("closed")
"""


def stand_ins(machine: Machine, tmp_path) -> tuple:
    """(a Builder whose containers run STAND_IN engines, the log they write)."""
    script, log = tmp_path / "engine.py", tmp_path / "engines.log"
    script.write_text(STAND_IN)

    class Container:
        cpus, init_pid, pids = (0,), None, []   # no cgroup: CPU time of no process
        own_kernel, slowdown = False, 1.0

        def facts(self):
            return {}

        def guest_cpu(self, core):
            return core

        def __init__(self, name):
            # no such netns: its UDP counters read as unknown (udp_errors.read)
            self.name, self.engine, self.netns = name, "cnfperf-engine", name

        def exec(self, args, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                 stdin=subprocess.DEVNULL):
            return subprocess.Popen([sys.executable, script, log, self.name, args[1]],
                                    stdout=stdout, stderr=stderr, stdin=stdin)

        def destroy(self):
            machine.step("destroy", self.name)

    class Engines(Runtime):
        def create(self, name, cpus, netns, mounts=(), image=FULL, quota=None, nics=(),
                   lazy=False):
            machine.step("create", name, image.name)
            return Container(name)

    builder = functools.partial(
        Builder, dataplanes={"veth": functools.partial(Switch, machine)},
        runtimes={"runc": functools.partial(Engines, machine)}, namespaces=Namespaces(machine))
    return builder, log


def test_a_trial_stops_the_engines_in_two_phases(run, machine, tmp_path):
    """Every engine has stopped polling before any closes its port; senders close first."""
    builder, log = stand_ins(machine, tmp_path)
    outcome, seen, stored = run({"pairs": 2, "rate": "5k", "duration": 0.2, "warmup": 0},
                                builder=builder, trial=trial_module.run)
    assert outcome.status == "done", outcome.error
    events = [line.split() for line in log.read_text().splitlines() if "started" not in line]
    assert [what for _, what in events] == ["summary"] * 4 + ["closed"] * 4
    closed = [name for name, what in events if what == "closed"]
    assert [name[-1] for name in closed] == ["s", "s", "r", "r"]
    [point] = stored["points"]
    assert point["sent"] == point["received"] == 2000
    assert "measuring" in [p.phase for p in seen]
    # the switch's own cost: begun before the trial, read after it, stored
    assert machine.of("cost") == [("cost", "begin")]
    assert point["switch_cost"] == {"source": "fake", "cycles_per_packet": 42.0, "packets": 1000}


@pytest.mark.parametrize("nfs, shape", [(0, "pair"), (2, "pipeline")])
def test_each_point_stores_the_shape_of_its_paths(run, nfs, shape):
    outcome, _, stored = run({"nfs": nfs, "api": "raw", "rate": "10k", "duration": 1})
    assert outcome.status == "done", outcome.error
    assert [p["shape"] for p in stored["points"]] == [shape]
    assert stored["points"][0]["cpu_bound"] == ""    # the fake trial's engines never poll


def test_network_functions_start_from_the_receiver_and_close_before_it(run, machine, tmp_path):
    """The receiver listens first and the sender starts last; NFs on kernel
    interfaces start together, in no set order (test_nf_start_order holds DPDK
    ports' depths one at a time); every engine stops polling before any closes;
    the path closes from the sender's end."""
    builder, log = stand_ins(machine, tmp_path)
    outcome, _, stored = run({"nfs": 2, "api": "raw", "rate": "5k", "duration": 0.2,
                              "warmup": 0, "tester": "split"}, builder=builder,
                             trial=trial_module.run)
    assert outcome.status == "done", outcome.error
    events = [line.split() for line in log.read_text().splitlines()]
    short = [(name[8:], what) for name, what in events]
    started = [n for n, what in short if what == "started"]
    assert started[0] == "p0r" and started[3] == "p0s" and set(started[1:3]) == {"n000", "n001"}
    assert [what for _, what in short if what != "started"] == ["summary"] * 4 + ["closed"] * 4
    assert [n for n, what in short if what == "closed"] == ["p0s", "n000", "n001", "p0r"]
    assert {e[1] for e in machine.of("create")} == {f"cnfp{outcome.run_id}{n}"
                                                    for n in ("p0s", "p0r", "n000", "n001")}
    [point] = stored["points"]
    assert point["shape"] == "pipeline" and len(point["nf_results"]) == 2


class KeptSwitch(Switch):
    """A data plane a run may keep between points (DataPlane.keeps)."""

    keeps = True
    healthy = True

    def release(self) -> None:
        self.machine.step("release")

    def reuse(self, point) -> None:
        self.machine.step("reuse", point.index)

    def stale(self):
        return None if self.healthy else "its process is gone"


@pytest.fixture
def keeping(machine):
    return functools.partial(
        Builder, dataplanes={"veth": functools.partial(KeptSwitch, machine)},
        runtimes={"runc": functools.partial(Runtime, machine)}, namespaces=Namespaces(machine))


def lifecycle(machine: Machine) -> list[tuple]:
    return [e for e in machine.events if e[0] in ("start", "reuse", "release", "stop")]


def test_consecutive_points_made_alike_share_a_kept_switch(run, machine, keeping, tmp_path):
    outcome, _, stored = run({"size": "64,128", "rate": "10k,20k", "duration": 1},
                             builder=keeping)
    assert outcome.status == "done" and outcome.left == []
    # a new size is a new switch (its MTU, its hugepages): the kept one goes first
    assert lifecycle(machine) == [("start", 0), ("release",), ("reuse", 1), ("release",),
                                  ("stop",), ("start", 2), ("release",), ("reuse", 3),
                                  ("release",), ("stop",)]
    run_dir = tmp_path / "results" / "runs" / outcome.run_id
    served = [json.loads((run_dir / f"point{i}" / "switch.json").read_text()) for i in range(4)]
    assert [(s["kept"], s["points"]) for s in served] == [(False, 1), (True, 2), (False, 1),
                                                          (True, 2)]
    assert served[0]["fresh_because"] == "the run's first switch"
    assert served[2]["fresh_because"] == "the switch is made differently for this point"
    assert all(s["switch"] == "veth" and s["counters"] == {} for s in served)
    # a teardown lists the switch it stopped (the run's last), not one it kept
    # for the next point (a replaced one is stopped by the next point's set-up)
    assert [c for c in outcome.cleaned if c.startswith("data-plane")] == ["data-plane veth"]


def test_the_nodes_of_a_runtime_that_keeps_go_with_the_kept_switch(run, machine, keeping,
                                                                   monkeypatch, tmp_path):
    """A runtime whose containers keep (a VM's): made once, netns and all, for
    a rate sweep on one kept switch; gone before it at the run's end."""
    monkeypatch.setattr(Runtime, "keeps", True)
    outcome, _, _ = run({"rate": "10k,20k,30k", "duration": 1}, builder=keeping)
    assert outcome.status == "done" and outcome.left == []
    made = [e for e in machine.events if e[0] in ("create", "netns", "del-netns", "destroy",
                                                  "start", "stop")]
    ends = sorted({e[1] for e in machine.of("create")})
    assert len(ends) == 2 and len(machine.of("create")) == 2    # once, not per point
    assert sorted(e[1] for e in machine.of("netns")) == ends
    # the run's end: each VM, then its netns, then the switch; none before
    last = made[-5:]
    assert last[-1] == ("stop",) and len(machine.of("stop")) == 1
    assert sorted(last[:-1]) == sorted([("destroy", n) for n in ends] +
                                       [("del-netns", n) for n in ends])
    assert all(last.index(("destroy", n)) < last.index(("del-netns", n)) for n in ends)
    assert len(machine.of("destroy")) == len(machine.of("del-netns")) == 2
    # each point's end: what it ran in them reaped, three times each
    assert sorted(e for e in machine.events if e[0] == "release" and len(e) > 1) == \
        sorted(("release", n) for _ in range(3) for n in ends)
    run_dir = tmp_path / "results" / "runs" / outcome.run_id
    served = [json.loads((run_dir / f"point{i}" / "switch.json").read_text())["guests"]
              for i in range(3)]
    assert [sorted(g["kept"] for g in point.values()) for point in served] == \
        [[False, False], [True, True], [True, True]]
    assert {g["points"] for g in served[2].values()} == {3}


def test_switch_keep_no_gives_every_point_a_fresh_switch(run, machine, keeping):
    outcome, _, _ = run({"rate": "10k,20k", "duration": 1, "switch_keep": "no"},
                        builder=keeping)
    assert outcome.status == "done"
    assert lifecycle(machine) == [("start", 0), ("stop",), ("start", 1), ("stop",)]


def test_a_failed_point_never_hands_its_switch_on(run, machine, keeping):
    machine.fail["trial 1"] = SystemFailure("engine failed")
    outcome, _, stored = run({"rate": "10k,20k,30k", "duration": 1}, builder=keeping)
    assert [p["status"] for p in stored["points"]] == ["done", "failed", "done"]
    assert lifecycle(machine) == [("start", 0), ("release",), ("reuse", 1), ("stop",),
                                  ("start", 2), ("release",), ("stop",)]


def test_a_signal_stops_the_kept_switch_too(run, machine, keeping):
    machine.fail["trial 1"] = runner.Interrupted(signal.SIGINT)
    outcome, _, _ = run({"rate": "10k,20k,30k", "duration": 1}, builder=keeping)
    assert outcome.status == "interrupted" and outcome.left == []
    assert lifecycle(machine)[-1] == ("stop",) and len(machine.of("stop")) == 1


def test_a_stale_kept_switch_is_replaced_by_a_fresh_one(run, machine, keeping, monkeypatch):
    monkeypatch.setattr(KeptSwitch, "healthy", False)
    outcome, _, _ = run({"rate": "10k,20k", "duration": 1}, builder=keeping)
    assert outcome.status == "done"
    assert lifecycle(machine) == [("start", 0), ("release",), ("stop",), ("start", 1),
                                  ("release",), ("stop",)]


# --- the generator baseline --------------------------------------------------

BASELINED = {"size": "64,128", "rate": "10k", "duration": 1, "generator_baseline": "yes"}


def test_the_generator_baseline_is_measured_first_and_each_point_says_its_share(run, machine):
    from cnfperf.report.tables import run_table
    outcome, seen, stored = run(BASELINED)
    assert outcome.status == "done"
    # a baseline per size, unpaced, before any point; then the points
    trials = [(e[1], e[2].split("-")[0]) for e in machine.of("trial")]
    assert trials == [(0, "baseline"), (1, "baseline"), (0, "point0"), (1, "point1")]
    baselines = stored["baselines"]
    assert [(b["switch"], b["api"], b["size"], b["tester"], b["status"], b["rx_pps"])
            for b in baselines] == [("veth", "udp", 64, "split", "done", 20_000.0),
                                    ("veth", "udp", 128, "split", "done", 20_000.0)]
    assert [b["scenario"]["rate"] for b in baselines] == [0.0, 0.0]
    # each point's 10k against its baseline's 20k
    assert [(p["baseline_pps"], p["baseline_share"]) for p in stored["points"]] == \
        [(20_000.0, 0.5), (20_000.0, 0.5)]
    lines = run_table(stored).splitlines()
    assert lines[0].split()[-3:] == ["%", "of", "gen"]
    assert [line.split()[-1] for line in lines[2:4]] == ["50.0", "50.0"]
    assert "generator baseline udp size=64 burst=32 tester=split pairs=1 through veth: " \
           "rx 20.0 kpps" in lines
    assert any(p.point.label == "generator-baseline" and p.phase == "done" for p in seen)


def test_a_resumed_run_keeps_its_baselines(run, machine):
    machine.fail["trial 1 point1"] = SystemFailure("engine failed")
    first, _, _ = run(BASELINED)
    machine.fail.clear()
    machine.events.clear()
    outcome, _, stored = run(BASELINED, resume=first.run_id)
    assert outcome.status == "done"
    assert [e[2].split("-")[0] for e in machine.of("trial")] == ["point1"]   # no baseline again
    assert [p["baseline_share"] for p in stored["points"]] == [0.5, 0.5]


def test_a_failed_baseline_is_stored_and_said_and_its_points_have_no_share(run, machine):
    machine.fail["trial 0 baseline"] = SystemFailure("engine failed")
    outcome, _, stored = run(BASELINED)
    assert outcome.status == "done"
    assert [(b["size"], b["status"]) for b in stored["baselines"]] == [(64, "failed"),
                                                                       (128, "done")]
    assert "engine failed" in stored["baselines"][0]["error"]
    assert any(w.startswith("generator baseline veth udp throughput") and "failed" in w
               for w in outcome.warnings)
    assert [p["baseline_share"] for p in stored["points"]] == [None, 0.5]


def test_without_generator_baseline_nothing_is_measured_first(run, machine):
    _, _, stored = run({"rate": "10k", "duration": 1})
    assert stored["baselines"] == []
    assert [e[2] for e in machine.of("trial")] == ["point0"]
    assert stored["points"][0]["baseline_share"] is None
