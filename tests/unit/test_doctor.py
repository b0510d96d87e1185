"""`cnfperf doctor` on a host that lacks things: every data plane it cannot
use is named with what is missing and the Debian package that has it."""
from __future__ import annotations

import pytest

from cnfperf import SystemFailure
from cnfperf.run import checks
from cnfperf.host import facts as host_facts
from cnfperf.host import tools
from cnfperf.dataplanes import DATAPLANES
from cnfperf.engine import find_engine
from cnfperf.fields import APIS
from harness import scenarios


def test_a_missing_tool_is_named_with_its_package(monkeypatch):
    found = tools.find
    monkeypatch.setattr(tools, "find", lambda name, *table:
                        None if name == "dpdk-testpmd" else found(name, *table))
    facts = host_facts.gather(find_engine())
    matrix = checks.matrix(facts)
    assert "dpdk-testpmd not found (Debian package dpdk-dev)" in matrix["dataplanes"]["testpmd"]["problems"]
    assert "  testpmd: dpdk-testpmd not found (Debian package dpdk-dev)" in \
        host_facts.render(facts, matrix).splitlines()


def test_a_host_without_tools_names_a_package_for_every_data_plane(monkeypatch):
    monkeypatch.setattr(tools, "find", lambda name, *table: None)
    facts = host_facts.gather(find_engine())
    facts.root = True                      # what is missing, not who asks
    facts.engine = host_facts.EngineFacts(path="e", version="0", apis=["udp", "raw"])
    matrix = checks.matrix(facts)
    for name in DATAPLANES:
        problems = matrix["dataplanes"][name]["problems"]
        assert any("(Debian package " in p for p in problems), (name, problems)
    assert "api dpdk: the engine was built without it (Debian package libdpdk-dev, then make build)" \
        in matrix["dataplanes"]["vhost"]["problems"]


def test_preflight_names_a_command_nf_the_host_lacks():
    facts = host_facts.gather(find_engine())
    [s] = scenarios(None, {"api": "raw", "nfs": 1, "runtime": "netns",
                           "nf": "cmd:no-such-nf-here {iface1} {iface2}"})
    with pytest.raises(SystemFailure, match="nf no-such-nf-here: not found on this host's PATH"):
        checks.preflight([s], facts)


def test_a_switch_build_says_where_it_is_and_whether_it_is_stale():
    built = {"problem": None, "path": "/p/vpp", "stamp": "0123456789ab"}
    assert host_facts._build({**built, "state": "up to date"}) == "/p/vpp (stamp 0123456789ab)"
    assert host_facts._build({**built, "state": "stale"}) == \
        "/p/vpp (stamp 0123456789ab, stale: make switches)"
    # another checkout built the current sources: linking it is all make switches does
    assert host_facts._build({**built, "state": "cached"}) == \
        "/p/vpp (stamp 0123456789ab, stale: make switches links the cached build)"
    assert host_facts._build({**built, "problem": "vpp not built (…)"}) == "vpp not built (…)"


def test_the_build_states_are_what_the_build_script_says():
    """doctor reads switches/build.sh --check (builds.states): the states it
    knows are the ones the script's state() prints (the cache's rules, which
    it sources)."""
    import re
    from cnfperf.host import builds
    script = (builds.CHECKOUT / "builds" / "cache.sh").read_text()
    body = script[script.index("\nstate() {"):]
    body = body[:body.index("\n}\n")]
    said = re.findall(r'^\s*echo "?([^"\n]+?)"?$', body, re.M)
    assert tuple(said) == builds.STATES


def test_a_plugin_s_probe_is_a_row_of_doctor_and_a_fact_runs_store():
    """host/ prints and stores what the plugins declare (facts.Probe), each
    probe's fact under its key beside the other facts, as runs stored the OVS
    and VPP rows before the plugins declared them."""
    probes = (host_facts.Probe("toy", "Toy", lambda: "toy 1.0"),
              host_facts.Probe("gone", "Gone", lambda: None, lambda: "gone not found (Debian "
                                                                      "package gone)"))
    facts = host_facts.gather(None, (), probes)
    stored = facts.to_dict()
    assert (stored["toy"], stored["gone"]) == ("toy 1.0", None)
    assert "probes" not in stored and "probe_rows" not in stored
    plane = {"apis": {a: "yes" for a in APIS}, "problems": []}
    rows = host_facts.render(facts, {"runtimes": {}, "dataplanes": {"veth": plane}}).splitlines()
    assert [r.split(None, 1) for r in rows if r.strip().startswith(("Toy", "Gone"))] == [
        ["Toy", "toy 1.0"], ["Gone", "gone not found (Debian package gone)"]]
    from cnfperf.run import declared
    assert [p.key for p in declared.probes()] == ["ovs_dpdk", "vpp", "bess"]   # what runs stored
    with pytest.raises(ValueError, match="probes named like host facts: kernel"):
        host_facts.gather(None, (), (host_facts.Probe("kernel", "Kernel", lambda: "7"),))


def test_only_doctor_compares_the_builds_with_their_sources(monkeypatch):
    """Comparing a build with its sources hashes their trees (a second per run
    of switches/build.sh --check): doctor compares, a run stores the stamp it used."""
    from cnfperf.host import builds
    from cnfperf.run import declared
    asked = []
    monkeypatch.setattr(builds, "states", lambda names=(): asked.append(list(names)) or {})
    run = declared.gather(None)
    assert not asked and run.builds and all(b["state"] is None for b in run.builds.values())
    declared.gather(None, compare=True)
    assert asked == [list(run.builds)]
