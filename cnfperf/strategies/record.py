"""A search's trials: how each runs on the point's testbed, and its row as the
store keeps it (the trials table), for every search."""
from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any, Callable

from cnfperf import rate as rates
from cnfperf.results import hdrh
from cnfperf.results.model import LATENCY_KEYS, STALL_MARK

if TYPE_CHECKING:
    from cnfperf.results.model import PointResult
    from cnfperf.scenario import Scenario
    from cnfperf.strategies.base import Trials
    from cnfperf.strategies.truth import Truth

# measure(scenario, n, what) runs trial n at the scenario's fixed rate and duration.
Measure = Callable[["Scenario", int, str], "PointResult"]
Search = Callable[["Scenario", Measure, Callable[[str], None]],
                  tuple["PointResult", dict[str, Any]]]


def on_testbed(search: Search) -> Callable[[Trials, Scenario], tuple[PointResult, dict[str, Any]]]:
    """A strategy's run(trials, s) from its search(s, measure, say): trial n
    runs on the point's one testbed in its own directory (trial1, trial2, …)."""
    def run(trials: Trials, s: Scenario) -> tuple[PointResult, dict[str, Any]]:
        def measure(trial: Scenario, n: int, what: str) -> PointResult:
            return trials.measure(trial, f"trial{n}", f"trial {n} {what}")
        return search(s, measure, trials.say)
    return run


def progress(n: int, what: str, r: PointResult, truth: Truth) -> str:
    """Trial n's progress line: rates per pair and the loss the search counts
    (with the sends the ports refused, when they did), and the most of its
    window a poller lost to stalls when that was over the mark."""
    pairs = len(r.pairs) or 1
    t = r.total
    refused = (f" ({truth.refused} sends refused; {100 * truth.loss(t.lost):.3f}% of the frames "
               "offered)" if truth.refused else "")
    worst = r.stalled()
    stalled = (f"; {worst.endpoint} stalled {100 * worst.stall_share:.1f}% of its window"
               if worst and (worst.stall_share or 0) > STALL_MARK else "")
    return (f"trial {n} {what}: tx {rates.show(t.tx_pps / pairs)} rx "
            f"{rates.show(t.rx_pps / pairs)} pps per pair, loss {100 * t.loss_ratio:.3f}%"
            + refused + stalled + ("" if truth.valid else f"; INVALID: {truth.why}"))


def trial_row(n: int, phase: str, offered: float, duration: float, r: PointResult,
              truth: Truth, passed: bool | None = None,
              fraction: float | None = None) -> dict[str, Any]:
    """Trial n: offered is the rate asked for per pair, tx what left; loss is
    counted against what was sent; stall_share the most of its window a poller
    lost to stalls (model.PointResult.stalled). A latency trial (`fraction` of the rate
    found; 0: the search's lowest load) keeps its latency too, its histogram
    also as an HdrHistogram blob."""
    pairs = len(r.pairs) or 1
    t = r.total
    row = {"n": n, "phase": phase, "offered_pps": offered, "duration": duration,
           "tx_pps": t.tx_pps / pairs, "rx_pps": t.rx_pps / pairs, "sent": t.sent,
           "received": t.received, "loss_ratio": t.loss_ratio, "passed": passed,
           "intended": truth.intended, "refused": truth.refused, "skipped": truth.skipped,
           "stretch": truth.stretch, "valid": truth.valid, "invalid_why": truth.why or None,
           "stall_share": worst.stall_share if (worst := r.stalled()) else None}
    if fraction is not None:
        lat = t.latency
        row.update(fraction=fraction, latency_kind=lat.kind if lat else None,
                   latency_samples=lat.samples if lat else None,
                   **{f"lat_{k}_ns": lat.ns.get(k) if lat else None for k in LATENCY_KEYS},
                   latency_histogram=json.dumps(lat.histogram) if lat else None,
                   latency_hdrh=hdrh.blob(lat.histogram, lat.ns.get("max")) if lat else None)
    return row
