"""Results survive the trip into SQLite and back, through the store and the CLI."""
from __future__ import annotations

import csv
import io
import json
import sqlite3

import pytest

from cnfperf.dataplanes.base import PortCounters
from cnfperf import UserError
from cnfperf.results import model
from cnfperf.report import export
from cnfperf.results.store import SCHEMA_VERSION, Store
from cnfperf.runtimes import ImageInfo
from harness import migrated_run, older_store, scenarios


def _summary(role: str, tx: int, rx: int, lat: list[list[int]] | None = None,
             kind: str = "one_way") -> dict:
    s = {"type": "summary", "role": role, "api": "udp", "duration_s": 2.0,
         "offered_pps": 1000.0 if role in ("send", "client") else None,
         "tx_pps": tx / 2, "tx_packets": tx, "tx_bps": tx * 512 / 2,
         "rx_packets": rx, "rx_pps": rx / 2, "rx_bps": rx * 512 / 2, "lost": 0, "reordered": 1,
         "duplicate": 0, "corrupt": 0, "warmup_packets": 100}
    if lat:
        count = sum(b[2] for b in lat)
        s["latency"] = {"kind": kind, "count": count, "min_ns": lat[0][0], "mean_ns": 15000.0,
                        "p50_ns": lat[0][1], "p90_ns": lat[-1][1], "p99_ns": lat[-1][1],
                        "p999_ns": lat[-1][1], "p9999_ns": lat[-1][1], "max_ns": lat[-1][1],
                        "histogram": lat}
    return s


def _result(mode: str = "throughput") -> model.PointResult:
    roles = ("send", "recv") if mode == "throughput" else ("client", "server")
    eps = []
    for pair, (tx, rx) in enumerate(((2000, 2000), (2000, 1990))):
        hist = [[10000, 10100, 1500], [20000, 20200, rx - 1500]]
        sender = model.endpoint_metrics(pair, f"cnfp1a2bp{pair}s", roles[0], 1,
                                        _summary(roles[0], tx, rx if mode == "latency" else 0,
                                                 hist if mode == "latency" else None, "rtt"))
        receiver = model.endpoint_metrics(pair, f"cnfp1a2bp{pair}r", roles[1], 0,
                                          _summary(roles[1], 0, rx,
                                                   hist if mode == "throughput" else None))
        eps += [sender, receiver]
    pairs = [model.pair_result(k, eps[2 * k], eps[2 * k + 1], mode) for k in range(2)]
    counters = {"cnfp1a2bp0sh": PortCounters(rx_packets=2100, tx_packets=3, rx_dropped=0,
                                              tx_dropped=1)}
    return model.PointResult(pairs=pairs, total=model.total(pairs), endpoints=eps,
                             counters=counters)


def test_loss_comes_from_sender_minus_receiver():
    r = _result()
    assert [(p.sent, p.received, p.lost) for p in r.pairs] == [(2000, 2000, 0), (2000, 1990, 10)]
    assert r.total.lost == 10 and r.total.loss_ratio == pytest.approx(10 / 4000)


def test_total_latency_merges_histograms():
    r = _result()
    merged = r.total.latency
    assert merged.samples == 2000 + 1990
    assert merged.histogram == [[10000, 10100, 3000], [20000, 20200, 990]]
    assert merged.ns["p50"] == 10100        # 3000 of 3990 samples are in the first bucket
    assert merged.ns["p90"] == 20200
    assert merged.ns["min"] == 10000 and merged.ns["max"] == 20200


@pytest.mark.parametrize("mode", ["throughput", "latency"])
def test_round_trip(tmp_path, mode):
    [scenario] = scenarios(None, {"mode": mode, "pairs": 2, "rate": "1k"})
    store = Store(tmp_path)
    store.begin_run("1a2b", ["cnfperf", "run"], 1, tmp_path / "runs" / "1a2b",
                    {"cores": 2, "kernel": "6.1"}, "0.1.0")
    result = _result(mode)
    params = scenario.model_dump()
    store.add_point("1a2b", 0, params, status="done", started=1.0, result=result,
                    placement=[{"pair": 0}], warnings=["w"], versions={"engine": "0.1.0"})
    store.finish_run("1a2b", "done")
    store.close()

    run = Store(tmp_path, create=False).run("1a2b")
    assert run["status"] == "done" and run["host"]["cores"] == 2
    [point] = run["points"]
    assert (point["switch"], point["mode"], point["pairs"], point["rate"]) == \
        ("veth", mode, 2, 1000.0)
    assert point["scenario"]["pairs"] == 2 and point["warnings"] == ["w"]
    assert point["sent"] == 4000 and point["lost"] == 10
    assert [p["lost"] for p in point["per_pair"]] == [0, 10]
    assert len(point["endpoints"]) == 4
    by_role = {e["role"]: e for e in point["endpoints"] if e["pair"] == 1}
    sender = by_role["send" if mode == "throughput" else "client"]
    assert sender["tx_packets"] == 2000 and sender["summary"]["warmup_packets"] == 100
    assert point["lat_p50_ns"] == 10100
    assert point["latency_kind"] == ("one_way" if mode == "throughput" else "rtt")
    assert point["counters"]["cnfp1a2bp0sh"]["rx_packets"] == 2100


def test_schema_is_versioned(tmp_path):
    Store(tmp_path).close()
    db = sqlite3.connect(tmp_path / "cnfperf.db")
    assert db.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
    db.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    db.commit()
    db.close()
    with pytest.raises(UserError, match="newer"):
        Store(tmp_path)


def test_a_migration_step_failing_half_way_leaves_the_store_as_it_was(tmp_path, monkeypatch):
    """A step is one transaction with its user_version: cut short after its
    first statement (a crash, a full disk), the store stays at the version
    before, without the step's column, and the next open runs the whole step."""
    from cnfperf.results import store as store_module
    db = older_store(tmp_path, SCHEMA_VERSION - 1)
    db.commit()
    db.close()
    last = store_module._MIGRATIONS[-1]
    first = last.split(";", 1)[0]
    table = first.split()[2]
    assert first.startswith(f"ALTER TABLE {table} ADD COLUMN")
    monkeypatch.setattr(store_module, "_MIGRATIONS", [
        *store_module._MIGRATIONS[:-1], f"{first};\nINSERT INTO no_such_table VALUES (1);"])
    with pytest.raises(sqlite3.OperationalError, match="no_such_table"):
        Store(tmp_path)
    db = sqlite3.connect(tmp_path / "cnfperf.db")
    assert db.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION - 1
    column = first.split()[-2]
    assert column not in {r[1] for r in db.execute(f"PRAGMA table_info({table})")}
    db.close()
    monkeypatch.undo()
    store = Store(tmp_path)   # no "duplicate column": the step runs again, whole
    assert store.db.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
    assert column in {r[1] for r in store.db.execute(f"PRAGMA table_info({table})")}
    assert store.run("beef")["points"] == []
    store.close()


def test_blocking_points_of_an_older_store_read_as_poll_interrupt(tmp_path):
    db = older_store(tmp_path, 3)
    db.executemany("INSERT INTO points (run_id, idx, status, blocking) VALUES ('beef', ?, 'done', ?)",
                   [(0, 1), (1, 0)])
    db.commit()
    db.close()
    Store(tmp_path).close()
    db = sqlite3.connect(tmp_path / "cnfperf.db")
    assert db.execute("SELECT poll FROM points ORDER BY idx").fetchall() == \
        [("interrupt",), ("busy",)]


def _older_with_a_point(directory, version: int) -> Store:
    """A store made at schema `version` with one done point (idx 0), migrated."""
    db = older_store(directory, version)
    db.execute("INSERT INTO points (run_id, idx, status) VALUES ('beef', 0, 'done')")
    db.commit()
    db.close()
    return Store(directory)


def test_images_of_the_ends_and_of_the_network_functions_are_stored(tmp_path):
    # an older store gains the columns; its points leave them empty
    store = _older_with_a_point(tmp_path, 4)
    store.add_point("beef", 1, {}, status="done", started=1.0,
                    image=ImageInfo("busybox+engine+dpdk", "/x", 41_000_000),
                    nf_image=ImageInfo("engine-static", "/y", 1_500_000))
    store.add_point("beef", 2, {}, status="failed", started=1.0, error="no",
                    image=ImageInfo("busybox+engine+dpdk", "/x", 41_000_000))
    points = store.run("beef")["points"]
    store.close()
    assert [(p["image_name"], p["image_size"], p["nf_image_name"], p["nf_image_size"])
            for p in points] == [(None, None, None, None),
                                 ("busybox+engine+dpdk", 41_000_000, "engine-static", 1_500_000),
                                 ("busybox+engine+dpdk", 41_000_000, None, None)]


def test_results_commands_read_the_store(tmp_path, cli):
    store = Store(tmp_path)
    store.begin_run("beef", ["cnfperf", "run"], 1, tmp_path, {}, "0.1.0")
    store.add_point("beef", 0, {"switch": "bridge", "api": "raw", "mode": "throughput",
                                "pairs": 2, "rate": 1000.0},
                    status="done", started=1.0, result=_result(),
                    image=ImageInfo("busybox+engine", "/x", 9_000_000),
                    nf_image=ImageInfo("engine-static", "/y", 1_500_000))
    store.finish_run("beef", "done")
    store.close()

    listed = cli("results", "list", "--results", str(tmp_path), check=True).stdout
    assert "beef" in listed and "bridge" in listed
    shown = json.loads(cli("results", "show", "beef", "--json", "--results", str(tmp_path),
                           check=True).stdout)
    assert shown["points"][0]["per_pair"][1]["lost"] == 10
    table = cli("results", "show", "beef", "--results", str(tmp_path), check=True).stdout
    assert "all" in table and "bridge" in table
    assert "images: tester ends: busybox+engine 9.0 MB; network functions: engine-static 1.5 MB" \
        in table
    missing = cli("results", "show", "dead", "--results", str(tmp_path))
    assert missing.returncode == 2 and missing.stderr.startswith("cnfperf: error: RUN: ")


def test_the_switchs_queue_map_is_stored_with_its_point(tmp_path):
    # an older store (before version 8) gains the column; its points have none
    store = _older_with_a_point(tmp_path, 6)
    result = _result()
    result.queues = [{"port": "cnfpbeefp0s", "queue": 0, "core": 1},
                     {"port": "cnfpbeefp0r", "queue": 0, "core": None}]
    store.add_point("beef", 1, {}, status="done", started=1.0, result=result)
    store.add_point("beef", 2, {}, status="done", started=1.0, result=_result())
    points = store.run("beef")["points"]
    store.close()
    assert [p["queues"] for p in points] == [None, result.queues, None]


def test_a_points_count_of_cores_is_point_cores_beside_a_nodes_cpulist(tmp_path):
    """`cores` was both a point's count and a node's cpulist (cpu_usage): a store
    older than the rename keeps its counts under the new name, and the --cpu CSV
    carries both."""
    [point] = migrated_run(tmp_path, 10, "INSERT INTO points (run_id, idx, status, pollers, "
                                         "cores) VALUES ('beef', 0, 'done', 3, 2)")["points"]
    assert (point["pollers"], point["point_cores"]) == (3, 2) and "cores" not in point
    point["cpu_usage"] = [{"node": "p0s", "kind": "send", "cores": "0-1"}]
    out = io.StringIO()
    export.write_cpu_csv({"id": "beef", "points": [point]}, out)
    [row] = csv.DictReader(io.StringIO(out.getvalue()))
    assert (row["point_cores"], row["cores"]) == ("2", "0-1")


def test_which_tester_why_and_its_pollers_on_its_cores_are_stored(tmp_path):
    # an older store (before version 9) gains the columns; its points have none
    store = _older_with_a_point(tmp_path, 8)
    store.add_point("beef", 1, {"tester": "single"}, status="done", started=1.0,
                    result=_result(), tester_why="auto: split would put 3 busy pollers on 2 cores",
                    pollers=2, point_cores=2)
    run = store.run("beef")
    store.close()
    old, new = run["points"]
    assert (old["tester_why"], old["pollers"], old["point_cores"]) == (None, None, None)
    assert (new["tester"], new["tester_why"], new["pollers"], new["point_cores"]) == \
        ("single", "auto: split would put 3 busy pollers on 2 cores", 2, 2)
    out = io.StringIO()
    export.write_csv(run, out)
    [row] = [r for r in csv.DictReader(io.StringIO(out.getvalue()))
             if r["idx"] == "1" and r["pair"] == "all"]
    assert (row["tester"], row["pollers"], row["point_cores"]) == ("single", "2", "2")
    assert row["tester_why"].startswith("auto: split would put")
