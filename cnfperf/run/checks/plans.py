"""A scenario or study file and flags made a plan: its points validated,
checked once each (checks.input), placed (their tester chosen, which their keys
are hashed with), and, with a host, those it cannot run left out."""
from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from cnfperf import UserError, fields
from cnfperf.experiments import reference, sweep
from cnfperf.host.facts import HostFacts
from cnfperf.plan import usable_cpus
from cnfperf.results import expect
from cnfperf.run.checks.host import unusable
from cnfperf.run.checks.input import check
from cnfperf.run.checks.placement import place_point
from cnfperf.runtimes.base import cpu_list
from cnfperf.scenario import Scenario, Sweep, canonical, read_file, validate


def load_plan(path: Path | None = None, flags: dict[str, Any] | None = None, *,
              quick: bool = False, host: HostFacts | None = None) -> Sweep:
    """The sweep of a scenario or study file and flags; raises UserError. A flag
    wins over the file: its top level, [quick] and every [[part]]. With `host`,
    points whose data plane cannot run here are skipped (and listed)."""
    doc = sweep.override(read_file(path) if path else {}, flags or {})
    return plan(doc, quick=quick, host=host)


def plan(doc: dict[str, Any], *, quick: bool = False, host: HostFacts | None = None,
         cores: tuple[int, ...] | None = None) -> Sweep:
    """The sweep of a document; each point's key is hashed from the scenario as it
    runs (its tester chosen: place_point), so that a tester auto chose and the same
    one set are one point, and an older run's points keep their keys. A point
    without cpus is placed on `cores`, else on the usable ones; the plan keeps
    them (spec's cpus): the tester auto takes, and so the key, depend on them.
    With `host`, the points it cannot run are left out (unusable), and listed.
    Each point is validated once and checked once (Points), here: the sweep
    (experiments/sweep.py) asks for its keys, and for what to leave out."""
    cores = cores or usable_cpus()
    reference.load(doc)   # a study's paper tables: wrong ones fail before the sweep
    points = Points(cores)
    try:
        planned = sweep.expand_study(
            doc, quick, keep=unusable(host, points.valid) if host else None,
            canonical=lambda params: canonical(place_point(points.checked(params),
                                                           cores=cores).scenario))
        for lines in dict.fromkeys(p.expect for p in planned.points):
            expect.parse_all(lines)
    except ValueError as e:
        field_, sep, why = str(e).partition(": ")
        raise UserError(field_ if sep else "scenario", why if sep else str(e)) from None
    if not planned.points:
        reasons = "; ".join(dict.fromkeys(reason for _, reason in planned.skipped))
        raise UserError("switch", "no point can run on this host" +
                        (f": {reasons}" if reasons else ""))
    swept = Sweep(planned, [points.checked(p.params) for p in planned.points],
                  {"doc": doc, "quick": quick, "skip_unusable": host is not None,
                   "skipped": planned.skip_notes(),
                   "defaults": {k: fields.by_name()[k].default for k in fields.CHANGED_DEFAULTS},
                   "cpus": list(cores)})
    _check_plots(doc)
    return swept


class Points:
    """A plan's points by their parameters (one value each; a pair's own as
    pair.N.FIELD): each validated the first time it is asked for (valid: what a
    study's host leaves out asks), and checked the first time it is asked for
    checked (check, and each pair's values as that pair runs them), on `cores`;
    a point that fails is refused again, by the same UserError, if asked again."""

    def __init__(self, cores: tuple[int, ...]):
        self.cores = cores
        self._valid: dict[str, Scenario] = {}
        self._checked: set[str] = set()

    def valid(self, params: dict[str, Any]) -> Scenario:
        at = _at(params)
        if at not in self._valid:
            self._valid[at] = validate(params)
        return self._valid[at]

    def checked(self, params: dict[str, Any]) -> Scenario:
        s = self.valid(params)
        at = _at(params)
        if at not in self._checked:
            check(s, self.cores)
            for index, _ in s.pair:   # each pair's values go together too
                check(s.of_pair(index), self.cores)
            self._checked.add(at)
        return s


def _at(params: dict[str, Any]) -> str:
    """A point's parameters as one key (their values are TOML's: numbers,
    strings, booleans, lists of them)."""
    return repr(sorted(params.items()))


def replan(spec: dict[str, Any], host: HostFacts | None = None) -> Sweep:
    """A stored run's plan rebuilt for --resume, with the defaults it was made
    with (fields.CHANGED_DEFAULTS: a run older than a change kept the old ones)
    and on the cores it was planned on: under another taskset its points would
    take another tester and keys, and be measured again."""
    # None is an optional field's "the computed default": nothing to set
    defaults = {k: v for k, v in {**fields.CHANGED_DEFAULTS, **(spec.get("defaults") or {})}
                .items() if v is not None}
    cores = tuple(spec.get("cpus") or ()) or None
    if cores and (gone := sorted(set(cores) - os.sched_getaffinity(0))):
        raise UserError("--resume", f"the run was planned on CPUs {cpu_list(cores)}; "
                                    f"{cpu_list(gone)} not usable here (taskset?)")
    swept = plan({**defaults, **spec["doc"]}, quick=spec.get("quick", False),
                 host=host if spec.get("skip_unusable") else None, cores=cores)
    swept.spec = spec
    return swept


def _check_plots(doc: dict[str, Any]) -> None:
    """A study's plots are the report's: names it does not know fail now, not
    after the run (the report draws them; matplotlib loads only for a study)."""
    names = (doc.get("study") or {}).get("plots")
    if not names:
        return
    from cnfperf.report.plots import PLOTS
    unknown = [n for n in names if n not in PLOTS]
    if unknown:
        raise UserError("study.plots", f"unknown {', '.join(unknown)}; known: {', '.join(PLOTS)}")
