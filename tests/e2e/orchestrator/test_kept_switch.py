"""A switch kept between a run's points (switch_keep) against a fresh one per
point, for real: a two-point rate sweep through each DPDK switch that keeps,
with the single tester at a low paced rate. Kept or fresh, every frame
arrives; the kept switch is the same process in both points and starts the
second one with its counters at zero, so its counters count only that point's
frames; nothing is left behind."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

import harness

pytestmark = [pytest.mark.e2e]

RATES = (2000, 3000)
DURATION = 1.0
WARMUP = 0.2
NEEDS = {"ovs": pytest.mark.needs("ovsdb-server", "ovs-vsctl"),
         "testpmd": pytest.mark.needs("dpdk-testpmd"),
         "vpp": pytest.mark.needs("vpp"), "vpp-memif": pytest.mark.needs("vpp"),
         "click": pytest.mark.needs("click-dpdk"), "bess": pytest.mark.needs("bess")}


def _sweep(cli, results: Path, switch: str, keep: str) -> list[tuple[dict, dict]]:
    """Each point of the sweep, as stored, with its switch.json."""
    done = cli("run", "--switch", switch, "--api", "dpdk", "--tester", "single",
               "--switch-keep", keep, "--rate", ",".join(map(str, RATES)),
               "--duration", str(DURATION), "--warmup", str(WARMUP), "--json")
    assert done.returncode == 0, done.stderr
    run_id = json.loads(done.stdout)["outcome"]["run_id"]
    points = sorted(json.loads(done.stdout)["run"]["points"], key=lambda p: p["idx"])
    served = [json.loads((results / "runs" / run_id / f"point{p['idx']}" / "switch.json")
                         .read_text()) for p in points]
    return list(zip(points, served))


def _tester(point: dict) -> dict:
    [tester] = point["endpoints"]   # the single tester: one engine, named as its sender
    return tester


def _sent(point: dict) -> int:
    """Every frame the single tester put on its first port, the warm-up's too
    (the switch counts them)."""
    summary = _tester(point)["summary"]
    return summary["tx_packets"] + summary["warmup_tx_packets"]


@pytest.mark.parametrize("switch", [pytest.param(s, marks=m) for s, m in NEEDS.items()])
def test_a_kept_switch_measures_what_a_fresh_one_does(engine, cli, results,
                                                      no_leftovers, switch):
    kept = _sweep(cli, results, switch, "yes")
    fresh = _sweep(cli, results, switch, "no")
    for (k, _), (f, _), rate in zip(kept, fresh, RATES):
        for point in (k, f):
            assert point["status"] == "done", point["error"]
            [pair] = point["per_pair"]
            harness.assert_sent(point, pair, rate * DURATION)
            assert pair["lost"] == 0 and pair["received"] == pair["sent"]
            # the switch saw each frame of this point once, and no other point's
            assert point["counters"][_tester(point)["endpoint"]]["rx_packets"] == _sent(point)
        # paced alike: kept or fresh, the same frames arrive
        assert abs(k["per_pair"][0]["received"] - f["per_pair"][0]["received"]) <= 0.02 * rate
    first, second = [served for _, served in kept]
    assert (first["kept"], second["kept"], second["points"]) == (False, True, 2)
    assert first["pids"] == second["pids"] != [], "the second point ran on the same switch"
    # the kept switch starts the second point clean: its counters reset
    assert second["counters"] and not any(
        any(c.values()) for c in second["counters"].values()), second["counters"]
    assert [served["kept"] for _, served in fresh] == [False, False]
    assert [served["fresh_because"] for _, served in fresh][1] == "switch_keep = no"
