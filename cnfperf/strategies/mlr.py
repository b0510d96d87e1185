"""A point whose rate is a search (ndr, pdr:X%, ndr+pdr…) with an MLRsearch
preset (search = csit, rfc2544, tst009), then latency trials at loads below
the rate it found.

The testbed is set up once; each trial runs at the load and for the duration
MLRsearch asks (experiments/mlr.py), in its own directory (trial1, trial2, …),
and every trial is kept with its generator truth (truth.py). A trial whose
generator fell short on its own is run once more; if it falls short again it
stays invalid, its loss counted against the frames that left (the device did
not lose those never sent), and a goal whose bounds stand on invalid trials is
marked generator_limited: it stands on loads the generator did not fully
offer, so it is this generator's rate, not the device's limit. Rates are per
pair, like the scenario's.

After the search, latency trials at loads below the rate found for the last
goal (latency.py).
"""
from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any, Callable

from cnfperf import SystemFailure, rate as rates
from cnfperf.experiments import mlr
from cnfperf.strategies import latency
from cnfperf.strategies.bisect import FLOOR
from cnfperf.strategies.record import Measure, on_testbed, progress, trial_row
from cnfperf.strategies.truth import Truth, truth

if TYPE_CHECKING:
    from cnfperf.results.model import PointResult
    from cnfperf.scenario import Scenario

# An invalid trial (its generator fell short on its own) is run once more.
RETRIES = 1


def wants(s: Scenario) -> bool:
    return s.rate.is_search and s.search != "bisect" and not s.soak


def goals(s: Scenario) -> mlr.Goals:
    """The scenario's goals; ValueError("field: why") when its settings clash."""
    return mlr.goals(s.rate.losses, s.search, precision=s.precision,
                     trial_duration=s.trial_duration,
                     initial_trial_duration=s.initial_trial_duration,
                     duration_sum=s.duration_sum, exceed_ratio=s.exceed_ratio)


def search(s: Scenario, measure: Measure, say: Callable[[str], None]
           ) -> tuple[PointResult, dict[str, Any]]:
    """(result of the last trial at the first goal's lower bound, or of the last
    trial, {"search": the store's search columns, "trials": a row per trial,
    "goals": a row per goal}); `measure(scenario, n, what)` runs trial n."""
    g = goals(s)
    measured: list[PointResult] = []
    rows: list[dict[str, Any]] = []

    def run(pps: float, duration: float, phase: str,
            fraction: float | None = None) -> tuple[PointResult, Truth]:
        n = len(measured) + 1
        what = f"at {rates.show(pps)} for {duration:g} s" if pps else "unpaced"
        r = measure(s.model_copy(update={"rate": rates.fixed(pps), "duration": duration}),
                    n, what)
        t = truth(r, pps, duration, s.burst, s.generator_tolerance)
        measured.append(r)
        rows.append(trial_row(n, phase, pps, duration, r, t, fraction=fraction))
        say(progress(n, what, r, t))
        return r, t

    def trial(duration: float, load: float) -> mlr.Trial:
        for attempt in range(RETRIES + 1):
            r, t = run(load, duration, "search" if attempt == 0 else "retry")
            if t.valid:
                break
        return mlr.Trial(duration, load, t.counted, t.sent, t.sent - r.total.lost)

    top = s.search_max.pps
    if not top:
        top = run(0.0, g.initial_trial_duration, "probe")[0].total.tx_pps / s.pairs
        if top <= 0:
            raise SystemFailure("search: the unpaced first trial sent nothing")
    try:
        found = mlr.search(trial, g, top * FLOOR, top, _time_limit(g))
    except mlr.SearchFailed as e:
        raise SystemFailure(f"search: {e}") from None
    limited = [_limited(f, rows) for f in found]
    say("; ".join(_verdict(f, lim) for f, lim in zip(found, limited)))
    last = found[-1]
    latency.run(s.latency_at, top * FLOOR, last.conditional_pps,
                rates.goal_name(last.loss_ratio),
                lambda pps, fraction: run(pps, g.trial_duration, "latency", fraction), say)
    first = found[0]
    at_lower = [i for i, row in enumerate(rows) if row["phase"] in ("search", "retry")
                and first.lower_pps is not None and math.isclose(row["offered_pps"],
                                                                 first.lower_pps)]
    result = measured[at_lower[-1]] if at_lower else measured[-1]
    return result, {"search": _columns(first, any(limited)), "trials": rows,
                    "goals": [_goal(i, f, lim) for i, (f, lim) in
                              enumerate(zip(found, limited))]}


def _time_limit(g: mlr.Goals) -> float:
    """Wall time after which a search gives up: far more than its trials should
    take (each also starts and stops the engines), so only a search that never
    settles reaches it."""
    return 600 + 60 * g.duration_sum * len(g.losses)


def _limited(f: mlr.Found, rows: list[dict[str, Any]]) -> bool:
    """The goal's bounds stand on trials whose generator fell short: those the
    search counted (an attempt run again counts by its retry)."""
    bounds = [x for x in (f.lower_pps, f.upper_pps) if x is not None]
    counted = [row for row, after in zip(rows, [*rows[1:], None])
               if row["phase"] in ("search", "retry")
               and not (after and after["phase"] == "retry")]
    return any(not row["valid"] and any(math.isclose(row["offered_pps"], x) for x in bounds)
               for row in counted)


def _verdict(f: mlr.Found, limited: bool) -> str:
    name = rates.goal_name(f.loss_ratio)
    if f.conditional_pps is None:
        return f"{name}: no rate kept the loss within the goal"
    upper = f"–{rates.show(f.upper_pps)}" if f.upper_pps else "–"
    return (f"{name}: {rates.show(f.conditional_pps)} pps per pair (bounds "
            f"{rates.show(f.lower_pps)}{upper})"
            + (", the generator fell short at a bound" if limited else ""))


def _columns(first: mlr.Found, limited: bool) -> dict[str, Any]:
    loss = (1 - first.conditional_pps / first.lower_pps
            if first.conditional_pps is not None and first.lower_pps else None)
    return {"rate_pps": first.conditional_pps, "loss_ratio": loss,
            "offered_pps": first.lower_pps, "loss_threshold": first.loss_ratio,
            "verified": None, "generator_limited": limited}


def _goal(i: int, f: mlr.Found, limited: bool) -> dict[str, Any]:
    return {"goal": i, "loss_ratio": f.loss_ratio, "exceed_ratio": f.exceed_ratio,
            "width": f.width, "lower_pps": f.lower_pps, "upper_pps": f.upper_pps,
            "conditional_pps": f.conditional_pps, "good_s": f.good_s, "bad_s": f.bad_s,
            "generator_limited": limited}


# The strategy: each trial of the search on the point's one testbed.
run = on_testbed(search)
