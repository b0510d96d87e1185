"""MLRsearch (experiments/mlr.py, strategies/mlr.py) against simulated devices:
a loss curve with noise, the presets, generator truth, latency at fractions of
the rate found. The runner's part (one testbed, real engines) is tested end to
end in tests/e2e/experiments."""
from __future__ import annotations

import random

import pytest

from cnfperf import UserError, strategies
from cnfperf.experiments import mlr
from cnfperf.results import model
from cnfperf.strategies import latency, mlr as strategy
from harness import scenarios

GEN, CAP = 100_000, 20_000


class Device:
    """A generator that tops out at `gen` pps per pair (beyond it: frames the
    pacer skipped, or, with `refuse`, frames the port refused), and a link that
    forwards `cap` pps per pair (± `noise`, a relative standard deviation) and
    drops the rest. Every trial's latency grows with its load."""

    def __init__(self, cap: float = CAP, gen: float = GEN, noise: float = 0.0,
                 refuse: bool = False, seed: int = 1, stall: float = 0.0):
        self.cap, self.gen, self.noise, self.refuse = cap, gen, noise, refuse
        self.stall = stall   # the share of every trial the generator loses, at any load
        self.random = random.Random(seed)
        self.calls: list[tuple[int, float, float, str]] = []

    def __call__(self, s, n, what):
        self.calls.append((n, s.rate.pps, s.duration, what))
        offered = min(s.rate.pps or self.gen, self.gen)
        cap = self.cap * (1 + self.random.gauss(0, self.noise))
        pairs, endpoints = [], []
        for k in range(s.pairs):
            sent = int(offered * s.duration * (1 - self.stall))
            received = min(sent, int(cap * s.duration))
            short = max(0, int(s.rate.pps * s.duration) - sent)
            lat_ns = 10_000 * (1 + 9 * offered / self.cap)
            latency = model.Latency("one_way", received, {
                **{key: lat_ns for key in model.LATENCY_KEYS}}, [[int(lat_ns), int(lat_ns),
                                                                  received]])
            pairs.append(model.PairResult(
                pair=k, offered_pps=s.rate.pps, sent=sent, received=received,
                lost=sent - received, loss_ratio=(sent - received) / sent,
                tx_pps=sent / s.duration, rx_pps=received / s.duration, rx_bps=0.0,
                reordered=0, duplicates=0, latency=latency))
            summary = {"tx_refused": short if self.refuse else 0,
                       "tx_skipped": 0 if self.refuse else short}
            endpoints.append(model.EndpointMetrics(pair=k, endpoint=f"s{k}", role="send", cpu=0,
                                                   tx_packets=sent, seconds=s.duration,
                                                   summary=summary))
        return model.PointResult(pairs=pairs, total=model.total(pairs), endpoints=endpoints,
                                 counters={})


def search(flags: dict, device: Device):
    [s] = scenarios(None, {"search_max": "40k", **flags})
    said: list[str] = []
    result, found = strategy.search(s, device, said.append)
    return s, result, found, said


def test_ndr_and_pdr_from_one_search_of_a_sharp_device():
    s, result, found, said = search({"rate": "ndr+pdr"}, Device())
    assert strategies.choose(s) is strategy
    ndr, pdr = found["goals"]
    assert (ndr["loss_ratio"], pdr["loss_ratio"]) == (0, 0.005)
    for g in (ndr, pdr):
        assert g["lower_pps"] <= CAP * (1 + g["loss_ratio"]) < g["upper_pps"] * 1.0001
        assert 1 - g["lower_pps"] / g["upper_pps"] <= 0.005 + 1e-9     # the goal width
        assert g["conditional_pps"] <= g["lower_pps"] and g["exceed_ratio"] == 0.5
        assert not g["generator_limited"]
    assert ndr["conditional_pps"] == pytest.approx(CAP, rel=0.006)
    assert found["search"]["rate_pps"] == ndr["conditional_pps"]
    assert found["search"]["loss_threshold"] == 0
    searched = [t for t in found["trials"] if t["phase"] == "search"]
    assert all(t["duration"] == 1.0 and t["valid"] for t in searched)   # csit: 1 s trials
    assert [t["n"] for t in found["trials"]] == list(range(1, len(found["trials"]) + 1))
    assert result.total.rx_pps <= ndr["lower_pps"] * 1.0001
    assert any(line.startswith("ndr: ") and "pdr:0.5%: " in line for line in said), said


def test_latency_follows_at_min_and_fractions_of_the_pdr():
    _, _, found, _ = search({"rate": "ndr+pdr", "latency_at": "min+50%+90%"}, Device())
    pdr = found["goals"][-1]["conditional_pps"]
    latency = [t for t in found["trials"] if t["phase"] == "latency"]
    assert [t["fraction"] for t in latency] == [0, 0.5, 0.9]
    assert latency[0]["offered_pps"] == pytest.approx(40_000 * 0.01)    # the lowest load
    assert [t["offered_pps"] for t in latency[1:]] == pytest.approx([0.5 * pdr, 0.9 * pdr])
    assert latency[0]["lat_p99_ns"] < latency[1]["lat_p99_ns"] < latency[2]["lat_p99_ns"]
    assert all(t["latency_kind"] == "one_way" and t["latency_histogram"] for t in latency)
    assert found["trials"][-1]["phase"] == "latency"


def test_no_latency_trials_when_asked_for_none():
    _, _, found, _ = search({"rate": "ndr", "latency_at": "none"}, Device())
    assert not [t for t in found["trials"] if t["phase"] == "latency"]


@pytest.mark.parametrize("seed", range(5))
def test_a_noisy_loss_curve_still_lands_within_the_width(seed):
    """1 % noise on the capacity: half of a load's trial time may see loss
    (exceed ratio 0.5), so the rate found stays near the median capacity."""
    _, _, found, _ = search({"rate": "ndr+pdr", "latency_at": "none"},
                            Device(noise=0.01, seed=seed))
    ndr = found["goals"][0]["conditional_pps"]
    assert CAP * 0.97 < ndr < CAP * 1.03


def test_rfc2544_decides_a_load_by_one_final_trial_without_loss():
    s, _, found, _ = search({"rate": "ndr", "search": "rfc2544", "trial_duration": 10,
                             "latency_at": "none"}, Device())
    [g] = found["goals"]
    assert g["exceed_ratio"] == 0 and g["conditional_pps"] == pytest.approx(CAP, rel=0.006)
    durations = {t["duration"] for t in found["trials"] if t["phase"] == "search"}
    assert min(durations) == 1 and max(durations) == 10    # short first, final at length
    at_lower = [t for t in found["trials"] if t["offered_pps"] == g["lower_pps"]]
    assert any(t["duration"] == 10 and t["loss_ratio"] == 0 for t in at_lower)


def test_tst009_repeats_a_lossy_final_trial_once():
    """Two final trials at a load: one good and one bad is still good (exceed 0.5
    over a duration sum of two trials)."""
    [s] = scenarios(None, {"rate": "ndr", "search": "tst009", "trial_duration": 5})
    g = strategy.goals(s)
    assert (g.exceed_ratio, g.duration_sum, g.trial_duration) == (0.5, 10, 5)
    flaky = Device(noise=0.0)
    bad_once = {"n": 0}

    def device(s, n, what):   # the first final trial at every load loses
        r = flaky(s, n, what)
        if s.duration == 5 and bad_once["n"] % 2 == 0 and r.total.received > 1:
            r.pairs[0].received -= 1
            r.pairs[0].lost += 1
            r.total = model.total(r.pairs)
        if s.duration == 5:
            bad_once["n"] += 1
        return r
    said: list[str] = []
    _, found = strategy.search(s.model_copy(update={"latency_at": "none"}), device, said.append)
    [goal] = found["goals"]
    assert goal["conditional_pps"] and goal["good_s"] >= 5 and goal["bad_s"] >= 5


def test_the_drafts_example_a_hard_1_mpps_device():
    """The MLRsearch README's example: a device that forwards exactly 1 Mpps;
    the PDR's conditional throughput is within a few pps of it."""
    g = mlr.Goals((0.0, 0.005), exceed_ratio=0.005, width=0.005, initial_trial_duration=1,
                  trial_duration=1, duration_sum=21)

    def hard(duration, load):
        sent = int(duration * load)
        return mlr.Trial(duration, load, sent, sent, min(sent, int(duration * 1e6)))
    ndr, pdr = mlr.search(hard, g, 1e3, 1e9, 3600)
    assert 0.99e6 < ndr.conditional_pps <= 1e6 < ndr.upper_pps
    assert pdr.conditional_pps == pytest.approx(1e6, abs=2)


def test_a_generator_that_falls_short_makes_invalid_trials_not_device_loss():
    """The generator tops out at 30 kpps, the device at 50: trials above 30k are
    invalid (retried once), their unsent frames are not counted as lost (the
    search is not dragged below them), the bound stands on them, and it says so."""
    s, _, found, said = search({"rate": "ndr", "latency_at": "none"},
                               Device(cap=50_000, gen=30_000))
    invalid = [t for t in found["trials"] if not t["valid"]]
    assert invalid and all(t["offered_pps"] > 30_000 and t["loss_ratio"] == 0 for t in invalid)
    assert all("generator fell behind" in t["invalid_why"] for t in invalid)
    assert any(t["phase"] == "retry" for t in invalid)
    [g] = found["goals"]
    assert g["generator_limited"] and found["search"]["generator_limited"]
    assert g["lower_pps"] > 30_000
    assert any("INVALID" in line for line in said)
    assert "generator fell short" in said[-1]


def test_a_generator_short_at_every_load_does_not_sink_the_search():
    """Pollers that fill every core lose a slice now and then at any load: the
    generator sends 2 % less than asked at every load. The trials are invalid,
    but the rate found stays at the device's capacity, flagged."""
    _, _, found, _ = search({"rate": "ndr+pdr", "latency_at": "none"}, Device(stall=0.02))
    assert not any(t["valid"] for t in found["trials"] if t["phase"] == "search")
    for g in found["goals"]:
        assert CAP * 0.99 < g["conditional_pps"] < CAP * 1.03 and g["generator_limited"]


def test_an_attempt_its_retry_made_good_flags_nothing():
    """Every load's first attempt falls 5 % short, its retry does not: the
    search counts the retries, and no goal is generator-limited."""
    device, seen = Device(), set()

    def first_short(s, n, what):
        r = device(s, n, what)
        if s.rate.pps and (s.rate.pps, s.duration) not in seen:
            seen.add((s.rate.pps, s.duration))
            short = int(0.05 * r.endpoints[0].tx_packets)
            r.endpoints[0].tx_packets -= short
            r.endpoints[0].summary["tx_skipped"] = short
        return r
    [s] = scenarios(None, {"rate": "ndr+pdr", "latency_at": "none"})
    _, found = strategy.search(s, first_short, lambda _: None)
    assert any(t["phase"] == "retry" and t["valid"] for t in found["trials"])
    assert not any(g["generator_limited"] for g in found["goals"])


def test_frames_a_port_refused_are_the_devices_loss():
    """A port that refuses frames above 30 kpps (its ring full): the trials are
    valid, and the frames never sent count as lost."""
    _, _, found, _ = search({"rate": "ndr", "latency_at": "none"},
                            Device(cap=50_000, gen=30_000, refuse=True))
    assert all(t["valid"] for t in found["trials"])
    [g] = found["goals"]
    assert not g["generator_limited"] and g["lower_pps"] <= 30_000 * 1.01


@pytest.mark.parametrize("flags, field", [
    ({"rate": "ndr+pdr", "search": "bisect"}, "rate"),
    ({"rate": "ndr", "trial_duration": 2, "duration_sum": 1}, "duration_sum"),
    ({"rate": "ndr", "trial_duration": 1, "initial_trial_duration": 2},
     "initial_trial_duration"),
    ({"rate": "ndr", "latency_at": "min+5"}, "latency_at"),
    ({"rate": "ndr", "latency_at": "max"}, "latency_at"),
    ({"rate": "ndr", "search": "newton"}, "search"),
    ({"rate": "ndr", "exceed_ratio": 1}, "exceed_ratio"),
])
def test_search_settings_that_do_not_go_together_are_refused(flags, field):
    with pytest.raises(UserError) as e:
        scenarios(None, flags)
    assert e.value.field == field


def test_presets_and_what_a_scenario_sets():
    assert mlr.goals((0.0,), "csit") == mlr.Goals((0.0,), 0.5, 0.005, 1, 1, 21)
    assert mlr.goals((0.0,), "rfc2544") == mlr.Goals((0.0,), 0, 0.005, 1, 60, 60)
    assert mlr.goals((0.0,), "tst009") == mlr.Goals((0.0,), 0.5, 0.005, 1, 60, 120)
    assert mlr.goals((0.0,), "csit", trial_duration=0.5, duration_sum=3, precision=0.02,
                     exceed_ratio=0) == mlr.Goals((0.0,), 0, 0.02, 0.5, 0.5, 3)
    assert latency.loads("min+10%+50%+90%") == [
        ("min", 0), ("10%", 0.1), ("50%", 0.5), ("90%", 0.9)]
    assert latency.loads("none") == []


def test_a_looser_generator_tolerance_trusts_a_short_generator():
    """With generator_tolerance 0.5 a sender that sends 60 % of what it was asked
    for still made a valid trial: its load counts at what was asked."""
    _, _, found, _ = search({"rate": "ndr", "latency_at": "none", "search_max": "50k",
                             "generator_tolerance": 0.5}, Device(cap=50_000, gen=30_000))
    assert all(t["valid"] for t in found["trials"])
    assert not found["goals"][0]["generator_limited"]


@pytest.mark.parametrize("sent, refused, valid, counted", [
    (500_000, 0, True, 500_000),        # all of the 500k asked for were sent
    (481_000, 19_000, True, 500_000),   # every frame not sent, a port refused: the device's
    (481_000, 1_000, False, 482_000),   # a few refusals, the rest the generator's own stalls
    (497_000, 0, True, 497_000),        # 0.6 % short: within the tolerance, counted as sent
])
def test_a_shortfall_is_the_devices_as_far_as_its_ports_refused(sent, refused, valid,
                                                               counted):
    from cnfperf.strategies.truth import truth
    sender = model.EndpointMetrics(pair=0, endpoint="s", role="send", cpu=0, tx_packets=sent,
                                   seconds=1.0, summary={"tx_refused": refused})
    pair = model.PairResult(pair=0, offered_pps=5e5, sent=sent, received=sent, lost=0,
                            loss_ratio=0.0, tx_pps=sent, rx_pps=sent, rx_bps=0.0, reordered=0,
                            duplicates=0, latency=None)
    r = model.PointResult(pairs=[pair], total=pair, endpoints=[sender], counters={})
    t = truth(r, 500_000, 1.0, burst=32)
    assert (t.valid, t.counted) == (valid, counted), t


def test_a_reflectors_capacity_is_searched_in_latency_mode():
    """001's Fig. 4: how many round trips a reflector sustains, by the same search."""
    [s] = scenarios(None, {"rate": "ndr+pdr", "mode": "latency"})
    assert strategies.choose(s) is strategy and s.rate.losses == (0, 0.005)
