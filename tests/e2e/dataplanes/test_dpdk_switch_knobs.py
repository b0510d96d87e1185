"""The switch knobs for real (forward, rxq_affinity, switch_rxd, switch_txd):
OVS-DPDK forwarding by explicit port-to-port rules, not NORMAL, and VPP by L2
cross-connects, still passing every frame; OVS's Rx queues pinned to its PMD
cores and its vhost-user rings of the size asked, read back from OVS while its
peers are connected; testpmd's descriptors read back from testpmd; and as a
user runs them, the point storing what the switch was configured with."""
from __future__ import annotations

import secrets
import subprocess
import time
from contextlib import ExitStack
from dataclasses import replace

import pytest

from cnfperf.dataplanes import DATAPLANES
from cnfperf.plan import place
from cnfperf.scenario import Scenario
from dpdk_leak import no_leftovers
import harness
from harness import cores
from test_dpdk_runs import SHORT, run
from test_dpdk_switches import endpoint, exchange, journal  # noqa: F401 (a fixture)

pytestmark = [pytest.mark.e2e, pytest.mark.needs("dpdk-testpmd")]
OVS = pytest.mark.needs("ovsdb-server", "ovs-vsctl")
VPP = pytest.mark.needs("vpp")
RING = 128
CONNECT_S = 10   # OVS connects to a new peer's socket within 10 ms; a loaded host is slower


def point(switch: str, **fields):
    return place(Scenario(switch=switch, api="dpdk", tester="split", **fields),
                 secrets.token_hex(2))


def _delivered(p, sent, received, before, after) -> None:
    """Every frame the sender sent was received, and the switch counted it in
    on the sender's port and out on the receiver's."""
    [pair] = p.pairs
    assert sent[0] > 1000, f"the sender hardly sent ({sent[0]})"
    s = {name: after[name] - before[name] for name in after}
    tx_port, rx_port = s[pair.sender.name], s[pair.receiver.name]
    assert tx_port.rx_packets == sent[0], "the switch saw every frame the sender sent"
    assert rx_port.tx_packets == received[0], "the receiver got every frame the switch sent"
    assert rx_port.tx_packets + rx_port.tx_dropped + tx_port.rx_dropped == sent[0]


@OVS
def test_ovs_forwards_by_explicit_port_to_port_rules(journal):
    p = point("ovs", forward="port")
    with no_leftovers(p.prefix):
        dataplane = DATAPLANES["ovs"](journal)
        try:
            dataplane.start(p)
            applied = dataplane.applied()
            # dump-flows as a user would run it against this OVS
            text = dataplane.ovs._run(["ovs-ofctl", "dump-flows", dataplane.bridge])
            sent, received, before, after = exchange(dataplane, p)
        finally:
            dataplane.stop()
    assert "NORMAL" not in text and "in_port=1 actions=output:2" in text.replace(",", " ")
    assert "in_port=2 actions=output:1" in text.replace(",", " ")
    assert applied["forward"] == "port"
    assert not any("NORMAL" in rule for rule in applied["rules"])
    assert sum("output:" in rule for rule in applied["rules"]) == 2
    _delivered(p, sent, received, before, after)


@VPP
def test_vpp_forwards_by_cross_connects(journal):
    p = point("vpp", forward="port", poll="adaptive")
    with no_leftovers(p.prefix):
        dataplane = DATAPLANES["vpp"](journal)
        try:
            dataplane.start(p)
            applied = dataplane.applied()
            sent, received, before, after = exchange(dataplane, p)
        finally:
            dataplane.stop()
    [pair] = p.pairs
    ports = applied["ports"]
    sender, receiver = ports[pair.sender.name], ports[pair.receiver.name]
    assert sender["mode"] == f"xconnect {receiver['iface']}"
    assert receiver["mode"] == f"xconnect {sender['iface']}"
    _delivered(p, sent, received, before, after)


def _status_when_connected(dataplane, names: list[str]) -> dict[str, dict[str, str]]:
    """Each vhost-user port's status (its vrings' sizes), once its peer is connected."""
    deadline = time.monotonic() + CONNECT_S
    while True:
        found = {n: dataplane.ovs.interface(n, "status") for n in names}
        if all("vring_0_size" in st for st in found.values()) or time.monotonic() > deadline:
            return found
        time.sleep(0.05)


@OVS
def test_ovs_pins_rx_queues_and_takes_the_ring_size_asked(journal):
    p = point("ovs", rxq_affinity="pinned", switch_cores=2, switch_rxd=RING, switch_txd=RING,
              cpus=tuple(cores(2)))
    [pair] = p.pairs
    names = [pair.sender.name, pair.receiver.name]
    with no_leftovers(p.prefix):
        dataplane = DATAPLANES["ovs"](journal)
        try:
            dataplane.start(p)
            applied = dataplane.applied()
            pmd_cores = sorted(dataplane.cpus)
            att = {ep.name: dataplane.attach(ep.port) for ep in p.endpoints}
            with ExitStack() as stack:
                for ep in (pair.receiver, pair.sender):
                    e = endpoint(dataplane, att[ep.name], ep, "rxonly")
                    stack.callback(e.stop)
                    e.start()
                status = _status_when_connected(dataplane, names)
                queues = dataplane.queues()
                rxq_show = dataplane.ovs.appctl("dpif-netdev/pmd-rxq-show")
        finally:
            dataplane.stop()
    assert len(pmd_cores) == 2
    # each port's queue 0 pinned, in turn, to a PMD core of its own
    affinity = {name: applied["ports"][name]["pmd-rxq-affinity"] for name in names}
    assert affinity == {names[0]: f"0:{pmd_cores[0]}", names[1]: f"0:{pmd_cores[1]}"}
    assert {q["port"]: q["core"] for q in queues} == {names[0]: pmd_cores[0],
                                                      names[1]: pmd_cores[1]}
    assert rxq_show.count("isolated : true") == 2, rxq_show
    # OVS takes no descriptor count for a vhost-user port: the ring is the
    # engine's virtio-user queue_size, and OVS reports its vrings of that size
    for name in names:
        assert applied["ports"][name]["ring"] == RING
        assert "n_rxq_desc" not in applied["ports"][name]
        assert status[name].get("vring_0_size") == str(RING), status[name]
        assert status[name].get("vring_1_size") == str(RING), status[name]


@OVS
def test_ovs_gives_a_nic_port_the_descriptors_asked(journal):
    """A DPDK port on a wire's NIC (a tester's on another host, here a veth
    pair's ends lent as such): OVS's options:n_rxq_desc and n_txq_desc, as
    vswitchd configured them (dpif/show); Rx and Tx may differ on a NIC."""
    p = point("ovs", switch_rxd=RING, switch_txd=2 * RING)
    [pair] = p.pairs
    wires = {pair.sender.name: f"{p.prefix}x0", pair.receiver.name: f"{p.prefix}x1"}
    p = replace(p, nics=tuple(wires.items()))
    with no_leftovers(p.prefix):
        subprocess.run(["ip", "link", "add", wires[pair.sender.name], "type", "veth", "peer",
                        "name", wires[pair.receiver.name]], check=True)
        dataplane = DATAPLANES["ovs"](journal)
        try:
            dataplane.start(p)
            applied = dataplane.applied()
        finally:
            dataplane.stop()
            subprocess.run(["ip", "link", "del", wires[pair.sender.name]], check=True)
    for name in wires:
        port = applied["ports"][name]
        assert port["type"] == "dpdk" and "ring" not in port
        assert (port["n_rxq_desc"], port["n_txq_desc"]) == (str(RING), str(2 * RING))
        assert (port["configured_rxq_descriptors"], port["configured_txq_descriptors"]) == \
            (RING, 2 * RING)


def test_testpmd_takes_the_descriptors_asked(journal):
    p = point("testpmd", switch_rxd=RING, switch_txd=RING)
    with no_leftovers(p.prefix):
        dataplane = DATAPLANES["testpmd"](journal)
        try:
            dataplane.start(p)
            applied = dataplane.applied()
            sent, received, before, after = exchange(dataplane, p)
        finally:
            dataplane.stop()
    assert applied["forward"] == "port"
    for port in applied["ports"].values():
        assert (port["rxd"], port["txd"], port["ring"]) == (RING, RING, RING), port
    _delivered(p, sent, received, before, after)


@OVS
@pytest.mark.needs("runc")
def test_a_run_through_port_rules_and_pinned_queues_stores_what_ovs_holds(results):
    """As a user runs it: zero loss at a low rate, and the point stores the
    rules, the affinity and the ring read back from OVS."""
    out, left = run(results, "--switch", "ovs", "--api", "dpdk", "--forward", "port",
                    "--rxq-affinity", "pinned", "--switch-rxd", str(RING), "--switch-txd",
                    str(RING), "--rate", "5k", *SHORT)
    assert out["outcome"]["status"] == "done", out["outcome"]
    assert out["outcome"]["left"] == [] and left == {}, (out["outcome"]["left"], left)
    [point_] = out["run"]["points"]
    assert point_["status"] == "done", point_["error"]
    assert (point_["forward"], point_["rxq_affinity"], point_["switch_rxd"]) == \
        ("port", "pinned", RING)
    [pair] = point_["per_pair"]
    harness.assert_sent(point_, pair, point_["rate"] * point_["duration"])
    assert pair["lost"] == 0 and pair["received"] == pair["sent"]
    applied = point_["switch_facts"]["applied"]
    assert applied["forward"] == "port"
    assert not any("NORMAL" in rule for rule in applied["rules"])
    assert sum("output:" in rule for rule in applied["rules"]) == 2
    core = {q["port"]: q["core"] for q in point_["queues"]}
    for name, port in applied["ports"].items():
        assert port["ring"] == RING and port["pmd-rxq-affinity"] == f"0:{core[name]}"

