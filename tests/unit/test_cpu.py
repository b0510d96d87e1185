"""CPU accounting per node (cnfperf/run/cpu.py): /proc's files parsed, a window
sampled on fake cgroups with a fake clock, packets per node, cycles per packet,
the TSC's rate and where it came from."""
from __future__ import annotations

import os
import threading

import pytest

from cnfperf.run import cpu
from cnfperf.dataplanes.base import PortCounters
from cnfperf import SystemFailure, nfs as nf_kinds
from cnfperf.plan import place
from cnfperf.results import model
from cnfperf.host.system import USER_HZ, parse_stat
from harness import scenarios


def test_a_stat_line_gives_cpu_times_and_the_last_core():
    # comm may hold spaces and parentheses; utime 14, stime 15, processor 39
    rest = ["S"] + ["0"] * 10 + [str(5 * USER_HZ), str(USER_HZ)] + ["0"] * 6 + ["777"] + \
        ["0"] * 16 + ["3"] + ["0"] * 13
    stat = parse_stat(f"4242 (lcore-worker (1)) {' '.join(rest)}\n")
    assert (stat.state, stat.start_time, stat.user_s, stat.system_s, stat.core) == \
        ("S", "777", 5.0, 1.0, 3)


def test_softirq_per_core_and_allowed_cores():
    stat = ("cpu  10 0 10 100 0 0 70 0 0 0\n"
            f"cpu0 5 0 5 50 0 0 {2 * USER_HZ} 0 0 0\n"
            f"cpu1 5 0 5 50 0 0 {USER_HZ // 2} 0 0 0\nintr 1 2 3\n")
    assert cpu.softirq_by_core(stat) == {0: 2.0, 1: pytest.approx(0.5)}
    assert cpu.allowed_cores("Name:\tx\nCpus_allowed:\t3\nCpus_allowed_list:\t0-1\n") == "0-1"


def test_every_thread_of_a_process_with_its_cores():
    stop = threading.Event()
    worker = threading.Thread(target=stop.wait, name="cpu-test")
    worker.start()
    try:
        found = cpu.threads([os.getpid()])
    finally:
        stop.set()
        worker.join()
    assert len(found) >= 2 and {t["pid"] for t in found} == {os.getpid()}
    usable = set(os.sched_getaffinity(0))
    for t in found:
        assert t["name"] and t["core"] in range(os.cpu_count())
        assert set(cpu.parse_cpus(t["allowed"])) == usable
    assert cpu.threads([2 ** 22 + 1]) == []   # gone: nothing, no error


def test_cycles_per_packet():
    assert model.cycles_per_packet(2.4e9, 0.5, 1_000_000) == pytest.approx(1200)
    assert model.cycles_per_packet(2.4e9, 0.5, 0) is None
    assert model.cycles_per_packet(None, 0.5, 10) is None
    row = model.CpuUsage("n", "nf", "1", None, 0.3, 0.2, 0.0, 1.0, 1_000_000, 2.4e9, "x")
    assert row.cycles_per_packet == pytest.approx(1200)
    row.user_s = None
    assert row.cycles_per_packet is None


def test_what_was_used_counts_new_sources_in_full_and_gone_ones_not():
    t = cpu.Times
    start = {1: t(1.0, 1.0), 2: t(5.0, 0.0)}
    end = {1: t(1.5, 1.25), 3: t(0.25, 0.0)}
    assert cpu.used(start, end) == t(0.75, 0.25)


class Clock:
    def __init__(self):
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def _group(tmp_path, name: str, user_ns: int, sys_ns: int):
    group = tmp_path / name
    group.mkdir(exist_ok=True)
    (group / "cpuacct.usage_user").write_text(f"{user_ns}\n")
    (group / "cpuacct.usage_sys").write_text(f"{sys_ns}\n")
    (group / "cgroup.procs").write_text(f"{os.getpid()}\n")
    return group


def test_a_window_on_fake_groups(tmp_path):
    clock = Clock()
    softirq = {"0": 0, "1": 0}
    counters = {"p0s": PortCounters(rx_packets=100), "p0r": PortCounters(rx_packets=7)}

    def stat() -> str:
        return "".join(f"cpu{c} 0 0 0 0 0 0 {v} 0\n" for c, v in softirq.items())

    send = cpu.Account("p0s", "send", quota=50.0, cores=(1,),
                       group=_group(tmp_path, "s", 10**9, 10**9))
    recv = cpu.Account("p0r", "recv", cores=(0,), group=_group(tmp_path, "r", 0, 0))
    broken = cpu.Account("n000", "nf", cores=(0,), problem="its cgroup: gone")
    switch = cpu.Account("testpmd", "switch", group=_group(tmp_path, "t", 0, 0))
    meter = cpu.Meter([send, recv, broken, switch], counters=lambda: dict(counters),
                      clock=clock, stat=stat)
    meter.stop()                                   # never opened: nothing to close
    assert meter.usage({}, (2e9, "x")) == []
    meter.start()
    clock.now += 2.0
    meter.start()                                  # opens once
    _group(tmp_path, "s", 10**9 + 1_500_000_000, 10**9 + 500_000_000)   # 2 s of CPU
    _group(tmp_path, "r", 400_000_000, 100_000_000)
    _group(tmp_path, "t", 2_000_000_000, 0)
    softirq.update({"0": USER_HZ, "1": 3 * USER_HZ})
    counters["p0s"] = PortCounters(rx_packets=1100)
    counters["p0r"] = PortCounters(rx_packets=1007)
    meter.stop()
    clock.now += 5                                 # closed once
    meter.stop()
    rows = {r.node: r for r in meter.usage({"p0s": 1000, "p0r": 1000}, (2e9, "engine"))}
    s, r, n, t = rows["p0s"], rows["p0r"], rows["n000"], rows["testpmd"]
    assert (s.user_s, s.system_s, s.wall_s, s.cores, s.quota) == (1.5, 0.5, 2.0, "1", 50.0)
    assert s.softirq_s == pytest.approx(3.0) and r.softirq_s == pytest.approx(1.0)
    assert s.cycles_per_packet == pytest.approx(2e9 * 2.0 / 1000)
    assert r.cycles_per_packet == pytest.approx(2e9 * 0.5 / 1000) and r.quota is None
    assert n.user_s is None and n.cycles_per_packet is None and n.packets == 0
    # the switch: what its ports took in within the window; its cores: its threads'
    assert t.packets == 2000 and t.cycles_per_packet == pytest.approx(2e9 * 2.0 / 2000)
    assert t.cores == cpu.cpu_list(sorted(os.sched_getaffinity(0)))
    assert {th["pid"] for th in t.threads} == {os.getpid()} and t.tsc_source == "engine"


def test_a_group_is_found_when_the_window_opens(tmp_path):
    """A container whose process is its init (a lazy one) has no group until that
    process runs: its account looks the group up when the window opens, once;
    what keeps it from being found is the node's problem, not the trial's."""
    asked = []
    group = _group(tmp_path, "n", 0, 0)
    late = cpu.Account("n001", "nf", cores=(0,), find=lambda: asked.append(1) or group)

    def gone():
        raise SystemFailure("runc state: container does not exist")
    lost = cpu.Account("n002", "nf", cores=(0,), find=gone)
    meter = cpu.Meter([late, lost], stat=lambda: "cpu0 0 0 0 0 0 0 0 0\n")
    assert late.group is None and not asked     # nothing runs before the window
    meter.start()
    _group(tmp_path, "n", 300_000_000, 100_000_000)
    meter.start()
    meter.stop()
    assert late.group == group and asked == [1]
    assert lost.group is None and lost.problem == \
        "its cgroup: runc state: container does not exist"
    rows = {r.node: r for r in meter.usage({"n001": 10}, (2e9, "engine"))}
    assert (rows["n001"].user_s, rows["n001"].system_s) == (0.3, 0.1)
    assert rows["n002"].user_s is None


def _summary(role: str, tx: int = 0, rx: int = 0, **more) -> dict:
    return {"role": role, "tx_packets": tx, "rx_packets": rx, **more}


def test_packets_per_engine_in_the_window():
    [s] = scenarios(None, {"switch": "veth", "api": "raw", "nfs": 2, "warmup": 0.5,
                           "tester": "split"})
    point = place(s, "1a2b", host_cpus=(0, 1), joins="link", nf=nf_kinds.find(s.nf))
    pair = point.pairs[0]
    nf_ports = {"ports": [{"port": 1, "rx_packets": 10_400}, {"port": 2, "rx_packets": 0}]}
    summaries = {pair.sender.name: _summary("send", tx=10_000, warmup_tx_packets=400),
                 pair.receiver.name: _summary("recv", rx=9_990, warmup_packets=400),
                 **{nf.name: _summary("nf", **nf_ports) for nf in pair.nfs}}
    # an NF counts the warm-up's frames too: they are not the window's
    assert cpu.packets(point, summaries) == {pair.sender.name: 10_000, pair.receiver.name: 9_990,
                                             pair.nfs[0].name: 10_000, pair.nfs[1].name: 10_000}


def test_a_server_echoes_warmup_frames_back_through_the_nfs():
    client = _summary("client", tx=100, rx=100, warmup_tx_packets=20, warmup_packets=20)
    assert cpu.warmup_frames(client, _summary("server", 100, 100, warmup_packets=20)) == 40
    assert cpu.warmup_frames(client, _summary("recv", 0, 100, warmup_packets=20)) == 20
    assert cpu.warmup_frames(client, None) == 20            # a single tester
    assert cpu.nf_packets({"ports": [{"rx_packets": 10}]}, 40) == 0
    assert cpu.end_packets(client) == 200


def test_the_tsc_rate_is_the_engines_calibration_else_the_kernels(monkeypatch):
    readies = [{"clock": "tsc", "tick_hz": 2_445_401_719}, None,
               {"clock": "tsc", "tick_hz": 2_445_402_018}, {"clock": "tsc", "tick_hz": 2.5e9}]
    assert cpu.tsc_hz(readies) == (2_445_402_018, "engine calibration")
    monkeypatch.setattr(cpu, "kernel_tsc_hz", lambda: (2.3e9, "kernel log"))
    assert cpu.tsc_hz([{"clock": "clock_gettime", "tick_hz": 1e9}, None]) == (2.3e9, "kernel log")


def test_the_kernel_log_s_refined_calibration_wins():
    log = ("[    0.000000] tsc: Detected 2445.398 MHz processor\n"
           "[    1.512345] tsc: Refined TSC clocksource calibration: 2445.402 MHz\n")
    assert cpu.tsc_from_log(log) == pytest.approx(2445.402e6)
    assert cpu.tsc_from_log(log.splitlines()[0]) == pytest.approx(2445.398e6)
    assert cpu.tsc_from_log("nothing\n") is None
    assert cpu.cpu_mhz("processor\t: 0\ncpu MHz\t\t: 2445.402\n") == pytest.approx(2445.402e6)
    hz, source = cpu.kernel_tsc_hz()
    assert source and (hz is None or hz > 1e8)


def test_the_window_opens_a_warmup_after_the_last_sender_began():
    starts = [{"wall_ns": 10_000_000_000}, {"wall_ns": 10_500_000_000}]
    assert cpu.window_opens_ns(starts, 0.25) == 10_750_000_000
    assert cpu.window_opens_ns([starts[0], None], 0.25) is None   # one still starts
    assert cpu.window_opens_ns([], 0.25) is None


def test_the_switch_is_read_in_the_warm_up_and_nothing_starts_in_the_window(tmp_path):
    """A switch's counters take a command (ovs-ofctl): read with its times as the
    warm-up begins (prepare), so its row spans warm-up and window, and opening
    the window reads files only; the engines' rows span the window."""
    clock = Clock()
    reads = []
    send = cpu.Account("p0s", "send", cores=(1,), group=_group(tmp_path, "s", 0, 0))
    switch = cpu.Account("ovs", "switch", group=_group(tmp_path, "o", 0, 0))
    meter = cpu.Meter([send, switch], clock=clock, stat=lambda: "cpu0 0 0 0 0 0 0 0 0\n",
                      counters=lambda: reads.append(clock.now) or
                      {"p0s": PortCounters(rx_packets=100 * (len(reads) - 1))})
    meter.prepare()
    clock.now += 1.0
    meter.start()
    assert reads == [clock.now - 1.0]           # none as the window opened
    clock.now += 2.0
    _group(tmp_path, "s", 1_000_000_000, 0)
    _group(tmp_path, "o", 3_000_000_000, 0)
    meter.stop()
    rows = {r.node: r for r in meter.usage({"p0s": 10}, (1e9, "engine"))}
    assert (rows["p0s"].wall_s, rows["ovs"].wall_s) == (2.0, 3.0)
    assert rows["ovs"].packets == 100 and rows["ovs"].user_s == 3.0


class FakeAgent:
    """An agent's meter ops as run/agent.py answers them, recorded."""

    name = "dut"

    def __init__(self):
        self.calls: list[tuple[str, dict]] = []
        self.silent = False   # the host does not answer

    def call(self, op: str, **args):
        self.calls.append((op, args))
        if op == "usage":
            return [{"node": "ovs", "kind": "switch", "cores": "1", "quota": 50.0,
                     "user_s": 0.5, "system_s": 0.0, "softirq_s": 0.0, "wall_s": 1.0,
                     "packets": args["packets"].get("ovs", 1000), "tsc_hz": args["tsc"][0],
                     "tsc_source": args["tsc"][1]}]
        if op == "shares":
            if self.silent:
                raise SystemFailure(f"host {self.name}: no answer to shares within "
                                    f"{args['timeout']:g} s")
            return {"ovs": 0.9}
        return None


def test_another_host_s_nodes_are_metered_there_with_this_window():
    """Its agent's meter takes each step as this one does, once, and its rows
    join this host's, counted at this host's TSC."""
    agent = FakeAgent()
    meter = cpu.Meter([], stat=lambda: "cpu0 0 0 0 0 0 0 0 0\n",
                      others=[cpu.RemoteMeter(agent)])
    meter.prepare()
    meter.prepare()
    meter.start()
    meter.stop()
    meter.stop()
    assert [op for op, _ in agent.calls] == ["meter"] * 3
    assert [args["step"] for _, args in agent.calls] == ["prepare", "start", "stop"]
    [row] = meter.usage({}, (2e9, "engine calibration"))
    assert (row.node, row.kind, row.quota, row.tsc_hz) == ("ovs", "switch", 50.0, 2e9)
    assert row.cycles_per_packet == pytest.approx(2e9 * 0.5 / 1000)


def test_a_live_reading_asks_the_other_hosts_once_the_window_is_open():
    """--metrics-port's node CPU: this host's nodes and each other host's,
    read there by its agent; nothing before the window opens."""
    agent = FakeAgent()
    meter = cpu.Meter([], stat=lambda: "cpu0 0 0 0 0 0 0 0 0\n",
                      others=[cpu.RemoteMeter(agent)])
    assert meter.shares() == {} and agent.calls == []
    meter.start()
    assert meter.shares() == {"ovs": 0.9}
    assert [op for op, _ in agent.calls] == ["meter", "meter", "shares"]
    assert agent.calls[-1][1]["timeout"] == cpu.LIVE_TIMEOUT   # a tick waits no longer
    agent.silent = True                       # left out, as a node not read
    assert meter.shares() == {}


def test_a_live_reading_says_a_share_over_a_span_long_enough(tmp_path):
    """The tick that opens the window asks at once: no share over those few
    ms; the next reading covers them, in cores."""
    clock = Clock()
    send = cpu.Account("p0s", "send", cores=(1,), group=_group(tmp_path, "s", 0, 0))
    meter = cpu.Meter([send], clock=clock, stat=lambda: "cpu0 0 0 0 0 0 0 0 0\n")
    meter.start()
    clock.now += 0.002
    assert meter.shares() == {}
    clock.now += 1.998
    _group(tmp_path, "s", 1_500_000_000, 500_000_000)   # 2 s of CPU in 2 s
    assert meter.shares() == {"p0s": pytest.approx(1.0)}
