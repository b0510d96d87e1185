"""The DPDK data planes for real, with dpdk-testpmd processes as endpoints
(txonly sender, rxonly receiver) on the EAL arguments the data plane hands out:
every frame the sender put on the link is received, or counted as dropped by
the switch on the port where it was lost; nothing is left behind."""
from __future__ import annotations

import os
import secrets
import time
from contextlib import ExitStack

import pytest

from cnfperf.dataplanes import DATAPLANES
from cnfperf.dataplanes.testpmd_app import TestPmd
from cnfperf.host.journal import Journal
from cnfperf.plan import place
from cnfperf.scenario import Scenario
from dpdk_leak import no_leftovers
from harness import cores

pytestmark = [pytest.mark.e2e, pytest.mark.needs("dpdk-testpmd")]
# What each switch needs besides testpmd.
NEEDS = {"ovs": pytest.mark.needs("ovsdb-server", "ovs-vsctl"),
         "snabb": pytest.mark.needs("snabb"), "snabb-wire": pytest.mark.needs("snabb"),
         "vpp": pytest.mark.needs("vpp"), "vpp-memif": pytest.mark.needs("vpp"),
         "click": pytest.mark.needs("click-dpdk"), "bess": pytest.mark.needs("bess")}


def planes(*cases):
    return [pytest.param(*case, marks=NEEDS.get(case[0], ())) for case in cases]

SEND_SECONDS = 1.0


def point(switch: str, pairs: int):
    return place(Scenario(switch=switch, api="dpdk", pairs=pairs, tester="split"),
                 secrets.token_hex(2))


def endpoint(dataplane, att, ep, mode: str, peer_mac: str | None = None) -> TestPmd:
    # testpmd needs a main lcore besides the forwarding one; both on the planned core.
    eal = [*dataplane.eal_args(ep.name, [att]), "--lcores", f"0@{ep.cpu},1@{ep.cpu}"]
    app = [f"--forward-mode={mode}", "--nb-cores=1", "--total-num-mbufs=4096"]
    if peer_mac:
        app.append(f"--eth-peer=0,{peer_mac}")
    return TestPmd(eal, app, name=f"{mode} {ep.name}")


def exchange(dataplane, p) -> tuple[dict, dict, dict, dict]:
    """Run every pair's sender for a second; (sent, received, counters before, after)."""
    att = {ep.name: dataplane.attach(ep.port) for ep in p.endpoints}
    sent, received = {}, {}
    with ExitStack() as stack:
        receivers, senders = {}, {}
        for pair in p.pairs:  # receivers first: in vhost and memif they own the socket
            r = endpoint(dataplane, att[pair.receiver.name], pair.receiver, "rxonly")
            stack.callback(r.stop)
            r.start()
            receivers[pair.index] = r
        for pair in p.pairs:
            s = endpoint(dataplane, att[pair.sender.name], pair.sender, "txonly",
                         pair.receiver.mac)
            stack.callback(s.stop)
            s.start()
            senders[pair.index] = s
        before = dataplane.counters()
        for r in receivers.values():
            r.forward()
        for s in senders.values():
            s.forward()
        time.sleep(SEND_SECONDS)
        for s in senders.values():
            s.command("stop")
        time.sleep(0.3)  # what is still in rings reaches the receiver
        after = dataplane.counters()
        for k in receivers:
            sent[k] = senders[k].fwd_stats()[0]["tx_packets"]
            received[k] = receivers[k].fwd_stats()[0]["rx_packets"]
    return sent, received, before, after


@pytest.fixture
def journal(tmp_path):
    j = Journal(tmp_path / "run.journal")
    yield j
    assert j.live() == [], "the data plane left journal entries undone"
    j.close(remove=True)


@pytest.mark.parametrize("switch,pairs", planes(
    ("vhost", 1), ("vhost", 2), ("memif", 1), ("memif", 2), ("testpmd", 1), ("testpmd", 2),
    ("ovs", 1), ("ovs", 2), ("snabb", 1), ("snabb", 2), ("snabb-wire", 1), ("snabb-wire", 2),
    ("vpp", 1), ("vpp", 2), ("vpp-memif", 1), ("vpp-memif", 2), ("click", 1), ("click", 2),
    ("bess", 1), ("bess", 2)))
def test_every_frame_sent_is_received_or_counted_dropped(switch, pairs, journal):
    p = point(switch, pairs)
    with no_leftovers(p.prefix):
        dataplane = DATAPLANES[switch](journal)
        try:
            dataplane.start(p)
            sent, received, before, after = exchange(dataplane, p)
        finally:
            dataplane.stop()
    assert dataplane.hugepages is None and dataplane.dir is None
    for pair in p.pairs:
        k = pair.index
        assert sent[k] > 1000, f"pair {k}: the sender hardly sent ({sent[k]})"
        if switch in ("vhost", "memif"):
            # A direct link: a full ring refuses the frame at the sender, never drops it.
            assert received[k] == sent[k]
            assert after == {}
            continue
        s = {name: after[name] - before[name] for name in after}
        tx_port, rx_port = s[pair.sender.name], s[pair.receiver.name]
        assert tx_port.rx_packets == sent[k], "the switch saw every frame the sender sent"
        assert rx_port.tx_packets == received[k], "the receiver got every frame the switch sent"
        assert rx_port.tx_packets + rx_port.tx_dropped + tx_port.rx_dropped == sent[k]


@pytest.mark.parametrize("switch", planes(("testpmd",), ("ovs",), ("snabb",), ("click",)))
def test_switch_poll_thread_runs_on_its_placed_core(switch, journal):
    p = point(switch, 1)
    dataplane = DATAPLANES[switch](journal)
    with no_leftovers(p.prefix):
        try:
            dataplane.start(p)
            assert len(dataplane.cpus) == 1 and set(dataplane.cpus) <= set(p.cpus)
            pid = (dataplane.ovs._procs["ovs-vswitchd"].pid if switch == "ovs"
                   else dataplane.pids()[0])
            # Snabb's one thread is its poller
            pollers = {name: cpus for name, cpus in _threads(pid)
                       if switch == "snabb" or
                       name.startswith(("lcore-worker", "rte-worker", "pmd"))}
            assert pollers and all(c == set(dataplane.cpus) for c in pollers.values()), pollers
        finally:
            dataplane.stop()


def _threads(pid: int) -> list[tuple[str, set[int]]]:
    found = []
    for tid in os.listdir(f"/proc/{pid}/task"):
        with open(f"/proc/{pid}/task/{tid}/comm") as f:
            found.append((f.read().strip(), set(os.sched_getaffinity(int(tid)))))
    return found


@pytest.mark.parametrize("switch", planes(("click",), ("bess",)))
def test_each_link_runs_on_a_poll_thread_of_its_own(switch, journal):
    """Two links on two Click threads (two BESS workers), one core each: each
    still delivers every frame."""
    cores(2)
    p = place(Scenario(switch=switch, api="dpdk", pairs=2, switch_cores=2, tester="split"),
              secrets.token_hex(2))
    with no_leftovers(p.prefix):
        dataplane = DATAPLANES[switch](journal)
        try:
            dataplane.start(p)
            # BESS's workers keep the name of the gRPC thread that made them; they
            # are its threads pinned to one core
            pollers = [cpus for name, cpus in _threads(dataplane.pids()[0])
                       if name.startswith("rte-worker") or (switch == "bess" and len(cpus) == 1)]
            # one each, pinned to a core of its own
            assert all(len(cpus) == 1 for cpus in pollers), pollers
            assert sorted(c for cpus in pollers for c in cpus) == sorted(dataplane.cpus)
            assert len(dataplane.cpus) == 2
            sent, received, before, after = exchange(dataplane, p)
        finally:
            dataplane.stop()
    for pair in p.pairs:
        assert sent[pair.index] > 1000
        s = {name: after[name] - before[name] for name in after}
        tx_port, rx_port = s[pair.sender.name], s[pair.receiver.name]
        assert tx_port.rx_packets == sent[pair.index]
        assert rx_port.tx_packets == received[pair.index]
        assert rx_port.tx_packets + rx_port.tx_dropped + tx_port.rx_dropped == sent[pair.index]
