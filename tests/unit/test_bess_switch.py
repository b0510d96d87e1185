"""The bess data plane's own rules, without BESS: the setup request its control
takes, what BESS's port stats mean per port, what it refuses."""
from __future__ import annotations

import json
import subprocess
import sys

from cnfperf.dataplanes import bess_app
from cnfperf.dataplanes.base import PortCounters
from cnfperf.dataplanes.bess import BessPlane
from cnfperf.scenario import Scenario


def test_a_link_s_modules_forward_by_mac_port_to_port_or_reflect_on_one_worker():
    links = [bess_app.LinkPlan("p0", "p1", ("02:00:00:00:00:01", "02:00:00:00:00:02"), 0),
             bess_app.LinkPlan("p2", "p3", ("02:00:00:00:00:03", "02:00:00:00:00:04"), 1),
             bess_app.LinkPlan("p4", "p5", ("02:00:00:00:00:05", "02:00:00:00:00:06"), 0,
                               "port"),
             bess_app.LinkPlan("p6", "p6", ("02:00:00:00:00:07", "02:00:00:00:00:07"), 1,
                               "reflect")]
    req = bess_app.request(links, {f"p{i}": f"net_vhost{i},iface=/s{i}" for i in range(7)},
                           {0: 3, 1: 5})
    assert req["do"] == "setup" and req["workers"] == [(0, 3), (1, 5)]
    # by MAC: an L2Forward holding both ends' MACs; port to port: none
    assert req["links"][1] == {"ports": ["p2", "p3"],
                               "macs": ["02:00:00:00:00:03", "02:00:00:00:00:04"], "worker": 1}
    assert req["links"][2] == {"ports": ["p4", "p5"], "macs": None, "worker": 0}
    assert len(req["links"]) == 3 and req["reflect"] == [{"port": "p6", "worker": 1}]
    assert req["ports"]["p2"] == "net_vhost2,iface=/s2"
    json.dumps(req)   # one JSON line to the control


def test_the_switch_s_view_of_a_port_from_bess_s_port_stats():
    # [inc packets, inc dropped, out packets, out dropped]
    stats = {"p0": [1000, 0, 990, 10], "p1": [990, 2, 975, 0]}
    assert bess_app.port_counters(stats, "p0", "p1") == PortCounters(
        rx_packets=1000, tx_packets=990, tx_dropped=10, rx_dropped=25)
    # what came from p1 and went out of p0 or was refused there: none lost on the way
    assert bess_app.port_counters(stats, "p1", "p0") == PortCounters(
        rx_packets=990, tx_packets=975, tx_dropped=0, rx_dropped=2)
    # a reflector sends back out of the port itself
    assert bess_app.port_counters({"p0": [50, 0, 48, 2]}, "p0", None).rx_dropped == 0


def test_its_own_cost_is_its_workers_usage_between_two_reads():
    """Each worker's root traffic class: [runs, cycles, packets], accumulated."""
    begun = {"!default_rr_0": [100, 50_000, 0], "!default_rr_1": [10, 1_000, 0]}
    now = {"!default_rr_0": [1100, 1_050_000, 4000], "!default_rr_1": [10, 1_000, 0]}
    cost = bess_app.cost(begun, now)
    assert cost["source"] == "bessctl get_tc_stats"
    assert (cost["packets"], cost["cycles_per_packet"], cost["vectors_per_call"]) == \
        (4000, 250.0, 4.0)
    assert cost["threads"][1] == {"thread": "!default_rr_1", "packets": 0,
                                  "cycles_per_packet": None, "vectors_per_call": None}
    assert bess_app.cost(now, now) is None        # no packet: nothing to say
    assert bess_app.cost({}, now)["packets"] == 4000   # a worker made since: from 0


def test_more_workers_than_links_is_refused_and_workers_do_not_float():
    assert BessPlane.scenario_problem(Scenario(switch="bess", switch_cores=2), 1)[0] == \
        "switch_cores"
    assert BessPlane.scenario_problem(Scenario(switch="bess", switch_cores=2), 2) is None
    assert not BessPlane.floats and BessPlane.max_size == 2052


def _control(build) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(bess_app.CONTROL), str(build),
                           "unix:/nonexistent.sock"], capture_output=True, text=True,
                          timeout=30, stdin=subprocess.DEVNULL)


def test_its_control_says_in_one_line_that_bessd_cannot_be_reached(tmp_path):
    """bess_ctl.py under any python, with a pybess that prints and fails: one
    JSON line on its stdout naming the URL and why, exit 1 (not a traceback);
    what pybess printed is on its stderr."""
    (tmp_path / "pybess").mkdir()
    (tmp_path / "pybess" / "__init__.py").write_text("")
    (tmp_path / "pybess" / "bess.py").write_text(
        "class BESS:\n"
        "    class RPCError(Exception): pass\n"
        "    def connect(self, grpc_url):\n"
        "        print('Connecting to', grpc_url)\n"
        "        raise RuntimeError('refused')\n")
    done = _control(tmp_path)
    assert done.returncode == 1
    [line] = done.stdout.splitlines()
    assert json.loads(line) == {
        "error": "cannot reach bessd at unix:/nonexistent.sock: RuntimeError: refused"}
    assert "Connecting to unix:/nonexistent.sock" in done.stderr


def test_its_control_says_in_one_line_that_pybess_is_missing(tmp_path):
    done = _control(tmp_path)
    [line] = done.stdout.splitlines()
    assert json.loads(line)["error"].endswith("ModuleNotFoundError: No module named 'pybess'")


def test_bessd_takes_its_memory_on_every_numa_node_bess_counts(tmp_path):
    possible = tmp_path / "possible"
    for text, nodes in (("0\n", 1), ("0-1\n", 2), ("0-3", 4), ("garbage", 1)):
        possible.write_text(text)
        assert bess_app.numa_nodes(possible) == nodes
    assert bess_app.numa_nodes(tmp_path / "none") == 1



def test_doctor_names_the_package_of_a_module_its_control_cannot_import(monkeypatch):
    from cnfperf.dataplanes import bess
    monkeypatch.setattr(bess, "CONTROL_MODULES", {"json": "libjson", "nosuch.mod": "x-pkg"})
    assert bess.control_problems() == [
        f"{bess_app.PYTHON} cannot import nosuch.mod, which BESS's control needs "
        "(apt install x-pkg)"]
