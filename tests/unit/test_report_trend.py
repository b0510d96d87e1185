"""`cnfperf compare` over a series of runs: each point's trend, grouped by jumpavg,
from runs stored in a temporary store; the verdicts, the exit status, the
plots, and mistakes (one line, exit 2, nothing written). Nothing here starts a
container."""
from __future__ import annotations

import json
import struct
from pathlib import Path

import pytest

from cnfperf.cli import EXIT_REGRESSION, main
from cnfperf.report import trend
from cnfperf.results.store import Store
from harness import one_pair, scenarios

# Noise without a step: a received rate within ±3 % of 180 kpps, run after run.
NOISE = [1.00, 1.02, 0.98, 1.01, 0.97, 1.03, 0.99, 1.02, 0.98, 1.01]
SCENARIO = {"doc": {"switch": "veth", "size": [64, 1500]}, "quick": False}


class Runs:
    """A temporary store and the runs added to it, oldest first."""

    def __init__(self, directory: Path):
        self.directory = directory
        self.ids: list[str] = []
        self.points = {size: scenarios(None, {"switch": "veth", "size": str(size)})[0]
                       for size in (64, 1500)}

    def add(self, rx: float | list[float], sizes=(64,), spec=SCENARIO, **latency) -> str:
        """A run whose points (one per size) received `rx` pps (a list: one
        repetition each)."""
        run_id = f"{len(self.ids) + 0xa000:04x}"
        store = Store(self.directory)
        store.begin_run(run_id, ["cnfperf", "run"], len(sizes), self.directory / "runs" / run_id,
                        {}, "0.1.0", spec)
        reps = rx if isinstance(rx, list) else [rx]
        idx = 0
        for size in sizes:
            for rep, value in enumerate(reps):
                store.add_point(run_id, idx, self.points[size].model_dump(), status="done",
                                started=1.0, rep=rep, key=f"{size}-{rep}",
                                result=one_pair(value, **latency),
                                switch_facts={"name": "veth", "style": 0})
                idx += 1
        store.finish_run(run_id, "done")
        store.close()
        self.ids.append(run_id)
        return run_id

    def series(self, values, **kw) -> list[str]:
        return [self.add(v, **kw) for v in values]


@pytest.fixture
def runs(tmp_path) -> Runs:
    return Runs(tmp_path / "results")


def _compare(runs: Runs, capsys, *argv: str) -> tuple[int, dict]:
    code = main(["compare", *argv, "--json", "--results", str(runs.directory)])
    return code, json.loads(capsys.readouterr().out)


def _row(table: dict, metric: str = "rate", point: str | None = None) -> dict:
    [row] = [r for r in table["rows"] if r["metric"] == metric
             and (point is None or r["point"] == point)]
    return row


def test_a_flat_series_is_normal(runs, capsys):
    ids = runs.series([180e3] * 5)
    code, table = _compare(runs, capsys, *ids)
    assert code == 0 and table["runs"] == ids and table["regressions"] == 0
    for row in table["rows"]:
        assert row["verdict"] == "normal" and row["since"] is None
        assert len(row["groups"]) == 1 and row["groups"][0]["runs"] == ids
    rate = _row(table)
    assert rate["values"] == pytest.approx([180.0] * 5) and rate["unit"] == "kpps"
    assert {r["metric"] for r in table["rows"]} == {"rate", "p50", "p99"}


def test_a_step_down_is_a_regression_at_the_run_it_starts(runs, capsys):
    ids = runs.series([180e3 * n for n in NOISE[:5]] + [120e3 * n for n in NOISE[5:8]])
    code, table = _compare(runs, capsys, *ids)
    assert code == EXIT_REGRESSION == 4
    rate = _row(table)
    assert rate["verdict"] == "regression" and rate["since"] == ids[5]
    assert [g["runs"] for g in rate["groups"]] == [ids[:5], ids[5:]]
    assert rate["previous"] == pytest.approx(180 * sum(NOISE[:5]) / 5)
    assert rate["trend"] == pytest.approx(120 * sum(NOISE[5:8]) / 3)
    assert rate["change_pct"] == pytest.approx(100 * (rate["trend"] / rate["previous"] - 1))
    assert rate["last"] == pytest.approx(120 * NOISE[7])
    assert table["regressions"] == 1 and _row(table, "p50")["verdict"] == "normal"

    # the text table says the same, and where the plots went
    assert main(["compare", *ids, "--results", str(runs.directory)]) == EXIT_REGRESSION
    out = capsys.readouterr().out
    [line] = [l for l in out.splitlines() if "rate kpps" in l]
    assert line.split()[-2:] == ["regression", ids[5]]
    assert "verdicts: 1 regression, 0 progression, 2 normal" in out
    assert f"plots: {runs.directory / 'runs' / ids[-1] / 'trend'}" in out


def test_a_step_up_is_a_progression(runs, capsys):
    ids = runs.series([180e3 * n for n in NOISE[:4]] + [240e3 * n for n in NOISE[4:7]])
    code, table = _compare(runs, capsys, *ids)
    rate = _row(table)
    assert code == 0 and rate["verdict"] == "progression" and rate["since"] == ids[4]
    assert rate["change_pct"] > 25 and table["progressions"] == 1


def test_noise_without_a_step_is_normal(runs, capsys):
    ids = runs.series([180e3 * n for n in NOISE])
    code, table = _compare(runs, capsys, *ids)
    assert code == 0 and _row(table)["verdict"] == "normal"
    assert len(_row(table)["groups"]) == 1


def test_latency_is_better_lower(runs, capsys):
    """A p99 that rose is a regression, a p50 that fell a progression; the rate
    held."""
    ids = [runs.add(180e3, p50_ns=40e3, p99_ns=200e3 * n) for n in NOISE[:4]] + \
          [runs.add(180e3, p50_ns=20e3, p99_ns=400e3 * n) for n in (1.0, 1.01, 0.99)]
    code, table = _compare(runs, capsys, *ids)
    assert code == EXIT_REGRESSION
    assert _row(table, "p99")["verdict"] == "regression" and _row(table, "p99")["since"] == ids[4]
    assert _row(table, "p50")["verdict"] == "progression"
    assert _row(table, "rate")["verdict"] == "normal" and _row(table, "p99")["unit"] == "µs"
    # only the rate gates: no regression
    code, table = _compare(runs, capsys, *ids, "--metric", "rate")
    assert code == 0 and [r["metric"] for r in table["rows"]] == ["rate"]


def test_repetitions_go_in_together(runs, capsys):
    ids = runs.series([[180e3, 176e3, 184e3]] * 3 + [[150e3, 147e3, 153e3]] * 2)
    code, table = _compare(runs, capsys, *ids)
    rate = _row(table)
    assert rate["samples"][0] == pytest.approx([180, 176, 184])
    assert rate["values"][0] == pytest.approx(180)
    assert code == EXIT_REGRESSION and rate["since"] == ids[3]


def test_a_step_smaller_than_min_change_is_none(runs, capsys):
    ids = runs.series([180e3] * 4 + [171e3] * 3)      # -5 %
    assert _compare(runs, capsys, *ids)[0] == EXIT_REGRESSION
    code, table = _compare(runs, capsys, *ids, "--min-change", "10")
    assert code == 0 and _row(table)["verdict"] == "normal"
    assert _row(table)["groups"][0]["runs"] == ids and table["min_change"] == 10


def test_the_plot_is_a_png_per_point(runs, capsys, tmp_path):
    ids = runs.series([180e3 * n for n in NOISE[:4]] + [90e3, 92e3], sizes=(64, 1500))
    out = tmp_path / "plots"
    code, table = _compare(runs, capsys, *ids, "--out", str(out))
    assert code == EXIT_REGRESSION and table["plots"] == str(out)
    paths = {r["point"]: r["plot"] for r in table["rows"]}
    assert sorted(Path(p).name for p in paths.values()) == ["size=1500.png", "size=64.png"]
    for path in map(Path, paths.values()):
        data = path.read_bytes()
        assert data[:8] == b"\x89PNG\r\n\x1a\n"
        width, height = struct.unpack(">II", data[16:24])    # the IHDR chunk
        assert 1200 <= width <= 3000 and 300 <= height <= 800, (width, height)
        assert len(data) > 20_000      # three panels of lines and text, not an empty canvas


def test_no_plots_draws_none(runs, capsys):
    ids = runs.series([180e3, 180e3, 90e3])
    code, table = _compare(runs, capsys, *ids, "--no-plots")
    assert code == EXIT_REGRESSION and table["plots"] is None
    assert all(r["plot"] is None for r in table["rows"])
    assert main(["compare", *ids, "--no-plots", "--results", str(runs.directory)]) == 4
    assert "plots:" not in capsys.readouterr().out
    assert not list(runs.directory.glob("runs/*/trend"))


def test_last_takes_the_latest_runs_of_the_same_scenario(runs, capsys):
    older = runs.series([180e3] * 3)
    other = runs.add(50e3, spec={"doc": {"switch": "bridge"}, "quick": False})
    newer = runs.series([180e3, 100e3])
    code, table = _compare(runs, capsys, "--last", "4")
    assert code == EXIT_REGRESSION and table["runs"] == [*older[1:], *newer]
    assert other not in table["runs"]
    # the series may end at an older run; it reaches back as far as there are runs
    code, table = _compare(runs, capsys, "--last", "10", older[-1])
    assert code == 0 and table["runs"] == older


def test_a_point_not_in_every_run_is_trended_over_those_that_measured_it(runs, capsys):
    a = runs.add(180e3, sizes=(64, 1500))
    b = runs.add(180e3, sizes=(64,))
    c = runs.add(180e3, sizes=(64, 1500))
    d = runs.add(180e3, sizes=(64,))
    code, table = _compare(runs, capsys, a, b, c)
    assert code == 0 and _row(table, point="size=1500")["runs"] == [a, c]
    assert _row(table, point="size=64")["runs"] == [a, b, c]
    code, table = _compare(runs, capsys, a, c, d)
    assert [r["point"] for r in table["rows"]] == ["size=64"] * 3
    assert table["notes"] == [f"not in the newest run ({d}), not trended: size=1500"]


def test_two_runs_stay_side_by_side_unless_a_series_is_asked_for(runs, capsys):
    a, b = runs.series([180e3, 90e3])
    assert main(["compare", a, b, "--results", str(runs.directory)]) == 0
    out = capsys.readouterr().out
    assert "B/A" in out and "verdict" not in out
    assert not (runs.directory / "runs" / b / "trend").exists()
    code, table = _compare(runs, capsys, a, b, "--trend")
    assert code == EXIT_REGRESSION and _row(table)["since"] == b


def _one_error_line(capsys, field: str) -> None:
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(f"cnfperf: error: {field}: "), err


@pytest.mark.parametrize("argv, field", [
    (["0"], "RUN"),                                        # one run is no series
    (["0", "1", "beef"], "RUN"),                           # unknown run
    (["0", "1", "0"], "RUN"),                              # a run twice
    (["0", "1", "2", "--metric", "rate,p95"], "--metric"),
    (["0", "1", "2", "--min-change", "-1"], "--min-change"),
    (["0", "1", "--min-change", "5"], "--min-change"),     # for a series only
    (["0", "1", "--no-plots"], "--no-plots"),
    (["--last", "5", "1", "--no-plots", "--out", "x"], "--out"),
    (["--last", "5", "1", "--out", "results/cnfperf.db"], "--out"),   # a file
    (["--last", "1"], "--last"),
    (["--last", "5", "0", "1"], "RUN"),
    (["--last", "5", "2"], "--last"),                      # no other run of its scenario
    (["0", "1", "2"], "RUN"),                              # no point in common
])
def test_mistakes_are_one_line_and_write_nothing(runs, capsys, argv, field):
    ids = [runs.add(180e3, sizes=(64,)), runs.add(180e3, sizes=(64,)),
           runs.add(180e3, sizes=(1500,), spec={"doc": {"switch": "veth", "size": 1500}})]
    argv = [dict(zip("012", ids)).get(a, a).replace("results/", f"{runs.directory}/")
            for a in argv]
    assert main(["compare", *argv, "--results", str(runs.directory)]) == 2
    _one_error_line(capsys, field)
    assert not list(runs.directory.glob("runs/*/trend"))


def test_jumpavg_groups_as_csit_does():
    """The groups are jumpavg's, the verdict turned for a metric lower is
    better, and an all-zero series (nothing received) one group."""
    ids = ["a", "b", "c", "d", "e"]
    rate, p99 = trend.METRICS["rate"], trend.METRICS["p99"]
    down = trend._groups(ids, [[100], [101], [99], [60], [61]], rate, 0.0)
    assert [(g.runs, g.verdict) for g in down] == [(["a", "b", "c"], "normal"),
                                                   (["d", "e"], "regression")]
    up = trend._groups(ids, [[100], [101], [99], [60], [61]], p99, 0.0)
    assert up[-1].verdict == "progression"
    zeros = trend._groups(ids, [[0]] * 5, rate, 0.0)
    assert len(zeros) == 1 and zeros[0].verdict == "normal"
