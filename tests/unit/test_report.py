"""Plots and the HTML report, from rows shaped like a results query's.

The last test renders the report in headless Chromium (when installed) and
checks what a reader would see: no console errors, every image decoded, and a
screenshot that is not blank.
"""
from __future__ import annotations

import base64
import html.parser
import io
import math
import random
import re
import tomllib
from pathlib import Path

import pytest
from PIL import Image  # Pillow comes with matplotlib, a dependency in pyproject.toml

import headless
from cnfperf.experiments import stats
from cnfperf.report import html as report_html
from cnfperf.report import kinds as report_kinds
from cnfperf.report import plots
from cnfperf.report import rows as report_rows

CAPACITY = {"veth": 900_000, "bridge": 700_000, "testpmd": 4_000_000}


def throughput_rows(pairs=(1,), sizes=(64, 1500), rates=(250e3, 1e6, 2e6, 4e6), reps=2):
    """Per-pair rows of a sweep on devices that saturate at a known rate."""
    rng = random.Random(1)
    rows = []
    for switch, cap in CAPACITY.items():
        for size in sizes:
            for n in pairs:
                for rate in rates:
                    for rep in range(reps):
                        for pair in range(n):
                            rx = min(rate, cap / n) * rng.uniform(0.99, 1.0)
                            rows.append(dict(switch=switch, api="udp", mode="throughput",
                                             size=size, burst=32, pairs=n, pair=pair,
                                             rate=rate, rep=rep, tx_pps=rate, rx_pps=rx,
                                             point=f"{switch}-{size}-{n}-{rate}"))
    return rows


def engine_hist(center_ns, spread=0.2, n=4000, seed=0):
    rng = random.Random(seed)
    counts = {}
    for _ in range(n):
        v = int(rng.lognormvariate(math.log(center_ns), spread))
        width = 1 << max(0, v.bit_length() - 8)
        lo = v // width * width
        counts[(lo, lo + width - 1)] = counts.get((lo, lo + width - 1), 0) + 1
    return [[lo, hi, c] for (lo, hi), c in sorted(counts.items())]


def latency_rows(sizes=(64, 512, 1500), bursts=(4, 32, 128)):
    rows = []
    for i, switch in enumerate(("veth", "testpmd")):
        for size in sizes:
            for burst in bursts:
                center = (20_000 if switch == "veth" else 6_000) * (1 + size / 3000) * (1 + burst / 300)
                rows.append(dict(switch=switch, mode="latency", size=size, burst=burst, pairs=1,
                                 rate=1000, hist=engine_hist(center, seed=i * 100 + size + burst)))
    return rows


@pytest.fixture
def figures(monkeypatch):
    """Every Figure a plot function saves, to check its labels (the PNG is still written)."""
    saved = []
    original = plots.save

    def keep(fig, path):
        saved.append(fig)
        return original(fig, path)

    monkeypatch.setattr(plots, "save", keep)
    return saved


def png_size(path):
    data = Path(path).read_bytes()
    assert data.startswith(b"\x89PNG\r\n\x1a\n")
    with Image.open(io.BytesIO(data)) as im:
        return im.size


def series(ax, label):
    """The data line of a labelled curve (errorbar curves keep the label on their container)."""
    for c in ax.containers:
        if c.get_label() == label:
            return c.lines[0]
    return next(line for line in ax.get_lines() if line.get_label() == label)


def labels(fig):
    out = []
    for ax in fig.axes:
        if not ax.get_visible():
            continue
        legend = ax.get_legend()
        out.append(dict(x=ax.get_xlabel(), y=ax.get_ylabel(), title=ax.get_title(),
                        xscale=ax.get_xscale(),
                        legend=[t.get_text() for t in legend.get_texts()] if legend else []))
    return out


def test_pairs_are_summed_into_one_row_per_point_run():
    rows = [dict(switch="veth", size=64, burst=32, pairs=2, pair=p, rate=1e6, rep=0,
                 point="a", tx_pps=1e6, rx_pps=rx) for p, rx in ((0, 400e3), (1, 600e3))]
    [run] = report_rows.throughput_rows(rows)
    assert run["rx_pps"] == 1e6 and run["sent_pps"] == 2e6
    assert run["rx_pps_per_pair"] == 500e3
    assert "pair" not in run


def test_rows_from_a_stored_run():
    hist = engine_hist(10_000)
    run = {"id": "1a2b", "points": [
        {"id": 7, "idx": 0, "status": "done", "switch": "veth", "api": "raw", "mode": "throughput",
         "pairs": 2, "size": 64, "burst": 32, "rate": 1e6, "mmsg": 1, "touch": 0, "cpus": "0,1",
         "per_pair": [{"pair": 0, "tx_pps": 1e6, "rx_pps": 9e5, "loss_ratio": 0.1},
                      {"pair": 1, "tx_pps": 1e6, "rx_pps": 8e5, "loss_ratio": 0.2}]},
        {"id": 8, "idx": 1, "status": "failed", "switch": "veth", "per_pair": []},
        {"id": 9, "idx": 2, "status": "done", "switch": "veth", "mode": "latency", "pairs": 1,
         "size": 64, "burst": 4, "rate": 1000,
         "per_pair": [{"pair": 0, "rx_pps": 1000, "lat_p50_ns": 9000, "latency_histogram": hist}]},
    ]}
    rows = report_rows.rows_from_run(run)
    assert [(r["point"], r["pair"]) for r in rows] == [(7, 0), (7, 1), (9, 0)]
    assert rows[0]["mmsg"] is True and rows[0]["touch"] is False and rows[0]["cpus"] == "0,1"
    assert rows[2]["hist"] == hist and rows[2]["lat_p50_ns"] == 9000
    [point] = report_rows.throughput_rows(rows)
    assert point["rx_pps"] == pytest.approx(1.7e6) and point["rx_pps_per_pair"] == pytest.approx(8.5e5)


def test_a_swept_router_or_policer_setting_is_a_curve_of_its_own():
    """Points that differ in a router's routes (or a policer's placement) are
    not averaged into one curve or bar: each names its value."""
    def point(i, **kw):
        return {"id": i, "status": "done", "switch": "macvlan", "api": "raw", "mode": "throughput",
                "pairs": 1, "size": 64, "nfs": 1, "nf": "router", "policer": "none", **kw,
                "per_pair": [{"pair": 0, "tx_pps": 1e6, "rx_pps": 1e5 * i}]}
    rows = report_rows.rows_from_run({"points": [point(1, nf_routes=1), point(2, nf_routes=4096)]})
    assert [r["switch"] for r in rows] == ["macvlan 1×router nf_routes=1",
                                           "macvlan 1×router nf_routes=4096"]
    assert len(report_rows.throughput_rows(rows)) == 2


def test_rx_vs_offered(tmp_path, figures):
    path = plots.rx_vs_offered(throughput_rows(), tmp_path / "rx.png")
    w, h = png_size(path)
    assert w > 800 and h > 300
    panels = labels(figures[0])
    assert [p["title"] for p in panels] == ["64 B frames, burst 32", "1500 B frames, burst 32"]
    for p in panels:
        assert p["x"] == "sent rate (Mpps)" and p["y"] == "received rate (Mpps)"
        assert {"veth", "bridge", "testpmd", "received = sent"} <= set(p["legend"])
    # a saturated curve: the last point of veth sits at its capacity, not at the offered rate
    ax = figures[0].axes[0]
    veth = series(ax, "veth")
    assert max(veth.get_ydata()) == pytest.approx(0.9, rel=0.02)


def test_throughput_vs_size_mpps_and_gbps(tmp_path, figures):
    plots.throughput_vs_size(throughput_rows(sizes=(64, 256, 1500)), tmp_path / "size.png")
    left, right = labels(figures[0])
    assert left["y"] == "max received rate (Mpps)"               # 0.7 to 4 Mpps: linear
    assert right["y"] == "max received rate (Gbps, log scale)"  # 0.36 to 48 Gbps: log
    assert left["xscale"] == right["xscale"] == "log"
    assert left["x"] == "frame size (bytes, log scale)"
    ax_pps, ax_bps = figures[0].axes
    testpmd_pps = series(ax_pps, "testpmd")
    testpmd_bps = series(ax_bps, "testpmd")
    assert list(testpmd_pps.get_xdata()) == [64, 256, 1500]
    # the maximum over rates: 4 Mpps offered reaches the 4 Mpps capacity
    assert testpmd_pps.get_ydata()[0] == pytest.approx(4.0, rel=0.02)
    assert testpmd_bps.get_ydata()[-1] == pytest.approx(4e6 * 1500 * 8 / 1e9, rel=0.02)


def test_scalability_per_pair_and_total(tmp_path, figures):
    plots.scalability(throughput_rows(pairs=(1, 2, 4), rates=(4e6,), reps=1), tmp_path / "s.png")
    panels = labels(figures[0])
    # per pair: 0.175 (bridge, 4 pairs) to 4 Mpps, logarithmic; total: 0.7 to 4, linear
    assert [p["y"] for p in panels[:2]] == ["received rate per pair (Mpps, log scale)",
                                           "total received rate (Mpps)"]
    assert all(p["x"] == "pairs (sender/receiver)" for p in panels)
    per_pair, total = figures[0].axes[:2]
    veth_pp = series(per_pair, "veth")
    veth_total = series(total, "veth")
    assert list(veth_pp.get_xdata()) == [1, 2, 4]
    # the synthetic switch shares its capacity: total flat, per pair divided
    assert veth_total.get_ydata() == pytest.approx([0.9] * 3, rel=0.02)
    assert veth_pp.get_ydata() == pytest.approx([0.9, 0.45, 0.225], rel=0.02)


def test_rtt_vs_size_per_burst(tmp_path, figures):
    plots.rtt_vs_size(latency_rows(), tmp_path / "rtt.png")
    panels = labels(figures[0])
    assert [p["title"] for p in panels] == [f"Round-trip time vs frame size, burst {b}"
                                            for b in (4, 32, 128)]
    for p in panels:
        assert p["y"] == "round-trip time (µs)" and p["xscale"] == "log"
        assert {"veth", "testpmd", "p50", "p99"} <= set(p["legend"])


def test_rtt_from_stored_percentiles_without_histograms(tmp_path, figures):
    rows = [dict(switch="veth", mode="latency", size=s, burst=4, lat_p50_ns=10_000 + s,
                 lat_p99_ns=20_000 + s) for s in (64, 1500)]
    plots.rtt_vs_size(rows, tmp_path / "rtt.png")
    lines = figures[0].axes[0].get_lines()
    assert sorted(tuple(l.get_ydata()) for l in lines) == [(10.064, 11.5), (20.064, 21.5)]


def test_latency_cdf(tmp_path, figures):
    rows = latency_rows(sizes=(64,), bursts=(4,))
    plots.latency_cdf(rows + rows, tmp_path / "cdf.png")          # repetitions merge
    [panel] = labels(figures[0])
    assert panel["x"] == "round-trip time (µs, log scale)"
    assert panel["y"] == "fraction of packets ≤ RTT"
    assert set(panel["legend"]) == {"veth", "testpmd"}
    veth = series(figures[0].axes[0], "veth")
    ys = veth.get_ydata()
    assert ys[0] == 0 and ys[-1] == 1
    # the median of the curve is the histogram's median
    merged = stats.merge_histograms([rows[0]["hist"]] * 2)
    xs = veth.get_xdata()
    median_x = xs[next(i for i, y in enumerate(ys) if y >= 0.5)]
    assert median_x * 1e3 == pytest.approx(stats.percentile(merged, 50), rel=0.01)


def test_latency_cdf_limits_panels(tmp_path, figures):
    plots.latency_cdf(latency_rows(sizes=(64, 128, 256, 512, 1500), bursts=(4, 32)),
                      tmp_path / "cdf.png")
    assert [p["title"] for p in labels(figures[0])] == [
        "Round-trip time distribution, 64 B frames, burst 4",
        "Round-trip time distribution, 1500 B frames, burst 4"]


def test_throughput_bars_for_socket_techniques(tmp_path, figures):
    rows = [dict(switch="bridge", mode="throughput", api=api, mmsg=mmsg, size=64, burst=64,
                 pairs=1, rate=1e6, tx_pps=1e6, rx_pps=kpps * 1e3)
            for api, mmsg, kpps in (("udp", False, 338), ("udp", True, 409),
                                    ("raw", False, 360), ("raw", True, 440))]
    plots.throughput_bars(rows, tmp_path / "bars.png")
    ax = figures[0].axes[0]
    assert ax.get_ylabel() == "max received rate (kpps)"
    ticks = [t.get_text() for t in ax.get_xticklabels()]
    assert "bridge\napi=raw\nmmsg=yes" in ticks and len(ticks) == 4
    heights = sorted(p.get_height() for p in ax.patches)
    assert heights == pytest.approx([338, 360, 409, 440])


@pytest.mark.parametrize("plot", [plots.rx_vs_offered, plots.throughput_vs_size,
                                  plots.scalability, plots.throughput_bars])
def test_throughput_plots_with_missing_fields(tmp_path, plot):
    # rows of older runs may lack a field others have: None must sort with the rest
    rows = throughput_rows(pairs=(1, 2), rates=(1e6, 4e6), reps=1)
    for r in rows[::3]:
        r["api"] = None
    assert png_size(plot(rows, tmp_path / "x.png"))


@pytest.mark.parametrize("plot", [plots.rx_vs_offered, plots.throughput_vs_size,
                                  plots.scalability, plots.throughput_bars])
def test_throughput_plots_without_data(tmp_path, plot):
    with pytest.raises(plots.NoData):
        plot(latency_rows(), tmp_path / "x.png")
    assert not (tmp_path / "x.png").exists()


@pytest.mark.parametrize("plot", [plots.rtt_vs_size, plots.latency_cdf])
def test_latency_plots_without_data(tmp_path, plot):
    with pytest.raises(plots.NoData):
        plot(throughput_rows(), tmp_path / "x.png")


def test_make_all_picks_plots_the_data_supports(tmp_path):
    made = plots.make_all(throughput_rows(pairs=(1, 2)) + latency_rows(), tmp_path)
    assert [p.name for p in made] == ["rx_vs_offered", "throughput_vs_size", "scalability",
                                      "rtt_vs_size", "latency_cdf"]
    for p in made:
        assert Path(p.path) == tmp_path / f"{p.name}.png" and png_size(p.path)
    single = plots.make_all([r for r in throughput_rows(sizes=(64,), rates=(4e6,))], tmp_path / "b")
    assert [p.name for p in single] == ["throughput_bars"]
    assert plots.make_all([], tmp_path / "c") == []


def test_make_named_plots_for_a_study(tmp_path):
    rows = throughput_rows(pairs=(1, 2)) + latency_rows()
    made = plots.make(rows, tmp_path, ["scalability", "latency_cdf", "rx_vs_offered"])
    assert [p.name for p in made] == ["scalability", "latency_cdf", "rx_vs_offered"]
    assert [p.name for p in plots.make(latency_rows(), tmp_path, ["scalability", "rtt_vs_size"])] \
        == ["rtt_vs_size"]
    with pytest.raises(ValueError, match="plots: unknown pie"):
        plots.make(rows, tmp_path, ["pie"])


def test_every_study_asks_for_known_plots():
    studies = sorted((Path(__file__).resolve().parents[2] / "studies").glob("*.toml"))
    assert studies
    for path in studies:
        names = tomllib.loads(path.read_text())["study"]["plots"]
        assert names and set(names) <= set(plots.PLOTS), path.name


# --- HTML ---------------------------------------------------------------------

class _Checker(html.parser.HTMLParser):
    """Collects tags, checks nesting, and records every external reference."""

    VOID = {"meta", "img", "br", "hr", "link", "input"}

    def __init__(self):
        super().__init__()
        self.stack, self.errors, self.refs, self.tags = [], [], [], []

    def handle_starttag(self, tag, attrs):
        self.tags.append(tag)
        for name, value in attrs:
            if name in ("src", "href") and value:
                self.refs.append(value)
        if tag not in self.VOID:
            self.stack.append(tag)

    def handle_endtag(self, tag):
        if not self.stack or self.stack[-1] != tag:
            self.errors.append(f"</{tag}> closes {self.stack[-1:] or 'nothing'}")
        else:
            self.stack.pop()


def build_report(tmp_path):
    made = plots.make_all(throughput_rows(pairs=(1, 2)) + latency_rows(), tmp_path / "png")
    figures = [report_html.Figure(p.title, p.path, "synthetic data") for p in made]
    table = report_html.Table("Points", ["switch", "size", "rx kpps", "loss %", "note"],
                              [["veth", 64, 912.3456, 0.0, None],
                               ["<b>bridge</b>", 1500, 1234567.0, 0.125, True]],
                              note="rates are means of 2 repetitions")
    path = report_html.write(tmp_path / "report.html", "Run 1a2b: <shoot-out>",
                             figures=figures, tables=[table],
                             params={"switch": "veth,bridge", "duration": 1.0},
                             host={"kernel": "6.1", "cpus": 2}, summary="5 points")
    return Path(path), made


def test_report_is_self_contained_and_well_formed(tmp_path):
    path, made = build_report(tmp_path)
    text = path.read_text()
    checker = _Checker()
    checker.feed(text)
    checker.close()
    assert not checker.errors and checker.stack == []
    assert "script" not in checker.tags
    assert not re.search(r"https?://|//cdn|@import|url\(", text)
    images = [r for r in checker.refs if r.startswith("data:")]
    assert len(images) == len(made) == 5
    assert all(r.startswith("#") for r in checker.refs if not r.startswith("data:"))
    for ref, plot in zip(images, made):
        assert base64.b64decode(ref.split(",", 1)[1]) == Path(plot.path).read_bytes()


def test_report_escapes_and_formats(tmp_path):
    text, _ = build_report(tmp_path)
    text = text.read_text()
    assert "&lt;b&gt;bridge&lt;/b&gt;" in text and "<b>bridge" not in text
    assert "<title>Run 1a2b: &lt;shoot-out&gt;</title>" in text
    assert '<td class="num">912.3</td>' in text
    assert '<td class="num">1,234,567</td>' in text
    assert "<td>–</td>" in text and "<td>yes</td>" in text
    assert "How to read this" in text and "NDR / PDR" in text
    assert "<dd>veth,bridge</dd>" in text and "<dt>kernel</dt>" in text


def test_embedding_a_non_png_is_refused(tmp_path):
    bad = tmp_path / "x.png"
    bad.write_text("not an image")
    with pytest.raises(ValueError, match="not a PNG"):
        report_html.embed_png(bad)


@pytest.mark.parametrize("value, text", [(None, "–"), (0.0, "0"), (3.0, "3"), (0.00123, "0.00123"),
                                         (12.3456, "12.35"), (12345.6, "12,346"), (7, "7"),
                                         (True, "yes"), ("x", "x"), (float("nan"), "–")])
def test_cell_format(value, text):
    assert report_html.fmt(value) == text


# --- round trips and one-way times: never one axis -------------------------------

def both_kinds(sizes=(64, 1500), bursts=(1,)):
    """Latency rows as a shoot-out stores them: veth's split tester times round
    trips, testpmd's single tester one way."""
    rows = []
    for row in latency_rows(sizes, bursts):
        single = row["switch"] == "testpmd"
        rows.append({**row, "tester": "single" if single else "split",
                     "latency_kind": "one_way" if single else "rtt"})
    return rows


def test_rtt_vs_size_gives_each_kind_its_own_axes(tmp_path, figures):
    plots.rtt_vs_size(both_kinds(bursts=(1, 32)), tmp_path / "rtt.png")
    panels = labels(figures[0])
    assert [(p["title"], p["y"]) for p in panels] == [
        ("Round-trip time vs frame size, burst 1", "round-trip time (µs)"),
        ("Round-trip time vs frame size, burst 32", "round-trip time (µs)"),
        ("One-way latency vs frame size, burst 1", "one-way latency (µs)"),
        ("One-way latency vs frame size, burst 32", "one-way latency (µs)")]
    # a row of panels per kind
    assert [ax.get_subplotspec().rowspan.start for ax in figures[0].axes] == [0, 0, 1, 1]
    curves = [{t for t in p["legend"] if t not in ("p50", "p99")} for p in panels]
    assert curves == [{"veth"}, {"veth"}, {"testpmd"}, {"testpmd"}]
    assert not any("round trip or one way" in p["y"] for p in panels)


def test_latency_cdf_gives_each_kind_its_own_axes(tmp_path, figures):
    plots.latency_cdf(both_kinds(sizes=(64,)), tmp_path / "cdf.png")
    panels = labels(figures[0])
    assert [(p["title"], p["x"], p["y"], p["legend"]) for p in panels] == [
        ("Round-trip time distribution, 64 B frames, burst 1",
         "round-trip time (µs, log scale)", "fraction of packets ≤ RTT", ["veth"]),
        ("One-way latency distribution, 64 B frames, burst 1",
         "one-way latency (µs, log scale)", "fraction of packets ≤ one-way latency",
         ["testpmd"])]


def test_a_row_without_its_kind_is_its_testers():
    assert report_kinds.of({"tester": "single"}) == "one_way"
    assert report_kinds.of({"tester": "split"}) == "rtt"
    assert report_kinds.of({"tester": "single", "latency_kind": "rtt"}) == "rtt"


def test_vs_quota_draws_each_kind_in_a_subplot_of_its_own(tmp_path, figures):
    rows = []
    for row in both_kinds(sizes=(64,)):
        for quota in (25, 50, 100):
            rows.append({**row, "switch_quota": quota})
    rows += [dict(switch="veth", mode="throughput", size=64, burst=32, pairs=1, rate=0,
                  rx_pps=1e5 * q / 100, tx_pps=1e5, switch_quota=q) for q in (25, 50, 100)]
    plots.vs_quota(rows, tmp_path / "quota.png")
    panels = labels(figures[0])
    assert [(p["title"], p["y"]) for p in panels] == [
        ("Throughput vs CPU quota", "received rate per pair (Mpps)"),
        ("Round-trip time vs CPU quota", "round-trip time (µs)"),
        ("One-way latency vs CPU quota", "one-way latency (µs)")]
    assert {t.split()[0] for t in panels[1]["legend"]} == {"veth"}
    assert {t.split()[0] for t in panels[2]["legend"]} == {"testpmd"}


def test_text_tables_say_each_latencys_kind():
    from cnfperf.report import summary, tables
    run = stored_shootout()
    for p in run["points"]:   # OVS's single tester times its latency points one way
        if p["switch"] == "ovs" and p["mode"] == "latency":
            p["latency_kind"] = "one_way"
        for pair in p["per_pair"]:
            pair.update(latency_kind=p["latency_kind"], offered_pps=pair["tx_pps"])
    lines = tables.run_table(run).splitlines()
    head = lines[0].split()
    assert head[head.index("Mbit/s") + 1:] == ["latency", "p50", "µs", "p99", "µs", "max", "µs"]
    said = {(line.split()[0], line.split()[2]): line for line in lines[2:] if line.strip()}
    assert "round trip" in said[("veth", "latency")]
    assert "one way" in said[("ovs", "latency")] and "round trip" not in said[("ovs", "latency")]
    assert "one way" in said[("veth", "throughput")]
    _, headers, rows = summary.latency(run)
    kinds_said = {(r[0].split()[0], r[headers.index("kind")]) for r in rows}
    assert ("ovs", "one way") in kinds_said and ("veth", "round trip") in kinds_said


# --- headless Chromium ----------------------------------------------------------

@pytest.mark.needs("chromium-headless-shell")
def test_report_renders_in_headless_chromium(tmp_path):
    path, made = build_report(tmp_path)
    page = headless.render(path)
    assert page.errors == []
    assert page.title == "Run 1a2b: <shoot-out>"
    assert len(page.images) == len(made)
    for complete, width, height in page.images:
        assert complete and width > 300 and height > 200
    (tmp_path / "screenshot.png").write_bytes(page.screenshot)
    with Image.open(io.BytesIO(page.screenshot)) as im:
        assert im.size[0] >= 1200 and im.size[1] > 2000          # the whole page, plots included
        colours = im.convert("RGB").resize((64, 256)).getcolors(64 * 256)
        assert colours and len(colours) > 50                     # not a blank page


def stored_shootout():
    """A shoot-out as the store returns it: three data planes, two sizes, two
    repetitions, throughput and latency; OVS with more busy pollers than cores."""
    points = []
    for switch, capacity, center in (("veth", 3e5, 30_000), ("memif", 40e6, 20_000),
                                     ("ovs", 2e4, 9_000_000)):
        for size in (64, 1500):
            for mode in ("throughput", "latency"):
                for rep in (0, 1):
                    rx = capacity * (1 - rep / 50) if mode == "throughput" else 1000.0
                    hist = engine_hist(center * (1 + size / 3000), seed=len(points))
                    lat = {"lat_p50_ns": stats.percentile(hist, 50),
                           "lat_p99_ns": stats.percentile(hist, 99)}
                    points.append({
                        "idx": len(points), "status": "done", "switch": switch, "api": "dpdk",
                        "mode": mode, "pairs": 1, "size": size, "burst": 32, "rep": rep,
                        "grp": f"{switch}{size}{mode}", "rate": 0.0 if mode == "throughput" else 1000.0,
                        "tester": "single" if switch == "ovs" else "split",
                        "tester_why": "auto: the split tester's 3 busy pollers would share 2 cores"
                        if switch == "ovs" else "auto: 2 busy pollers on 2 cores",
                        "pollers": 3 if switch == "ovs" else 2, "point_cores": 2,
                        "rx_pps": rx, "loss_ratio": 0.0,
                        "latency_kind": "rtt" if mode == "latency" and switch != "ovs"
                        else "one_way", **lat,
                        "per_pair": [{"pair": 0, "tx_pps": rx, "rx_pps": rx, "sent": 1000,
                                      "received": 1000, "loss_ratio": 0.0, "rx_bps": rx * size * 8,
                                      "latency_histogram": hist, **lat}]})
    return {"id": "5h0t", "started": 0, "status": "done", "planned": len(points),
            "points": points, "spec": {"doc": {"study": {
                "title": "Data-plane shoot-out",
                "plots": ["throughput_vs_size", "rtt_vs_size", "latency_cdf"]}}}}


@pytest.mark.needs("chromium-headless-shell")
def test_a_run_report_reads_in_headless_chromium(tmp_path):
    from cnfperf.report import build
    path = build.write(stored_shootout(), tmp_path / "report")
    page = headless.render(path)
    assert page.errors == []
    pngs = sorted(p.name for p in path.parent.glob("*.png"))
    assert pngs == ["at_a_glance.png", "latency_cdf.png", "rtt_vs_size.png",
                    "throughput_vs_size.png"]
    assert len(page.images) == len(pngs)
    for complete, width, height in page.images:
        assert complete and width > 300 and height > 200
    ids = [section for section, _, _ in page.sections]
    assert ids == ["at-a-glance", "plots", "tables", "parameters", "host", "how-to-read-this"]
    for section, present, height in page.sections:
        assert present and height > 0, section
    (tmp_path / "screenshot.png").write_bytes(page.screenshot)
    with Image.open(io.BytesIO(page.screenshot)) as im:
        assert im.size[0] >= 1200 and im.size[1] > 3000
        assert len(im.convert("RGB").resize((64, 256)).getcolors(64 * 256) or []) > 50


def test_report_says_what_a_study_left_out(tmp_path):
    from cnfperf.report import build
    run = {"id": "1a2b", "started": 0, "status": "done", "planned": 1, "points": [],
           "spec": {"skipped": ["skipped testpmd: dpdk-testpmd not found (Debian package dpdk-dev)"]}}
    page = build.write(run, tmp_path).read_text()
    assert "left out" in page and "testpmd: dpdk-testpmd not found (Debian package dpdk-dev)" in page


def test_report_gives_the_images_and_their_sizes(tmp_path):
    from cnfperf.report import build, summary
    points = [{"idx": 0, "status": "done", "switch": "veth", "image_name": "busybox+engine+dpdk",
               "image_size": 41_234_567, "nf_image_name": "engine-static",
               "nf_image_size": 1_534_000},
              {"idx": 1, "status": "done", "switch": "veth", "image_name": "busybox+engine+dpdk",
               "image_size": 41_234_567, "nf_image_name": None, "nf_image_size": None},
              {"idx": 2, "status": "failed", "switch": "veth", "image_name": "host",
               "image_size": 0}]
    run = {"id": "1a2b", "started": 0, "status": "done", "planned": 3, "points": points}
    said = ("tester ends: busybox+engine+dpdk 41.2 MB, host binaries (no image); "
            "network functions: engine-static 1.5 MB")
    assert summary.images(run) == said
    assert summary.images({"points": [{"idx": 0}]}) is None
    page = build.write(run, tmp_path).read_text()
    assert "<dt>images</dt>" in page and "engine-static 1.5 MB" in page


def test_paths_with_network_functions_are_curves_of_their_own():
    from cnfperf.report.rows import rows_from_run
    pair = {"pair": 0, "rx_pps": 1.0}
    points = [{"switch": "ovs", "nfs": n, "nf": "l2", "tester": "single", "poll": "busy",
               "mode": "throughput", "per_pair": [pair]} for n in (0, 1, 3)]
    points.append({"switch": "memif", "nfs": 1, "nf": "l2", "tester": "single", "poll": "busy",
                   "mode": "throughput", "per_pair": [pair]})
    assert [r["switch"] for r in rows_from_run({"points": points})] == \
        ["ovs no NF single", "ovs 1×l2 single", "ovs 3×l2 single", "memif 1×l2 single"]
    plain = [{"switch": "veth", "nfs": 0, "nf": "l2", "tester": "split", "poll": "busy",
              "per_pair": [pair]}]
    assert [r["switch"] for r in rows_from_run({"points": plain})] == ["veth"]
