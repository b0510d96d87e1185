"""The generator baseline (generator_baseline = true): before a run's points,
the tester's own limit on this host, so that each point can say its rate as a
share of what the generator could do here.

A baseline is a point of its own (testers.baseline: an unpaced throughput trial
of the point's tester, through the lightest link its api allows, at the
point's size, burst, pairs and cores), placed (checks.place_point), built and
measured by the same machinery as every point; the runner measures each
distinct one once and stores it in the run's `baselines` table, by its key.
"""
from __future__ import annotations

from dataclasses import replace
from typing import Sequence

from cnfperf import testers
from cnfperf.experiments import sweep
from cnfperf.plan import TestPoint
from cnfperf.run.checks import place_point
from cnfperf.scenario import Scenario, canonical

LABEL = "generator-baseline"   # what a baseline's progress line says it is


def key(s: Scenario) -> str | None:
    """The key of a point's baseline (its scenario hashed), None for none."""
    b = testers.baseline(s)
    return None if b is None else sweep.point_hash(canonical(b))


def plan(points: Sequence[TestPoint], run_id: str,
         cores: tuple[int, ...] | None = None) -> list[tuple[str, TestPoint]]:
    """The baselines the points ask for, each once, placed as it will run
    (on the run's cores: the same as the points'), in the points' order."""
    wanted: dict[str, Scenario] = {}
    for point in points:
        b = testers.baseline(point.scenario)
        if b is not None:
            wanted.setdefault(sweep.point_hash(canonical(b)), b)
    return [(k, replace(place_point(s, run_id, i, len(wanted), cores), key=k, label=LABEL))
            for i, (k, s) in enumerate(wanted.items())]


def scenarios(points: Sequence[Scenario], cores: tuple[int, ...] | None = None
              ) -> list[Scenario]:
    """The baselines the points ask for, each once, their testers chosen as the
    points will be placed (on `cores`): what a run's preflight asks this host
    about beside the points themselves."""
    found = [testers.baseline(place_point(s, cores=cores).scenario) for s in points
             if s.generator_baseline]
    found = [b for b in found if b is not None]
    return list({sweep.point_hash(canonical(b)): b for b in found}.values())
