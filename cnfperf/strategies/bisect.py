"""A point whose rate is a search of one goal (ndr, pdr:X%) with search = bisect:
a binary search and a verification trial, run as trials on one testbed, then
latency trials at loads below the rate found (latency.py).

The testbed is set up once; each trial runs at a fixed rate that search.py
decides, in its own directory (trial1, trial2, …). Every trial is kept, and
the result stored is the accepted trial's. Rates are per pair, like the
scenario's. Loss is counted as MLRsearch counts it (truth.py): against the
frames that left and those the device's ports refused, never those the
generator missed on its own.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable

from cnfperf import SystemFailure, rate as rates
from cnfperf.experiments import search as bisection
from cnfperf.strategies import latency
from cnfperf.strategies.record import Measure, on_testbed, progress, trial_row
from cnfperf.strategies.truth import Truth, truth

if TYPE_CHECKING:
    from cnfperf.results.model import PointResult
    from cnfperf.scenario import Scenario

# Without search_max the bracket is [top / 100, top], top being what an unpaced
# first trial sent: two orders of magnitude hold any data plane's knee, at
# seven bisections for 1% precision.
FLOOR = 0.01

# Its goal width when the scenario sets no precision.
PRECISION = 0.01


def wants(s: Scenario) -> bool:
    return s.rate.is_search and s.search == "bisect" and not s.soak


def search(s: Scenario, measure: Measure, say: Callable[[str], None]
           ) -> tuple[PointResult, dict[str, Any]]:
    """(result of the accepted trial, or of the last one if none passed,
    {"search": the store's search columns, "trials": a row per trial});
    `measure(scenario, n, what)` runs trial n at the scenario's fixed rate."""
    base = s.model_copy(update={"duration": s.trial_duration or s.duration})
    measured: list[PointResult] = []
    truths: list[Truth] = []

    def run(pps: float, what: str) -> tuple[PointResult, Truth]:
        result = measure(base.model_copy(update={"rate": rates.fixed(pps)}),
                         len(measured) + 1, what)
        t = truth(result, pps, base.duration, base.burst, base.generator_tolerance)
        measured.append(result)
        truths.append(t)
        say(progress(len(measured), what, result, t))
        return result, t

    def trial(pps: float) -> bisection.TrialResult:
        r, t = run(pps, f"at {rates.show(pps)}")
        total = r.total
        # The rate the loss counts against (truth.counted): what left and what
        # the device's ports refused.
        counted = total.tx_pps / s.pairs * (t.counted / t.sent if t.sent else 0.0)
        return bisection.TrialResult(counted, total.rx_pps / s.pairs, t.loss(total.lost))

    top = s.search_max.pps
    if not top:
        top = run(0.0, "unpaced (the top of the search)")[0].total.tx_pps / s.pairs
        if top <= 0:
            raise SystemFailure("search: the unpaced first trial sent nothing")
    found = bisection.search(trial, top * FLOOR, top, precision=s.precision or PRECISION,
                             loss_threshold=s.rate.loss)
    say(_verdict(s, found, top))
    probe = len(measured) - len(found.trials)   # 1 with the unpaced first trial
    accepted = next((t for t in reversed(found.trials) if t.passed
                     and t.tx_pps == found.rate_pps
                     and t.offered_pps == found.offered_pps), None)
    result = measured[accepted.n + probe - 1] if accepted else measured[-1]
    rows = _rows(found, measured, truths, probe, base)

    def at_load(pps: float, fraction: float) -> None:
        r, t = run(pps, f"at {rates.show(pps)} (latency)")
        rows.append(trial_row(len(measured), "latency", pps, base.duration, r, t,
                              fraction=fraction))
    latency.run(s.latency_at, top * FLOOR, found.rate_pps, str(s.rate), at_load, say)
    return result, {"search": _columns(found), "trials": rows}


def _verdict(s: Scenario, found: bisection.SearchResult, top: float) -> str:
    if found.rate_pps is None:
        return (f"{s.rate}: no rate down to {rates.show(top * FLOOR)} pps kept the loss "
                "within the threshold")
    return (f"{s.rate}: {rates.show(found.rate_pps)} pps per pair at "
            f"{100 * found.loss_ratio:.3f}% loss, "
            + ("verified" if found.verified else "NOT verified"))


def _columns(found: bisection.SearchResult) -> dict[str, Any]:
    return {"rate_pps": found.rate_pps, "loss_ratio": found.loss_ratio,
            "offered_pps": found.offered_pps, "loss_threshold": found.loss_threshold,
            "verified": found.verified, "generator_limited": found.generator_limited}


def _rows(found: bisection.SearchResult, measured: list[PointResult], truths: list[Truth],
          probe: int, trial: Scenario) -> list[dict[str, Any]]:
    def row(n: int, phase: str, offered: float, passed: bool | None) -> dict[str, Any]:
        return trial_row(n, phase, offered, trial.duration, measured[n - 1], truths[n - 1],
                         passed)
    rows = [row(1, "probe", 0.0, None)] if probe else []
    return rows + [row(t.n + probe, t.phase, t.offered_pps, t.passed) for t in found.trials]


# The strategy: each trial of the search on the point's one testbed.
run = on_testbed(search)
