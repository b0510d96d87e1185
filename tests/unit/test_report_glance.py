"""At a glance: per mode and frame size, the data planes ranked, with 95%
confidence intervals when repeated; first in the report."""
from __future__ import annotations

import pytest

from cnfperf.experiments import stats
from cnfperf.report import build, glance, glance_plot, plots


def point(idx, switch, size=64, mode="throughput", rx=None, p50=None, rep=0, rate=0.0, **extra):
    return {"idx": idx, "status": "done", "switch": switch, "api": "dpdk", "mode": mode,
            "pairs": 1, "size": size, "burst": 32, "rate": rate, "tester": "split", "rep": rep,
            "grp": f"{switch}-{size}-{mode}-{rate}", "rx_pps": rx, "loss_ratio": 0.0,
            "lat_p50_ns": p50, "lat_p99_ns": None if p50 is None else 10 * p50,
            "latency_kind": "rtt" if mode == "latency" else "one_way",
            "per_pair": [{"pair": 0, "tx_pps": rx, "rx_pps": rx, "sent": 10, "received": 10,
                          "loss_ratio": 0.0, "rx_bps": None, "lat_p50_ns": p50,
                          "lat_p99_ns": None if p50 is None else 10 * p50}], **extra}


def run_of(*points):
    return {"id": "9a1c", "started": 0, "status": "done", "planned": len(points),
            "points": list(points)}


def shootout():
    points, i = [], 0
    for switch, rx, p50 in (("veth", 3e5, 30e3), ("memif", 40e6, 20e3), ("ovs", 14e6, 25e3)):
        for size in (64, 1500):
            for rep in (0, 1, 2):
                points.append(point(i, switch, size, rx=rx * (1 + rep / 100) / (size / 64) ** 0.3,
                                    rep=rep))
                points.append(point(i + 1, switch, size, mode="latency", p50=p50 + rep * 100,
                                    rep=rep, rate=1000.0))
                i += 2
    return run_of(*points)


def test_data_planes_ranked_per_mode_and_size():
    found = glance.entries(shootout())
    order = [(e.mode, e.size, e.curve) for e in found]
    assert order == [("throughput", 64, "memif"), ("throughput", 64, "ovs"),
                     ("throughput", 64, "veth"),
                     ("throughput", 1500, "memif"), ("throughput", 1500, "ovs"),
                     ("throughput", 1500, "veth"),
                     ("latency", 64, "memif"), ("latency", 64, "ovs"), ("latency", 64, "veth"),
                     ("latency", 1500, "memif"), ("latency", 1500, "ovs"),
                     ("latency", 1500, "veth")]


def test_repetitions_give_a_95_percent_confidence_interval():
    memif = glance.entries(shootout())[0]
    expected = stats.summarize([40e6, 40.4e6, 40.8e6])
    assert memif.value.n == 3 and memif.value.mean == pytest.approx(expected.mean)
    assert (memif.value.ci_low, memif.value.ci_high) == pytest.approx(
        (expected.ci_low, expected.ci_high))
    title, headers, rows = glance.throughput_table(glance.entries(shootout()))
    assert title == "At a glance: throughput"
    assert headers[:6] == ["size B", "rank", "data plane", "best rx Mpps", "95% CI Mpps", "n"]
    assert rows[0][:4] == ["64", 1, "memif", pytest.approx(40.4)]
    assert rows[0][4] == f"{expected.ci_low / 1e6:.3g} – {expected.ci_high / 1e6:.3g}"
    [(title, headers, rows)] = glance.latency_tables(glance.entries(shootout()))
    assert title == "At a glance: latency, round trip"
    assert headers[:6] == ["size B", "rank", "data plane", "p50 µs", "p50 95% CI µs", "p99 µs"]
    assert rows[0][:4] == ["64", 1, "memif", pytest.approx(20.1)]


def test_the_best_of_the_rates_tried_and_where_it_was():
    run = run_of(point(0, "veth", rx=1e5, rate=1e5), point(1, "veth", rx=2.9e5, rate=1e6),
                 point(2, "veth", rx=2.5e5, rate=1e7))
    [best] = glance.entries(run)
    assert best.value.mean == 2.9e5 and best.value.n == 1
    _, headers, rows = glance.throughput_table([best])
    assert "95% CI Mpps" not in headers               # nothing repeated
    assert headers[-1] == "best at" and rows[0][-1] == "rate=1M"


def test_latency_ranks_latency_points_only():
    # a throughput point's latency is its queue's: not a latency ranking
    run = run_of(point(0, "veth", rx=3e5, p50=5e6))
    assert [e.mode for e in glance.entries(run)] == ["throughput"]
    assert glance.latency_tables(glance.entries(run)) == []


def test_contended_entries_say_so():
    run = run_of(point(0, "ovs", rx=2e4, pollers=3, point_cores=2), point(1, "memif", rx=4e6))
    found = glance.entries(run)
    assert [(e.curve, e.contended) for e in found] == [("memif", False), ("ovs", True)]
    _, headers, rows = glance.throughput_table(found)
    assert [r[headers.index("CPU contended")] for r in rows] == \
        ["no", "yes: 3 busy pollers on 2 cores"]


def test_the_chart_draws_a_bar_per_entry_best_on_top(tmp_path, monkeypatch):
    saved = []
    original = glance_plot.save
    monkeypatch.setattr(glance_plot, "save", lambda f, p: saved.append(f) or original(f, p))
    found = glance.entries(shootout())
    glance_plot.chart(found, tmp_path / "g.png")
    [fig] = saved
    titles = [ax.get_title() for ax in fig.axes]
    assert titles == ["Throughput, 64 B frames", "Throughput, 1500 B frames",
                      "Latency (round trip), 64 B frames", "Latency (round trip), 1500 B frames"]
    top = fig.axes[0]
    assert [t.get_text() for t in top.get_yticklabels()] == ["memif", "ovs", "veth"]
    assert top.get_ylim()[0] > top.get_ylim()[1]          # rank 1 on top
    assert top.get_xscale() == "log"                       # 0.3 to 40 Mpps
    assert len(top.patches) == 3


def test_the_chart_shows_three_sizes_of_many():
    found = [glance.Entry("throughput", s, "veth", stats.summarize([1.0]), None, None, None,
                          "split", None, "") for s in (64, 128, 256, 512, 1024, 1500)]
    assert glance_plot.sizes(found, ("throughput", "")) == [64, 512, 1500]


def test_nothing_to_rank():
    with pytest.raises(plots.NoData):
        glance_plot.chart([], "unused.png")


def test_the_report_opens_at_a_glance(tmp_path):
    page = build.write(shootout(), tmp_path).read_text()
    assert (tmp_path / "at_a_glance.png").exists()
    nav = page[page.index("<nav>"):page.index("</nav>")]
    assert nav.index("At a glance") < nav.index("Plots") < nav.index("Tables")
    body = page[page.index("</nav>"):]
    assert body.index('id="at-a-glance"') < body.index('id="plots"') < body.index('id="tables"')
    assert 'id="at-a-glance-throughput"' in page
    assert 'id="at-a-glance-latency-round-trip"' in page


def test_one_data_plane_has_its_tables_but_no_chart(tmp_path):
    run = run_of(point(0, "veth", rx=3e5), point(1, "veth", size=1500, rx=2e5))
    assert not glance.ranked(glance.entries(run))
    page = build.write(run, tmp_path).read_text()
    assert not (tmp_path / "at_a_glance.png").exists()
    assert 'id="at-a-glance"' in page and 'id="at-a-glance-throughput"' in page


def test_round_trips_and_one_way_times_are_ranked_apart(tmp_path, monkeypatch):
    run = run_of(point(0, "veth", mode="latency", p50=300e3, rate=1000.0),
                 point(1, "macvlan", mode="latency", p50=250e3, rate=1000.0),
                 point(2, "ovs", mode="latency", p50=40e3, rate=1000.0, latency_kind="one_way"),
                 point(3, "vpp", mode="latency", p50=60e3, rate=1000.0, latency_kind="one_way"))
    found = glance.entries(run)
    assert [(e.board, e.curve) for e in found] == [
        (("latency", "rtt"), "macvlan"), (("latency", "rtt"), "veth"),
        (("latency", "one_way"), "ovs"), (("latency", "one_way"), "vpp")]
    # a table per kind, each ranked from 1 and titled with its kind
    tables = glance.latency_tables(found)
    assert [(title, [(r[1], r[2]) for r in rows]) for title, _, rows in tables] == [
        ("At a glance: latency, round trip", [(1, "macvlan"), (2, "veth")]),
        ("At a glance: latency, one way", [(1, "ovs"), (2, "vpp")])]
    saved = []
    original = glance_plot.save
    monkeypatch.setattr(glance_plot, "save", lambda f, p: saved.append(f) or original(f, p))
    glance_plot.chart(found, tmp_path / "g.png")
    assert [ax.get_title() for ax in saved[0].axes] == ["Latency (round trip), 64 B frames",
                                                        "Latency (one way), 64 B frames"]


def test_one_curve_with_both_kinds_is_ranked_in_each(tmp_path):
    # the same data plane measured by both testers, the tester not in its name:
    # its round trip and its one way are two entries, never one best of both
    run = run_of(point(0, "veth", mode="latency", p50=300e3, rate=1000.0),
                 point(1, "veth", mode="latency", p50=40e3, rate=1000.0, latency_kind="one_way",
                       grp="veth-one-way"))
    found = glance.entries(run)
    assert [(e.kind, e.value.mean) for e in found] == [("rtt", 300e3), ("one_way", 40e3)]
    page = build.write(run, tmp_path).read_text()
    assert 'id="at-a-glance-latency-round-trip"' in page
    assert 'id="at-a-glance-latency-one-way"' in page
