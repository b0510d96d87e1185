"""CPU per node, end to end in runc containers: every node has a row, no node
used more CPU than its cores had in the window, a busy-polling end spun for
most of it, and every node's cycles per packet are known; through testpmd the
switch has a row too, read from its own processes."""
from __future__ import annotations

import json

import pytest

from cnfperf.scenario import parse_cpus

pytestmark = pytest.mark.e2e

RATE = 2000        # pps: low, so that nothing is lost and every node has packets
DURATION = 1.5
WARMUP = 0.3
# CPU seconds a node may seem to use beyond its cores × the window: the two samples
# of a window are read one node after another, a few ms apart, and cgroup and
# /proc counters are read whole while they tick.
TOLERANCE_S = 0.05


def _point(cli, *args: str) -> dict:
    done = cli("run", *args, "--rate", str(RATE), "--duration", str(DURATION),
               "--warmup", str(WARMUP), "--json")
    assert done.returncode == 0, done.stderr
    run = json.loads(done.stdout)["run"]
    [point] = run["points"]
    assert point["status"] == "done", point.get("error")
    return point


def _check(point: dict, kinds: list[str]) -> dict[str, dict]:
    rows = {r["node"]: r for r in point["cpu_usage"]}
    assert sorted(r["kind"] for r in rows.values()) == sorted(kinds)
    engines = {e["endpoint"] for e in point["endpoints"]}
    assert engines <= set(rows)                       # every engine is a node with a row
    for r in rows.values():
        used = r["user_s"] + r["system_s"]
        assert 0 < used <= len(parse_cpus(r["cores"])) * r["wall_s"] + TOLERANCE_S, r
        assert r["packets"] > 0 and r["cycles_per_packet"] > 0, r
        assert r["wall_s"] >= DURATION / 2 and r["tsc_hz"] > 1e8, r
        assert r["threads"] and all(t["name"] and t["core"] is not None for t in r["threads"])
    return rows


def _percent(r: dict) -> float:
    return 100 * (r["user_s"] + r["system_s"]) / r["wall_s"]


def test_every_node_of_a_path_through_an_nf_has_its_cpu(engine, cli, no_leftovers):
    # A single tester: its one engine and the NF get a core each of two, so the
    # tester's busy polling is not halved by a neighbour on its core.
    point = _point(cli, "--switch", "veth", "--api", "raw", "--nfs", "1",
                   "--tester", "single")
    # veth is a kernel data plane: no switch process, no switch row
    rows = _check(point, ["tester", "nf"])
    [tester] = [r for r in rows.values() if r["kind"] == "tester"]
    assert _percent(tester) > 50, tester          # poll = busy: it spins
    assert {r["tsc_source"] for r in rows.values()} == {"engine calibration"}


@pytest.mark.needs("dpdk-testpmd")
def test_the_testpmd_switch_is_a_node(engine, cli, no_leftovers):
    point = _point(cli, "--switch", "testpmd", "--api", "dpdk", "--tester", "split")
    rows = _check(point, ["send", "recv", "switch"])
    [switch] = [r for r in rows.values() if r["kind"] == "switch"]
    assert switch["node"] == "testpmd"
    # its process's threads: EAL's main and the forwarding lcore among them
    assert len({t["tid"] for t in switch["threads"]}) >= 2
    # what the sender sent, less what crossed before the window opened (a poll late)
    assert switch["packets"] >= 0.9 * point["sent"], switch
