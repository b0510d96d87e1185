"""MLRsearch: the rates of several loss ratios (NDR, PDR…) from one search.

The controller is FD.io CSIT's reference implementation of the IETF BMWG draft
"Multiple Loss Ratio Search" (the `MLRsearch` package); this module gives it
its goals and turns what it found into plain numbers. A goal is a loss ratio
with the search's settings: the exceed ratio (the share of a load's trial
seconds that may see more loss than the goal while the load still counts as a
lower bound), the initial and final trial durations (short trials first, the
final ones at full length), the duration sum (the trial seconds that decide a
load) and the width (how close the lower and upper bounds end). The result of a
goal is its relevant lower and upper bounds and its conditional throughput
(the lower bound's load scaled by the loss of its worst good trial, as the
draft defines it).

Presets are the draft's: `csit` (FD.io CSIT's own goals), `rfc2544` (one trial
of 60 s decides a load, no trial may lose) and `tst009` (ETSI GS NFV-TST 009's
binary search with loss verification: a lossy 60 s trial is run once more, and
the load is good if the second did not lose).
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable

if TYPE_CHECKING:
    # imported where a search runs: the package takes a tenth of a second to
    # import, which every cnfperf command would pay
    from MLRsearch import SearchGoal


@dataclass(frozen=True)
class Preset:
    exceed_ratio: float
    width: float
    trial_duration: float     # of the final trials, seconds
    sum_trials: float         # the duration sum in final trials


PRESETS = {
    "csit": Preset(exceed_ratio=0.5, width=0.005, trial_duration=1.0, sum_trials=21),
    "rfc2544": Preset(exceed_ratio=0.0, width=0.005, trial_duration=60.0, sum_trials=1),
    "tst009": Preset(exceed_ratio=0.5, width=0.005, trial_duration=60.0, sum_trials=2),
}
# The shortest trials MLRsearch starts with, unless the final ones are shorter.
INITIAL_TRIAL_DURATION = 1.0
# Coarser targets before each goal's final one (CSIT's): short trials find the
# neighbourhood of the rate cheaply, long ones only confirm it.
PRECEDING_TARGETS = 2


@dataclass(frozen=True)
class Goals:
    """A search's goals, resolved from a preset and what the scenario set."""

    losses: tuple[float, ...]
    exceed_ratio: float
    width: float
    initial_trial_duration: float
    trial_duration: float
    duration_sum: float

    def search_goals(self) -> list[SearchGoal]:
        from MLRsearch import SearchGoal
        preceding = PRECEDING_TARGETS if self.initial_trial_duration < self.duration_sum else 0
        return [SearchGoal(loss_ratio=loss, exceed_ratio=self.exceed_ratio,
                           relative_width=self.width,
                           initial_trial_duration=self.initial_trial_duration,
                           final_trial_duration=self.trial_duration,
                           duration_sum=self.duration_sum, preceding_targets=preceding,
                           expansion_coefficient=2, fail_fast=False)
                for loss in self.losses]


def goals(losses: tuple[float, ...], preset: str, *, precision: float | None = None,
          trial_duration: float | None = None, initial_trial_duration: float | None = None,
          duration_sum: float | None = None, exceed_ratio: float | None = None) -> Goals:
    """The goals of a search: the preset's, with what the scenario set instead.
    ValueError("field: why") for settings that do not go together."""
    p = PRESETS[preset]
    final = trial_duration or p.trial_duration
    initial = initial_trial_duration or min(INITIAL_TRIAL_DURATION, final)
    total = duration_sum or p.sum_trials * final
    if initial > final:
        raise ValueError(f"initial_trial_duration: {initial:g} s is longer than the final "
                         f"trials' (trial_duration {final:g} s)")
    if total < final:
        raise ValueError(f"duration_sum: {total:g} s is shorter than one final trial "
                         f"(trial_duration {final:g} s)")
    return Goals(tuple(losses), p.exceed_ratio if exceed_ratio is None else exceed_ratio,
                 precision or p.width, initial, final, total)


@dataclass
class Trial:
    """What a trial asked for and measured, as MLRsearch counts it: `intended`
    the frames its loss is counted against (strategies/truth.py: those sent and
    those the device refused, never those the generator missed on its own)."""

    duration: float
    load: float               # per pair, pps
    intended: int
    sent: int
    received: int


@dataclass
class Found:
    """A goal's result. Loads per pair, in pps; None where the search found
    no such bound (no lower bound: even its lowest load lost too much)."""

    loss_ratio: float
    exceed_ratio: float
    width: float
    lower_pps: float | None
    upper_pps: float | None
    conditional_pps: float | None
    # trial seconds at the lower bound that met the goal (good) and did not (bad)
    good_s: float | None
    bad_s: float | None


Measure = Callable[[float, float], Trial]


class SearchFailed(Exception):
    pass


def search(measure: Measure, g: Goals, min_pps: float, max_pps: float,
           time_limit: float) -> list[Found]:
    """Runs MLRsearch between min_pps and max_pps (per pair); `measure(duration,
    load)` runs one trial. SearchFailed when it takes longer than time_limit
    seconds of wall time."""
    if not (math.isfinite(min_pps) and 0 < min_pps < max_pps):
        raise ValueError(f"search: the loads must be 0 < min ({min_pps:g}) < max ({max_pps:g})")
    from MLRsearch import AbstractMeasurer, Config, MeasurementResult, MultipleLossRatioSearch
    config = Config()
    config.goals = g.search_goals()
    config.max_load = max_pps
    config.min_load = min_pps
    config.search_duration_max = time_limit
    config.warmup_duration = None

    class Measurer(AbstractMeasurer):
        def measure(self, intended_duration: float, intended_load: float) -> MeasurementResult:
            t = measure(intended_duration, intended_load)
            return MeasurementResult(intended_duration=intended_duration,
                                     intended_load=intended_load, offered_count=t.sent,
                                     forwarding_count=min(t.received, t.sent),
                                     intended_count=max(t.intended, t.sent))

    try:
        results = MultipleLossRatioSearch(config=config).search(
            measurer=Measurer(), debug=lambda _: None)
    except RuntimeError as e:
        raise SearchFailed(str(e)) from None
    return [_found(goal, results[goal]) for goal in config.goals]


def _found(goal: SearchGoal, result) -> Found:
    lower, upper = result.relevant_lower_bound, result.relevant_upper_bound
    stat = next(iter(lower.target_to_stat.values())) if lower else None
    conditional = result.conditional_throughput
    return Found(goal.loss_ratio, goal.exceed_ratio, goal.relative_width,
                 float(lower) if lower else None, float(upper) if upper else None,
                 float(conditional) if conditional is not None else None,
                 stat.good_long if stat else None, stat.bad_long if stat else None)
