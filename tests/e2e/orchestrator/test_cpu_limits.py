"""CPU as a variable, in real runc containers: a quota holds a busy-polling NF
to its share of a core and its throughput falls; a noisy neighbour runs while
the point sends and is gone after; nothing is left behind, cgroups included."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

import harness

from cnfperf.run import noise

pytestmark = pytest.mark.e2e

DURATION = 1.0
WARMUP = 0.2
QUOTA = 25        # % of one core


def _run(cli, *args: str) -> tuple[dict, Path]:
    done = cli("run", *args, "--duration", str(DURATION), "--warmup", str(WARMUP), "--json")
    assert done.returncode == 0, done.stderr
    outcome = json.loads(done.stdout)["outcome"]
    run = json.loads(done.stdout)["run"]
    assert run["status"] == "done"
    [point] = run["points"]
    return point, Path(run["run_dir"]) / "point0"


def _nf_cpu(point: dict) -> dict:
    [row] = [r for r in point["cpu_usage"] if r["kind"] == "nf"]
    return row


def test_a_quota_caps_a_busy_nf_and_its_throughput_falls(engine, cli, no_leftovers):
    """Unpaced through one l2 NF: with 25 % of a core its CPU stays near 25 % of
    the window (CFS enforces per 100 ms period: ±1 period over a 1.2 s window,
    and the sampling edges, within 10 points) and it forwards less."""
    flags = ("--switch", "veth", "--api", "mmap", "--nfs", "1", "--rate", "0", "--tester", "split")
    free, _ = _run(cli, *flags)
    held, _ = _run(cli, *flags, "--nf-quota", str(QUOTA))
    assert held["nf_quota"] == QUOTA and free["nf_quota"] is None
    [free_pair], [held_pair] = free["per_pair"], held["per_pair"]
    assert held_pair["received"] < 0.8 * free_pair["received"], (free_pair, held_pair)
    row = _nf_cpu(held)
    used = (row["user_s"] + row["system_s"]) / row["wall_s"]
    assert used <= QUOTA / 100 + 0.10, row
    assert used >= QUOTA / 100 / 2, row            # it polls busily: it used its share
    assert (_nf_cpu(free)["user_s"] + _nf_cpu(free)["system_s"]) / _nf_cpu(free)["wall_s"] > used


@pytest.mark.needs("stress-ng")
@pytest.mark.parametrize("kind", ["cpu", "io"])
def test_noise_runs_while_the_point_sends(engine, cli, no_leftovers, kind):
    point, directory = _run(cli, "--switch", "veth", "--api", "raw", "--rate", "2000",
                            "--noise", kind)
    assert point["noise"] == kind and point["per_pair"][0]["lost"] == 0
    text = (directory / "noise.out").read_text()
    assert noise.bogo_ops(text)[{"cpu": "cpu", "io": "hdd"}[kind]] > 0, text
    # stopped at the senders' end, not at teardown: it ran for warm-up + duration
    real = float(text.split(f"] {'hdd' if kind == 'io' else 'cpu'} ")[1].split()[1])
    assert WARMUP + DURATION - 0.1 <= real <= WARMUP + DURATION + 1.0, text


def test_traffic_noise_is_a_second_stream_not_measured(engine, cli, no_leftovers):
    point, directory = _run(cli, "--switch", "bridge", "--api", "raw", "--rate", "2000",
                            "--noise", "traffic")
    assert [p["pair"] for p in point["per_pair"]] == [0]
    [pair] = point["per_pair"]
    harness.assert_sent(point, pair, 2000 * DURATION)
    assert pair["lost"] == 0 and pair["received"] == pair["sent"], pair
    assert {e["pair"] for e in point["endpoints"]} == {0}
    # …but the second pair ran, and sent as the first did
    [extra] = directory.glob("*p1s.jsonl")
    summary = json.loads(extra.read_text().splitlines()[-1])
    assert summary["type"] == "summary" and summary["role"] in harness.GENERATORS
    harness.assert_summary_sent(summary, 2000 * DURATION)
