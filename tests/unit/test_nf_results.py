"""Network functions in the results: stored and read back (and forgotten by
--resume), CPU-bound nodes, and what the report and the CSV say of them: where
frames were lost along a path, the latency each NF adds, their startup."""
from __future__ import annotations

import csv
import io
import json
import sqlite3
from dataclasses import asdict

import pytest

from cnfperf.dataplanes import DATAPLANES
from cnfperf.dataplanes.base import PortCounters
from cnfperf import nfs as nf_kinds
from cnfperf.plan import place
from cnfperf.report import build, export, nfs, summary
from cnfperf.report.tables import summary_table
from cnfperf.results import model
from cnfperf.results.store import SCHEMA_VERSION, Store
from harness import migrated_run, scenarios

RUN = "1a2b"
WARMUP = 1_000


def _poll(polls: int, empty: int) -> dict:
    return {"mode": "busy", "polls": polls, "empty_polls": empty, "sleeps": 0, "slept_s": 0.0,
            "late_ns_mean": None, "waits": 0, "waited_s": 0.0}


def _end(pair: int, name: str, role: str, tx: int = 0, rx: int = 0, warmup: int = WARMUP,
         poll: dict | None = None, p50_ns: int | None = None,
         warmup_tx: int | None = None) -> model.EndpointMetrics:
    s = {"type": "summary", "role": role, "duration_s": 1.0, "tx_packets": tx, "rx_packets": rx,
         "warmup_packets": warmup, "poll": poll or _poll(0, 0)}
    if warmup_tx is not None:
        s["warmup_tx_packets"] = warmup_tx
    if p50_ns:
        s["latency"] = {"kind": "one_way", "count": rx, "min_ns": p50_ns, "mean_ns": p50_ns,
                        "p50_ns": p50_ns, "p90_ns": 2 * p50_ns, "p99_ns": 3 * p50_ns,
                        "p999_ns": 3 * p50_ns, "p9999_ns": 3 * p50_ns, "max_ns": 3 * p50_ns,
                        "histogram": [[p50_ns, p50_ns, rx]]}
    return model.endpoint_metrics(pair, name, role, 0, s)


def _nf(name: str, index: int, rx: int, tx: int, no_route: int = 0, refused: int = 0,
        polls: int = 1000, empty: int = 500) -> tuple[model.NFResult, model.EndpointMetrics]:
    summary_ = {"type": "summary", "role": "nf", "nf": "l3", "tx_packets": tx, "rx_packets": rx,
                "first_tx_wall_ns": 2_500_000_000, "poll": _poll(polls, empty),
                "ports": [{"port": 1, "rx_packets": rx, "tx_packets": 0, "tx_refused": 0,
                           "dropped": {"other": 0, "bad": 0, "no_route": no_route, "ttl": 0}},
                          {"port": 2, "rx_packets": 0, "tx_packets": tx, "tx_refused": refused,
                           "dropped": {"other": 0, "bad": 0, "no_route": 0, "ttl": 0}}]}
    result = model.nf_result(name, 0, index, 2 + index, summary_, create_s=0.25 * (index + 1),
                             started_ns=2_000_000_000, ready={"wall_ns": 2_100_000_000})
    return result, model.endpoint_metrics(0, name, "nf", 2 + index, summary_)


def chain(recv_poll: dict | None = None, p50_ns: int = 20_000) -> tuple:
    """A bridge chain of two l3 NFs: 10,000 frames measured after 1,000 warm-up ones;
    the bridge drops 10 on their way to the first NF, which has no route for 1,000."""
    [s] = scenarios(None, {"switch": "bridge", "api": "raw", "nfs": 2, "nf": "l3"})
    point = place(s, RUN, host_cpus=(0, 1, 2, 3), joins="switch", nf=nf_kinds.find(s.nf))
    pair = point.pairs[0]
    sender = _end(0, pair.sender.name, "send", tx=10_000)
    receiver = _end(0, pair.receiver.name, "recv", rx=8_990, poll=recv_poll or _poll(100, 40),
                    p50_ns=p50_ns)
    nf1, m1 = _nf(pair.nfs[0].name, 0, rx=10_990, tx=9_990, no_route=1_000, polls=1000,
                  empty=50)                                     # busy 0.95: CPU-bound
    nf2, m2 = _nf(pair.nfs[1].name, 1, rx=9_990, tx=9_990, polls=1000, empty=51)
    a, b = pair.nfs[0].ports, pair.nfs[1].ports
    counters = {f"{pair.sender.name}h": PortCounters(rx_packets=11_000),
                f"{a[0].name}h": PortCounters(tx_packets=10_990, tx_dropped=10),
                f"{a[1].name}h": PortCounters(rx_packets=9_990),
                f"{b[0].name}h": PortCounters(tx_packets=9_990),
                f"{b[1].name}h": PortCounters(rx_packets=9_990),
                f"{pair.receiver.name}h": PortCounters(tx_packets=9_990)}
    pairs = [model.pair_result(0, sender, receiver, "throughput")]
    result = model.PointResult(pairs=pairs, total=model.total(pairs),
                               endpoints=[sender, receiver, m1, m2], counters=counters,
                               nfs=[nf1, nf2])
    return point, result


def store_point(store: Store, point, result, idx: int = 0, status: str = "done",
                **params) -> int:
    return store.add_point(RUN, idx, {**point.scenario.model_dump(), **params}, status=status,
                           started=1.0, result=result,
                           placement=[asdict(p) for p in point.pairs], shape=point.shape,
                           key=f"k{idx}", rep=0,
                           # as the runner stores them (runner._record)
                           switch_facts=DATAPLANES[point.scenario.switch].stored(),
                           nf_facts=nf_kinds.kind(point.scenario.nf).stored()
                           if point.scenario.nfs else None)


def stored_run(tmp_path, *points) -> dict:
    """A run of (point, result, params) stored and read back, as reports see it."""
    store = Store(tmp_path)
    store.begin_run(RUN, ["cnfperf", "run"], len(points), tmp_path / "runs" / RUN, {}, "0")
    for i, (point, result, params) in enumerate(points):
        store_point(store, point, result, idx=i, **params)
    store.finish_run(RUN, "done")
    run = store.run(RUN)
    store.close()
    return run


# --- the store ---------------------------------------------------------------

def test_nfs_shape_and_cpu_bound_nodes_are_stored_and_read_back(tmp_path):
    point, result = chain()
    [stored] = stored_run(tmp_path, (point, result, {}))["points"]
    assert stored["shape"] == "chain" and stored["nfs"] == 2
    first, second = point.pairs[0].nfs
    assert stored["cpu_bound"] == first.name            # 950 of 1,000 polls found frames
    one, two = stored["nf_results"]
    assert (one["name"], one["pair"], one["idx"], one["kind"], one["cpu"]) == \
        (first.name, 0, 0, "l3", 2)
    assert one["ready_s"] == pytest.approx(0.35) and one["first_tx_s"] == pytest.approx(0.75)
    assert (one["polls"], one["empty_polls"]) == (1000, 50) and two["name"] == second.name
    assert one["ports"] == [
        {"port": 1, "rx_packets": 10_990, "tx_packets": 0, "tx_refused": 0, "dropped_other": 0,
         "dropped_bad": 0, "dropped_no_route": 1_000, "dropped_ttl": 0, "dropped_policer": 0,
         "dropped_shaper": 0, "delayed": 0},
        {"port": 2, "rx_packets": 0, "tx_packets": 9_990, "tx_refused": 0, "dropped_other": 0,
         "dropped_bad": 0, "dropped_no_route": 0, "dropped_ttl": 0, "dropped_policer": 0,
         "dropped_shaper": 0, "delayed": 0}]
    # the NFs' summaries are still metrics rows of role nf
    assert sorted(e["role"] for e in stored["endpoints"]) == ["nf", "nf", "recv", "send"]


def test_a_point_without_nfs_has_none(tmp_path):
    [s] = scenarios(None, {"switch": "veth"})
    point = place(s, RUN, host_cpus=(0, 1), joins="link", nf=nf_kinds.find(s.nf))
    pair = point.pairs[0]
    ends = [_end(0, pair.sender.name, "send", tx=10), _end(0, pair.receiver.name, "recv", rx=10)]
    pairs = [model.pair_result(0, *ends, "throughput")]
    result = model.PointResult(pairs=pairs, total=model.total(pairs), endpoints=ends, counters={})
    [stored] = stored_run(tmp_path, (point, result, {}))["points"]
    assert stored["nf_results"] == [] and stored["shape"] == "pair" and stored["cpu_bound"] == ""


def test_an_old_database_gains_the_nf_tables_and_columns(tmp_path):
    run = migrated_run(tmp_path, 4, "INSERT INTO points (run_id, idx, status, switch, mode, "
                       "scenario) VALUES ('beef', 0, 'done', 'veth', 'throughput', "
                       "'{\"mode\": \"throughput\"}')")
    assert SCHEMA_VERSION >= 6   # later versions keep these tables
    [point] = run["points"]
    assert point["nf_results"] == [] and point["shape"] is None and point["cpu_bound"] is None
    db = sqlite3.connect(tmp_path / "cnfperf.db")
    tables = {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    assert {"nf_results", "nf_ports"} <= tables
    # an old point in the report: its path without a shape, CPU-bound unknown
    title, headers, rows = summary.points(run)
    assert rows[0][2:4] == ["send → recv", "–"]
    assert nfs.all_tables(run) == []


def test_resume_forgets_the_nfs_of_points_that_did_not_finish(tmp_path):
    point, result = chain()
    store = Store(tmp_path)
    store.begin_run(RUN, ["cnfperf", "run"], 2, tmp_path / "runs" / RUN, {}, "0")
    store_point(store, point, result, idx=0)
    store_point(store, point, result, idx=1, status="interrupted")

    def count(table: str) -> int:
        return store.db.execute(f"SELECT count(*) FROM {table}").fetchone()[0]
    assert (count("nf_results"), count("nf_ports")) == (4, 8)
    store.resume_run(RUN, 2)
    assert (count("nf_results"), count("nf_ports")) == (2, 4)
    assert [p["idx"] for p in store.run(RUN)["points"]] == [0]
    store.close()


# --- CPU-bound -------------------------------------------------------------------

@pytest.mark.parametrize("polls, empty, bound", [(1000, 50, True), (1000, 0, True),
                                                 (1000, 51, False), (20388, 9022, False),
                                                 (0, 0, False)])
def test_a_node_is_cpu_bound_when_nearly_every_poll_found_frames(polls, empty, bound):
    end = _end(0, "cnfp1a2bp0r", "recv", poll=_poll(polls, empty))
    result = model.PointResult(pairs=[], total=model.total([]), endpoints=[end], counters={})
    assert result.cpu_bound() == (["cnfp1a2bp0r"] if bound else [])
    assert model.busy_ratio(_poll(polls, empty)) == (1 - empty / polls if polls else None)


def test_cpu_bound_counts_every_engine_and_nfs_known_only_by_their_result():
    sender = _end(0, "cnfp1a2bp0s", "send", tx=5, poll=_poll(0, 0))     # a sender never polls
    client = _end(1, "cnfp1a2bp1s", "client", tx=5, poll=_poll(100, 1))
    nf, _ = _nf("cnfp1a2bn000", 0, rx=1, tx=1, polls=100, empty=2)
    result = model.PointResult(pairs=[], total=model.total([]), endpoints=[sender, client],
                               counters={}, nfs=[nf])
    assert result.cpu_bound() == ["cnfp1a2bp1s", "cnfp1a2bn000"]


def test_the_report_names_the_cpu_bound_nodes_beside_the_path(tmp_path):
    point, result = chain()
    run = stored_run(tmp_path, (point, result, {}))
    title, headers, rows = summary.points(run)
    assert headers[:4] == ["point", "rep", "path", "CPU-bound"]
    assert rows[0][2:4] == ["send → 2 × l3 (chain) → recv", "n000 (nf 1)"]
    assert "NF image MB" not in headers


def test_the_nf_image_size_shows_beside_the_image_size_once_stored(tmp_path):
    point, result = chain()
    run = stored_run(tmp_path, (point, result, {}))
    run["points"][0].update(image_size=5_000_000, nf_image_size=2_500_000)
    title, headers, rows = summary.points(run)
    assert headers[-2:] == ["image MB", "NF image MB"] and rows[0][-2:] == [5.0, 2.5]


# --- loss along the path -----------------------------------------------------------

def _by_name(hops):
    return {h.name: h for h in hops}


def test_loss_is_pinned_to_the_link_and_the_nf_where_it_happened(tmp_path):
    point, result = chain()
    [stored] = stored_run(tmp_path, (point, result, {}))["points"]
    hops = nfs.hops(stored, 0)
    assert [h.what for h in hops] == ["send", "link", "nf", "link", "nf", "link", "recv", "total"]
    h = _by_name(hops)
    assert h["p0s (send)"].tx == 11_000                        # measured + warm-up frames
    link = h["link → nf 1"]
    assert (link.rx, link.tx, link.lost) == (11_000, 10_990, 10)
    assert link.why == ["in the data plane 10", "its drop counters 10"]
    nf1 = h["nf 1 of 2: l3 n000"]
    assert (nf1.rx, nf1.tx, nf1.lost, nf1.why) == (10_990, 9_990, 1_000, ["no_route 1,000"])
    assert h["link → nf 2"].lost == 0 and h["nf 2 of 2: l3 n001"].lost == 0
    assert h["link → receiver"].lost == 0 and h["p0r (recv)"].rx == 9_990
    total = hops[-1]
    assert (total.rx, total.tx, total.lost) == (11_000, 9_990, 1_010)
    assert total.why == ["link → nf 1: 10 (in the data plane 10, its drop counters 10)",
                         "nf 1 of 2: l3 n000: 1,000 (no_route 1,000)"]


def test_a_count_the_switch_does_not_keep_is_stored_null_and_shown_unknown(tmp_path):
    """A switch port's unknown count (OVS's `?`) is NULL in the store and ? in
    the loss table, never 0: an unknown drop counter does not read as none."""
    point, result = chain()
    pair = point.pairs[0]
    first = pair.nfs[0].ports[0].name
    result.counters[f"{first}h"] = PortCounters(tx_packets=None, tx_dropped=None)
    run = stored_run(tmp_path, (point, result, {}))
    [stored] = run["points"]
    assert stored["counters"][f"{first}h"] == {"rx_packets": 0, "tx_packets": None,
                                               "rx_dropped": 0, "tx_dropped": None}
    with sqlite3.connect(tmp_path / "cnfperf.db") as db:
        assert db.execute("SELECT count(*) FROM counters WHERE tx_dropped IS NULL").fetchone() \
            == (1,)
    link = _by_name(nfs.hops(stored, 0))["link → nf 1"]
    assert (link.rx, link.tx, link.lost, link.unknown) == (11_000, None, 10, ("tx",))
    assert link.why == ["a drop counter unknown (?)"]     # no "in the data plane" from a guess
    _, _, rows = nfs.loss_localisation(run)
    assert rows[1][3:7] == ["link → nf 1", 11_000, "?", 10]
    assert [row[4:7] for row in rows if row[3] == "p0s (send)"] == [[None, 11_000, None]]


def test_loss_in_a_link_without_switch_counters_and_refused_frames(tmp_path):
    point, result = chain()
    result.counters = {}                             # a pipeline's links count nothing
    result.nfs[1].ports[1].tx_refused = 7            # the second NF's egress ring was full
    result.nfs[1].ports[1].tx_packets -= 7
    [stored] = stored_run(tmp_path, (point, result, {}))["points"]
    h = _by_name(nfs.hops(stored, 0))
    assert (h["link → nf 1"].rx, h["link → nf 1"].lost, h["link → nf 1"].why) == (None, 10, [])
    assert (h["nf 2 of 2: l3 n001"].lost, h["nf 2 of 2: l3 n001"].why) == (7, ["tx_refused 7"])
    assert h["link → receiver"].lost == -7           # the receiver got what the NF forwarded


def test_a_tester_s_links_compare_by_what_its_warmup_sent_and_received(tmp_path):
    point, result = chain()
    tester = _end(0, point.pairs[0].sender.name, "tester", tx=10_000, rx=8_990, warmup_tx=1_000)
    result.endpoints[:2] = [tester]
    [stored] = stored_run(tmp_path, (point, result, {}))["points"]
    hops = nfs.hops(stored, 0)
    h = _by_name(hops)
    assert h["link → nf 1"].lost == 10 and h["link → receiver"].lost == 0
    assert h["nf 1 of 2: l3 n000"].lost == 1_000 and hops[-1].lost == 1_010


def test_a_tester_that_did_not_say_what_its_warmup_sent_leaves_its_first_link_uncompared(tmp_path):
    point, result = chain()
    tester = _end(0, point.pairs[0].sender.name, "tester", tx=10_000, rx=8_990)
    result.endpoints[:2] = [tester]
    [stored] = stored_run(tmp_path, (point, result, {}))["points"]
    hops = nfs.hops(stored, 0)
    h = _by_name(hops)
    assert h["link → nf 1"].lost is None and "warm-up" in h["link → nf 1"].why[0]
    assert h["nf 1 of 2: l3 n000"].lost == 1_000 and hops[-1].lost is None


def test_the_loss_table_has_a_row_per_hop(tmp_path):
    point, result = chain()
    run = stored_run(tmp_path, (point, result, {}))
    title, headers, rows = nfs.loss_localisation(run)
    assert headers == ["point", "rep", "pair", "hop", "in", "out", "lost", "where and why"]
    assert len(rows) == 8 and rows[2][3:8] == ["nf 1 of 2: l3 n000", 10_990, 9_990, 1_000,
                                               "no_route 1,000"]
    assert "no_route 1,000" in summary_table((title, headers, rows))


def test_the_end_of_a_run_shows_only_the_paths_that_lost_frames(tmp_path):
    lossy, result = chain()
    clean, clean_result = chain()
    pair = clean.pairs[0]
    nf1, m1 = _nf(pair.nfs[0].name, 0, rx=11_000, tx=11_000)
    nf2, m2 = _nf(pair.nfs[1].name, 1, rx=11_000, tx=11_000)
    receiver = _end(0, pair.receiver.name, "recv", rx=10_000)
    clean_result.endpoints[1:] = [receiver, m1, m2]
    clean_result.nfs = [nf1, nf2]
    clean_result.counters = {}
    _, _, rows = nfs.loss_localisation(stored_run(tmp_path / "a", (clean, clean_result, {})),
                                       brief=True)
    assert rows == [[1, "none: every hop's counts agree"]]
    run = stored_run(tmp_path / "b", (lossy, result, {}))
    assert nfs.loss_localisation(run, brief=True) == nfs.loss_localisation(run)


# --- latency per NF -----------------------------------------------------------------

def _latency_point(n: int, p50_us: float, size: int = 64):
    [s] = scenarios(None, {"switch": "bridge", "api": "raw", "nfs": n, "nf": "l2",
                           "size": size, "tester": "split"})
    point = place(s, RUN, host_cpus=(0, 1, 2, 3), joins="switch", nf=nf_kinds.find(s.nf))
    pair = point.pairs[0]
    ends = [_end(0, pair.sender.name, "send", tx=10),
            _end(0, pair.receiver.name, "recv", rx=10, p50_ns=int(p50_us * 1000))]
    pairs = [model.pair_result(0, *ends, "throughput")]
    result = model.PointResult(pairs=pairs, total=model.total(pairs), endpoints=ends,
                               counters={})
    return point, result, {}


def test_the_slope_is_the_least_squares_fit_over_the_nf_count(tmp_path):
    run = stored_run(tmp_path, *(_latency_point(n, 10 + 2.5 * n) for n in (0, 1, 2, 3)),
                     *(_latency_point(n, us, size=1500) for n, us in ((0, 10), (1, 13), (2, 14))),
                     _latency_point(1, 99, size=512))        # alone: no slope
    by_size = {s.point["size"]: s for s in nfs.slopes(run)}
    assert set(by_size) == {64, 1500}
    exact = by_size[64]
    assert (exact.p50, exact.p50_base) == (2.5, 10.0)          # on the line: exact
    assert (exact.p99, exact.p99_base) == (7.5, 30.0)          # p99 = 3 × p50 here
    assert exact.shape == "chain" and exact.switch == "bridge" and exact.kind == "one_way"
    assert by_size[1500].p50 == pytest.approx(2.0)
    assert by_size[1500].p50_base == pytest.approx(31 / 3)
    title, headers, rows = nfs.latency_per_nf(run)
    assert headers[-3:] == ["p50 µs at 0 NFs", "p50 µs per NF", "p99 µs per NF"]
    row = next(r for r in rows if r[4] == "0, 1, 2, 3")
    assert row[1:4] == ["bridge", "chain", "one-way"] and row[5:] == [4, 10.0, 2.5, 7.5]


def test_fit_needs_two_nf_counts():
    assert nfs.fit([0, 2], [1.0, 5.0]) == (2.0, 1.0)
    with pytest.raises(ValueError):
        nfs.fit([1, 1], [1.0, 2.0])


# --- startup -------------------------------------------------------------------

def test_nf_startup_per_nf_and_the_slowest_per_point(tmp_path):
    point, result = chain()
    run = stored_run(tmp_path, (point, result, {}))
    title, headers, rows = nfs.startup(run)
    assert headers[3:] == ["NF", "kind", "node", "cpu", "ready s", "first forward s",
                           "busy polls %"]
    assert [r[3:6] for r in rows] == [["1 of 2", "l3", "n000"], ["2 of 2", "l3", "n001"]]
    assert rows[0][7:9] == [pytest.approx(0.35), pytest.approx(0.75)]
    assert rows[0][9] == pytest.approx(95.0)
    title, headers, rows = nfs.startup_per_point(run)
    assert rows[0][2:] == ["send → 2 × l3 (chain) → recv", 2, pytest.approx(0.6),
                           pytest.approx(1.0)]


# --- the HTML report and the CSV -------------------------------------------------------

def test_the_report_draws_latency_vs_nfs_and_shows_the_nf_tables(tmp_path):
    run = stored_run(tmp_path, *(_latency_point(n, 10 + 2.5 * n) for n in (0, 1, 2, 4)),
                     chain()[0:2] + ({},))
    page = build.write(run, tmp_path / "report").read_text()
    assert (tmp_path / "report" / "latency_vs_nfs.png").exists()
    for text in ("Latency vs number of network functions", "Loss along each path",
                 "Latency per network function", "NF startup per point",
                 "send → 4 × l2 (chain) → recv", "no_route 1,000", "CPU-bound"):
        assert text in page, text


def test_the_latency_plot_says_shape_and_data_plane(tmp_path, monkeypatch):
    from cnfperf.report import nf_plots, plots
    saved = []
    monkeypatch.setattr(nf_plots, "save", lambda fig, path: saved.append(fig) or str(path))
    run = stored_run(tmp_path, *(_latency_point(n, 10 + 2.5 * n) for n in (0, 1, 2)))
    [made] = nf_plots.make(run, tmp_path)
    [ax] = [a for a in saved[0].axes if a.get_visible()]
    assert ax.get_title() == "One-way latency, chain on bridge"
    assert [t.get_text() for t in ax.get_legend().get_texts()] == \
        ["p50: +2.5 µs per NF", "p99: +7.5 µs per NF"]
    with pytest.raises(plots.NoData):
        nf_plots.latency_vs_nfs([], tmp_path / "x.png")


def test_the_csv_has_shape_and_cpu_bound_and_a_file_of_nf_ports(tmp_path):
    point, result = chain()
    run = stored_run(tmp_path, (point, result, {}))
    out = io.StringIO()
    export.write_csv(run, out)
    rows = list(csv.DictReader(io.StringIO(out.getvalue())))
    assert {(r["shape"], r["cpu_bound"]) for r in rows} == {("chain", point.pairs[0].nfs[0].name)}
    out = io.StringIO()
    assert export.write_nf_ports_csv(run, out) == 4
    ports = list(csv.DictReader(io.StringIO(out.getvalue())))
    assert list(ports[0])[-len(export.NF_PORT_COLUMNS):] == list(export.NF_PORT_COLUMNS)
    assert {(r["nf"], r["nf_name"]) for r in ports} == \
        {("l3", nf.name) for nf in point.pairs[0].nfs}
    assert [(r["nf_index"], r["port"], r["rx_packets"], r["tx_packets"], r["dropped_no_route"])
            for r in ports] == [("0", "1", "10990", "0", "1000"), ("0", "2", "0", "9990", "0"),
                                ("1", "1", "9990", "0", "0"), ("1", "2", "0", "9990", "0")]
    assert ports[0]["switch"] == "bridge" and ports[0]["shape"] == "chain"


def test_results_show_and_export_on_the_command_line(tmp_path, cli):
    point, result = chain()
    stored_run(tmp_path, (point, result, {}))
    shown = cli("results", "show", RUN, "--results", str(tmp_path), check=True).stdout
    assert "Loss along each path" in shown and "send → 2 × l3 (chain) → recv" in shown
    ports = cli("results", "export", RUN, "--csv", "--nf-ports", "--results", str(tmp_path),
                check=True).stdout
    assert ports.splitlines()[0].endswith(
        "dropped_no_route,dropped_ttl,dropped_policer,dropped_shaper,delayed")
    assert len(ports.splitlines()) == 5


def test_a_pipeline_reads_its_links_from_the_nodes_interfaces(tmp_path):
    """veth and macvlan count each end's own interface: what left one, what reached the other."""
    [s] = scenarios(None, {"switch": "veth", "api": "raw", "nfs": 2, "nf": "l3"})
    point = place(s, RUN, host_cpus=(0, 1, 2, 3), joins="link", nf=nf_kinds.find(s.nf))
    _, result = chain()
    names = [port.name for link in point.pairs[0].links for port in (link.a, link.b)]
    result.counters = {names[0]: PortCounters(tx_packets=11_000),
                       names[1]: PortCounters(rx_packets=10_990, rx_dropped=10)}
    [stored] = stored_run(tmp_path, (point, result, {}))["points"]
    assert stored["shape"] == "pipeline"
    link = _by_name(nfs.hops(stored, 0))["link → nf 1"]
    assert (link.rx, link.tx, link.lost) == (11_000, 10_990, 10)
    assert link.why == ["in the data plane 10", "its drop counters 10"]


def test_a_point_stored_without_its_data_planes_facts_reads_as_the_switchs_view(tmp_path):
    """What the report knows of a data plane is what the point stored
    (switch_facts); without it (a name the migration did not know), the name
    alone: counters taken as the switch's view, never today's data planes."""
    [s] = scenarios(None, {"switch": "veth", "api": "raw", "nfs": 2, "nf": "l3"})
    point = place(s, RUN, host_cpus=(0, 1, 2, 3), joins="link", nf=nf_kinds.find(s.nf))
    _, result = chain()
    names = [port.name for link in point.pairs[0].links for port in (link.a, link.b)]
    result.counters = {names[0]: PortCounters(rx_packets=11_000),
                       names[1]: PortCounters(tx_packets=10_990, tx_dropped=10)}
    [stored] = stored_run(tmp_path, (point, result, {}))["points"]
    assert stored["switch_facts"]["counter_view"] == "node"
    stored["switch_facts"] = None
    link = _by_name(nfs.hops(stored, 0))["link → nf 1"]
    assert (link.rx, link.tx, link.lost) == (11_000, 10_990, 10)


def test_points_stored_before_the_facts_get_their_data_planes_facts_of_then(tmp_path):
    """Schema 13 fills switch_facts of older points by name, as the data planes
    were when the column came; a name it does not know stays without."""
    run = migrated_run(tmp_path, 12, *(
        "INSERT INTO points (run_id, idx, status, switch, mode, api, pairs, size) "
        f"VALUES ('beef', {i}, 'done', '{name}', 'throughput', 'raw', 1, 64)"
        for i, name in enumerate(("macvlan", "vpp-memif", "gone-switch"))))
    macvlan, vpp_memif, gone = run["points"]
    assert macvlan["switch_facts"] == DATAPLANES["macvlan"].stored()
    assert vpp_memif["switch_facts"] == DATAPLANES["vpp-memif"].stored()
    assert gone["switch_facts"] is None


def test_a_point_stores_its_nf_kinds_facts_and_one_without_nfs_none(tmp_path):
    point, result = chain()
    [s] = scenarios(None, {"switch": "veth", "api": "raw"})
    plain = place(s, RUN, host_cpus=(0, 1, 2, 3), joins="link")
    with_nfs, without = stored_run(tmp_path, (point, result, {}), (plain, None, {}))["points"]
    assert with_nfs["nf_facts"] == {"name": "l3", "style": nf_kinds.kind("l3").style}
    assert without["nf_facts"] is None


def test_points_stored_before_the_facts_get_their_nf_kinds_style_of_then(tmp_path):
    """Schema 13 fills nf_facts of older points with NFs by the scenario's `nf`,
    as the kinds' styles were when the column came; a value without one (a
    user's command), a point without NFs or without a scenario stays without."""
    cases = ({"nf": "mirror", "nfs": 1}, {"nf": "click:strip-encap", "nfs": 2},
             {"nf": "cmd:my-nf {iface1} {iface2}", "nfs": 1}, {"nf": "l2", "nfs": 0},
             {"nf": "l2"}, None)
    run = migrated_run(tmp_path, 12, *(
        "INSERT INTO points (run_id, idx, status, switch, mode, api, pairs, size, scenario) "
        f"VALUES ('beef', {i}, 'done', 'veth', 'throughput', 'raw', 1, 64, "
        f"{'NULL' if case is None else repr(json.dumps(case))})"
        for i, case in enumerate(cases)))
    facts = [p["nf_facts"] for p in run["points"]]
    assert facts == [nf_kinds.kind("mirror").stored(), nf_kinds.kind("click:strip-encap").stored(),
                     None, None, None, None]


def test_the_report_draws_an_nf_kind_by_the_number_its_points_stored(tmp_path):
    """Curves of one data plane told apart by NF kind wear the style their
    points stored (nf_facts), not one looked up by the kind's name."""
    from cnfperf.report import style
    from cnfperf.report.draw import Pen
    from cnfperf.report.rows import rows_from_run
    point, result = chain()
    [s] = scenarios(None, {"switch": "bridge", "api": "raw"})
    plain = place(s, RUN, host_cpus=(0, 1, 2, 3), joins="switch")
    measured = model.PointResult(pairs=result.pairs, total=result.total, endpoints=[],
                                 counters={})
    run = stored_run(tmp_path, (point, result, {}), (plain, measured, {}))
    rows = rows_from_run(run)
    curve = next(r["switch"] for r in rows if r.get("nfs"))
    l3 = style.nth(style.PAIRS - 1 - nf_kinds.kind("l3").style)
    assert Pen(rows).style_of(curve) == l3
    run["points"][0]["nf_facts"] = {"name": "l3", "style": 9}   # as another run stored it
    assert Pen(rows_from_run(run)).style_of(curve) == style.nth(style.PAIRS - 1 - 9) != l3


def test_an_nf_on_two_cores_says_what_each_core_took(tmp_path):
    """The engine's summary per queue (a thread, a core each): stored as the
    frames each took, shown as shares in the startup table; an NF on one core
    stores none and the column is left out."""
    point, result = chain()
    summary_ = {"type": "summary", "role": "nf", "nf": "l3", "ports": [],
                "queues": [{"queue": 0, "cpu": 2, "rx_packets": 3_000, "tx_packets": 3_000},
                           {"queue": 1, "cpu": 3, "rx_packets": 7_000, "tx_packets": 7_000}]}
    two = model.nf_result("n", 0, 0, 2, summary_, None, None, None)
    assert two.queues == [3_000, 7_000]
    one = model.nf_result("n", 0, 0, 2, {**summary_, "queues": summary_["queues"][:1]},
                          None, None, None)
    assert one.queues is None
    result.nfs[0].queues = two.queues
    [stored] = stored_run(tmp_path, (point, result, {}))["points"]
    assert [n["queues"] for n in stored["nf_results"]] == [[3_000, 7_000], None]
    _, headers, rows = nfs.startup({"points": [stored]})
    assert headers[-1] == "frames per core %" and [r[-1] for r in rows] == ["30 · 70", ""]
    assert nfs.queue_shares(None) == "" and nfs.queue_shares([1, 1]) == "50 · 50"
