"""Every study's [[reference]] and [[difference]] rows and its [study] experiments
load through the reference's own checks, and each reference's `at` (and `at`
updated by `per`) names exactly one point the study plans: a run can then be
held against the paper's number."""
from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

from cnfperf.experiments import reference
from cnfperf.experiments.sweep import expand_study

STUDIES = Path(__file__).resolve().parents[2] / "studies"
# Studies of no paper's figure: they may carry no experiments.
NOT_PAPERS = {"shootout", "nf_csit_density", "vm_pvp", "netkit_vs_veth", "cnf_pods"}


@pytest.fixture(scope="module", params=sorted(STUDIES.glob("*.toml")), ids=lambda p: p.stem)
def study(request):
    with open(request.param, "rb") as f:
        doc = tomllib.load(f)
    return request.param.stem, doc, reference.load(doc), expand_study(doc)


def _matching_groups(plan, at: dict) -> set[str]:
    return {p.group for p in plan.points
            if all(k in p.params and reference.same(v, p.params[k]) for k, v in at.items())}


def test_a_paper_study_names_its_experiments_and_differences(study):
    name, doc, ref, _ = study
    if name in NOT_PAPERS:
        return
    assert ref.experiments, f"{name}: a paper study lists the experiments it reproduces"
    assert ref.differences, f"{name}: a paper study says how it departs from its paper"
    header = Path(STUDIES / f"{name}.toml").read_text().split("\n[")[0]
    assert "Differs from the paper:" not in header, \
        f"{name}: the differences are [[difference]] rows, not a second list in the header"


def test_every_reference_names_one_planned_point(study):
    name, _, ref, plan = study
    for row in ref.rows:
        assert row.figure.strip() and row.where.strip(), (name, row)
        # one point (its repetitions aside) is the paper's: the row says which
        assert len(_matching_groups(plan, dict(row.at))) == 1, (name, row.at_text())
        if row.per:
            assert len(_matching_groups(plan, {**row.at, **row.per})) == 1, \
                (name, row.at_text())
