"""The table of scenario fields (cnfperf/fields.py) is the only place a field is
declared: a new row reaches --help, validation, sweeps, the store and the CSV."""
from __future__ import annotations

import csv
import io
import subprocess
import sys
import textwrap

from cnfperf import fields
from harness import REPO

# Runs in a fresh interpreter: the row is added before anything reads the table,
# as if it were written in fields.py.
NEW_FIELD = textwrap.dedent("""
    import contextlib, io, json, sys
    from pathlib import Path
    from cnfperf import fields
    fields.FIELDS.append(fields.Field("frob", "bool", False, "a made-up switch", axis=54,
                                      column="INTEGER", label="named"))
    from cnfperf import cli
    from cnfperf.run.checks import load_plan
    from cnfperf.report.export import write_csv
    from cnfperf.results.store import Store

    def main(*argv):
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                code = cli.main(list(argv))
            except SystemExit as e:
                code = e.code
        return code, out.getvalue(), err.getvalue()

    bad = Path(sys.argv[1]) / "bad.toml"
    bad.write_text('frob = "maybe"')
    report = {"help": main("run", "--help"),
              "bad": main("run", str(bad), "--dry-run"),
              "dry": main("run", "--frob", "--size", "64,128", "--dry-run")}
    swept = load_plan(None, {"frob": "true,false"})
    report["swept"] = [s.frob for s in swept.scenarios]
    report["axes"] = list(swept.plan.axes)
    store = Store(Path(sys.argv[1]))
    store.begin_run("00aa", ["cnfperf"], 2, sys.argv[1], {}, None)
    for i, s in enumerate(swept.scenarios):
        store.add_point("00aa", i, s.model_dump(), status="failed", started=0.0, error="x")
    report["column"] = [r[0] for r in store.db.execute("SELECT frob FROM points ORDER BY idx")]
    csv_text = io.StringIO()
    write_csv(store.run("00aa"), csv_text)
    report["csv"] = csv_text.getvalue()
    print(json.dumps(report))
""")


def test_a_new_row_reaches_every_reader(tmp_path):
    import json

    done = subprocess.run([sys.executable, "-c", NEW_FIELD, str(tmp_path)], cwd=REPO,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    r = json.loads(done.stdout)
    code, out, _ = r["help"]
    assert code == 0 and "--frob [yes|no]" in out and "--no-frob" in out
    assert "a made-up switch" in out
    code, _, err = r["bad"]
    assert code == 2 and "frob" in err and "maybe" in err and len(err.splitlines()) == 1
    code, out, _ = r["dry"]
    assert code == 0 and "frob=yes" in out, out
    assert r["swept"] == [True, False] and "frob" in r["axes"]
    assert r["column"] == [1, 0]
    rows = list(csv.DictReader(io.StringIO(r["csv"])))
    assert [row["frob"] for row in rows] == ["1", "0"]


def test_every_row_is_complete():
    names = [f.name for f in fields.FIELDS]
    assert len(set(names)) == len(names)
    assert len({f.axis for f in fields.FIELDS}) == len(names), "axis ranks are an order"
    for f in fields.FIELDS:
        assert f.kind in ("str", "choice", "int", "float", "bool", "rate", "cpus"), f
        assert f.help and f.label in ("", "bare", "named"), f
        assert not f.zero or f.kind == "rate", f
        assert (f.kind == "choice") == bool(f.choices), f


def test_a_yes_no_field_reads_yes_or_no_wherever_it_is_shown():
    """The flags take yes and no; the tables, labels, plots and the field
    reference say them back the same way, whether the value is a bool or the
    store's 1 and 0."""
    from cnfperf import reference
    from cnfperf.report.rows import curve_label
    from cnfperf.report.summary import label

    assert [fields.show("pin", v) for v in (True, False, 1, 0)] == ["yes", "no", "yes", "no"]
    assert fields.show("pairs", 1) == "1"
    assert curve_label("ovs", {"pin": False}) == "ovs pin=no"
    assert label({"switch": "bridge", "mmsg": True, "touch": 0}, ["switch", "mmsg", "touch"]) == \
        "bridge mmsg=yes touch=no"
    [pin] = [row for row in reference.fields_table().splitlines() if row.startswith("| `pin`")]
    assert "| `yes` | `yes`, `no` |" in pin


def test_a_late_field_at_its_default_leaves_the_point_keys_of_stored_runs_as_they_were():
    from cnfperf.run.checks import plan
    from cnfperf.scenario import canonical
    [kept] = plan({"switch": "ovs", "api": "dpdk", "rate": 1000}, cores=(0, 1)).scenarios
    assert fields.by_name()["switch_keep"].late and kept.switch_keep is True
    assert "switch_keep" not in canonical(kept), "a run stored before it would be measured again"
    both = plan({"switch": "ovs", "api": "dpdk", "rate": 1000, "switch_keep": "yes,no"},
                cores=(0, 1))
    assert len({p.key for p in both.plan.points}) == 2
