"""The tester's ends on two cores each (endpoint_cores = 2): each end's engine
polls a queue of its port per core, in real runc containers. Over a bridge
(veths made with two queues, AF_XDP a socket each, an engine NF between) and
over memif (DPDK, queue to queue): every flow arrives whole and in order,
each queue of each end took part, and the stored summaries say so."""
from __future__ import annotations

import json

import pytest

import harness

pytestmark = pytest.mark.e2e

RATE, DURATION, FLOWS = 4000, 1.0, 8


def _run(cli, *args: str) -> dict:
    done = cli("run", *args, "--endpoint-cores", "2", "--flows", str(FLOWS), "--tester", "split",
               "--rate", str(RATE), "--duration", str(DURATION), "--warmup", "0.2", "--json")
    assert done.returncode == 0, done.stderr
    run = json.loads(done.stdout)["run"]
    assert run["status"] == "done"
    [point] = run["points"]
    return point


def _assert_each_queue_took_part(point: dict) -> None:
    [pair] = point["per_pair"]
    harness.assert_sent(point, pair, RATE * DURATION)
    assert pair["lost"] == 0 and pair["received"] == pair["sent"] and pair["reordered"] == 0, pair
    ends = {e["role"]: e["summary"] for e in point["endpoints"] if e["role"] in ("send", "recv")}
    for role, key in (("send", "tx_packets"), ("recv", "rx_packets")):
        queues = ends[role]["queues"]
        assert [q["queue"] for q in queues] == [0, 1], queues
        assert all(q[key] > 0 for q in queues) and sum(q[key] for q in queues) == ends[role][key], queues
        assert len({q["cpu"] for q in queues}) == 2, f"{role}: a core per queue: {queues}"
    assert ends["recv"]["split_flows"] == 0 and ends["recv"]["flows_seen"] == FLOWS, ends["recv"]


def test_ends_on_two_cores_over_a_bridge_with_an_nf_between(engine, cli, no_leftovers):
    point = _run(cli, "--switch", "bridge", "--api", "xdp", "--nfs", "1", "--nf", "l2")
    assert point["endpoint_cores"] == 2
    _assert_each_queue_took_part(point)


@pytest.mark.needs("dpdk-testpmd")   # DPDK (and hugepages)
def test_ends_on_two_cores_over_memif(engine, cli, no_leftovers):
    _assert_each_queue_took_part(_run(cli, "--switch", "memif", "--api", "dpdk"))
