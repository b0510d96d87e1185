"""The click data plane without root: the Click configuration it writes, the
counters it derives from Click's handlers, what its control socket answers
(recorded from a real click), and which scenarios it refuses."""
from __future__ import annotations

import itertools
import re
from pathlib import Path

import pytest

from cnfperf import UserError, nfs as nf_kinds
from cnfperf.dataplanes import DATAPLANES, click_app
from cnfperf.dataplanes.base import PortCounters
from cnfperf.dataplanes.click_app import LinkPlan, parse_reads
from cnfperf.run.checks import matrix
from cnfperf.host.facts import EngineFacts, HostFacts, Hugepages
from cnfperf.plan import place
from cnfperf.scenario import Scenario
from harness import cores, scenarios

# What click's ControlSocket sent for READ in0.count, nosuch.count, out1.dropped,
# in0.nosuch, sw0.table, to1.count (one write), after its greeting: reply by reply.
REPLIES = (b"200 Read handler 'in0.count' OK\r\nDATA 1\r\n0",
           b"510 No element named 'nosuch'\r\n",
           b"200 Read handler 'out1.dropped' OK\r\nDATA 1\r\n0",
           b"511 No handler named 'in0.nosuch'\r\n",
           b"200 Read handler 'sw0.table' OK\r\nDATA 0\r\n",
           b"200 Read handler 'to1.count' OK\r\nDATA 1\r\n0")


def _plane(s: Scenario, cpus: tuple[int, ...] = (1,)):
    dp = DATAPLANES["click"](journal=None)
    dp.point, dp.cpus, dp.dir = place(s, "00c1", nf=nf_kinds.find(s.nf)), cpus, Path("/run/cnfperf/x")
    dp.index = {port.name: i for i, port in enumerate(dp.point.ports)}
    return dp


# --- the configuration ----------------------------------------------------------------

def _connections(config: str) -> set[tuple[str, str]]:
    """(from, to) element pairs of `a -> b` and `x :: E(...) -> y` statements."""
    found = set()
    for stmt in config.split(";"):
        stmt = re.sub(r"//.*", "", stmt)
        names = [re.sub(r"\[\d\]", "", part.split("::")[0]).strip()
                 for part in stmt.split("->")]
        found |= {(a, b) for a, b in zip(names, names[1:])}
    return found


def test_each_link_has_a_switch_of_its_own_between_its_two_ports():
    config = click_app.configuration([LinkPlan(0, 1, 1), LinkPlan(2, 3, 2)], 32, "/r/c.ctl", 9000)
    assert config.count(":: EtherSwitch") == 2
    # these connections and no others: nothing crosses from one link to another
    assert _connections(config) == {
        edge for k, (a, b) in enumerate([(0, 1), (2, 3)]) for p in (a, b)
        for edge in ((f"in{p}", f"sw{k}"), (f"sw{k}", f"to{p}"), (f"to{p}", f"out{p}"))}
    # a port's frames enter the switch at the input whose output leads back to it
    assert "-> [0]sw0" in config and "sw0[0] -> to0" in config
    assert "-> [1]sw0" in config and "sw0[1] -> to1" in config


def test_devices_burst_and_drops_are_as_the_scenario_asks():
    config = click_app.configuration([LinkPlan(4, 5, 1)], 64, "/r/c.ctl", 9000)
    assert "FromDPDKDevice(net_vhost4, 0, BURST 64)" in config
    assert re.search(r"ToDPDKDevice\(net_vhost5, 0, BURST 64, IQUEUE 1024, BLOCKING false, "
                     r"TIMEOUT 0\)", config)
    assert 'ControlSocket(unix, "/r/c.ctl")' in config and "DPDKInfo(NB_MBUF 9000)" in config
    # a burst above the internal queue would be raised by Click with a warning
    assert "IQUEUE 1024" in click_app.configuration([LinkPlan(0, 1, 1)], 1024, "/c", 9000)


def test_every_element_of_a_link_runs_on_its_thread():
    config = click_app.configuration([LinkPlan(0, 1, 1), LinkPlan(2, 3, 2), LinkPlan(4, 5, 1)],
                                     32, "/c", 9000)
    [sched] = re.findall(r"StaticThreadSched\((.*)\);", config)
    placed = dict(item.split() for item in sched.split(", "))
    assert placed == {"in0": "1", "out0": "1", "in1": "1", "out1": "1",
                      "in2": "2", "out2": "2", "in3": "2", "out3": "2",
                      "in4": "1", "out4": "1", "in5": "1", "out5": "1"}


def test_links_are_dealt_to_the_poll_threads_in_turn():
    dp = _plane(Scenario(switch="click", api="dpdk", pairs=3, switch_cores=2), cpus=(0, 1))
    assert [(l.a, l.b, l.thread) for l in dp._plan()] == [(0, 1, 1), (2, 3, 2), (4, 5, 1)]
    send, recv = dp.point.pairs[1].sender, dp.point.pairs[1].receiver
    assert dp._plan()[1].names == (send.name, recv.name)
    # thread t is lcore t: the queue map puts each port on its link's core
    assert [(q["port"], q["queue"], q["core"]) for q in dp.queues()][2:4] == \
        [(send.name, 0, 1), (recv.name, 0, 1)]


def test_engines_attach_as_virtio_user_clients_of_their_ports_socket():
    dp = _plane(Scenario(switch="click", api="dpdk", pairs=2, tester="split"))
    recv = dp.point.pairs[1].receiver
    assert dp.vdev(recv.port) == (f"net_virtio_user0,path=/run/cnfperf/x/sock/click3.sock,"
                                  f"mac={recv.mac},queues=1")


def test_memory_covers_the_mbuf_pool():
    dp = _plane(Scenario(switch="click", api="dpdk", pairs=2), cpus=(0, 1))
    assert dp._mbufs() == 4 * 2048 + 3 * 512
    assert dp.switch_mb() % 32 == 0 and dp.switch_mb() * 2**20 >= dp._mbufs() * 2368 + 32 * 2**20


# --- counters ---------------------------------------------------------------------------

def test_counters_are_read_downstream_first():
    assert click_app.counter_handlers([0, 1]) == [
        "out0.count", "out1.count", "to0.count", "to1.count", "in0.count", "in1.count"]


def test_port_counters_say_where_frames_were_lost():
    values = {"in0.count": 1000, "to1.count": 990, "out1.count": 950,
              "in1.count": 5, "to0.count": 5, "out0.count": 5}
    # 10 frames from port 0 not switched (EtherSwitch's hairpin drop); 40 for
    # port 1 refused by a full queue
    assert click_app.port_counters(values, 0, 1) == PortCounters(1000, 5, 10, 0)
    assert click_app.port_counters(values, 1, 0) == PortCounters(5, 950, 0, 40)
    # read while frames flow, a later stage is never ahead of an earlier one
    racing = dict(values, **{"to1.count": 1001})
    assert click_app.port_counters(racing, 0, 1).rx_dropped == 0


def test_replies_to_reads_are_parsed_as_they_arrive():
    buf = b"".join(REPLIES)
    replies, used = parse_reads(buf)
    assert used == len(buf)
    assert [(r.code, r.data) for r in replies] == [
        (200, b"0"), (510, None), (200, b"0"), (511, None), (200, b""), (200, b"0")]
    assert replies[1].message == "No element named 'nosuch'"
    # however the bytes arrive, only whole replies are taken
    ends = list(itertools.accumulate(len(r) for r in REPLIES))
    for cut in range(len(buf) + 1):
        replies, used = parse_reads(buf[:cut])
        whole = [end for end in ends if end <= cut]
        assert len(replies) == len(whole) and used == (whole[-1] if whole else 0)


def test_multiline_messages_and_a_value_of_many_lines():
    buf = (b"200-Read handler 'sw0.table'\r\n200 OK\r\nDATA 40\r\n"
           b"02:00:00:00:00:01 0\n02:00:00:00:00:02 1\n")
    [reply], used = parse_reads(buf)
    assert reply.message == "Read handler 'sw0.table' OK" and used == len(buf)
    assert reply.data.decode().splitlines() == ["02:00:00:00:00:01 0", "02:00:00:00:00:02 1"]


# --- what it refuses --------------------------------------------------------------------

@pytest.mark.parametrize("flags,field", [
    ({"switch_rxq": 2}, "switch_rxq"),
    ({"switch_cores": 2}, "switch_cores"),            # one link, one busy thread
    ({"size": 2053}, "size"),                          # a frame larger than an mbuf
    ({"api": "udp"}, "api"),
])
def test_refused_naming_the_field(flags, field):
    with pytest.raises(UserError) as err:
        scenarios(None, {"switch": "click", "api": "dpdk", **flags})
    assert err.value.field == field


def test_click_runs_in_a_container_of_its_own_from_its_image():
    from cnfperf.dataplanes.click import IMAGE
    [point] = scenarios(None, {"switch": "click", "api": "dpdk", "switch_in": "container"})
    assert point.switch_in == "container"
    assert DATAPLANES["click"].processes and DATAPLANES["click"].image is IMAGE


@pytest.mark.parametrize("flags", [
    {"switch_cores": 2, "nfs": 1},                     # two links: one thread each
    {"switch_cores": 2, "pairs": 2},
    {"size": 2052}, {"size": 1518}, {"tester": "single"}, {"pairs": 16},
    {"poll": "interrupt"},    # the engines' virtio-user ports, with net_vhost as the peer
])
def test_accepted(flags):
    cores(flags.get("switch_cores", 1))   # a poll thread per core: a host with fewer skips
    assert scenarios(None, {"switch": "click", "api": "dpdk", **flags})


def test_a_missing_build_is_a_problem_naming_how_to_make_it(monkeypatch):
    monkeypatch.setenv("CNFPERF_SWITCHES", "/nonexistent")
    host = HostFacts(cores=2, usable_cpus=[0, 1], cpu_model="", kernel="6", root=True,
                     iproute2=True, kernel_links={}, hugepages=Hugepages(), runc=None,
                     busybox_static=None, dpdk=None, testpmd=None,
                     libxdp=None, kvm=False, engine=EngineFacts(version="0", apis=["dpdk"]))
    assert "click-dpdk not built (/nonexistent/click-dpdk/bin/click missing: make switches, " \
           "or switches/build.sh click-dpdk)" in DATAPLANES["click"].check(host)
    assert "click" in matrix(host)["dataplanes"]
