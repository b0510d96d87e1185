"""A point at a fixed rate: one trial on its testbed, its files in the point's directory."""
from __future__ import annotations

from typing import TYPE_CHECKING, Any


if TYPE_CHECKING:
    from cnfperf.strategies.base import Trials
    from cnfperf.results.model import PointResult
    from cnfperf.scenario import Scenario


def wants(s: Scenario) -> bool:
    return not s.rate.is_search and not s.soak


def run(trials: Trials, s: Scenario) -> tuple[PointResult, dict[str, Any]]:
    return trials.measure(s), {}
