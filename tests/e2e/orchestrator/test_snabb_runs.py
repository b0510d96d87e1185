"""`cnfperf run` through Snabb (its learning bridge, and its plain wires), the
C engine at both ends in runc containers, one pair or a single tester: zero
loss at a low rate, Snabb's counters match what the engines sent and got,
warm-up included, and nothing is left behind."""
from __future__ import annotations

import json

import pytest

import harness

pytestmark = [pytest.mark.e2e, pytest.mark.needs("runc"), pytest.mark.needs("snabb")]

RATE = 20_000      # pps: far below what Snabb drops at, even sharing 2 cores
DURATION = 1.0


@pytest.mark.parametrize("switch, tester", [
    pytest.param("snabb", "split", marks=pytest.mark.smoke), ("snabb", "single"),
    ("snabb-wire", "split"), ("snabb-wire", "single")])
def test_zero_loss_and_counters_that_match_the_engines(engine, cli, no_leftovers,
                                                       switch, tester):
    harness.require_api(engine, "dpdk")
    done = cli("run", "--switch", switch, "--api", "dpdk", "--tester", tester,
               "--rate", str(RATE), "--duration", str(DURATION), "--warmup", "0.2", "--json")
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    assert out["outcome"]["status"] == "done" and out["outcome"]["left"] == [], out["outcome"]
    run = out["run"]
    [point] = run["points"]
    assert point["status"] == "done", point["error"]
    [pair] = point["per_pair"]
    # On two cores the sender shares one with a busy poller and may fall behind
    # (split: three pollers on two cores); what is sent must all arrive.
    harness.assert_sent(point, pair, RATE * DURATION)
    assert pair["lost"] == 0 and pair["received"] == pair["sent"], pair

    [placed] = point["placement"]
    sender, receiver = placed["sender"]["name"], placed["receiver"]["name"]
    counters = point["counters"]
    assert set(counters) == {sender, receiver}
    engines = {e["endpoint"]: e["summary"] for e in point["endpoints"]}
    # The single tester is both ends; the switch also carried the warm-up's frames.
    tx = engines[sender]
    rx = engines[sender if tester == "single" else receiver]
    assert counters[sender]["rx_packets"] == tx["tx_packets"] + tx["warmup_tx_packets"]
    assert counters[receiver]["tx_packets"] == rx["rx_packets"] + rx["warmup_packets"]
    for c in counters.values():
        assert c["rx_dropped"] == 0 and c["tx_dropped"] == 0, counters
