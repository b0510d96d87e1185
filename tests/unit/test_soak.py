"""Soaks (strategies/soak.py) against a simulated testbed whose engines print an
interval record a second: the series stored as it comes, an interruption that
keeps it, a resume that goes on from it, a soak after a search."""
from __future__ import annotations

import pytest

from cnfperf import UserError, strategies
from cnfperf.results import model
from cnfperf.strategies import soak
from harness import scenarios


class Interrupted(Exception):
    pass


class Trials:
    """strategies.Trials over a device that forwards `cap` pps per pair; the
    engines print an interval a second (the sender's, the receiver's with its
    sequence gaps and latency), and `stop_after` intervals interrupt the trial."""

    def __init__(self, cap: float = 20_000, stop_after: int | None = None):
        self.cap, self.stop_after = cap, stop_after
        self.rows: list[dict] = []      # the store's soak table
        self.measured: list[tuple] = []
        self.said: list[str] = []

    def measure(self, s, name="", detail="", watch=None):
        self.measured.append((name, s.rate.pps, s.duration, detail))
        seconds = int(round(s.duration))
        got = min(s.rate.pps or 1e6, self.cap)
        # the warm-up's last second: left out of the series
        warm = {"type": "interval", "phase": "measure", "interval_s": 1.0, "warmup_packets": 9,
                "tx_packets": 1, "rx_packets": 1, "lost": 0}
        sent_i, recv_i = [dict(warm)], [dict(warm)]
        for i in range(seconds):
            sent_i.append({"type": "interval", "phase": "measure", "interval_s": 1.0,
                           "tx_packets": int(s.rate.pps)})
            recv_i.append({"type": "interval", "phase": "measure", "interval_s": 1.0,
                           "rx_packets": int(got), "lost": int(s.rate.pps - got),
                           "latency": {"p50_ns": 1000 * (i + 1), "p99_ns": 5000, "max_ns": 9000}})
            if watch:
                watch([(list(sent_i), list(recv_i))] * s.pairs)
            if self.stop_after is not None and len(self.rows) >= self.stop_after:
                raise Interrupted()
        sent, received = int(s.rate.pps * s.duration), int(got * s.duration)
        pair = model.PairResult(pair=0, offered_pps=s.rate.pps, sent=sent, received=received,
                                lost=sent - received, loss_ratio=(sent - received) / sent,
                                tx_pps=s.rate.pps, rx_pps=got, rx_bps=0.0, reordered=0,
                                duplicates=0, latency=None)
        sender = model.EndpointMetrics(pair=0, endpoint="s", role="send", cpu=0,
                                       tx_packets=sent, seconds=s.duration)
        return model.PointResult(pairs=[pair], total=pair, endpoints=[sender], counters={})

    def keep(self, rows):
        self.rows.extend(rows)

    def kept(self):
        return list(self.rows)

    def say(self, detail):
        self.said.append(detail)


def test_a_soak_stores_a_row_a_second_as_it_goes():
    [s] = scenarios(None, {"rate": "10k", "soak": 5})
    assert strategies.choose(s) is soak
    trials = Trials()
    result, extra = soak.run(trials, s)
    assert extra == {} and trials.measured == [("soak", 10_000, 5, "soak at 10k for 5 s")]
    assert [r["n"] for r in trials.rows] == [0, 1, 2, 3, 4]
    assert [r["at_s"] for r in trials.rows] == [1, 2, 3, 4, 5]
    assert {r["segment"] for r in trials.rows} == {0}
    assert all(r["loss_ratio"] == 0 and r["rx_pps"] == 10_000 for r in trials.rows)
    assert [r["lat_p50_ns"] for r in trials.rows] == [1000, 2000, 3000, 4000, 5000]


def test_loss_per_interval_is_the_receivers_sequence_gaps():
    [s] = scenarios(None, {"rate": "25k", "soak": 2})
    trials = Trials(cap=20_000)
    soak.run(trials, s)
    assert all(r["lost"] == 5000 and r["loss_ratio"] == pytest.approx(0.2) for r in trials.rows)


def test_an_interrupted_soak_keeps_its_rows_and_a_resume_goes_on():
    [s] = scenarios(None, {"rate": "10k", "soak": 6})
    trials = Trials(stop_after=2)
    with pytest.raises(Interrupted):
        soak.run(trials, s)
    assert [r["n"] for r in trials.rows] == [0, 1]
    trials.stop_after = None
    soak.run(trials, s)                                    # the resumed run
    assert trials.measured[-1][:3] == ("soak1", 10_000, 4)  # the 4 s left
    assert [r["n"] for r in trials.rows] == list(range(6))
    assert [r["segment"] for r in trials.rows] == [0, 0, 1, 1, 1, 1]
    assert [r["at_s"] for r in trials.rows] == [1, 2, 3, 4, 5, 6]
    assert "resuming the soak at 10k pps per pair: 2 of 6 s" in trials.said[0]


def test_a_soak_after_a_search_runs_at_its_share_of_the_rate_found():
    [s] = scenarios(None, {"rate": "ndr", "soak": 3, "soak_at": "50%", "search_max": "40k",
                           "trial_duration": 1, "duration_sum": 1, "precision": 0.05,
                           "latency_at": "none"})
    trials = Trials(cap=20_000)
    result, extra = soak.run(trials, s)
    found = extra["goals"][-1]["conditional_pps"]
    assert 19_000 < found <= 20_000
    name, pps, duration, _ = trials.measured[-1]
    assert name == "soak" and pps == pytest.approx(found / 2) and duration == 3
    assert extra["trials"] and "result" not in extra
    assert all(r["offered_pps"] == pytest.approx(found / 2) for r in trials.rows)


@pytest.mark.parametrize("flags", [{"soak_at": "90"}, {"soak_at": "0%"}, {"soak_at": "x"}])
def test_a_bad_soak_at_is_refused(flags):
    with pytest.raises(UserError) as e:
        scenarios(None, {"rate": "ndr", "soak": 10, **flags})
    assert e.value.field == "soak_at"
