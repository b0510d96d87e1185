"""Regressions that explain themselves: what else differed between stored
runs where a point moved, side by side and ranked over a series, from runs
stored in a temporary store with the host facts, versions and fields each
was made with. Nothing here starts a container."""
from __future__ import annotations

import json

from cnfperf.cli import EXIT_REGRESSION, main
from cnfperf.report import explain, trend
from cnfperf.results.store import Store
from harness import one_pair, scenarios

SPEC = {"doc": {"switch": "veth"}, "quick": False}
TUNED = {"microcode": "0xf0", "governor": "performance", "smt": "off", "isolated": "1"}


class Runs:
    def __init__(self, directory):
        self.directory = directory
        self.ids: list[str] = []

    def add(self, rx: float, tuning: dict | None = None, vpp: str = "25.10",
            **fields) -> str:
        run_id = f"{len(self.ids) + 0xb000:04x}"
        store = Store(self.directory)
        host = {"kernel": "6.1.0", "cpu_model": "Xeon", "cores": 2,
                "tuning": {**TUNED, **(tuning or {})}}
        store.begin_run(run_id, ["cnfperf", "run"], 1, self.directory / "runs" / run_id,
                        host, "0.1.0", SPEC)
        point = scenarios(None, {"switch": "veth", **fields})[0].model_dump()
        store.add_point(run_id, 0, point, status="done", started=1.0, key="k",
                        result=one_pair(rx, None, None),
                        versions={"engine": "0.1.0", "vpp": vpp},
                        switch_facts={"name": "veth", "style": 0}, pollers=2, point_cores=2)
        store.finish_run(run_id, "done")
        store.close()
        self.ids.append(run_id)
        return run_id


def _runs(store_dir, ids):
    store = Store(store_dir)
    try:
        return [store.run(i) for i in ids]
    finally:
        store.close()


def test_a_changed_governor_ranks_first_over_a_series(tmp_path):
    runs = Runs(tmp_path)
    # the microcode changed once before, with no step: it goes with nothing
    for rx, tuning in ((100e3, {}), (101e3, {"microcode": "0xf1"}), (99e3, {}),
                       (60e3, {"governor": "powersave"}), (61e3, {"governor": "powersave"})):
        runs.add(rx, tuning)
    found, _ = trend.trends(_runs(tmp_path, runs.ids), ["rate"])
    [t] = found
    assert t.verdict == trend.REGRESSION and t.since == runs.ids[3]
    first = t.explained[0]
    assert (first.what, first.before, first.after) == ("host governor", "performance",
                                                       "powersave")
    assert (first.changed_with, first.changed, first.others_with, first.others) == (2, 2, 0, 3)
    assert first.score == 1
    assert "host microcode" not in {d.what for d in t.explained}
    [line] = trend.whys(found)
    assert line.startswith(f"veth rate regression since {runs.ids[3]}: host governor: "
                           "performance → powersave (in 2 of 2 changed runs, 0 of 3 others)")


def test_a_difference_in_only_some_changed_runs_ranks_below_one_in_all(tmp_path):
    runs = Runs(tmp_path)
    runs.add(100e3)
    runs.add(100e3)
    runs.add(60e3, pin="no", vpp="26.02")
    runs.add(61e3, pin="no")
    found, _ = trend.trends(_runs(tmp_path, runs.ids), ["rate"])
    [t] = found
    assert [d.what for d in t.explained] == ["field pin", "version vpp"]
    assert t.explained[1].score == 0.5


def test_side_by_side_names_the_hosts_and_each_moved_points_differences(tmp_path, capsys):
    runs = Runs(tmp_path)
    a = runs.add(100e3)
    b = runs.add(50e3, {"smt": "on"}, vpp="26.02", endpoint_quota=10)
    assert main(["compare", a, b, "--results", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "the hosts differ: host smt: off → on" in out
    assert "moved; it also differed in: version vpp: 25.10 → 26.02; field endpoint_quota: " \
           "default → 10.0" in out
    assert main(["compare", a, b, "--results", str(tmp_path), "--json"]) == 0
    said = json.loads(capsys.readouterr().out)["differences"]
    assert said["hosts"][0]["what"] == "host smt"
    [point] = said["moved"]
    assert [d["what"] for d in point["differences"]] == ["version vpp", "field endpoint_quota"]
    # a point that did not move says nothing of its differences
    c = runs.add(100e3, vpp="26.02")
    assert main(["compare", a, c, "--results", str(tmp_path)]) == 0
    assert "moved" not in capsys.readouterr().out


def test_a_fact_an_older_run_did_not_store_is_no_difference(tmp_path, capsys):
    runs = Runs(tmp_path)
    ids = [runs.add(100e3), runs.add(100e3), runs.add(50e3)]
    with Store(tmp_path).db as db:   # the first two stored before the host's tuning was
        for run_id in ids[:2]:
            db.execute("UPDATE runs SET host = ? WHERE id = ?",
                       (json.dumps({"kernel": "6.1.0"}), run_id))
    assert main(["compare", *ids, "--results", str(tmp_path), "--no-plots"]) == EXIT_REGRESSION
    out = capsys.readouterr().out
    assert "nothing stored differed" in out and "host smt" not in out


def test_facts_flatten_what_a_point_was_measured_with():
    run = {"host": {"kernel": "6.1.0", "hugepages": {"total": 512, "size_kb": 2048},
                    "tuning": {"governor": "performance"}}}
    point = {"versions": {"kernel": "6.1.0", "ovs": "3.1.0"}, "pollers": 3, "point_cores": 2,
             "tester_why": "set", "scenario": {"switch": "ovs", "pin": True, "duration": 10},
             "switch_facts": {"applied": {"pmd-cpu-mask": "0x2"}},
             "placement": [{"index": 0, "sender": {"role": "send", "cpu": 1},
                            "receiver": {"role": "recv", "cpu": 0}}]}
    f = explain.facts(run, point)
    assert f["host hugepages"] == "512 × 2048 kB" and f["host governor"] == "performance"
    assert f["version ovs"] == "3.1.0" and "version kernel" not in f
    assert f["placement pollers/cores"] == "3/2" and f["placement nodes"] == "send0@1 recv0@0"
    assert f["field pin"] == "yes" and "field duration" not in f and "field switch" not in f
    assert f["switch pmd-cpu-mask"] == "0x2"
