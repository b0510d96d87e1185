"""tester = auto in whole runs, in real runc containers: on two cores the split
tester's ends and testpmd's poller would be three busy pollers, so one engine
holds both ends; the run says so on its progress line and in its table, stores
which tester, why, its pollers and its cores, and loses nothing at a low rate.
Where the pollers fit, the split tester runs as before."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

import harness

pytestmark = [pytest.mark.e2e, pytest.mark.needs("dpdk-testpmd", "runc")]

RATE = 5000
SHORT = ["--duration", "1", "--warmup", "0.3"]
WHY = "auto: split would put 3 busy pollers on 2 cores"


def _run(cli, cli_json, *args: str) -> tuple[dict, Path, str]:
    """(the stored point, its directory, what the run printed)."""
    done = cli("run", *args, "--cpus", "0-1", "--rate", str(RATE), *SHORT)
    assert done.returncode == 0, done.stderr
    run = cli_json("results", "show", done.stdout.split()[1])
    [point] = run["points"]
    assert point["status"] == "done", point["error"]
    return point, Path(run["run_dir"]) / "point0", done.stdout + done.stderr


@pytest.mark.parametrize("mode", ["throughput", "latency"])
def test_testpmd_on_two_cores_takes_the_single_tester(engine, cli, cli_json, no_leftovers,
                                                      mode):
    point, directory, said = _run(cli, cli_json, "--switch", "testpmd", "--api", "dpdk",
                                  "--mode", mode)
    assert (point["tester"], point["tester_why"], point["pollers"], point["point_cores"]) == \
        ("single", WHY, 2, 2)
    assert point["warnings"] == [], "two pollers on two cores: no contention"
    [tester] = point["endpoints"]
    assert tester["role"] == "tester"
    [pair] = point["per_pair"]
    harness.assert_sent(point, pair, RATE * 1)       # 1 s (SHORT)
    assert pair["lost"] == 0 and pair["received"] == pair["sent"]
    # one engine, one clock: the latency is one way, in either mode
    assert pair["latency_kind"] == "one_way" and 0 < pair["lat_p50_ns"] <= pair["lat_p99_ns"]
    assert "tester=single" in said and f"(tester {WHY})" in said           # progress lines
    assert f"tester single for testpmd ({WHY})" in said                      # the run's table
    placed = json.loads((directory / "point.json").read_text())
    assert (placed["scenario"]["tester"], placed["tester_why"]) == ("single", WHY)


def test_a_set_split_tester_is_kept_and_warned_about(engine, cli, cli_json, no_leftovers):
    point, _, said = _run(cli, cli_json, "--switch", "testpmd", "--api", "dpdk",
                          "--tester", "split")
    assert (point["tester"], point["tester_why"], point["pollers"]) == ("split", "set", 3)
    assert sorted(e["role"] for e in point["endpoints"]) == ["recv", "send"]
    assert "3 busy pollers share 2 cores" in said
    assert point["per_pair"][0]["lost"] == 0
