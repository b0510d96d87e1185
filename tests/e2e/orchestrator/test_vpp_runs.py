"""VPP (built from source) as the switch of whole runs: engines on both sides of
its vhost-user or memif ports, a single tester, a network function in a chain
through it. Zero loss at a low rate, VPP's counters agree with the engines',
its queue placement is stored, nothing left behind."""
from __future__ import annotations

import json

import pytest

import harness

pytestmark = [pytest.mark.e2e, pytest.mark.needs("vpp")]

RATE = 2000
DURATION = 1.0
WARMUP = 0.2


def _run(cli, *args: str) -> dict:
    done = cli("run", "--api", "dpdk", *args, "--rate", str(RATE), "--duration", str(DURATION),
               "--warmup", str(WARMUP), "--json")
    assert done.returncode == 0, done.stderr
    run = json.loads(done.stdout)["run"]
    [point] = run["points"]
    assert point["status"] == "done", point["error"]
    return point


def _sent(summary: dict) -> int:
    """Every frame put on the link, the warm-up's too (the switch counts them)."""
    return summary["tx_packets"] + summary["warmup_tx_packets"]


@pytest.mark.parametrize("switch", [pytest.param("vpp", marks=pytest.mark.smoke), "vpp-memif"])
def test_every_frame_crosses_vpp_and_its_counters_agree(engine, cli, no_leftovers,
                                                        switch):
    point = _run(cli, "--switch", switch, "--tester", "split")
    [pair] = point["per_pair"]
    # Three pollers share two cores: a sender may fall a little behind its pace.
    harness.assert_sent(point, pair, RATE * DURATION)
    assert pair["lost"] == 0 and pair["received"] == pair["sent"]
    [sender] = [e for e in point["endpoints"] if e["role"] == "send"]
    [receiver] = [e for e in point["endpoints"] if e["role"] == "recv"]
    counters = point["counters"]
    assert counters[sender["endpoint"]]["rx_packets"] == _sent(sender["summary"])
    assert counters[receiver["endpoint"]]["tx_packets"] == _sent(sender["summary"])
    assert not any(c["rx_dropped"] or c["tx_dropped"] for c in counters.values())
    # VPP's main thread polls both ports, on the core the plan gave the switch
    assert {q["port"] for q in point["queues"]} == set(counters)
    assert len({q["core"] for q in point["queues"]}) == 1
    # its own per-packet cost (show runtime): begun in the warm-up and read as
    # the sender ends, like the CPU meter, so about every frame of the measured
    # window (a few at its edges not, on a busy host), at some clocks each
    cost = point["switch_cost"]
    assert cost["source"] == "vppctl show runtime"
    assert cost["packets"] >= 0.9 * sender["summary"]["tx_packets"], cost
    assert cost["cycles_per_packet"] > 0, cost
    assert cost["vectors_per_call"] > 0 and cost["nodes"], cost
    assert any(n["name"].endswith("-input") for n in cost["nodes"]), cost


def test_a_single_tester_through_vpp(engine, cli, no_leftovers):
    point = _run(cli, "--switch", "vpp", "--tester", "single")
    [pair] = point["per_pair"]
    harness.assert_sent(point, pair, RATE * DURATION)
    assert pair["lost"] == 0 and pair["received"] == pair["sent"]
    assert pair["latency_kind"] == "one_way" and pair["lat_p50_ns"] > 0


def test_a_network_function_chained_through_vpp(engine, cli, no_leftovers):
    """sender -> VPP -> NF -> VPP -> receiver: four VPP ports, both NF ports
    count every frame. Engines and VPP sleep when idle (adaptive), so four
    pollers do not starve each other on a small host. (With poll = interrupt
    frames take 50-130 ms through this chain here, and the last ones are still
    on their way when the receiver stops.)"""
    point = _run(cli, "--switch", "vpp", "--nfs", "1", "--poll", "adaptive",
                 "--tester", "split")
    assert point["shape"] == "chain"
    [pair] = point["per_pair"]
    harness.assert_sent(point, pair, RATE * DURATION)
    assert pair["lost"] == 0 and pair["received"] == pair["sent"]
    assert len(point["counters"]) == 4
    [nf] = [e for e in point["endpoints"] if e["role"] == "nf"]
    port1, port2 = nf["summary"]["ports"]
    [sender] = [e for e in point["endpoints"] if e["role"] == "send"]
    assert port1["rx_packets"] == port2["tx_packets"] == _sent(sender["summary"])
