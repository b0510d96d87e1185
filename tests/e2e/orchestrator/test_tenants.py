"""Tenants on a kernel data plane, in real runc containers: an aggressor and a
victim pair, each with its own profile, each measured at its own rate; the
victim alone and beside the aggressor give the report its interference table;
a victim in latency mode beside an aggressor in throughput mode. Low rates:
no loss expected, nothing left behind."""
from __future__ import annotations

import json

import pytest

import harness
from cnfperf.plan import run_prefix

pytestmark = pytest.mark.e2e

DURATION = 1.0
WARMUP = 0.2
VICTIM, AGGRESSOR = 2000, 5000   # pps: far below what a bridge drops at

STUDY = f"""
switch = "bridge"
api = "udp"
tester = "split"
duration = {DURATION}
warmup = {WARMUP}
rate = {VICTIM}
size = 256

[[part]]
pairs = 1

[[part]]
pairs = 2
[part.pair.1]
rate = {AGGRESSOR}
size = 128
burst = 8
"""


def _argv(results, run_id: str, point: int, name: str) -> list[str]:
    return json.loads((results / "runs" / run_id / f"point{point}" / f"{name}.argv.json")
                      .read_text())


def _opt(args: list[str], name: str) -> str:
    return args[args.index(name) + 1]


def test_an_aggressor_and_a_victim_each_measured_at_its_own_rate(
        engine, cli, results, no_leftovers, tmp_path):
    scenario = tmp_path / "tenants.toml"
    scenario.write_text(STUDY)
    done = cli("run", str(scenario), "--json")
    assert done.returncode == 0, done.stderr
    run_id = json.loads(done.stdout)["outcome"]["run_id"]
    run = json.loads(done.stdout)["run"]
    alone, beside = run["points"]
    assert (alone["pairs"], beside["pairs"]) == (1, 2)
    assert beside["scenario"]["pair"] == {"1": {"rate": AGGRESSOR, "size": 128, "burst": 8}}

    victim, aggressor = beside["per_pair"]
    for point, pair, rate in ((alone, alone["per_pair"][0], VICTIM), (beside, victim, VICTIM),
                              (beside, aggressor, AGGRESSOR)):
        harness.assert_sent(point, pair, rate * DURATION)
        assert pair["lost"] == 0 and pair["received"] == pair["sent"], pair
        assert pair["offered_pps"] == rate
    # what each pair was asked, kept with it
    assert (victim["profile"]["rate"], victim["profile"]["size"]) == (VICTIM, 256)
    assert (aggressor["profile"]["rate"], aggressor["profile"]["size"],
            aggressor["profile"]["burst"]) == (AGGRESSOR, 128, 8)
    assert alone["per_pair"][0]["profile"] is None   # one pair: the point's own values
    # the bytes each receiver got are its own pair's frames' (with FCS)
    assert victim["rx_bps"] / victim["rx_pps"] == pytest.approx(256 * 8, rel=0.01)
    assert aggressor["rx_bps"] / aggressor["rx_pps"] == pytest.approx(128 * 8, rel=0.01)

    # each pair's engines were told their own profile
    prefix = run_prefix(run_id)
    victim_tx, aggressor_tx = (_argv(results, run_id, 1, f"{prefix}p{k}s") for k in (0, 1))
    assert (_opt(victim_tx, "--rate"), _opt(victim_tx, "--size"),
            _opt(victim_tx, "--burst")) == (str(VICTIM), "256", "32")
    assert (_opt(aggressor_tx, "--rate"), _opt(aggressor_tx, "--size"),
            _opt(aggressor_tx, "--burst")) == (str(AGGRESSOR), "128", "8")

    # the report: the victim alone and beside the aggressor
    out = tmp_path / "report"
    cli("report", run_id, "--out", str(out), check=True)
    page = (out / "report.html").read_text()
    assert "Interference" in page and (out / "interference.png").stat().st_size > 0
    shown = cli("results", "show", run_id, check=True).stdout
    assert "Interference" in shown and "pair.1.rate" in shown


def test_a_latency_victim_beside_a_throughput_aggressor(engine, cli, no_leftovers):
    done = cli("run", "--switch", "bridge", "--api", "raw", "--tester", "split",
               "--pairs", "2", "--rate", str(AGGRESSOR), "--duration", str(DURATION),
               "--warmup", str(WARMUP), "--pair", "0.mode=latency", "--pair", f"0.rate={VICTIM}",
               "--json")
    assert done.returncode == 0, done.stderr
    run_id = json.loads(done.stdout)["outcome"]["run_id"]
    [point] = json.loads(done.stdout)["run"]["points"]
    victim, aggressor = point["per_pair"]
    assert {e["role"] for e in point["endpoints"] if e["pair"] == 0} == {"client", "server"}
    assert {e["role"] for e in point["endpoints"] if e["pair"] == 1} == {"send", "recv"}
    assert (victim["latency_kind"], aggressor["latency_kind"]) == ("rtt", "one_way")
    for pair, rate in ((victim, VICTIM), (aggressor, AGGRESSOR)):
        harness.assert_sent(point, pair, rate * DURATION)
        assert pair["lost"] == 0 and pair["received"] == pair["sent"], pair
    assert victim["profile"]["mode"] == "latency" and victim["profile"]["burst"] == 1
    assert aggressor["profile"]["mode"] == "throughput"
