"""The Strategy interface: one module per kind of experiment, one file each.

A strategy is a module with `wants(scenario)`, true for the points it measures
(exactly one strategy wants each point), and `run(trials, scenario)`, which
returns the result to store and the store's extra fields (a search's columns,
a row per trial).
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable, Protocol

if TYPE_CHECKING:
    from cnfperf.results.model import PointResult
    from cnfperf.scenario import Scenario


# Sees a trial's interval records, per pair: (its sender's, its counting end's).
Watch = Callable[[list[tuple[list[dict[str, Any]], list[dict[str, Any]]]]], None]


class Trials(Protocol):
    """One point's testbed, on which a strategy runs its trials (cnfperf.run.trial)."""

    def measure(self, s: Scenario, name: str = "", detail: str = "",
                watch: Watch | None = None) -> PointResult:
        """A trial of `s`; its files go to the subdirectory `name` (none: the
        point's directory) and `detail` shows in its progress; `watch` sees its
        interval records as they come (run/trial.py's Watch)."""

    def keep(self, rows: list[dict[str, Any]]) -> None:
        """Rows that outlive an interruption of the point (a soak's intervals),
        stored now."""

    def kept(self) -> list[dict[str, Any]]:
        """What an interrupted run of this point kept."""

    def say(self, detail: str) -> None:
        """A progress line about the experiment."""


class Strategy(Protocol):
    def wants(self, s: Scenario) -> bool: ...

    def run(self, trials: Trials, s: Scenario) -> tuple[PointResult, dict[str, Any]]: ...
