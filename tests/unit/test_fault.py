"""A fault inside a trial (run/fault.py): its value, its time inside the measured
window, the ports it takes down on a placed point, where each data plane cuts,
its thread's timing and its undo; the outage in results and the store. Bad
values are one line, exit 2, before anything is created. Nothing here needs
root: the thread cuts through a data plane that records what it is told."""
from __future__ import annotations

import threading
import time

import pytest

from cnfperf import SystemFailure, nfs as nf_kinds
from cnfperf.cli import main
from cnfperf.dataplanes import DATAPLANES
from cnfperf.plan import place
from cnfperf.results import model
from cnfperf.results.store import Store
from cnfperf.run import fault
from harness import migrated_run, scenarios


def _one_error_line(capsys, field: str) -> str:
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(f"cnfperf: error: {field}: "), err
    return err[0]


def test_a_fault_names_its_target_kind_and_index():
    assert fault.parse("none") is None
    assert fault.parse("link:0") == fault.Target("link", 0)
    assert str(fault.parse("nf:12")) == "nf:12"
    assert fault.parse("nf:1@2") == fault.Target("nf", 1, 2) and str(fault.Target("nf", 1, 2)) == "nf:1@2"
    for bad in ("link", "link:", "link:-1", "wire:0", "port:x", "nf:1:2", "", "nf:0@", "nf:0@x"):
        with pytest.raises(ValueError, match="link:K"):
            fault.parse(bad)


@pytest.mark.parametrize("flags, field, words", [
    ({"fault_at": 9.6, "fault_duration": 0.5}, "fault_at", "ends 10.1 s into the 10 s"),
    ({"fault_at": 9, "fault_duration": 1}, "fault_at", "must stay below duration"),
    ({"fault_at": 0}, "fault_at", "greater than 0"),
    ({"fault_duration": 0}, "fault_duration", "greater than 0"),
    ({"fault": "wire:1"}, "fault", "expected none, link:K"),
    ({"fault": "link:1"}, "fault", "the path has 1 link(s) (link:0…0)"),
    ({"fault": "nf:0"}, "fault", "no network function"),
    ({"fault": "link:0@1"}, "fault", "there is no pair 1 (pairs = 1)"),
    ({"fault": "nf:1", "nfs": 1, "api": "raw"}, "fault", "1 network function(s) (nf:0…0)"),
    ({"fault": "port:0"}, "fault", "veth cannot take a switch port down"),
    ({"fault": "link:0", "api": "raw"}, "fault", "takes the carrier off the sender's own"),
    ({"fault": "nf:0", "api": "mmap", "nfs": 2}, "fault", "a sender on mmap sends then"),
    ({"fault": "link:0", "switch": "testpmd", "api": "dpdk"}, "fault", "testpmd stops a port"),
    ({"fault": "link:0", "switch": "vhost", "api": "dpdk", "nfs": 1}, "fault",
     "no switch between"),
    ({"fault": "link:0", "rate": "ndr"}, "fault", "not with a search"),
    ({"fault": "link:0", "soak": 60}, "fault", "nor a soak"),
    ({"fault": "link:0", "switch": "bridge", "api": "raw", "nfs": 1, "nf_in": "vm"}, "fault",
     "virtual machine"),
])
def test_a_fault_that_cannot_be_is_one_line_and_exit_2(tmp_path, monkeypatch, capsys, flags,
                                                         field, words):
    monkeypatch.setenv("CNFPERF_RESULTS", str(tmp_path / "results"))
    argv = ["run", "--duration", "10"]
    for name, value in {"fault": "link:0", **flags}.items():
        argv += [f"--{name.replace('_', '-')}", str(value)]
    assert main(argv) == 2
    assert words in _one_error_line(capsys, field)
    assert not (tmp_path / "results").exists()


def test_a_cut_next_to_a_sender_plans_where_the_sender_loses_frames_to_it():
    """On veth the sender's own interface loses its carrier: a packet socket is
    refused there, the kernel's udp path drops quietly; a switch between keeps it."""
    for flags in ({"switch": "veth", "api": "udp", "fault": "link:0"},
                  {"switch": "veth", "api": "raw", "nfs": 1, "fault": "link:1"},
                  {"switch": "veth", "api": "raw", "nfs": 2, "fault": "nf:1"},
                  {"switch": "bridge", "api": "raw", "fault": "link:0"},
                  {"switch": "macvlan", "api": "raw", "nfs": 1, "fault": "nf:0"}):
        [s] = scenarios(flags={**flags, "duration": 2})
        assert s.fault == flags["fault"]


def test_a_fault_inside_the_window_plans():
    [s] = scenarios(flags={"switch": "bridge", "api": "raw", "nfs": 1, "fault": "port:1",
                           "fault_at": 0.5, "fault_duration": 1.2, "duration": 2})
    assert (s.fault, s.fault_at, s.fault_duration) == ("port:1", 0.5, 1.2)
    [plain] = scenarios(flags={"switch": "bridge"})
    assert plain.fault == "none"


def test_where_each_data_plane_cuts():
    assert DATAPLANES["veth"].cut_at == DATAPLANES["macvlan"].cut_at == ("node",)
    assert DATAPLANES["bridge"].cut_at == ("node", "switch")
    assert DATAPLANES["ovs"].cut_at == DATAPLANES["vpp"].cut_at == ("switch",)
    for name in ("testpmd", "vhost", "memif", "snabb", "click"):
        assert DATAPLANES[name].cut_at == () and DATAPLANES[name].cut_refusal
    link, port, nf = fault.Target("link", 0), fault.Target("port", 0), fault.Target("nf", 0)
    assert fault.where(link, ("node", "switch")) == "node"
    assert fault.where(port, ("node", "switch")) == "switch"
    assert fault.where(nf, ("switch",)) == "switch"     # OVS: its ports for the NF's
    assert fault.where(port, ("node",)) is None and fault.where(link, ()) is None


def _point(flags: dict):
    [s] = scenarios(flags={"cpus": "0-1", "tester": "split", **flags})
    return place(s, "00ab", nf=nf_kinds.find(s.nf) if s.nfs else None)


def test_a_link_goes_down_at_its_end_towards_the_receiver_on_every_measured_path():
    point = _point({"switch": "veth", "api": "raw", "nfs": 1, "pairs": 2, "fault": "link:1"})
    down = fault.ports(point, fault.Target("link", 0))
    # never the sender's own interface: its frames would be refused and renumbered
    assert [p.name for p in down] == [pair.nfs[0].ports[0].name for pair in point.pairs]
    last = fault.ports(point, fault.Target("link", 1))
    assert [p.node for p in last] == [pair.receiver.name for pair in point.pairs]
    both = fault.ports(point, fault.Target("nf", 0))
    assert [p.name for p in both] == [p.name for pair in point.pairs for p in pair.nfs[0].ports]
    one = fault.ports(point, fault.Target("nf", 0, 1))    # pair 1's path alone
    assert [p.name for p in one] == [p.name for p in point.pairs[1].nfs[0].ports]


def test_a_noise_stream_keeps_its_links():
    point = _point({"switch": "bridge", "api": "raw", "noise": "traffic", "fault": "link:0"})
    down = fault.ports(point, fault.Target("link", 0))
    assert [p.node for p in down] == [point.pairs[0].receiver.name]


class Recorder:
    """A data plane as far as a fault asks: what it was told, and when."""

    def __init__(self, fail_on: str | None = None):
        self.calls: list[tuple[str, str, bool, int]] = []
        self.fail_on = fail_on

    def cut(self, port, at: str, up: bool) -> None:
        if self.fail_on == ("up" if up else "down"):
            self.fail_on = None      # once: the undo then succeeds
            raise RuntimeError(f"{port.name} would not go {'up' if up else 'down'}")
        self.calls.append((port.name, at, up, time.monotonic_ns()))


def _fault(recorder: Recorder, at: float, duration: float, side: str = "switch",
           restore=None) -> fault.Fault:
    point = _point({"switch": "bridge", "api": "raw", "pairs": 2, "fault": "port:0"})
    ports = fault.ports(point, fault.Target("port", 0))
    return fault.Fault(recorder, fault.Target("port", 0), ports, side, at, duration, restore)


def _wait(f: fault.Fault, recorder: Recorder, calls: int) -> None:
    deadline = time.monotonic() + 10
    while len(recorder.calls) < calls and time.monotonic() < deadline:
        time.sleep(0.01)


def test_the_thread_takes_the_ports_down_at_fault_at_and_up_after_fault_duration():
    recorder = Recorder()
    f = _fault(recorder, at=0.05, duration=0.2)
    opens = time.time() + 0.05
    started = time.monotonic_ns()
    f.start(opens)
    assert f.started
    deadline = time.monotonic() + 10
    while len(recorder.calls) < 4 and time.monotonic() < deadline:
        time.sleep(0.01)
    record = f.stop()
    downs = [c for c in recorder.calls if not c[2]]
    ups = [c for c in recorder.calls if c[2]]
    assert [c[0] for c in downs] == ["cnfp00abp0r", "cnfp00abp1r"]
    assert [c[0] for c in ups] == [c[0] for c in reversed(downs)]   # undone in reverse
    assert all(c[1] == "switch" for c in recorder.calls)
    # down about 0.1 s after the start (0.05 until the window, 0.05 into it)
    assert 0.08e9 <= downs[0][3] - started <= 0.5e9
    assert record["target"] == "port:0" and record["at"] == "switch"
    assert record["ports"] == [c[0] for c in downs]
    assert abs(record["down_ns"] - 0.2e9) < 0.1e9 and record["spread_ns"] >= 0
    assert abs(record["down_at_s"] - 0.05) < 0.1
    assert record["down_from_ns"] >= started
    assert record["restore_ns"] == 0       # at the switch: the nodes kept their routes
    assert f.stop() == record      # twice (a teardown after the trial's own stop): no-op


def test_a_fault_stopped_before_its_time_takes_nothing_down():
    recorder = Recorder()
    f = _fault(recorder, at=5, duration=1)
    f.start(time.time())
    assert f.stop() is None and recorder.calls == []


def test_a_fault_stopped_while_down_brings_every_port_up_at_once():
    recorder = Recorder()
    f = _fault(recorder, at=0.01, duration=30)
    f.start(time.time())
    deadline = time.monotonic() + 5
    while len(recorder.calls) < 2 and time.monotonic() < deadline:
        time.sleep(0.01)
    began = time.monotonic()
    f.stop()
    assert time.monotonic() - began < 1
    assert [c[2] for c in recorder.calls] == [False, False, True, True]


def test_ports_up_again_at_their_node_get_back_what_the_kernel_dropped_with_them():
    """A node's interface taken down loses its routes and neighbours: the fault
    calls restore with the ports it brought up, after the ups, and times it."""
    recorder, restored = Recorder(), []

    def restore(ports) -> bool:
        time.sleep(0.02)
        restored.append(([p.name for p in ports], time.monotonic_ns()))
        return True
    f = _fault(recorder, at=0.01, duration=0.05, side="node", restore=restore)
    f.start(time.time())
    _wait(f, recorder, 4)
    record = f.stop()
    [(names, when)] = restored
    assert sorted(names) == sorted(record["ports"])
    assert when > max(c[3] for c in recorder.calls)       # after every up
    assert 0.02e9 <= record["restore_ns"] < 1e9
    # at the switch (a node's interface kept), nothing to put back
    recorder, restored = Recorder(), []
    f = _fault(recorder, at=0.01, duration=0.05, side="switch", restore=restore)
    f.start(time.time())
    _wait(f, recorder, 4)
    assert f.stop()["restore_ns"] == 0 and restored == []
    # at a node whose kind keeps nothing through its ports (no router): 0 too
    recorder = Recorder()
    f = _fault(recorder, at=0.01, duration=0.05, side="node", restore=lambda ports: False)
    f.start(time.time())
    _wait(f, recorder, 4)
    assert f.stop()["restore_ns"] == 0


def test_a_fault_stopped_while_down_puts_back_what_the_kernel_dropped_too():
    recorder, restored = Recorder(), []
    f = _fault(recorder, at=0.01, duration=30, side="node",
               restore=lambda ports: restored.append([p.name for p in ports]))
    f.start(time.time())
    _wait(f, recorder, 2)
    f.stop()
    assert [c[2] for c in recorder.calls] == [False, False, True, True]
    assert len(restored) == 1 and len(restored[0]) == 2


def test_routes_that_will_not_come_back_fail_the_point():
    def restore(ports) -> None:
        raise RuntimeError("RTNETLINK answers: No such device")
    recorder = Recorder()
    f = _fault(recorder, at=0.01, duration=0.02, side="node", restore=restore)
    f.start(time.time())
    _wait(f, recorder, 4)
    deadline = time.monotonic() + 10
    while f.error is None and time.monotonic() < deadline:
        time.sleep(0.01)
    with pytest.raises(SystemFailure, match="No such device"):
        f.stop()


@pytest.mark.parametrize("step", ["down", "up"])
def test_a_port_that_will_not_move_fails_the_point_with_every_port_up(step):
    recorder = Recorder(fail_on=step)
    f = _fault(recorder, at=0.01, duration=0.05)
    f.start(time.time())
    deadline = time.monotonic() + 10
    while f.error is None and time.monotonic() < deadline:
        time.sleep(0.01)
    with pytest.raises(SystemFailure, match="would not go"):
        f.stop()
    state = {}
    for name, _, up, _ in recorder.calls:
        state[name] = up
    assert all(state.values())     # whatever went down is up again


def test_fault_threads_are_daemons_and_named():
    f = _fault(Recorder(), at=10, duration=1)
    f.start(time.time())
    assert any(t.name == "fault" and t.daemon for t in threading.enumerate())
    f.stop()


def _metrics(role: str, **summary) -> model.EndpointMetrics:
    return model.endpoint_metrics(0, role, role, 0, {"tx_packets": 100, "rx_packets": 90,
                                                      **summary})


def test_the_outage_is_the_counting_ends():
    send = _metrics("send", outage_ns=None, outage_lost=None)
    recv = _metrics("recv", outage_ns=250_000_000, outage_lost=250, outage_from_ns=7)
    pair = model.pair_result(0, send, recv, "throughput", fault=True)
    assert (pair.outage_ns, pair.outage_lost) == (250e6, 250)
    client = _metrics("client", outage_ns=3_000_000, outage_lost=3)
    echo = model.pair_result(1, client, _metrics("server", outage_ns=None), "latency", fault=True)
    assert (echo.outage_ns, echo.outage_lost) == (3e6, 3)
    total = model.total([pair, echo])
    assert (total.outage_ns, total.outage_lost) == (250e6, 250)   # the longest
    none = model.pair_result(0, send, _metrics("recv"), "throughput", fault=True)
    assert none.outage_ns is None and model.total([none]).outage_ns is None


def test_without_a_fault_a_gap_is_loss_not_an_outage():
    """The engine reports its longest gap for any loss (a policed on/off
    stream's): a point without a fault keeps no outage."""
    recv = _metrics("recv", outage_ns=4_000_000, outage_lost=40, outage_from_ns=7)
    pair = model.pair_result(0, _metrics("send"), recv, "throughput")
    assert (pair.outage_ns, pair.outage_lost) == (None, None) and pair.lost == 10
    total = model.total([pair])
    assert (total.outage_ns, total.outage_lost) == (None, None)


def test_the_store_keeps_the_outage_and_what_the_fault_and_the_noise_did(tmp_path):
    send = _metrics("send")
    recv = _metrics("recv", outage_ns=500_100_000, outage_lost=1000)
    pair = model.pair_result(0, send, recv, "throughput", fault=True)
    record = {"target": "link:0", "at": "node", "ports": ["cnfp00abp0r"], "down_at_s": 1.0,
              "down_ns": 500_000_000, "spread_ns": 900_000, "down_from_ns": 12}
    noise = {"kind": "cmd", "command": "yes > /dev/null", "cores": [1], "output": "noise.out",
             "tail": []}
    result = model.PointResult(pairs=[pair], total=model.total([pair]), endpoints=[send, recv],
                               counters={}, fault=record, noise=noise)
    store = Store(tmp_path)
    try:
        store.begin_run("beef", ["run"], 1, tmp_path, {}, None)
        store.add_point("beef", 0, {"fault": "link:0", "fault_at": 1.0, "fault_duration": 0.5},
                        status="done", started=0, result=result)
        [p] = store.run("beef")["points"]
    finally:
        store.close()
    assert (p["fault"], p["fault_at"], p["fault_duration"]) == ("link:0", 1.0, 0.5)
    assert (p["outage_ns"], p["outage_lost"], p["fault_ns"]) == (500_100_000, 1000, 500_000_000)
    assert p["fault_facts"] == record and p["noise_facts"] == noise
    assert (p["per_pair"][0]["outage_ns"], p["per_pair"][0]["outage_lost"]) == (500_100_000, 1000)


def test_points_stored_before_schema_18_have_no_outage(tmp_path):
    run = migrated_run(tmp_path, 17, "INSERT INTO points (run_id, idx, status) "
                                     "VALUES ('beef', 0, 'done')")
    [p] = run["points"]
    assert p["outage_ns"] is None and p["fault_facts"] is None and p["noise_facts"] is None
    assert p["fault"] is None      # a field's column, empty in old points


def test_the_faults_and_noisy_neighbours_tables():
    from cnfperf.report import summary
    facts = {"target": "link:0", "at": "node", "ports": ["cnfp00abp0r"], "down_at_s": 0.601,
             "down_ns": 800_400_000, "spread_ns": 1_800_000, "down_from_ns": 1,
             "restore_ns": 2_500_000}
    point = {"status": "done", "idx": 0, "rep": 0, "switch": "veth", "fault_facts": facts,
             "noise_facts": {"kind": "cmd", "command": "ab -n 1000000 http://127.0.0.1/",
                             "cores": [1], "output": "noise.out", "tail": ["Requests: 42"]},
             "per_pair": [{"pair": 0, "outage_ns": 799_900_000, "outage_lost": 400}]}
    plain = {"status": "done", "idx": 1, "rep": 0, "switch": "bridge", "per_pair": []}
    title, headers, rows = summary.faults({"points": [point, plain]})
    assert title == "Faults" and len(rows) == 1
    row = dict(zip(headers, rows[0]))
    assert (row["fault"], row["at"], row["down ms"], row["outage ms"], row["frames lost"]) == \
        ("link:0", "node", 800.4, 799.9, 400)
    assert row["outage − down ms"] == pytest.approx(-0.5) and row["restore ms"] == 2.5
    title, headers, rows = summary.noises({"points": [point, plain]})
    assert dict(zip(headers, rows[0]))["it did"] == "Requests: 42"
    assert summary.faults({"points": [plain]}) is None and summary.noises({"points": [plain]}) is None
