"""A point's experiment strategies (strategies/: fixed.py, bisect.py)
against a simulated device: a generator that tops out at GEN pps per pair and a
link that delivers CAP pps per pair and drops the rest. The runner's part (one
testbed, real engines) is tested end to end in tests/e2e/experiments."""
from __future__ import annotations

import pytest

from cnfperf import strategies
from cnfperf.strategies import bisect, fixed
from cnfperf.results import model
from harness import scenarios

GEN, CAP = 100_000, 20_000


def device(calls: list, cap: int = CAP, refuse: float = 0.0):
    """The device: the link delivers `cap` pps per pair; its ports refuse
    `refuse` of the sends asked for (a full ring), which never leave."""
    def measure(s, n, what):
        calls.append((n, s.rate.pps, s.duration, what))
        offered = min(s.rate.pps or GEN, GEN)
        pairs, senders = [], []
        for k in range(s.pairs):
            asked = int(offered * s.duration)
            refused = int(asked * refuse)
            sent = asked - refused
            received = min(sent, int(cap * s.duration))
            lost = sent - received
            pairs.append(model.PairResult(
                pair=k, offered_pps=s.rate.pps, sent=sent, received=received, lost=lost,
                loss_ratio=lost / sent, tx_pps=sent / s.duration, rx_pps=received / s.duration,
                rx_bps=0.0, reordered=0, duplicates=0, latency=None))
            senders.append(model.EndpointMetrics(
                pair=k, endpoint=f"a{k}", role="send", cpu=0, tx_packets=sent,
                tx_pps=sent / s.duration, seconds=s.duration,
                summary={"tx_refused": refused}))
        return model.PointResult(pairs=pairs, total=model.total(pairs), endpoints=senders,
                                 counters={})
    return measure


class Trials:
    """Implements strategies.Trials on the simulated device."""

    def __init__(self, cap: int = CAP):
        self.calls: list = []
        self.measured: list = []    # (name, detail) of each trial
        self.said: list[str] = []
        self._device = device(self.calls, cap)

    def measure(self, s, name="", detail=""):
        self.measured.append((name, detail))
        return self._device(s, len(self.measured), detail)

    def say(self, detail):
        self.said.append(detail)


@pytest.mark.parametrize("pairs", [1, 2])
def test_ndr_from_an_unpaced_probe(pairs):
    [s] = scenarios(None, {"rate": "ndr", "search": "bisect", "latency_at": "none",
                           "pairs": pairs, "duration": 10, "trial_duration": 2,
                           "precision": 0.01})
    calls, said = [], []
    result, found = bisect.search(s, device(calls), said.append)
    assert calls[0][1:3] == (0.0, 2) and "unpaced" in calls[0][3]    # trials last 2 s
    rows = found["trials"]
    assert rows[0]["phase"] == "probe" and rows[0]["passed"] is None
    assert [r["n"] for r in rows] == [c[0] for c in calls] == list(range(1, len(calls) + 1))
    assert rows[-1]["phase"] == "verify" and rows[-1]["passed"]
    search = found["search"]
    assert CAP * 0.98 <= search["rate_pps"] <= CAP and search["verified"]
    assert search["loss_ratio"] == 0 and not search["generator_limited"]
    # the stored result is the verification trial's, per pair rates times pairs
    assert result.total.tx_pps == pytest.approx(rows[-1]["tx_pps"] * pairs)
    assert rows[-1]["offered_pps"] == search["offered_pps"]
    assert said[-1].startswith("ndr: ") and "verified" in said[-1]


def test_pdr_accepts_its_loss_and_search_max_skips_the_probe():
    [s] = scenarios(None, {"rate": "pdr:5%", "search": "bisect", "search_max": "40k",
                           "trial_duration": 1})
    calls = []
    _, found = bisect.search(s, device(calls), lambda _: None)
    assert calls[0][1] == 40_000 and found["trials"][0]["phase"] == "search"
    rate = found["search"]["rate_pps"]
    assert CAP <= rate <= CAP / 0.95 and 0 < found["search"]["loss_ratio"] <= 0.05


def test_sends_the_ports_refused_are_the_devices_loss():
    """As MLRsearch counts it (truth.py): a device whose ports refuse 1 % of
    the sends at any load has no NDR, though every frame that left arrived,
    and a PDR of 5 % stands at the load offered, refusals included."""
    [s] = scenarios(None, {"rate": "ndr", "search": "bisect", "search_max": "40k",
                           "trial_duration": 1})
    said = []
    _, found = bisect.search(s, device([], refuse=0.01), said.append)
    assert found["search"]["rate_pps"] is None
    assert any("sends refused; 1.000% of the frames offered" in line for line in said)
    [s] = scenarios(None, {"rate": "pdr:5%", "search": "bisect", "search_max": "40k",
                           "trial_duration": 1})
    _, found = bisect.search(s, device([], refuse=0.01), lambda _: None)
    rate, loss = found["search"]["rate_pps"], found["search"]["loss_ratio"]
    assert CAP <= rate <= CAP / 0.95 and 0.01 <= loss <= 0.05
    assert not found["search"]["generator_limited"]


def test_no_rate_found_keeps_the_last_trial():
    [s] = scenarios(None, {"rate": "ndr", "search": "bisect", "search_max": "40k",
                           "trial_duration": 1})
    said = []
    result, found = bisect.search(s, device([], cap=0), said.append)
    assert found["search"]["rate_pps"] is None and not found["search"]["verified"]
    assert result.total.sent == found["trials"][-1]["sent"]
    assert "no rate down to" in said[-2]
    assert said[-1] == "no latency trials: the search found no rate for ndr"


def test_a_search_runs_each_trial_in_a_directory_of_its_own():
    [s] = scenarios(None, {"rate": "ndr", "search": "bisect", "search_max": "40k",
                           "trial_duration": 1})
    trials = Trials()
    assert strategies.choose(s) is bisect
    _, found = bisect.run(trials, s)
    names = [name for name, _ in trials.measured]
    assert names == [f"trial{n}" for n in range(1, len(found["trials"]) + 1)]
    assert trials.measured[0][1] == "trial 1 at 40k"
    assert trials.said[0].startswith("trial 1 at 40k: tx 40k rx 20k pps per pair")


def test_a_fixed_rate_is_one_trial_in_the_points_directory():
    [s] = scenarios(None, {"rate": "30k", "duration": 2})
    trials = Trials()
    assert strategies.choose(s) is fixed
    result, extra = fixed.run(trials, s)
    assert trials.measured == [("", "")] and extra == {}
    assert result.total.rx_pps == CAP and trials.calls[0][1:3] == (30_000, 2)


def test_exactly_one_strategy_wants_each_point():
    [s] = scenarios(None, {"rate": "ndr", "search": "bisect"})
    with pytest.raises(ValueError, match="2 experiment strategies"):
        strategies.choose(s, {"bisect": bisect, "also": bisect})
    with pytest.raises(ValueError, match="0 experiment strategies"):
        strategies.choose(s, {"fixed": fixed})


def test_a_binary_search_is_followed_by_latency_trials_below_its_rate():
    [s] = scenarios(None, {"rate": "ndr", "search": "bisect", "search_max": "40k",
                           "trial_duration": 1, "latency_at": "min+50%"})
    _, found = bisect.search(s, device([]), lambda _: None)
    *searched, low, half = found["trials"]
    assert searched[-1]["phase"] == "verify" and (low["phase"], half["phase"]) == ("latency",) * 2
    assert (low["fraction"], half["fraction"]) == (0, 0.5)
    assert low["offered_pps"] == 400 and half["offered_pps"] == found["search"]["rate_pps"] / 2
    assert [t["n"] for t in found["trials"]] == list(range(1, len(found["trials"]) + 1))
