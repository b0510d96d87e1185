"""generator_baseline in real runc containers: the tester's limit measured
first through veth, stored, and each throughput point's share of it computed
against that baseline; nothing left behind."""
from __future__ import annotations

import json

import pytest

pytestmark = pytest.mark.e2e


def test_the_baseline_is_stored_and_each_point_says_its_share(engine, cli, no_leftovers):
    done = cli("run", "--switch", "veth,bridge", "--api", "udp", "--tester", "split",
               "--generator-baseline", "--duration", "1", "--warmup", "0.2", "--json")
    assert done.returncode == 0, done.stderr
    run_id = json.loads(done.stdout)["outcome"]["run_id"]
    run = json.loads(done.stdout)["run"]
    # one baseline: both points have the same api, size, burst, tester and pairs
    [base] = run["baselines"]
    assert (base["switch"], base["api"], base["size"], base["tester"], base["pairs"],
            base["status"]) == ("veth", "udp", 64, "split", 1, "done")
    assert base["scenario"]["rate"] == 0 and base["scenario"]["mode"] == "throughput"
    assert base["rx_pps"] > 0 and base["tx_pps"] >= base["rx_pps"] * 0.99
    points = run["points"]
    assert [p["switch"] for p in points] == ["veth", "bridge"]
    for p in points:
        assert p["status"] == "done" and p["rx_pps"] > 0
        assert p["baseline_pps"] == base["rx_pps"]
        assert p["baseline_share"] == pytest.approx(p["rx_pps"] / base["rx_pps"])
    # and the text table says it
    table = cli("results", "show", run_id)
    assert table.returncode == 0, table.stderr
    head, _, *rows = table.stdout.splitlines()[1:5]
    assert head.rstrip().endswith("% of gen")
    for p, row in zip(points, rows):
        assert row.split()[-1] == f"{100 * p['baseline_share']:.1f}"
