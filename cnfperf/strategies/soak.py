"""A soak: one long trial at a fixed rate (or, after a search, at `soak_at` of
the rate found for its last goal), its loss and latency stored every second as
a time series.

Memory leaks and rare stalls show only over minutes to hours (FD.io CSIT soaks
for 30 minutes). The engines print an interval record every second; each is
stored as soon as every pair has printed it (Trials.keep), before the point
itself, so an interrupted soak keeps what it measured, and `cnfperf run
--resume` goes on with the time left in a new segment (at the rate the first
segment ran: the search is not run again). Loss per interval is the receivers'
sequence gaps; latency per interval the engines' interval percentiles, the
worst pair's where there are several (percentiles of several pairs do not add).
The second in which the warm-up ends is left out: it is part warm-up.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable

from cnfperf import rate as rates
from cnfperf.strategies import bisect, mlr

if TYPE_CHECKING:
    from cnfperf.strategies.base import Trials
    from cnfperf.results.model import PointResult
    from cnfperf.scenario import Scenario

# The shortest soak segment a resume runs: its point needs a measured result.
MIN_SEGMENT = 1.0


def wants(s: Scenario) -> bool:
    return s.soak > 0


def fraction(text: str) -> float:
    """`soak_at` read: "90%" → 0.9; ValueError("soak_at: why")."""
    part = text.strip()
    try:
        pct = float(part.removesuffix("%"))
    except ValueError:
        pct = -1
    if not part.endswith("%") or not 0 < pct <= 100:
        raise ValueError(f"soak_at: {text!r} must be a percentage in (0, 100] of the rate "
                         "found, like 90%")
    return pct / 100


def run(trials: Trials, s: Scenario) -> tuple[PointResult, dict[str, Any]]:
    kept = trials.kept()
    extra: dict[str, Any] = {}
    if kept:
        pps = kept[-1]["offered_pps"]
        done = sum(r["interval_s"] or 0 for r in kept)
        trials.say(f"resuming the soak at {rates.show(pps)} pps per pair: {done:.0f} of "
                   f"{s.soak:g} s measured before" + (" (the search is not run again)"
                                                      if s.rate.is_search else ""))
    else:
        pps, done = s.rate.pps, 0.0
        if s.rate.is_search:
            extra = _search(trials, s)
            found = _found(extra)
            if not found:
                trials.say("no soak: the search found no rate")
                return extra.pop("result"), extra
            pps = fraction(s.soak_at) * found
    series = Series(pps, kept, trials.keep)
    duration = max(MIN_SEGMENT, s.soak - done)
    result = trials.measure(s.model_copy(update={"rate": rates.fixed(pps),
                                                 "duration": duration}),
                            f"soak{series.segment}" if series.segment else "soak",
                            f"soak at {rates.show(pps)} for {duration:g} s", watch=series)
    extra.pop("result", None)
    return result, extra


def _search(trials: Trials, s: Scenario) -> dict[str, Any]:
    """The search before the soak, as its own strategy runs it."""
    searching = s.model_copy(update={"soak": 0.0})
    strategy = mlr if mlr.wants(searching) else bisect
    result, extra = strategy.run(trials, searching)
    return {**extra, "result": result}


def _found(extra: dict[str, Any]) -> float | None:
    goals = extra.get("goals") or []
    return goals[-1]["conditional_pps"] if goals else extra["search"]["rate_pps"]


def _measured(records: list[dict]) -> list[dict]:
    """The intervals wholly measured: not the warm-up's, nor the one its end
    falls in (it counts a part of a second)."""
    return [r for r in records if r.get("phase") == "measure" and not r.get("warmup_packets")]


class Series:
    """Turns interval records into stored rows as they come (a trial's Watch)."""

    def __init__(self, pps: float, kept: list[dict[str, Any]],
                 keep: Callable[[list[dict[str, Any]]], None]):
        self.pps = pps
        self.keep = keep
        self.segment = kept[-1]["segment"] + 1 if kept else 0
        self.n = kept[-1]["n"] + 1 if kept else 0
        self.at = kept[-1]["at_s"] if kept else 0.0
        self.stored = 0   # this segment's intervals stored so far

    def __call__(self, pairs: list[tuple[list[dict], list[dict]]]) -> None:
        sent = [_measured(tx) for tx, _ in pairs]
        counted = [_measured(rx) for _, rx in pairs]
        ready = min(len(x) for x in sent + counted)
        rows = [self._row([x[i] for x in sent], [x[i] for x in counted])
                for i in range(self.stored, ready)]
        if rows:
            self.keep(rows)
            self.stored = ready

    def _row(self, sent: list[dict], counted: list[dict]) -> dict[str, Any]:
        seconds = max(float(r.get("interval_s") or 0) for r in counted)
        self.at += seconds
        rx = sum(int(r.get("rx_packets") or 0) for r in counted)
        lost = max(0, sum(int(r.get("lost") or 0) for r in counted))
        latency = [r.get("latency") or {} for r in counted]

        def worst(key: str) -> float | None:
            values = [lat[key] for lat in latency if lat.get(key) is not None]
            return max(values) if values else None
        row = {"n": self.n, "segment": self.segment, "at_s": self.at, "interval_s": seconds,
               "offered_pps": self.pps,
               "tx_packets": sum(int(r.get("tx_packets") or 0) for r in sent),
               "rx_packets": rx, "lost": lost,
               "loss_ratio": lost / (rx + lost) if rx + lost else 0.0,
               "rx_pps": rx / seconds if seconds else None, "lat_p50_ns": worst("p50_ns"),
               "lat_p99_ns": worst("p99_ns"), "lat_max_ns": worst("max_ns")}
        self.n += 1
        return row
