"""NDR/PDR binary search against synthetic devices of known capacity.

A device here is a function of the offered rate: it drops whatever exceeds its
capacity, loss = max(0, 1 - capacity / offered), so the true NDR is exactly the
capacity and the true PDR at X% is capacity / (1 - X).
"""
from __future__ import annotations

import random

import pytest

from cnfperf.experiments.search import TrialResult, search


class Device:
    """A data plane that forwards up to `capacity` pps and drops the rest."""

    def __init__(self, capacity: float, *, generator_max: float = float("inf"),
                 tx_share: float = 1.0, capacity_noise: float = 0.0,
                 seed: int = 1):
        self.capacity = capacity
        self.generator_max = generator_max      # the sender cannot offer more than this
        self.tx_share = tx_share      # the sender always falls short by this share
        self.capacity_noise = capacity_noise    # capacity varies trial to trial (relative)
        self.rng = random.Random(seed)
        self.requests: list[float] = []

    def __call__(self, offered: float) -> TrialResult:
        self.requests.append(offered)
        sent = min(offered * self.tx_share, self.generator_max)
        cap = self.capacity * (1 + self.rng.uniform(-1, 1) * self.capacity_noise)
        return TrialResult.from_rates(sent, min(sent, cap))


def test_ndr_finds_capacity_within_precision():
    dev = Device(2_345_678)
    r = search(dev, 10_000, 10_000_000, precision=0.01)
    assert r.rate_pps <= dev.capacity                       # never above: that would lose
    assert r.rate_pps == pytest.approx(dev.capacity, rel=0.01)
    assert r.loss_ratio == 0 and r.verified and not r.generator_limited
    assert r.loss_threshold == 0


def test_search_trials_are_all_recorded_in_order():
    dev = Device(1_000_000)
    r = search(dev, 1_000, 8_000_000, precision=0.01)
    assert [t.n for t in r.trials] == list(range(1, len(r.trials) + 1))
    assert [t.offered_pps for t in r.trials] == dev.requests
    assert r.trials[0].offered_pps == 8_000_000 and not r.trials[0].passed
    assert r.trials[-1].phase == "verify" and r.trials[-1].passed
    assert all(t.phase == "search" for t in r.trials[:-1])
    # bisection: about log2(8M / (1% of 1M)) trials, not a linear sweep
    assert len(r.trials) <= 12
    for t in r.trials:
        assert t.passed == (t.loss_ratio == 0)


def test_precision_controls_the_number_of_trials_and_the_error():
    coarse = search(Device(3_000_000), 1_000, 10_000_000, precision=0.1, verify=False)
    fine = search(Device(3_000_000), 1_000, 10_000_000, precision=0.001, verify=False)
    assert len(coarse.trials) < len(fine.trials)
    assert coarse.rate_pps == pytest.approx(3e6, rel=0.1)
    assert fine.rate_pps == pytest.approx(3e6, rel=0.001)


@pytest.mark.parametrize("percent", [0.1, 1.0, 5.0])
def test_pdr_finds_the_rate_at_the_loss_threshold(percent):
    dev = Device(1_500_000)
    threshold = percent / 100
    r = search(dev, 10_000, 10_000_000, precision=0.005, loss_threshold=threshold)
    expected = dev.capacity / (1 - threshold)
    assert r.rate_pps == pytest.approx(expected, rel=0.005)
    assert r.loss_ratio <= threshold
    if threshold > 0.01:        # well past the 0.5% precision: the rate is above capacity
        assert r.loss_ratio > 0 and r.rate_pps > dev.capacity
    assert r.loss_threshold == threshold


def test_line_rate_passes_at_once():
    dev = Device(50_000_000)
    r = search(dev, 1_000, 1_000_000, precision=0.01)
    assert r.rate_pps == 1_000_000
    assert [t.phase for t in r.trials] == ["search", "verify"]


def test_device_that_loses_even_at_min_rate():
    dev = Device(500)
    r = search(dev, 1_000, 1_000_000, precision=0.01)
    assert r.rate_pps is None and r.loss_ratio is None and not r.verified
    assert r.trials[-1].offered_pps == 1_000 and not r.trials[-1].passed


def test_generator_short_of_the_offer_reports_what_was_sent():
    # The sender tops out at 700 kpps, the device could take 2 Mpps: the search
    # must not claim 2 Mpps (nor the offered max) and must say why.
    dev = Device(2_000_000, generator_max=700_000)
    r = search(dev, 1_000, 4_000_000, precision=0.01)
    assert r.rate_pps == pytest.approx(700_000)
    assert r.generator_limited
    assert r.offered_pps > r.rate_pps
    assert r.loss_ratio == 0


def test_loss_is_measured_against_sent_not_offered():
    # Every trial offers 97% of the request. Against the request the device
    # would look lossy at every rate; against what was sent it is lossless
    # up to its capacity.
    dev = Device(1_000_000, tx_share=0.97)
    r = search(dev, 10_000, 5_000_000, precision=0.01)
    assert r.rate_pps == pytest.approx(1_000_000, rel=0.01)
    assert r.rate_pps <= 1_000_000
    assert r.loss_ratio == 0
    assert r.offered_pps == pytest.approx(r.rate_pps / 0.97)
    assert r.generator_limited    # 3% short is more than the 1% precision


def test_failed_trial_sending_less_shrinks_the_bracket_to_what_was_sent():
    dev = Device(1_000_000, generator_max=1_200_000)
    r = search(dev, 1_000, 10_000_000, precision=0.01, verify=False)
    second = r.trials[1]
    # after failing at a sent 1.2 Mpps the next offer is inside [1k, 1.2M]
    assert second.offered_pps <= 1_200_000
    assert r.rate_pps == pytest.approx(1_000_000, rel=0.01)


@pytest.mark.parametrize("seed", range(8))
def test_noisy_device_lands_near_capacity(seed):
    dev = Device(3_000_000, capacity_noise=0.01, seed=seed)
    r = search(dev, 10_000, 10_000_000, precision=0.01)
    assert r.rate_pps == pytest.approx(3_000_000, rel=0.03)
    # the reported loss is the one measured at the reported rate
    accepted = [t for t in r.trials if t.tx_pps == r.rate_pps]
    assert accepted and accepted[-1].loss_ratio == r.loss_ratio


def test_verification_failure_steps_down_and_is_recorded():
    # Capacity drops by 5% after the search: the first verification fails, the
    # search steps down by 2 x precision until one passes.
    searching = len(search(Device(1_000_000), 10_000, 2_000_000, precision=0.01,
                           verify=False).trials)

    class Drifting(Device):
        def __call__(self, offered):
            if len(self.requests) == searching:
                self.capacity *= 0.95
            return super().__call__(offered)

    dev = Drifting(1_000_000)
    r = search(dev, 10_000, 2_000_000, precision=0.01, verify_retries=3, max_trials=40)
    verify = [t for t in r.trials if t.phase == "verify"]
    assert len(verify) >= 2 and not verify[0].passed and verify[-1].passed
    assert r.verified and r.rate_pps <= dev.capacity
    assert verify[1].offered_pps == pytest.approx(verify[0].offered_pps * 0.98)


def test_unverified_result_keeps_best_search_trial():
    calls = []

    def flaky(offered):
        calls.append(offered)
        # passes everything during the search, loses during every verification
        loss = 0.0 if len(calls) == 1 else 0.2
        return TrialResult(offered, offered * (1 - loss), loss)

    r = search(flaky, 1_000, 1_000_000, precision=0.01, verify_retries=1)
    assert not r.verified
    assert r.rate_pps == 1_000_000 and r.loss_ratio == 0
    assert [t.phase for t in r.trials] == ["search", "verify", "verify"]


def test_max_trials_bounds_the_search():
    r = search(Device(123_456), 1, 10**9, precision=1e-6, max_trials=10)
    assert len(r.trials) == 10


def test_result_serialises_every_trial():
    d = search(Device(1e6), 1e3, 4e6, precision=0.05).to_dict()
    assert d["rate_pps"] and d["trials"] and set(d["trials"][0]) >= {
        "n", "phase", "offered_pps", "tx_pps", "rx_pps", "loss_ratio", "passed"}


@pytest.mark.parametrize("kwargs, message", [
    (dict(min_pps=0, max_pps=10), "min rate: 0 must be > 0 pps"),
    (dict(min_pps=10, max_pps=5), "max rate: 5 must be >= the min rate"),
    (dict(min_pps=1, max_pps=5, precision=0), "precision: 0 must be a fraction"),
    (dict(min_pps=1, max_pps=5, precision=1.5), "precision: 1.5"),
    (dict(min_pps=1, max_pps=5, loss_threshold=1), "loss threshold: 1 must be a ratio"),
    (dict(min_pps=1, max_pps=5, loss_threshold=-0.1), "loss threshold"),
])
def test_bad_parameters_name_themselves(kwargs, message):
    with pytest.raises(ValueError, match=message):
        search(Device(1), **kwargs)


def test_trial_must_return_a_trial_result():
    with pytest.raises(TypeError, match="not TrialResult"):
        search(lambda rate: {"rx_pps": rate}, 1, 10)


def test_loss_from_rates():
    assert TrialResult.from_rates(1000, 990).loss_ratio == pytest.approx(0.01)
    assert TrialResult.from_rates(1000, 1010).loss_ratio == 0     # duplicates never count as negative loss
    with pytest.raises(ValueError, match="tx_pps"):
        TrialResult.from_rates(0, 0)
