"""CPU per node in the results: stored and read back (an older store gains the
table, --resume forgets it), the report's table and note, the end of a run's
one line per point, and `results export --cpu`."""
from __future__ import annotations

import csv
import io
import sqlite3

from cnfperf.report import build, cpu as cpu_report, export
from cnfperf.report.tables import summary_table
from cnfperf.results import model
from cnfperf.results.store import Store
from harness import older_store
from test_nf_results import RUN, chain, store_point, stored_run

THREAD = {"pid": 7, "tid": 8, "name": "lcore-worker-1", "allowed": "1", "core": 1}


def with_cpu():
    """The NF chain's point, with a CPU row for its sender, first NF and the switch."""
    point, result = chain()
    pair = point.pairs[0]
    result.cpu = [
        model.CpuUsage(pair.sender.name, "send", "1", None, 0.9, 0.1, 0.05, 1.0, 10_000, 2e9,
                       "engine calibration", [THREAD]),
        model.CpuUsage(pair.nfs[0].name, "nf", "2", 50.0, 0.2, 0.2, 0.0, 1.0, 0, 2e9,
                       "engine calibration"),
        model.CpuUsage("testpmd", "switch", "0-3", None, None, None, 0.3, 1.0, 20_000, 2e9,
                       "engine calibration")]
    return point, result


def test_cpu_rows_are_stored_and_read_back(tmp_path):
    point, result = with_cpu()
    [stored] = stored_run(tmp_path, (point, result, {}))["points"]
    send, nf, switch = stored["cpu_usage"]
    assert send == {"node": point.pairs[0].sender.name, "kind": "send", "cores": "1",
                    "quota": None, "user_s": 0.9, "system_s": 0.1, "softirq_s": 0.05,
                    "wall_s": 1.0, "packets": 10_000, "cycles_per_packet": 200_000.0,
                    "tsc_hz": 2e9, "tsc_source": "engine calibration", "threads": [THREAD]}
    assert (nf["quota"], nf["cycles_per_packet"], nf["threads"]) == (50.0, None, [])
    assert switch["user_s"] is None and switch["cycles_per_packet"] is None


def test_an_older_store_gains_the_table_and_resume_forgets_its_rows(tmp_path):
    db = older_store(tmp_path, 6)
    db.execute("INSERT INTO points (run_id, idx, status) VALUES ('beef', 0, 'done')")
    db.commit()
    db.close()
    store = Store(tmp_path)
    assert store.run("beef")["points"][0]["cpu_usage"] == []
    point, result = with_cpu()
    store.begin_run(RUN, ["cnfperf"], 2, tmp_path, {}, "0")
    store_point(store, point, result, idx=0, status="failed")
    store.resume_run(RUN, 2)
    store.close()
    db = sqlite3.connect(tmp_path / "cnfperf.db")
    assert db.execute("SELECT count(*) FROM cpu_usage").fetchone() == (0,)


def test_the_table_shows_cpu_percent_and_says_what_softirq_is(tmp_path):
    point, result = with_cpu()
    run = stored_run(tmp_path, (point, result, {}))
    title, headers, rows = cpu_report.per_node(run)
    assert headers[2:] == ["node", "kind", "cores", "quota %", "user s", "sys s", "softirq s",
                           "CPU %", "cycles/packet"]
    assert [r[2:] for r in rows] == [
        ["p0s", "send", "1", None, 0.9, 0.1, 0.05, 100.0, 200_000.0],
        ["n000", "nf", "2", 50.0, 0.2, 0.2, 0.0, 40.0, None],
        ["testpmd", "switch", "0-3", None, None, None, 0.3, None, None]]
    text = summary_table((title, headers, rows), cpu_report.NOTES[title])
    assert "not charge to the container" in text and "no switch row" in text
    [(_, _, brief)] = [cpu_report.busiest(run)]
    assert [r[2:] for r in brief] == [["p0s", "send", 100.0, 200_000.0]]
    assert cpu_report.all_tables({"points": []}) == []


def test_the_report_has_the_table_with_its_note(tmp_path):
    point, result = with_cpu()
    html = build.write(stored_run(tmp_path, (point, result, {})), tmp_path / "r").read_text()
    assert "CPU per node" in html and "does not charge to the container" in html


def test_export_cpu_writes_a_row_per_node(tmp_path, cli):
    point, result = with_cpu()
    run = stored_run(tmp_path, (point, result, {}))
    out = io.StringIO()
    assert export.write_cpu_csv(run, out) == 3
    rows = list(csv.DictReader(io.StringIO(out.getvalue())))
    assert list(rows[0])[-len(export.CPU_COLUMNS):] == list(export.CPU_COLUMNS)
    assert (rows[0]["switch"], rows[0]["kind"], rows[0]["cycles_per_packet"],
            rows[0]["quota"]) == ("bridge", "send", "200000.0", "")
    assert '"name": "lcore-worker-1"' in rows[0]["threads"]
    done = cli("results", "export", RUN, "--csv", "--cpu", "--results", str(tmp_path),
               check=True)
    assert done.stdout.splitlines()[0].endswith("tsc_hz,tsc_source,threads")
    both = cli("results", "export", RUN, "--csv", "--cpu", "--nf-ports",
               "--results", str(tmp_path))
    assert both.returncode == 2 and both.stderr.strip() == \
        "cnfperf: error: --cpu: one file at a time: --nf-ports or --cpu"
    shown = cli("results", "show", RUN, "--results", str(tmp_path), check=True).stdout
    assert "CPU per node" in shown and "softirq s is per core" in shown
