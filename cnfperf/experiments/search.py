"""NDR/PDR: binary search on offered rate for the highest rate within a loss threshold.

RFC 2544 section 26.1 / NFVbench style: bisect [min, max] until the bracket is
narrower than `precision` (relative to its top), then confirm the rate found
with one more trial (the verification), because a single lucky trial near the
edge is common on a shared host.

Loss is what the trial measured against what the device was offered (the
caller's tx: strategies/bisect.py counts the frames sent and those its ports
refused): a generator that cannot reach the offered rate does not make the
device look lossy, and the rate reported is the one sent (tx, with
`generator_limited` set), never the offered one. Every trial is kept, in
order, so the store and the report can show how the search went.
"""
from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from typing import Callable

# Float noise in a computed loss ratio must not fail an NDR trial.
LOSS_EPSILON = 1e-12


@dataclass
class TrialResult:
    """What one trial measured: sent (tx) and received rates, loss against what was sent."""
    tx_pps: float
    rx_pps: float
    loss_ratio: float

    @classmethod
    def from_rates(cls, tx_pps: float, rx_pps: float) -> "TrialResult":
        if tx_pps <= 0:
            raise ValueError("tx_pps: nothing was sent, so loss is undefined")
        return cls(tx_pps, rx_pps, max(0.0, 1.0 - rx_pps / tx_pps))


@dataclass
class Trial:
    n: int                      # order in the search, from 1
    phase: str                  # "search" | "verify"
    offered_pps: float
    tx_pps: float
    rx_pps: float
    loss_ratio: float
    passed: bool


@dataclass
class SearchResult:
    rate_pps: float | None      # sent rate of the accepted trial; None if even min lost too much
    loss_ratio: float | None    # loss measured at it
    offered_pps: float | None
    loss_threshold: float
    verified: bool              # the verification trial passed at the reported rate
    generator_limited: bool     # the sender sent noticeably less than it was offered
    trials: list[Trial] = field(default_factory=list)

    def to_dict(self) -> dict:
        return asdict(self)


TrialFn = Callable[[float], TrialResult]


def search(trial: TrialFn, min_pps: float, max_pps: float, *, precision: float = 0.01,
           loss_threshold: float = 0.0, verify: bool = True, verify_retries: int = 2,
           max_trials: int = 40) -> SearchResult:
    """Highest offered rate in [min_pps, max_pps] with loss <= loss_threshold.

    The first trial is at max_pps (often the answer on a fast data plane);
    then bisection. If verification fails, the rate is lowered by 2 x precision
    and verified again, up to verify_retries times; if none passes, the best
    search trial is reported with verified=False.
    """
    _check(min_pps, max_pps, precision, loss_threshold, max_trials)
    s = _Search(trial, loss_threshold, max_trials)

    best = s.run(max_pps, "search")
    if not best.passed:
        best = None
        lo, hi = min_pps, _failed_at(max_pps, s.trials[-1], min_pps)
        while hi - lo > precision * hi and not s.exhausted():
            mid = (lo + hi) / 2
            t = s.run(mid, "search")
            if t.passed:
                lo, best = mid, t
            else:
                hi = _failed_at(mid, t, lo)
        if best is None and not s.exhausted():
            t = s.run(min_pps, "search")
            best = t if t.passed else None
    if best is None:
        return s.result(None, verified=False, precision=precision)

    accepted, verified = best, False
    if verify:
        offered = best.offered_pps
        for _ in range(verify_retries + 1):
            if s.exhausted():
                break
            t = s.run(offered, "verify")
            if t.passed:
                accepted, verified = t, True
                break
            offered = max(min_pps, offered * (1 - 2 * precision))
    return s.result(accepted, verified, precision)


def _failed_at(offered: float, t: Trial, floor: float) -> float:
    """New top of the bracket after a failed trial.

    A trial that sent less than it was offered failed at the rate sent, so the
    bracket can shrink to it (never below the known-good floor).
    """
    return max(floor, min(offered, t.tx_pps))


def _check(min_pps: float, max_pps: float, precision: float, loss_threshold: float,
           max_trials: int) -> None:
    if not (math.isfinite(min_pps) and min_pps > 0):
        raise ValueError(f"min rate: {min_pps} must be > 0 pps")
    if not (math.isfinite(max_pps) and max_pps >= min_pps):
        raise ValueError(f"max rate: {max_pps} must be >= the min rate ({min_pps} pps)")
    if not 0 < precision < 1:
        raise ValueError(f"precision: {precision} must be a fraction between 0 and 1 (0.01 = 1%)")
    if not 0 <= loss_threshold < 1:
        raise ValueError(f"loss threshold: {loss_threshold} must be a ratio in [0, 1)")
    if max_trials < 2:
        raise ValueError(f"max trials: {max_trials} must be >= 2")


class _Search:
    def __init__(self, trial: TrialFn, threshold: float, max_trials: int):
        self.trial, self.threshold, self.max_trials = trial, threshold, max_trials
        self.trials: list[Trial] = []

    def exhausted(self) -> bool:
        return len(self.trials) >= self.max_trials

    def run(self, offered: float, phase: str) -> Trial:
        r = self.trial(offered)
        if not isinstance(r, TrialResult):
            raise TypeError(f"trial({offered}) returned {type(r).__name__}, not TrialResult")
        passed = r.tx_pps > 0 and r.loss_ratio <= self.threshold + LOSS_EPSILON
        t = Trial(len(self.trials) + 1, phase, offered, r.tx_pps, r.rx_pps,
                  r.loss_ratio, passed)
        self.trials.append(t)
        return t

    def result(self, accepted: Trial | None, verified: bool, precision: float) -> SearchResult:
        if accepted is None:
            return SearchResult(None, None, None, self.threshold, False, False, self.trials)
        short = accepted.tx_pps < accepted.offered_pps * (1 - precision)
        return SearchResult(accepted.tx_pps, accepted.loss_ratio, accepted.offered_pps,
                            self.threshold, verified, short, self.trials)
