"""Click as the switch, through `cnfperf run`: the engine's ends (split and a
single tester) and a chain through one NF, in real runc containers, at a low
rate. Zero loss; the switch's counters agree with the engines' to the frame
(its counters span the warm-up too); nothing left behind."""
from __future__ import annotations

import json

import pytest

import harness

pytestmark = [pytest.mark.e2e, pytest.mark.needs("click-dpdk")]

RATE = 20_000      # pps: a fraction of what one Click thread switches here
CHAIN_RATE = 2000  # a chain adds an NF's poller: four on two cores
DURATION = 1.0
WARMUP = 0.2


def _run(cli, rate: int, *args: str) -> dict:
    done = cli("run", "--switch", "click", "--api", "dpdk", *args, "--rate", str(rate),
               "--duration", str(DURATION), "--warmup", str(WARMUP), "--json")
    assert done.returncode == 0, done.stderr
    run = json.loads(done.stdout)["run"]
    assert run["status"] == "done"
    [point] = run["points"]
    return point


def _switch_is_a_node(point: dict) -> None:
    """Its process is measured as the switch: pids() found it."""
    assert any(row["node"] == "click" and row["kind"] == "switch" and row["user_s"] > 0
               for row in point["cpu_usage"]), point["cpu_usage"]


@pytest.mark.smoke
def test_the_engines_ends_through_click(engine, cli, no_leftovers):
    point = _run(cli, RATE, "--tester", "split")
    harness.zero_loss(point, RATE * DURATION)
    ends = {e["role"]: e for e in point["endpoints"]}
    c = point["counters"]
    [sender_port] = [p for p in c if p == ends["send"]["endpoint"]]
    [receiver_port] = [p for p in c if p == ends["recv"]["endpoint"]]
    assert c[sender_port]["rx_packets"] == harness.sent_all(ends["send"]["summary"]) > 0
    assert c[receiver_port]["tx_packets"] == harness.received_all(ends["recv"]["summary"])
    assert c[sender_port]["tx_packets"] == c[receiver_port]["rx_packets"] == 0
    harness.no_drops(c)
    # One poll thread serves both ports, on the core it was placed on.
    assert sorted(q["port"] for q in point["queues"]) == sorted(c)
    assert len({q["core"] for q in point["queues"]}) == 1
    _switch_is_a_node(point)


def test_a_single_tester_through_click(engine, cli, no_leftovers):
    point = _run(cli, RATE, "--tester", "single")
    pair = harness.zero_loss(point, RATE * DURATION)
    assert pair["latency_kind"] == "one_way" and pair["lat_p50_ns"] > 0
    [tester] = point["endpoints"]
    c = point["counters"]
    # Its two ports: it sends on the sender's and receives on the receiver's.
    sender_port = tester["endpoint"]
    [receiver_port] = [p for p in c if p != sender_port]
    assert c[sender_port]["rx_packets"] == harness.sent_all(tester["summary"]) > 0
    assert c[receiver_port]["tx_packets"] == harness.received_all(tester["summary"])
    harness.no_drops(c)


def test_a_chain_through_click(engine, cli, no_leftovers):
    """Sender → switch → NF → switch → receiver: each hop's count is the next's.
    The engines sleep when idle (adaptive), so four pollers do not starve each
    other on a small host."""
    point = _run(cli, CHAIN_RATE, "--nfs", "1", "--poll", "adaptive",
                 "--tester", "split")
    assert point["shape"] == "chain"
    harness.zero_loss(point, CHAIN_RATE * DURATION)
    ends = {e["role"]: e for e in point["endpoints"]}
    port1, port2 = ends["nf"]["summary"]["ports"]
    c = point["counters"]
    nf = ends["nf"]["endpoint"]
    sent = harness.sent_all(ends["send"]["summary"])
    assert c[ends["send"]["endpoint"]]["rx_packets"] == sent > 0
    assert c[nf + "a"]["tx_packets"] == port1["rx_packets"] == sent
    assert c[nf + "b"]["rx_packets"] == port2["tx_packets"] == sent
    assert c[ends["recv"]["endpoint"]]["tx_packets"] == \
        harness.received_all(ends["recv"]["summary"]) == sent
    harness.no_drops(c)
    _switch_is_a_node(point)
