"""Points measured with more busy pollers than cores: read from the point's
columns or, for points stored before them, from the plan's warning; marked
hollow in plots, flagged in tables and counted in the report's header."""
from __future__ import annotations

import pytest

from cnfperf.report import build, contention, html, plots, summary
from cnfperf.report.rows import rows_from_run

WARNING = ("3 busy pollers share 2 cores: results show CPU contention, "
           "not only the data plane")
OLDER = ("3 busy-polling threads share 2 cores: results show CPU contention, "   # as it said
         "not only the data plane")


def point(idx, switch, rx, size=64, mode="throughput", **extra):
    return {"idx": idx, "status": "done", "switch": switch, "api": "dpdk", "mode": mode,
            "pairs": 1, "size": size, "burst": 32, "rate": 0.0, "tester": "split",
            "rx_pps": rx, "loss_ratio": 0.0, "lat_p50_ns": 20_000.0, "lat_p99_ns": 90_000.0,
            "per_pair": [{"pair": 0, "tx_pps": rx, "rx_pps": rx, "sent": 10, "received": 10,
                          "loss_ratio": 0.0, "rx_bps": rx * 512, "lat_p50_ns": 20_000.0,
                          "lat_p99_ns": 90_000.0}],
            **extra}


def run_of(*points):
    return {"id": "c0de", "started": 0, "status": "done", "planned": len(points),
            "points": list(points)}


@pytest.mark.parametrize("stored, expected", [
    ({"pollers": 3, "point_cores": 2}, contention.Share(3, 2)),
    ({"pollers": 2, "point_cores": 2, "warnings": [WARNING]}, contention.Share(2, 2)),  # columns
    ({"warnings": ["something else", WARNING]}, contention.Share(3, 2)),           # an old run
    ({"warnings": [OLDER]}, contention.Share(3, 2)),                               # older yet
    ({"warnings": ["2 busy pollers share 1 core: …"]}, contention.Share(2, 1)),
    ({"warnings": []}, None),
    ({}, None),
])
def test_pollers_and_cores_from_the_columns_else_the_warning(stored, expected):
    assert contention.share(stored) == expected
    assert contention.contended(stored) == bool(expected and expected.pollers > expected.cores)


def test_the_tester_said_as_testers_choose_writes_it():
    from cnfperf.run.checks import place_point
    from harness import scenarios
    [s] = scenarios(None, {"switch": "ovs", "api": "dpdk", "cpus": "0-1"})
    placed = place_point(s)
    said = contention.tester_said({"tester": placed.scenario.tester,
                                   "tester_why": placed.tester_why})
    assert said == "single (auto: split would put 3 busy pollers on 2 cores)"
    assert f"`{said}`" in " ".join(contention.tester_said.__doc__.split())


def test_the_tester_a_point_used_and_why():
    chosen = {"tester": "single", "scenario": {"tester": "auto"},
              "tester_why": "auto: 3 busy pollers would share 2 cores"}
    assert contention.tester(chosen) == "single"
    assert contention.tester_said(chosen) == "single (auto: 3 busy pollers would share 2 cores)"
    assert contention.tester({"scenario": {"tester": "split"}}) == "split"
    assert contention.tester_said({"tester": "split"}) == "split"
    assert contention.tester_said({}) == "–"


def test_rows_carry_their_data_plane_and_contention():
    rows = rows_from_run(run_of(point(0, "ovs", 2e4, warnings=[WARNING]),
                                point(1, "veth", 3e5)))
    assert [(r["dataplane"], r["contended"]) for r in rows] == [("ovs", True), ("veth", False)]


def test_contended_points_are_hollow_with_a_footnote(tmp_path, monkeypatch):
    saved = []
    original = plots.save
    monkeypatch.setattr(plots, "save", lambda fig, path: saved.append(fig) or original(fig, path))
    run = run_of(point(0, "ovs", 2e4, pollers=3, point_cores=2),
                 point(1, "ovs", 3e4, size=1500, pollers=3, point_cores=2),
                 point(2, "memif", 4e6), point(3, "memif", 1e6, size=1500))
    plots.throughput_vs_size(rows_from_run(run), tmp_path / "t.png")
    [fig] = saved
    ax = fig.axes[0]
    hollow = [line for line in ax.get_lines() if line.get_label() == "_hollow"]
    assert len(hollow) == 1 and hollow[0].get_markerfacecolor() == "white"
    assert list(hollow[0].get_xdata()) == [64, 1500]
    notes = [t.get_text() for t in fig.texts]
    assert any(n.startswith("Hollow markers: measured with more busy pollers than cores")
               for n in notes)


def test_a_run_without_contention_has_no_footnote(tmp_path, monkeypatch):
    saved = []
    original = plots.save
    monkeypatch.setattr(plots, "save", lambda fig, path: saved.append(fig) or original(fig, path))
    run = run_of(point(0, "memif", 4e6), point(1, "memif", 1e6, size=1500))
    plots.throughput_vs_size(rows_from_run(run), tmp_path / "t.png")
    assert saved[0].texts == []
    assert not [line for line in saved[0].axes[0].get_lines() if line.get_label() == "_hollow"]


def test_tables_flag_contended_points():
    chosen = point(0, "ovs", 2e4, pollers=3, point_cores=2, tester="single",
                   tester_why="set")
    run = run_of(chosen, point(1, "veth", 3e5, pollers=2, point_cores=2),
                 point(2, "vhost", 4e6))   # stored before pollers were
    _, headers, rows = summary.points(run)
    at = headers.index
    assert [r[at("tester")] for r in rows] == ["single (set)", "split", "split"]
    assert [r[at("busy pollers / cores")] for r in rows] == ["3 / 2", "2 / 2", "–"]
    assert [r[at("CPU contended")] for r in rows] == [True, False, False]
    _, headers, rows = summary.throughput(run)
    assert headers[3] == "CPU contended" and [r[3] for r in rows] == [True, False, False]
    # a run without contention needs no column
    _, headers, _ = summary.throughput(run_of(point(0, "veth", 3e5)))
    assert "CPU contended" not in headers


def test_the_header_counts_contended_points(tmp_path):
    run = run_of(point(0, "ovs", 2e4, pollers=5, point_cores=2),
                 point(1, "testpmd", 3e4, pollers=3, point_cores=2),
                 point(2, "veth", 3e5, pollers=2, point_cores=2))
    said = build.notice(summary.done_points(run))
    assert said.startswith("CPU contention: 2 of 3 points were measured with more "
                           "busy pollers than cores (up to 5 busy pollers on 2 cores).")
    assert build.notice(summary.done_points(run_of(point(0, "veth", 3e5)))) == ""
    page = build.write(run, tmp_path).read_text()
    assert '<p class="notice">CPU contention: 2 of 3 points' in page
    # contended rows are tinted in every table with the flag column
    assert page.count('<tr class="contended">') >= 4   # points, throughput, glance


def test_a_flag_column_tints_its_rows():
    table = html.Table("T", ["point", "CPU contended"], [["a", True], ["b", False],
                                                         ["c", "yes: 3 busy pollers on 2 cores"]])
    text = html.render("x", tables=[table])
    assert text.count('<tr class="contended">') == 2
