"""A search point's trials (experiments/trials.py) against a simulated device: a
generator that tops out at GEN pps per pair and a link that delivers CAP pps per
pair and drops the rest. The runner's part (one testbed, real engines) is
tested end to end in tests/e2e/experiments."""
from __future__ import annotations

import pytest

from cnfperf.experiments import trials
from cnfperf.results import model
from cnfperf.scenario import load

GEN, CAP = 100_000, 20_000


def device(calls: list, cap: int = CAP):
    def measure(s, n, what):
        calls.append((n, s.rate, s.duration, what))
        offered = min(s.rate or GEN, GEN)
        pairs = []
        for k in range(s.pairs):
            sent = int(offered * s.duration)
            received = min(sent, int(cap * s.duration))
            lost = sent - received
            pairs.append(model.PairResult(
                pair=k, offered_pps=s.rate, sent=sent, received=received, lost=lost,
                loss_ratio=lost / sent, tx_pps=sent / s.duration, rx_pps=received / s.duration,
                rx_bps=0.0, reordered=0, duplicates=0, latency=None))
        return model.PointResult(pairs=pairs, total=model.total(pairs), endpoints=[], counters={})
    return measure


@pytest.mark.parametrize("pairs", [1, 2])
def test_ndr_from_an_unpaced_probe(pairs):
    [s] = load(None, {"rate": "ndr", "pairs": pairs, "duration": 10, "trial_duration": 2,
                      "precision": 0.01})
    calls, said = [], []
    result, found = trials.search(s, device(calls), said.append)
    assert calls[0][1:3] == (0.0, 2) and "unpaced" in calls[0][3]    # trials last 2 s
    rows = found["trials"]
    assert rows[0]["phase"] == "probe" and rows[0]["passed"] is None
    assert [r["n"] for r in rows] == [c[0] for c in calls] == list(range(1, len(calls) + 1))
    assert rows[-1]["phase"] == "verify" and rows[-1]["passed"]
    search = found["search"]
    assert CAP * 0.98 <= search["rate_pps"] <= CAP and search["verified"]
    assert search["loss_ratio"] == 0 and not search["generator_limited"]
    # the stored result is the verification trial's, per pair rates times pairs
    assert result.total.tx_pps == pytest.approx(rows[-1]["offered_pps"] * pairs)
    assert said[-1].startswith("ndr: ") and "verified" in said[-1]


def test_pdr_accepts_its_loss_and_search_max_skips_the_probe():
    [s] = load(None, {"rate": "pdr:5%", "search_max": "40k", "trial_duration": 1})
    calls = []
    _, found = trials.search(s, device(calls), lambda _: None)
    assert calls[0][1] == 40_000 and found["trials"][0]["phase"] == "search"
    rate = found["search"]["rate_pps"]
    assert CAP <= rate <= CAP / 0.95 and 0 < found["search"]["loss_ratio"] <= 0.05


def test_no_rate_found_keeps_the_last_trial():
    [s] = load(None, {"rate": "ndr", "search_max": "40k", "trial_duration": 1})
    said = []
    result, found = trials.search(s, device([], cap=0), said.append)
    assert found["search"]["rate_pps"] is None and not found["search"]["verified"]
    assert result.total.sent == found["trials"][-1]["sent"]
    assert "no rate down to" in said[-1]
