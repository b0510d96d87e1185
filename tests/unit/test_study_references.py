"""Every study's [[reference]] and [[difference]] rows and its [study] experiments are
well formed, and each reference's `at` (and `at` updated by `per`) names a point the
study plans: a run can then be held against the paper's number."""
from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

from cnfperf.experiments.sweep import expand_study

STUDIES = Path(__file__).resolve().parents[2] / "studies"

METRICS = {"rx_mpps", "tx_mpps", "rx_gbps", "loss_pct", "ndr_mpps", "pdr_mpps",
           "latency_min_us", "latency_mean_us", "latency_p50_us", "latency_p90_us",
           "latency_p99_us", "latency_max_us", "latency_stdev_us", "image_mb", "startup_ms"}
KINDS = {"method", "hardware", "gap"}
EXPERIMENTS = {
    *(f"000.{i}" for i in range(1, 11)), *(f"001.{i}" for i in range(1, 8)),
    "002.A", "002.A′", "002.B1", "002.B2", "002.B3", "002.C1", "002.C2", "002.D1", "002.D2",
    "002.E1", "002.E2", "002.F1", "002.F2",
    "003.T52", *(f"003.F5{i}" for i in range(1, 12)), *(f"004.F{i}" for i in range(4, 8)),
}
REFERENCE_KEYS = {"figure", "where", "metric", "value", "unit", "at"}
OPTIONAL_KEYS = {"per", "note"}
# Studies of no paper's figure: they may carry no experiments.
NOT_PAPERS = {"shootout", "nf_csit_density", "vm_pvp"}


def _load(path: Path) -> dict:
    with open(path, "rb") as f:
        return tomllib.load(f)


@pytest.fixture(scope="module", params=sorted(STUDIES.glob("*.toml")), ids=lambda p: p.stem)
def study(request):
    doc = _load(request.param)
    return request.param.stem, doc, expand_study(doc)


def _matching_groups(plan, at: dict) -> set[str]:
    return {p.group for p in plan.points
            if all(k in p.params and p.params[k] == v for k, v in at.items())}


def test_a_paper_study_names_its_experiments_and_differences(study):
    name, doc, _ = study
    experiments = doc["study"].get("experiments", [])
    assert set(experiments) <= EXPERIMENTS, sorted(set(experiments) - EXPERIMENTS)
    assert len(set(experiments)) == len(experiments)
    if name in NOT_PAPERS:
        return
    assert experiments, f"{name}: a paper study lists the experiments it reproduces"
    assert doc.get("difference"), f"{name}: a paper study says how it departs from its paper"
    header = Path(STUDIES / f"{name}.toml").read_text().split("\n[")[0]
    assert "Differs from the paper:" not in header, \
        f"{name}: the differences are [[difference]] rows, not a second list in the header"


def test_every_difference_is_of_a_known_kind_and_touches_the_studys_experiments(study):
    name, doc, _ = study
    experiments = set(doc["study"].get("experiments", []))
    for row in doc.get("difference", []):
        assert set(row) <= {"kind", "text", "experiments"}, row
        assert row["kind"] in KINDS, row
        assert isinstance(row["text"], str) and row["text"].strip(), row
        assert set(row.get("experiments", [])) <= experiments, (name, row)


def test_every_reference_is_complete_and_names_a_planned_point(study):
    name, doc, plan = study
    swept = {k for p in plan.points for k in p.params}
    for row in doc.get("reference", []):
        assert REFERENCE_KEYS <= set(row) <= REFERENCE_KEYS | OPTIONAL_KEYS, (name, row)
        assert row["metric"] in METRICS, (name, row)
        assert isinstance(row["value"], (int, float)) and not isinstance(row["value"], bool)
        assert row["figure"].strip() and row["where"].strip() and row["unit"].strip()
        at = row["at"]
        assert at and set(at) <= swept, (name, sorted(set(at) - swept))
        # one point (its repetitions aside) is the paper's: the row says which
        groups = _matching_groups(plan, at)
        assert len(groups) == 1, (name, at, len(groups))
        if "per" in row:
            assert row["unit"] == "ratio", (name, row)
            assert set(row["per"]) <= swept, (name, row["per"])
            assert len(_matching_groups(plan, {**at, **row["per"]})) == 1, (name, row)
