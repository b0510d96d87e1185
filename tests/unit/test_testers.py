"""tester = auto: the split tester where its busy pollers, the data plane's and
the network functions' fit on the point's cores, the single one where they
would not, and either where only it can run; a set tester is kept. Which one
a point used and why reaches its key, the dry-run, the store and the tables."""
from __future__ import annotations

import pytest

from cnfperf import UserError, nfs as nf_kinds, plan as plan_module, testers
from cnfperf.run import checks, runner
from cnfperf.run.checks import load_plan, place_point
from cnfperf.cli import main
from cnfperf.dataplanes import DATAPLANES
from cnfperf.fields import CHANGED_DEFAULTS
from cnfperf.plan import place
from cnfperf.report.tables import run_table
from cnfperf.results.store import Store
from cnfperf.scenario import Scenario
from harness import cores, scenarios

DPDK_SWITCH = {"api": "dpdk", "cpus": "0-1"}


def _placed(**flags):
    [s] = scenarios(None, {"cpus": "0-1", **flags})
    return place_point(s)


@pytest.mark.parametrize("switch", ["ovs", "testpmd"])
@pytest.mark.parametrize("mode", ["throughput", "latency"])
def test_a_switch_that_polls_takes_the_single_tester_on_two_cores(switch, mode):
    point = _placed(switch=switch, mode=mode, **DPDK_SWITCH)
    assert point.scenario.tester == "single"
    assert point.tester_why == "auto: split would put 3 busy pollers on 2 cores"
    # the tester and the switch: one core each, and no warning
    assert point.pollers == 2 and point.warnings == ()
    assert [e.role for e in point.engines] == ["tester"]


def test_the_split_tester_where_its_pollers_fit():
    point = _placed(switch="veth", api="raw")
    assert (point.scenario.tester, point.pollers) == ("split", 2)
    assert point.tester_why == "auto: split's 2 busy pollers fit on 2 cores"
    # four cores hold a switch's poller beside the split tester's two
    [s] = scenarios(None, {"switch": "ovs", "api": "dpdk"})
    four = place(s, "1a2b", host_cpus=(0, 1, 2, 3), switch_pollers=1, nf=nf_kinds.find(s.nf))
    assert four.scenario.tester == "split" and four.pollers == 3
    # engines that sleep until frames come do not count
    asleep = _placed(switch="ovs", api="dpdk", poll="interrupt")
    assert asleep.scenario.tester == "split" and asleep.pollers == 1
    # where nothing polls busily, the reason says so rather than count zero pollers
    latency = _placed(switch="bridge", api="raw", mode="latency")
    assert (latency.scenario.tester, latency.pollers) == ("split", 0)
    assert latency.tester_why == "auto: nothing polls busily (poll = interrupt)"


@pytest.mark.parametrize("flags, tester, why", [
    ({"switch": "bridge", "api": "udp", "pairs": 3}, "split", "auto: api udp needs split"),
    ({"switch": "vhost", "api": "dpdk"}, "split",
     "auto: vhost without a network function needs split"),
    ({"switch": "memif", "api": "dpdk", "mode": "latency"}, "split",
     "auto: memif without a network function needs split"),
    ({"switch": "bridge", "api": "raw", "nfs": 1, "nf": "mirror"}, "single",
     "auto: nf mirror needs single"),
])
def test_either_tester_where_only_it_can_run(flags, tester, why):
    point = _placed(**flags)
    assert (point.scenario.tester, point.tester_why) == (tester, why)


def test_a_set_tester_is_kept_with_its_warning():
    point = _placed(switch="ovs", tester="split", **DPDK_SWITCH)
    assert (point.scenario.tester, point.tester_why, point.pollers) == ("split", "set", 3)
    assert "3 busy pollers share 2 cores" in point.warnings[0]
    single = _placed(switch="veth", api="raw", tester="single")
    assert (single.scenario.tester, single.tester_why) == ("single", "set")


def test_the_single_tester_is_taken_where_the_split_would_outnumber_the_cores_even_so():
    """Three l2 NFs poll beside the tester: fewer pollers is still less contention."""
    point = _placed(switch="bridge", api="raw", nfs=3)
    assert point.scenario.tester == "single"
    assert point.tester_why == "auto: split would put 5 busy pollers on 2 cores"
    assert point.pollers == 4 and point.warnings


@pytest.mark.parametrize("flags, field", [
    ({"tester": "single", "api": "udp"}, "tester"),
    ({"tester": "split", "nfs": 1, "nf": "mirror", "api": "raw"}, "nf"),
    ({"nfs": 1, "nf": "mirror", "api": "udp"}, "nf"),          # auto: neither can
])
def test_a_tester_that_cannot_run_is_refused(flags, field):
    with pytest.raises(UserError) as e:
        scenarios(None, flags)
    assert e.value.field == field


def test_a_scenario_no_tester_can_run_names_both_reasons():
    """Each refusal alone would send the user to the tester the other refuses."""
    with pytest.raises(UserError) as e:
        scenarios(None, {"nfs": 1, "nf": "mirror", "api": "udp"})
    assert e.value.why == "nf mirror needs single and api udp needs split: neither " \
                               "tester can run it"


def test_the_refusals_are_the_checks():
    s = Scenario(switch="memif", api="dpdk")
    link = DATAPLANES["memif"].single_tester
    assert testers.refusal(s, "single", 2, link).why.startswith(
        "a single tester cannot hold both ends")
    assert testers.refusal(s, "split", 2, link) is None
    assert testers.problem(s, 2, link) is None             # auto: split can
    with pytest.raises(UserError, match="cannot hold both ends of one memif link"):
        scenarios(None, {"switch": "memif", "api": "dpdk", "tester": "single"})


def test_keys_are_hashed_from_the_tester_a_point_runs_with():
    """auto and the tester it chose are one point; the same scenario with the
    other tester is another."""
    def keys(**flags):
        return [p.key for p in load_plan(None, {**DPDK_SWITCH, "switch": "ovs", **flags})
                .plan.points]
    assert keys() == keys(tester="single") != keys(tester="split")
    veth = {"switch": "veth", "api": "raw", "cpus": "0-1"}
    assert load_plan(None, veth).plan.points[0].key == \
        load_plan(None, {**veth, "tester": "split"}).plan.points[0].key


@pytest.mark.parametrize("flags, skipped", [
    ({"tester": "auto,single"}, "skipped tester=single: the same point as tester=auto"),
    ({"tester": "split,auto,single"}, "skipped tester=single: the same point as tester=auto"),
    # a search's settings do not make a fixed rate's point another one
    ({"rate": "1k", "precision": "0.01,0.02"},
     "skipped precision=0.02: the same point as precision=0.01"),
])
def test_values_that_make_the_same_point_plan_it_once(flags, skipped, capsys):
    swept = load_plan(None, {**DPDK_SWITCH, "switch": "ovs", **flags})
    keys = [p.key for p in swept.plan.points]
    assert len(keys) == len(set(keys)) == len(swept.scenarios)
    assert swept.plan.skip_notes() == [skipped]
    argv = [f"--{k}={v}" for k, v in {**DPDK_SWITCH, "switch": "ovs", **flags}.items()]
    assert main(["run", *argv, "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert out.count("ovs dpdk throughput tester=") == len(keys)
    assert f"  {skipped}\n" in out


def test_a_run_planned_before_auto_is_resumed_with_the_split_tester():
    doc = {"switch": "ovs", **DPDK_SWITCH}
    old = checks.replan({"doc": doc})                           # no `defaults`: older
    assert [place_point(s).scenario.tester for s in old.scenarios] == ["split"]
    assert CHANGED_DEFAULTS["tester"] == "split"
    new = load_plan(None, doc)
    assert new.spec["defaults"]["tester"] == "auto"
    again = checks.replan(new.spec)
    assert [p.key for p in again.plan.points] == [p.key for p in new.plan.points]
    assert place_point(again.scenarios[0]).scenario.tester == "single"


def test_a_run_is_resumed_on_the_cores_it_was_planned_on(monkeypatch):
    """Where auto chose the single tester for want of cores, a resume with more
    usable keeps the plan's cores, its tester and keys (no point measured again)."""
    first = cores(2)[0]
    doc = {"switch": "veth", "api": "raw"}
    with monkeypatch.context() as m:
        for module in (checks.plans, checks.placement, plan_module):
            m.setattr(module, "usable_cpus", lambda: (first,))
        planned = load_plan(None, doc)
        placed = runner.test_points(planned, "1a2b")
    assert planned.spec["cpus"] == [first]
    assert [(p.scenario.tester, p.cpus) for p in placed] == [("single", (first,))]
    again = checks.replan(planned.spec)
    assert [p.key for p in again.plan.points] == [p.key for p in planned.plan.points]
    assert [(p.scenario.tester, p.cpus) for p in runner.test_points(again, "1a2b")] == \
        [("single", (first,))]
    with pytest.raises(UserError, match="planned on CPUs 4095; 4095 not usable here"):
        checks.replan({**planned.spec, "cpus": [4095]})


def test_the_dry_run_says_which_tester_and_why(capsys):
    assert main(["run", "--switch", "ovs,veth", "--api", "dpdk", "--cpus", "0-1",
                 "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert "[1] ovs dpdk throughput tester=single" in out
    assert "[2] veth dpdk throughput tester=split" in out
    assert "  tester single for ovs (auto: split would put 3 busy pollers on 2 cores)\n" in out
    assert "  tester split for veth (auto: split's 2 busy pollers fit on 2 cores)\n" in out


def _stored(tmp_path, *points) -> dict:
    store = Store(tmp_path)
    store.begin_run("1a2b", ["cnfperf"], len(points), tmp_path, {}, "0")
    for i, placed in enumerate(points):
        store.add_point("1a2b", i, placed.scenario.model_dump(), status="failed", started=0,
                        error="stopped", tester_why=placed.tester_why, pollers=placed.pollers,
                        point_cores=len(placed.cpus))
    return store.run("1a2b")


def test_the_store_and_the_run_table_say_which_tester_and_why(tmp_path):
    run = _stored(tmp_path, _placed(switch="ovs", **DPDK_SWITCH),
                  _placed(switch="testpmd", **DPDK_SWITCH),
                  _placed(switch="testpmd", tester="split", **DPDK_SWITCH),
                  _placed(switch="veth", api="raw", tester="split"))
    ovs = run["points"][0]
    assert (ovs["tester"], ovs["tester_why"], ovs["pollers"], ovs["point_cores"]) == \
        ("single", "auto: split would put 3 busy pollers on 2 cores", 2, 2)
    table = run_table(run)
    assert table.splitlines()[0].split()[:4] == ["switch", "api", "mode", "tester"]
    assert "tester single for ovs, testpmd (auto: split would put 3 busy pollers on 2 cores)" \
        in table
    assert "tester split for testpmd (set; 3 busy pollers on 2 cores: CPU contention)" in table
    assert "for veth" not in table                  # set, and its pollers fit: nothing to say
