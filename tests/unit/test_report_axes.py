"""Value axes: logarithmic where values span more than 20×, tick labels that never
overlap, checked on rendered figures (label bounding boxes)."""
from __future__ import annotations

import math
import random

import pytest
from matplotlib.colors import same_color

from cnfperf.dataplanes import DATAPLANES
from cnfperf.report import axes, draw, glance, glance_plot, nf_plots, nfs, plots, style

# Every data plane cnfperf knows, at rates a 2-core host gives them: kernel ones
# near 0.1 Mpps, memif near 50 (the span that squashed the kernel onto zero).
CAPACITY = {"veth": 3e5, "bridge": 1e5, "macvlan": 4e5, "vhost": 14e6, "memif": 48e6,
            "testpmd": 23e6, "ovs": 15e6, "vpp": 9e6, "vpp-memif": 11e6, "click": 2e6,
            "snabb": 5e6, "snabb-wire": 6e6}
SIZES = (64, 65, 128, 256, 512, 1024, 1500, 9000)   # 1024 and 1500 sit close on a log axis
OVS = style.nth(DATAPLANES["ovs"].style)   # the style its points store


@pytest.fixture
def saved(monkeypatch):
    """Every figure a plot saves, after save() decluttered it."""
    figs = []

    def keep(fig, path):
        out = draw.save(fig, path)
        figs.append(fig)
        return out

    for module in (plots, nf_plots, glance_plot):
        monkeypatch.setattr(module, "save", keep)
    return figs


def hostile_rows():
    """Every data plane at every size, rates from 10 kpps to 100 Mpps, pairs 1, 2
    and 4 at 64 B only (more pairs split each curve in three elsewhere)."""
    rng = random.Random(7)
    rows = []
    for switch, cap in CAPACITY.items():
        for size in SIZES:
            for pairs in (1, 2, 4) if size == 64 else (1,):
                for rate in (1e4, 1e5, 1e6, 1e7, 1e8):
                    rows.append(dict(switch=switch, mode="throughput", api="dpdk", size=size,
                                     burst=32, pairs=pairs, pair=0,
                                     point=f"{switch}{size}{pairs}{rate}",
                                     rate=rate, tx_pps=rate, rx_pps=min(rate, cap / pairs),
                                     contended=switch in ("ovs", "testpmd")))
            center = 20_000 if cap < 1e6 else 30
            p50 = center * (1 + size / 2000) * rng.uniform(0.8, 1.2) * 1e3
            rows.append(dict(switch=switch, mode="latency", size=size, burst=32, pairs=1, rate=1000,
                             lat_p50_ns=p50, lat_p99_ns=p50 * 40, switch_quota=None,
                             hist=[[int(p50 / 3), int(p50 / 3) + 10, 5],
                                   [int(p50), int(p50) + 10, 90],
                                   [int(p50 * 40), int(p50 * 40) + 10, 5]]))
    return rows


def test_span_and_the_switch_to_log():
    assert axes.span([0.3, 48.0, None, 0, -1]) == pytest.approx(160)
    assert axes.span([5.0]) == 1.0
    assert axes.LOG_SPAN == 20


@pytest.mark.parametrize("value, text", [(0, "0"), (0.05, "0.05"), (2.0, "2"), (500.0, "500"),
                                         (1000.0, "1,000"), (20000.0, "20,000"), (0.3, "0.3")])
def test_tick_labels_are_plain_numbers(value, text):
    assert axes.number(value) == text


def test_a_wide_span_is_logarithmic_a_narrow_one_linear_from_zero():
    fig = draw.figure(2)
    wide, narrow = fig.subplots(1, 2)
    assert axes.values_axis(wide, [0.3, 0.5, 48.0]) is True
    assert wide.get_yscale() == "log" and wide.get_ylim()[0] < 0.3 < 48 < wide.get_ylim()[1]
    assert axes.values_axis(narrow, [3.0, 48.0]) is False
    assert narrow.get_yscale() == "linear" and narrow.get_ylim()[0] == 0
    assert axes.with_scale("rate (Mpps)", True) == "rate (Mpps, log scale)"
    assert axes.with_scale("rate", True) == "rate (log scale)"
    assert axes.with_scale("rate (Mpps)", False) == "rate (Mpps)"


def test_declutter_parts_labels_that_overlap():
    # the old CDF axis: 1-2-5 ticks over 4 decades in a narrow panel ("5001000")
    fig = draw.figure(1, width=3.0)
    ax = fig.subplots()
    ax.set_xscale("log")
    ax.set_xlim(20, 50_000)
    ax.xaxis.set_major_locator(axes.LogLocator(subs=(1, 2, 5)))
    ax.xaxis.set_major_formatter(axes.FuncFormatter(axes.number))
    assert axes.overlaps(fig)
    axes.declutter(fig)
    assert axes.overlaps(fig) == []
    assert len([t for t in ax.get_xticklabels() if t.get_text()]) >= 3   # still ticked


def test_declutter_turns_category_labels():
    fig = draw.figure(1, width=3.0)
    ax = fig.subplots()
    ax.bar(range(6), [1] * 6)
    ax.set_xticks(range(6), [f"snabb-wire api=dpdk {i}" for i in range(6)])
    assert axes.overlaps(fig)
    axes.declutter(fig)
    assert axes.overlaps(fig) == []
    assert {t.get_text() for t in ax.get_xticklabels()} == {f"snabb-wire api=dpdk {i}"
                                                           for i in range(6)}   # none dropped


@pytest.mark.parametrize("plot", [plots.rx_vs_offered, plots.throughput_vs_size,
                                  plots.scalability, plots.throughput_bars, plots.rtt_vs_size,
                                  plots.latency_cdf])
def test_no_plot_has_overlapping_tick_labels(tmp_path, saved, plot):
    plot(hostile_rows(), tmp_path / "x.png")
    [fig] = saved
    assert axes.overlaps(fig) == []


def test_value_axes_of_a_wide_run_are_logarithmic(tmp_path, saved):
    rows = hostile_rows()
    plots.throughput_vs_size(rows, tmp_path / "size.png")
    plots.rtt_vs_size(rows, tmp_path / "rtt.png")
    plots.rx_vs_offered(rows, tmp_path / "rx.png")
    size, rtt, rx = saved
    assert [ax.get_yscale() for ax in size.axes] == ["log", "log"]
    assert size.axes[0].get_ylabel() == "max received rate per pair (Mpps, log scale)"
    assert rtt.axes[0].get_yscale() == "log"
    # received vs sent: both axes log, so that received = sent stays the diagonal
    assert all(ax.get_xscale() == ax.get_yscale() == "log" for ax in rx.axes if ax.get_visible())


def test_latency_per_nf_on_a_wide_span(tmp_path, saved):
    points = [(n, 30.0 * (1 + n), 3000.0 * (1 + n)) for n in (1, 2, 3, 5)]
    slope = nfs.Slope({"switch": "ovs"}, "chain", "one_way", points, 30.0, 30.0, 3000.0, 3000.0,
                      [False, True, False, False])
    nf_plots.latency_vs_nfs([slope], tmp_path / "nfs.png")
    [fig] = saved
    ax = fig.axes[0]
    assert ax.get_yscale() == "log" and axes.overlaps(fig) == []
    # a fitted line is straight in µs: drawn through enough points to bend on a log axis
    fit = next(line for line in ax.get_lines() if line.get_label().startswith("p50"))
    assert len(fit.get_xdata()) > 2
    ys = fit.get_ydata()
    assert ys[0] == pytest.approx(30 + 30 * 1) and ys[-1] == pytest.approx(30 + 30 * 5)


def test_the_glance_chart_has_no_overlapping_labels(tmp_path, saved):
    found = [glance.Entry("throughput", 64, name, glance.stats.summarize([cap, cap * 1.01]),
                          None, 0.0, None, "split", None, "") for name, cap in CAPACITY.items()]
    glance_plot.chart(sorted(found, key=lambda e: -e.value.mean), tmp_path / "g.png")
    [fig] = saved
    assert axes.overlaps(fig) == []
    assert fig.axes[0].get_xscale() == "log"
    assert math.isclose(len(fig.axes[0].patches), len(CAPACITY))


def test_a_zero_on_a_log_axis_is_marked_on_its_floor(tmp_path, saved):
    """A point that received nothing (0 Mpps) beside memif's 48: the log scale
    would clip it out of sight; it is marked on the floor in its colour and the
    footnote says what the mark means."""
    rows = [dict(switch=switch, mode="throughput", api="dpdk", size=size, burst=32, pairs=1,
                 pair=0, point=f"{switch}{size}", rate=0.0, tx_pps=5e7, rx_pps=rx,
                 contended=switch == "ovs",      # hollow: its marker's edge is its colour
                 switch_facts=DATAPLANES[switch].stored())   # as rows_from_run makes them
            for switch, rx in (("memif", 48e6), ("veth", 3e5), ("ovs", 0.0))
            for size in (64, 1500)]
    plots.throughput_vs_size(rows, tmp_path / "size.png")
    [fig] = saved
    ax = fig.axes[0]
    assert ax.get_yscale() == "log"
    [zeros] = [line for line in ax.get_lines() if line.get_label() == axes.ZERO]
    floor = ax.get_ylim()[0]
    assert list(zeros.get_xdata()) == [64, 1500] and list(zeros.get_ydata()) == [floor, floor]
    ovs = next(line for line in ax.get_lines() if list(line.get_ydata()) == [0, 0])
    assert same_color(zeros.get_color(), OVS.colour)
    assert same_color(ovs.get_color(), OVS.colour)
    assert zeros.get_marker() == axes.ZERO_MARKERS["y"]
    assert any(draw.ZEROS in t.get_text().replace("\n", " ") for t in fig.texts)
    # where nothing is zero, no mark and no note
    plots.throughput_vs_size([r for r in rows if r["switch"] != "ovs"], tmp_path / "b.png")
    assert not axes.has_zeros(saved[1]) and not saved[1].texts


def test_the_glance_chart_writes_a_zero_on_the_log_axis_floor(tmp_path, saved):
    found = [glance.Entry("throughput", 64, name, glance.stats.summarize([rx]), None, 0.0, None,
                          "split", None, "", DATAPLANES[name].stored())
             for name, rx in (("memif", 48e6), ("veth", 3e5), ("ovs", 0.0))]
    glance_plot.chart(found, tmp_path / "g.png")
    [fig] = saved
    ax = fig.axes[0]
    assert ax.get_xscale() == "log"
    [zero] = [t for t in ax.texts if t.get_text().strip() == "0"]
    assert zero.get_position() == (ax.get_xlim()[0], 2)
    [mark] = [line for line in ax.get_lines() if line.get_label() == axes.ZERO]
    assert list(mark.get_ydata()) == [2] and mark.get_marker() == axes.ZERO_MARKERS["x"]
    assert same_color(mark.get_color(), OVS.colour)
    assert axes.overlaps(fig) == []
