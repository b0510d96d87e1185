"""A study held against its paper (experiments/reference.py): its tables checked
before anything runs, each published number matched to the points a run stored,
each figure's shape judged, every experiment of the five papers given a status;
and what the CLI and the report show of it."""
from __future__ import annotations

import copy
import io
import json
import tomllib
from pathlib import Path

import pytest
from PIL import Image

import headless
from cnfperf import UserError, cli
from cnfperf.experiments import reference, stats, studies
from cnfperf.results.store import Store
from test_report import engine_hist

DATA = Path(__file__).parent / "data"
# What the quotas gave here at 64 B (Mpps), against Table 5's 14.84 … 1.15.
MEASURED = {100: 15.01, 75: 11.72, 50: 7.44, 25: 2.90, 12.5: 1.59}
# Table 6 rises from 100 to 75 %; here it stays flat (its shape does not hold).
LATENCY_US = {100: 21.0, 75: 21.5, 50: 45.0, 25: 24.0, 12.5: 25.0}


def study_doc() -> dict:
    with open(DATA / "paper_study.toml", "rb") as f:
        return tomllib.load(f)


def point(idx, quota, mode="throughput", size=64, rep=0, rx=None, hist=None):
    scenario = {"switch": "ovs", "api": "dpdk", "mode": mode, "size": size, "pairs": 1,
                "burst": 32, "switch_quota": quota, "rate": 1000 if mode == "latency" else 0}
    lat = {}
    if hist:
        lat = {"lat_mean_ns": stats.hist_mean(hist), "lat_p50_ns": stats.percentile(hist, 50),
               "lat_p99_ns": stats.percentile(hist, 99), "latency_histogram": hist,
               "latency_kind": "one_way"}
    rx = rx if rx is not None else 1000.0
    return {"idx": idx, "status": "done", "grp": f"{mode}{size}q{quota}", "rep": rep,
            **scenario, "scenario": scenario, "rx_pps": rx, "tx_pps": rx, "loss_ratio": 0.0,
            "tester": "single", "pollers": 2, "point_cores": 2,
            "switch_facts": {"name": "ovs", "style": 6}, **lat,
            "per_pair": [{"pair": 0, "tx_pps": rx, "rx_pps": rx, "sent": 1000, "received": 1000,
                          "loss_ratio": 0.0, "rx_bps": rx * size * 8, **lat}]}


def stored_tc2(reps=2) -> dict:
    """A run of the fixture study as the store returns it: throughput at 64 and
    1500 B and latency at 64 B per quota, `reps` repetitions (1 % apart)."""
    points = []
    for quota, mpps in MEASURED.items():
        for size, share in ((64, 1.0), (1500, 0.055)):
            for rep in range(reps):
                points.append(point(len(points), quota, size=size, rep=rep,
                                    rx=mpps * 1e6 * share * (1 + rep / 100)))
        for rep in range(reps):
            hist = engine_hist(LATENCY_US[quota] * 1e3, seed=len(points))
            points.append(point(len(points), quota, "latency", rep=rep, hist=hist))
    return {"id": "7c2a", "started": 0, "status": "done", "planned": len(points),
            "points": points, "spec": {"study": "paper_study", "doc": study_doc()}}


# -- loading ------------------------------------------------------------------


def test_the_fixture_loads_with_its_differences_and_rows():
    ref = reference.load(study_doc())
    assert ref.experiments == ("000.7", "000.8")
    assert [d.kind for d in ref.differences] == ["method", "hardware"]
    assert ref.differences[1].touches("000.8") and not ref.differences[1].touches("000.7")
    assert len(ref.rows) == 10 and ref.rows[0].where == "§4.4.2"
    assert ref.rows[7].per == {"switch_quota": 100} and ref.rows[7].factor == 0.01


@pytest.mark.parametrize("change, where, why", [
    (lambda d: d["reference"][3].update(metric="rx_kpps"), "reference[3].metric",
     "unknown metric 'rx_kpps'"),
    (lambda d: d["reference"][0].update(unit="ms"), "reference[0].unit",
     "'ms' is not a unit of rx_mpps"),
    (lambda d: d["reference"][1].update(value="10.85"), "reference[1].value", "a number"),
    (lambda d: d["reference"][2]["at"].update(quota=50), "reference[2].at.quota",
     "not a scenario field"),
    (lambda d: d["reference"][2]["at"].update(size="64,128"), "reference[2].at.size",
     "one value"),
    (lambda d: d["reference"][7].update(unit="Mpps"), "reference[7].unit",
     "not a unit of a ratio"),
    (lambda d: d["reference"][0].update(figur="x"), "reference[0].figur", "unknown key"),
    (lambda d: d["reference"][0].pop("figure"), "reference[0].figure", "must be text"),
    (lambda d: d["difference"][0].update(kind="hw"), "difference[0].kind",
     "'hw' is none of method, hardware, gap"),
    (lambda d: d["difference"][1].update(experiments=["000.9"]),
     "difference[1].experiments", "not among the study's own"),
    (lambda d: d["difference"][0].update(text=" "), "difference[0].text", "must be text"),
    (lambda d: d["study"].update(experiments=["000.11"]), "study.experiments",
     "unknown experiment '000.11'"),
    (lambda d: d.update(reference={"figure": "x"}), "reference", "array of tables"),
])
def test_a_wrong_table_is_a_user_error_naming_its_key(change, where, why):
    doc = copy.deepcopy(study_doc())
    change(doc)
    with pytest.raises(UserError) as e:
        reference.load(doc)
    assert e.value.field == where and why in e.value.why


def test_a_bad_study_file_is_refused_before_its_plan(tmp_path, capsys):
    """`cnfperf study FILE --dry-run` exits 2 naming the key: nothing planned."""
    text = (DATA / "paper_study.toml").read_text().replace('metric = "latency_mean_us"',
                                                           'metric = "latency_avg_us"', 1)
    path = tmp_path / "bad.toml"
    path.write_text(text)
    from cnfperf.run import checks
    with pytest.raises(UserError, match=r"reference\[5\]\.metric: unknown metric"):
        checks.load_plan(path)


def test_the_plan_keeps_the_tables_the_run_stores():
    """A run stores its plan's doc (runs.spec): the report and `results show`
    hold it against the tables as they were run, not today's file."""
    from cnfperf.run import checks
    swept = checks.load_plan(DATA / "paper_study.toml")
    assert swept.spec["doc"]["reference"][0]["value"] == 14.84
    assert swept.spec["doc"]["difference"][1]["experiments"] == ["000.8"]
    run = stored_tc2()
    run["spec"]["doc"]["reference"][0]["value"] = 7.42   # the stored table, not the file's
    assert reference.of_stored(run).rows[0].ratio == pytest.approx(15.01 * 1.005 / 7.42)


# -- matching -----------------------------------------------------------------


def test_repetitions_are_averaged_and_counted():
    run = stored_tc2(reps=2)
    got = reference.measure(run["points"], "rx_mpps", {"switch_quota": 100, "size": 64})
    assert got.value == pytest.approx(15.01 * 1.005) and got.points == 2
    assert got.configurations == 1


def test_a_rate_takes_the_best_configuration_the_row_leaves_open():
    points = [point(0, 100, rx=1e6), point(1, 100, size=1500, rx=3e6)]
    points[1]["grp"] = "other"
    got = reference.measure(points, "rx_mpps", {"switch_quota": 100})
    assert got.value == pytest.approx(3.0) and got.configurations == 2


def test_a_row_that_leaves_the_mode_open_takes_its_metrics_own():
    run = stored_tc2(reps=1)
    rate = reference.measure(run["points"], "rx_mpps", {"switch_quota": 100, "size": 64})
    assert rate.value == pytest.approx(15.01)          # not the latency points' 1000 pps
    lat = reference.measure(run["points"], "latency_p50_us", {"switch_quota": 75})
    assert lat.value is not None and lat.points == 1   # the latency point alone


def test_every_metric_reads_what_a_point_stores():
    hist = engine_hist(20_000)
    p = point(0, 100, rx=2e6, hist=hist, size=1500)
    p.update(image_size=8_900_000, nf_results=[{"ready_s": 0.25}, {"ready_s": 0.35}],
             lat_min_ns=9_000.0, lat_p90_ns=25_000.0, lat_max_ns=90_000.0, loss_ratio=0.01)
    values = {m: reference.point_value(p, m) for m in reference.METRICS}
    assert values["rx_mpps"] == 2.0 and values["tx_mpps"] == 2.0
    assert values["rx_gbps"] == pytest.approx(2e6 * 1500 * 8 / 1e9)
    assert values["loss_pct"] == pytest.approx(1.0)
    assert values["latency_min_us"] == 9.0 and values["latency_max_us"] == 90.0
    assert values["latency_stdev_us"] == pytest.approx(stats.hist_stdev(hist) / 1e3)
    assert 1 < values["latency_stdev_us"] < 20
    assert values["image_mb"] == 8.9 and values["startup_ms"] == pytest.approx(300)
    assert values["ndr_mpps"] is None and values["pdr_mpps"] is None   # not a search


def test_a_search_gives_its_goals_and_no_received_rate():
    p = point(0, 100, rx=5e5)
    p["scenario"].update(rate="ndr+pdr", pairs=2)
    p["goals"] = [{"loss_ratio": 0.0, "conditional_pps": 1e6},
                  {"loss_ratio": 0.005, "conditional_pps": 1.2e6}]
    assert reference.point_value(p, "ndr_mpps") == pytest.approx(2.0)    # all pairs
    assert reference.point_value(p, "pdr_mpps") == pytest.approx(2.4)
    assert reference.point_value(p, "rx_mpps") is None
    bisect = point(1, 100)
    bisect["scenario"]["rate"] = "ndr"
    bisect.update(search_rate_pps=7e5, search_loss_threshold=0.0)
    assert reference.point_value(bisect, "ndr_mpps") == pytest.approx(0.7)
    assert reference.point_value(bisect, "pdr_mpps") is None


def test_ratio_here_over_paper_and_unmeasured_rows_say_so():
    compared = reference.compare(reference.load(study_doc()), stored_tc2()["points"])
    first = compared.rows[0]
    assert first.here == pytest.approx(15.01 * 1.005)
    assert first.ratio == pytest.approx(15.01 * 1.005 / 14.84)
    missing = compared.rows[9]
    assert missing.here is None and missing.ratio is None and missing.points == 0
    assert reference.table_rows(compared)[9][4:7] == [None, "Mpps", None]   # –, never 0


def test_a_per_row_is_the_ratio_of_two_points():
    compared = reference.compare(reference.load(study_doc()), stored_tc2()["points"])
    per = compared.rows[7]
    assert per.here == pytest.approx(100 * 7.44 / 15.01)   # in the row's unit, %
    assert per.ratio == pytest.approx(7.44 / 15.01 / 0.5)
    assert per.points == 4
    assert compared.rows[7].row.at_text() == "switch_quota=50 size=64 / switch_quota=100"


# -- shapes -------------------------------------------------------------------


def test_the_quota_table_keeps_its_shape():
    compared = reference.compare(reference.load(study_doc()), stored_tc2()["points"])
    table5 = compared.shapes[0]
    assert (table5.figure, table5.metric, table5.holds) == ("Table 5", "rx_mpps", True)
    assert table5.series() == ("1 : .73 : .38 : .17 : .08", "1 : .78 : .50 : .19 : .11")
    lines = reference.shape_lines(compared)
    assert lines[0] == ("Table 5 rx_mpps: shape holds yes (paper 1 : .73 : .38 : .17 : .08; "
                        "here 1 : .78 : .50 : .19 : .11)")
    # one row measured of Fig. 12's two: no shape to judge
    fig12 = next(s for s in compared.shapes if s.figure == "Fig. 12")
    assert fig12.holds is None and fig12.series()[1] == "1 : –"
    table6 = next(s for s in compared.shapes if s.figure == "Table 6")
    assert table6.holds is False
    verdict = compared.verdict()
    ratios = sorted(c.ratio for c in compared.rows if c.ratio and c.row.per is None)
    assert len(ratios) == 8   # the per row is a ratio itself; one row unmeasured
    assert verdict == {"referenced": 10, "measured": 9,
                       "median_ratio": pytest.approx((ratios[3] + ratios[4]) / 2),
                       "shapes_hold": 1, "shapes": 2}


def test_a_figure_of_several_curves_has_a_shape_per_curve():
    """Fig. 10's rows run over sizes for OVS in a container, then on the host: no
    step from the one's 1500 B to the other's 64 B."""
    rows = [reference.Row(i, "Fig. 10", "rx_mpps", v, "Mpps", {"switch_in": where, "size": size})
            for i, (where, size, v) in enumerate([("container", 64, 14.0), ("container", 1500, 0.8),
                                                  ("host", 64, 14.0), ("host", 1500, 0.8)])]
    here = [10.0, 0.8, 9.0, 0.8]
    compared = [reference.Compared(r, h, 1) for r, h in zip(rows, here)]
    shapes = reference.shapes(compared)
    assert [(s.name, s.holds) for s in shapes] == [
        ("Fig. 10 rx_mpps switch_in=container", True), ("Fig. 10 rx_mpps switch_in=host", True)]


@pytest.mark.parametrize("paper, here, holds", [
    ((14.84, 10.85, 5.65), (15.0, 11.7, 7.4), True),
    ((14.84, 10.85, 5.65), (15.0, 15.5, 7.4), False),    # flat here, falling there
    ((10.0, 10.5, 5.0), (10.0, 9.3, 5.0), True),         # both flat within 10 %
    ((10.0, 10.5, 5.0), (10.0, 12.0, 5.0), False),       # 20 % up is no flat
    ((1.0, 2.0, 3.0), (3.0, 2.0, 1.0), False),
    ((1.0, 2.0, 3.0), (1.0, None, 3.0), True),           # the unmeasured row is left out
    ((1.0, 2.0), (1.0, None), None),                     # one row: no shape
])
def test_a_shape_holds_when_every_step_goes_the_same_way(paper, here, holds):
    assert reference.holds(paper, here) == holds


def test_normalised_series():
    assert reference.normalised([14.84, 10.85, 1.15]) == "1 : .73 : .08"
    assert reference.normalised([2.0, 5.0, 40.0]) == "1 : 2.5 : 20"
    assert reference.normalised([None, None]) == "– : –"


# -- coverage -----------------------------------------------------------------


def test_the_catalogue_has_the_46_experiments():
    papers, experiments = reference.catalogue()
    ids = [e.id for e in experiments]
    assert len(ids) == 46 == len(set(ids))
    assert ids[:3] == ["000.1", "000.2", "000.3"] and ids[-1] == "004.F7"
    assert {"002.A′", "003.T52", "003.F511"} <= set(ids)
    assert sorted(papers) == ["000", "001", "002", "003", "004"]
    assert all(p["file"].startswith(n + "_") for n, p in papers.items())


def test_the_catalogue_is_not_a_study():
    assert "experiments" not in studies.known()
    assert all("/" not in name for name in studies.known())


def test_status_follows_the_kinds_of_difference():
    ref = reference.load(study_doc())
    assert reference.status(ref, "000.7") == reference.NOW     # a method difference only
    assert reference.status(ref, "000.8") == reference.HW
    gap = reference.Reference(("000.7",), (reference.Difference("gap", "no x"),
                                           reference.Difference("hardware", "no y")))
    assert reference.status(gap, "000.7") == reference.PART


def test_coverage_lists_every_experiment_with_its_study_or_why_none():
    covered = reference.coverage({"paper_study": reference.load(study_doc())},
                                 {"paper_study": {"run": "7c2a", "referenced": 10,
                                                  "measured": 9, "median_ratio": 1.1,
                                                  "shapes_hold": 1, "shapes": 2}})
    assert [c.experiment.id for c in covered] == list(reference.experiment_ids())
    by_id = {c.experiment.id: c for c in covered}
    assert by_id["000.8"].status == "HW" and by_id["000.8"].studies == ["paper_study"]
    assert by_id["000.8"].differences == [
        "method: the quota is a share of one core given to one PMD thread; the paper limited "
        "Docker's CPU access for three",
        "hardware: latency is one-way on the tester's clock, not MoonGen's hardware timestamps"]
    assert by_id["000.6"].status == "NO" and by_id["000.6"].differences[0].startswith(
        "missing: the paper never gives")
    row = reference.coverage_rows([by_id["000.7"]])[0]
    assert row[5] == "run 7c2a: 9/10 measured, median ×1.10, shapes 1/2"


def test_an_experiment_the_catalogue_says_is_missing_is_claimed_by_no_study():
    covered = reference.coverage(reference.all_studies())
    claimed = [c.experiment.id for c in covered if c.experiment.missing and c.studies]
    assert claimed == [], "a study claims an experiment the catalogue says is missing"


# -- the CLI ------------------------------------------------------------------


def _store_with(tmp_path, run) -> Path:
    """A results store holding `run`'s points with their measured columns."""
    store = Store(tmp_path)
    store.begin_run(run["id"], ["cnfperf", "study", "paper_study"], len(run["points"]),
                    tmp_path, {}, None, run["spec"])
    for p in run["points"]:
        pid = store.add_point(run["id"], p["idx"], p["scenario"], status="done", started=0,
                              group=p["grp"], key=f"{p['grp']}-{p['rep']}", rep=p["rep"])
        with store.db:
            store.db.execute("UPDATE points SET rx_pps = ?, tx_pps = ?, loss_ratio = 0, "
                             "lat_mean_ns = ?, lat_p50_ns = ? WHERE id = ?",
                             (p["rx_pps"], p["tx_pps"], p.get("lat_mean_ns"),
                              p.get("lat_p50_ns"), pid))
    store.finish_run(run["id"], "done")
    store.close()
    return tmp_path


def test_cli_coverage_lists_all_46_with_the_last_runs_verdict(tmp_path, capsys, monkeypatch):
    results = _store_with(tmp_path, stored_tc2())
    monkeypatch.setattr(reference, "all_studies",
                        lambda: {"paper_study": reference.load(study_doc())})
    assert cli.main(["study", "--coverage", "--results", str(results)]) == 0
    out = capsys.readouterr().out
    for eid in reference.experiment_ids():
        assert f"\n{eid} " in out
    line = next(l for l in out.splitlines() if l.startswith("000.7 "))
    assert "HW" not in line and " NOW " in line and "paper_study" in line
    assert "run 7c2a: 9/10 measured" in line and "shapes 1/2" in line
    assert "    · hardware: latency is one-way" in out
    assert "46 experiments: 1 NOW, 1 HW, 0 PART, 44 NO" in out
    assert cli.main(["study", "--coverage", "--json", "--results", str(results)]) == 0
    data = json.loads(capsys.readouterr().out)
    assert len(data["experiments"]) == 46 and data["counts"]["NO"] == 44
    assert data["experiments"][7]["verdicts"]["paper_study"]["run"] == "7c2a"


def test_cli_coverage_refuses_a_study_name(capsys):
    assert cli.main(["study", "cpu000_tc2_quota", "--coverage"]) == 2
    assert "--coverage: lists every study's experiments" in capsys.readouterr().err


def test_a_study_says_its_differences_before_it_runs_and_refuses_bad_tables(tmp_path, capsys,
                                                                           monkeypatch):
    monkeypatch.setenv("CNFPERF_RESULTS", str(tmp_path / "results"))
    assert cli.main(["study", str(DATA / "paper_study.toml"), "--dry-run"]) == 0
    err = capsys.readouterr().err
    assert err.startswith("cnfperf: paper_study differs from its paper:\n  method: the quota is")
    assert "\n  hardware (000.8): latency is one-way on the tester's clock" in err
    bad = tmp_path / "bad.toml"
    bad.write_text((DATA / "paper_study.toml").read_text().replace('kind = "hardware"',
                                                                  'kind = "hw"'))
    assert cli.main(["study", str(bad), "--dry-run"]) == 2
    assert capsys.readouterr().err == ("cnfperf: error: difference[1].kind: 'hw' is none of "
                                       "method, hardware, gap\n")
    assert not (tmp_path / "results").exists()


def test_results_show_prints_paper_vs_here(tmp_path, capsys):
    results = _store_with(tmp_path, stored_tc2())
    assert cli.main(["results", "show", "7c2a", "--results", str(results)]) == 0
    out = capsys.readouterr().out
    table = out[out.index("Paper vs here"):]
    assert "figure" in table and "here/paper" in table
    row = next(l for l in table.splitlines() if l.startswith("Table 5 (§4.4.2)"))
    assert "14.84" in row and "15.09" in row and "1.017" in row
    assert "Table 5 rx_mpps: shape holds yes (paper 1 : .73 : .38 : .17 : .08; here 1 : .78 : " \
           ".50 : .19 : .11)" in table
    assert "Fig. 12 rx_mpps: shape holds – (paper 1 : 1; here 1 : –)" in table
    assert "  hardware (000.8): latency is one-way" in table
    assert cli.main(["results", "show", "7c2a", "--json", "--results", str(results)]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["paper"]["verdict"]["measured"] == 9
    assert data["paper"]["rows"][9]["here"] is None


# -- the report ---------------------------------------------------------------


def test_the_report_has_a_paper_vs_here_section(tmp_path):
    from cnfperf.report import build
    page = build.write(stored_tc2(), tmp_path / "report").read_text()
    assert '<h2 id="paper-vs-here">Paper vs here</h2>' in page
    assert 'href="#paper-vs-here"' in page
    assert "shape holds" in page and "1 : .73 : .38 : .17 : .08" in page
    assert "Differences from the paper" in page and "MoonGen&#x27;s hardware timestamps" in page
    assert page.index("paper-vs-here") < page.index('id="plots"')


def test_the_plots_draw_the_papers_values(tmp_path, monkeypatch):
    from cnfperf.report import build, plots
    saved = []
    original = plots.save
    monkeypatch.setattr(plots, "save", lambda fig, path: saved.append(fig) or original(fig, path))
    build.write(stored_tc2(), tmp_path / "report")
    quota = saved[0]
    ax_pps, ax_lat = quota.axes[:2]
    marks = [l for l in ax_pps.get_lines() if l.get_marker() == "D"]
    # Table 5's five quotas at 64 B, Fig. 12's 1500 B at 100 % (its curve is 1500 B's)
    assert sorted(x for l in marks for x in l.get_xdata()) == [12.5, 25, 50, 75, 100, 100]
    assert all(l.get_markerfacecolor() == "none" for l in marks)
    assert "paper" in [t.get_text() for t in ax_pps.get_legend().get_texts()]
    lat = [l for l in ax_lat.get_lines() if l.get_marker() == "D"]
    assert sorted(l.get_ydata()[0] for l in lat) == [20.82, 50.99]
    assert "paper mean" in [t.get_text() for t in ax_lat.get_legend().get_texts()]
    size = saved[1]   # throughput vs size: 64 and 1500 B at 100 % (1024 B has no curve point)
    marks = [l for l in size.axes[0].get_lines() if l.get_marker() == "D"]
    assert sorted(x for l in marks for x in l.get_xdata()) == [64, 64, 64, 64, 64, 1024, 1500]
    # the figure keys its curves once, on the right: "paper" is there too
    assert "paper" in [t.get_text() for t in size.axes[1].get_legend().get_texts()]


def test_latency_vs_size_keys_its_curves_and_the_paper(tmp_path, monkeypatch):
    from cnfperf.report import plots
    saved = []
    original = plots.save
    monkeypatch.setattr(plots, "save", lambda fig, path: saved.append(fig) or original(fig, path))
    rows = [{"switch": "veth", "dataplane": "veth", "mode": "latency", "size": size, "burst": 1,
             "pairs": 1, "rate": 1000, "hist": engine_hist(us * 1e3, seed=size)}
            for size, us in ((64, 100), (1500, 120))]
    paper = reference.load({"reference": [
        {"figure": "Fig. B", "metric": "latency_p50_us", "value": v, "unit": "µs",
         "at": {"size": size, "switch": "veth"}} for size, v in ((64, 60), (1500, 80))] + [
        {"figure": "Fig. C", "metric": "latency_p50_us", "value": 9, "unit": "µs",
         "at": {"size": 64, "switch": "ovs"}}]}).rows   # no ovs curve: not drawn
    plots.rtt_vs_size(rows, tmp_path / "rtt.png", paper=paper)
    ax = saved[0].axes[0]
    marks = [l for l in ax.get_lines() if l.get_marker() == "D"]
    assert [(l.get_xdata()[0], l.get_ydata()[0]) for l in marks] == [(64, 60), (1500, 80)]
    assert [t.get_text() for t in ax.get_legend().get_texts()] == ["veth", "p50", "p99", "paper p50"]


@pytest.mark.needs("chromium-headless-shell")
def test_the_paper_section_reads_in_headless_chromium(tmp_path):
    from cnfperf.report import build
    path = build.write(stored_tc2(), tmp_path / "report")
    page = headless.render(path)
    assert page.errors == []
    ids = [section for section, _, _ in page.sections]
    assert ids.index("paper-vs-here") + 1 == ids.index("plots")
    for section, present, height in page.sections:
        assert present and height > 0, section
    (tmp_path / "screenshot.png").write_bytes(page.screenshot)
    with Image.open(io.BytesIO(page.screenshot)) as im:
        assert im.size[0] >= 1200 and im.size[1] > 2000


# -- the docs -----------------------------------------------------------------


def test_the_coverage_page_is_current_and_lists_every_experiment():
    from cnfperf import reference as docs
    from harness import REPO
    assert docs.stale(REPO, ["docs/coverage.md"]) == [], \
        "docs/coverage.md is stale: run `make docs` (a study's experiments or differences changed)"
    page = (REPO / "docs" / "coverage.md").read_text()
    for eid in reference.experiment_ids():
        assert f"\n| {eid} | " in page
    assert "46 experiments: " in page
