"""Every kernel data plane × api × mode with 1 pair, and each data plane with 2
pairs once, in real runc containers: zero loss at a low rate, results stored
and readable, nothing left behind."""
from __future__ import annotations

import json

import pytest

import harness

pytestmark = pytest.mark.e2e

RATE = 2000        # pps per pair: far below what any kernel path drops at
DURATION = 1.0
WARMUP = 0.2


CASES = [(switch, api, mode, 1) for switch in ("veth", "bridge", "macvlan")
         for api in ("udp", "raw") for mode in ("throughput", "latency")] + [
    # 2 pairs: once per data plane, each api and mode among them
    ("veth", "udp", "throughput", 2), ("bridge", "raw", "latency", 2),
    ("macvlan", "udp", "latency", 2)]
SMOKE = ("bridge", "udp", "throughput", 1)


@pytest.mark.parametrize("switch, api, mode, pairs", [
    pytest.param(*case, marks=pytest.mark.smoke) if case == SMOKE else case
    for case in CASES])
def test_zero_loss_and_stored(engine, cli, cli_json, results, no_leftovers,
                              switch, api, mode, pairs):
    done = cli("run", "--switch", switch, "--api", api, "--mode", mode, "--pairs", str(pairs),
               "--tester", "split", "--rate", str(RATE), "--duration", str(DURATION),
               "--warmup", str(WARMUP), "--json")
    assert done.returncode == 0, done.stderr
    run_id = json.loads(done.stdout)["outcome"]["run_id"]

    run = cli_json("results", "show", run_id)
    # what the run printed is the run as stored (the other tests read that)
    assert run == json.loads(done.stdout)["run"]
    assert run["status"] == "done"
    [point] = run["points"]
    assert (point["switch"], point["api"], point["mode"], point["pairs"]) == \
        (switch, api, mode, pairs)
    assert point["runtime"] == "runc" and point["image_size"] > 0
    expected = RATE * DURATION
    assert len(point["per_pair"]) == pairs
    for pair in point["per_pair"]:
        harness.assert_sent(point, pair, expected)
        assert pair["lost"] == 0 and pair["received"] == pair["sent"], pair
        assert pair["lat_p50_ns"] and 0 < pair["lat_p50_ns"] <= pair["lat_p99_ns"]
        assert pair["latency_kind"] == ("rtt" if mode == "latency" else "one_way")
    assert point["lost"] == 0 and point["sent"] == sum(p["sent"] for p in point["per_pair"])

    roles = {"throughput": {"send", "recv"}, "latency": {"client", "server"}}[mode]
    assert {e["role"] for e in point["endpoints"]} == roles
    assert len(point["endpoints"]) == 2 * pairs
    # The switch saw the traffic: every port counted at least the frames its pair's
    # sender measured (its warm-up ones come on top).
    fewest = min(p["sent"] for p in point["per_pair"])
    assert point["counters"] and all(c["rx_packets"] + c["tx_packets"] >= fewest
                                     for c in point["counters"].values()), point["counters"]

    # The engine's own words are kept, line by line, per endpoint.
    raw = sorted((results / "runs" / run_id / "point0").glob("*.jsonl"))
    assert len(raw) == 2 * pairs
    for path in raw:
        types = [json.loads(line)["type"] for line in path.read_text().splitlines()]
        assert types[0] == "ready" and types[-1] == "summary"
