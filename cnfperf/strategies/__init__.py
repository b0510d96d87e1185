"""Experiment strategies by name: what a point measures on its testbed, set up once.

Adding a kind of experiment is one file (strategies/base.py says what it
provides) and its entry here (its import and its place in STRATEGIES), as
data planes are added.
"""
from __future__ import annotations

from cnfperf.scenario import Scenario
from cnfperf.strategies import bisect, fixed, mlr, soak
from cnfperf.strategies.base import Strategy, Trials

__all__ = ["STRATEGIES", "Strategy", "Trials", "choose"]

STRATEGIES: dict[str, Strategy] = {
    "fixed": fixed,
    "mlr": mlr,
    "bisect": bisect,
    "soak": soak,
}


def choose(s: Scenario, strategies: dict[str, Strategy] = STRATEGIES) -> Strategy:
    wanted = [strategy for strategy in strategies.values() if strategy.wants(s)]
    if len(wanted) != 1:
        raise ValueError(f"rate {s.rate}: {len(wanted)} experiment strategies want this point")
    return wanted[0]
