"""A plan validates each point once and checks it once (run/checks/plans.py):
the sweep asks for each point's key and for what a host leaves out, the plan
for its scenarios, every repetition, and each pair's own values; none of them
checks a point again. scenario.py holds no check: it validates fields."""
import ast
import json
from collections import Counter
from pathlib import Path

import pytest

from cnfperf import UserError, scenario
from cnfperf.run import checks
from cnfperf.run.checks import plans
from cnfperf.runtimes import RUNTIMES

HOST = type("Host", (), {"engine": type("E", (), {"apis": []})()})()


def _counted(monkeypatch):
    """Counters of the scenarios the plan checks and of the parameters it validates."""
    checked, validated = Counter(), Counter()
    check, validate = plans.check, plans.validate

    def counting_check(s, cores=None):
        checked[json.dumps(s.model_dump(mode="json"), sort_keys=True)] += 1
        return check(s, cores)

    def counting_validate(params):
        validated[repr(sorted(params.items()))] += 1
        return validate(params)
    monkeypatch.setattr(plans, "check", counting_check)
    monkeypatch.setattr(plans, "validate", counting_validate)
    return checked, validated


def test_each_point_of_a_sweep_is_validated_and_checked_once(monkeypatch):
    checked, validated = _counted(monkeypatch)
    swept = checks.plan({"switch": "veth,bridge", "api": "raw", "size": "64,128", "repeat": 3,
                         "pairs": 2, "rate": "10k", "pair": {"1": {"rate": "20k"}}},
                        cores=(0, 1))
    assert len(swept.scenarios) == 4 * 3
    assert len(validated) == 4 and set(validated.values()) == {1}
    # each point, and its pair 1 as that pair runs it: two scenarios a point
    assert len(checked) == 4 * 2 and set(checked.values()) == {1}


def test_a_study_with_a_host_validates_a_point_once_for_what_it_leaves_out_and_its_key(
        monkeypatch):
    monkeypatch.setattr(checks.host, "_problems", lambda *a: [])
    checked, validated = _counted(monkeypatch)
    swept = checks.plan({"switch": ["ovs", "vpp"], "api": "dpdk", "switch_cores": 2,
                         "size": "64,128"}, host=HOST, cores=(0, 1))
    assert [s.switch for s in swept.scenarios] == ["ovs", "ovs"]
    assert len(swept.plan.skipped) == 2    # vpp: at most one poll core
    # the points left out were validated (to ask the host), never checked
    assert len(validated) == 4 and set(validated.values()) == {1}
    assert len(checked) == 2 and set(checked.values()) == {1}


def test_a_point_the_checks_refuse_fails_the_plan_with_its_field():
    with pytest.raises(UserError) as e:
        checks.plan({"switch": "veth", "api": "xdp", "mmsg": True, "size": "64,128"},
                     cores=(0, 1))
    assert e.value.field == "mmsg"


def test_scenario_validates_fields_and_holds_no_check():
    assert not hasattr(scenario, "build")
    s = scenario.validate({"switch": "memif", "api": "udp"})   # memif has no udp: not its question
    assert s.switch == "memif"
    with pytest.raises(UserError, match="api: memif supports dpdk; not udp"):
        checks.check(s, (0, 1))


def test_checks_compare_no_place_or_runtime_with_a_runtime_s_name():
    """Where a node runs is the runtime's to say (Runtime.place, runtimes.in_guest), as a data
    plane's capabilities are its class's: run/checks/ compares no value with a
    runtime's name; and scenario.py imports nothing of run/ (it is below)."""
    package = Path(checks.__file__).parent
    for path in sorted(package.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Compare):
                named = {c.value for c in ast.walk(node) if isinstance(c, ast.Constant)} | \
                        {c.id for c in ast.walk(node) if isinstance(c, ast.Name)}
                assert not named & {*RUNTIMES, "VM"}, f"{path.name}:{node.lineno}: " \
                                                      f"{ast.unparse(node)}"
    tree = ast.parse(Path(scenario.__file__).read_text())
    imported = {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)}
    assert not any(m and m.startswith("cnfperf.run") for m in imported), imported
