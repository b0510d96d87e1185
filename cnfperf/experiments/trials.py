"""A point whose rate is a search (ndr, pdr:X%), run as trials on one testbed.

The runner sets the testbed up once and hands over `measure(scenario, n, what)`,
which runs trial n at the scenario's (fixed) rate and returns its PointResult;
this module decides the rates (search.py), keeps every trial, and picks the
result to store. Rates are per pair, like the scenario's; loss is counted
against the frames the senders really sent.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable

from cnfperf import SystemFailure
from cnfperf.experiments import search as ndr
from cnfperf.experiments.sweep import parse_rate

if TYPE_CHECKING:
    from cnfperf.results.model import PointResult
    from cnfperf.scenario import Scenario

# Without search_max the bracket is [top / 100, top], top being what an unpaced
# first trial offered: two orders of magnitude hold any data plane's knee, at
# seven bisections for 1% precision.
FLOOR = 0.01

Measure = Callable[["Scenario", int, str], "PointResult"]


def search(s: Scenario, measure: Measure, say: Callable[[str], None]
           ) -> tuple[PointResult, dict[str, Any]]:
    """(result of the accepted trial, or of the last one if none passed,
    {"search": the store's search columns, "trials": a row per trial})."""
    from cnfperf.scenario import format_rate

    base = s.model_copy(update={"duration": s.trial_duration or s.duration})
    measured: list[PointResult] = []

    def run(pps: float, what: str) -> PointResult:
        result = measure(base.model_copy(update={"rate": float(pps)}), len(measured) + 1, what)
        measured.append(result)
        t = result.total
        say(f"trial {len(measured)} {what}: offered {format_rate(t.tx_pps / s.pairs)} rx "
            f"{format_rate(t.rx_pps / s.pairs)} pps per pair, loss {100 * t.loss_ratio:.3f}%")
        return result

    def trial(pps: float) -> ndr.TrialResult:
        t = run(pps, f"at {format_rate(pps)}").total
        return ndr.TrialResult(t.tx_pps / s.pairs, t.rx_pps / s.pairs, t.loss_ratio)

    top = s.search_max
    if not top:
        top = run(0.0, "unpaced (the top of the search)").total.tx_pps / s.pairs
        if top <= 0:
            raise SystemFailure("search: the unpaced first trial sent nothing")
    found = ndr.search(trial, top * FLOOR, top, precision=s.precision,
                       loss_threshold=parse_rate(s.rate).loss)
    probe = len(measured) - len(found.trials)   # 1 with the unpaced first trial
    rows = [_row(1, "probe", 0.0, measured[0], None)] if probe else []
    rows += [_row(t.n + probe, t.phase, t.requested_pps, measured[t.n + probe - 1], t.passed)
             for t in found.trials]
    accepted = next((t for t in reversed(found.trials) if t.passed
                     and t.offered_pps == found.rate_pps
                     and t.requested_pps == found.requested_pps), None)
    if found.rate_pps is None:
        say(f"{s.rate}: no rate down to {format_rate(top * FLOOR)} pps kept the loss "
            "within the threshold")
    else:
        say(f"{s.rate}: {format_rate(found.rate_pps)} pps per pair at "
            f"{100 * found.loss_ratio:.3f}% loss, "
            + ("verified" if found.verified else "NOT verified"))
    columns = {"rate_pps": found.rate_pps, "loss_ratio": found.loss_ratio,
               "requested_pps": found.requested_pps, "loss_threshold": found.loss_threshold,
               "verified": found.verified, "generator_limited": found.generator_limited}
    result = measured[accepted.n + probe - 1] if accepted else measured[-1]
    return result, {"search": columns, "trials": rows}


def _row(n: int, phase: str, requested: float, r: PointResult,
         passed: bool | None) -> dict[str, Any]:
    pairs = len(r.pairs) or 1
    t = r.total
    return {"n": n, "phase": phase, "requested_pps": requested, "offered_pps": t.tx_pps / pairs,
            "rx_pps": t.rx_pps / pairs, "sent": t.sent, "received": t.received,
            "loss_ratio": t.loss_ratio, "passed": passed}
