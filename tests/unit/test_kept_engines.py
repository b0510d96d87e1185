"""Engines kept across a point's trials (run/kept.py): which points keep them,
what a later trial's line says, and which trials may run on them."""
from __future__ import annotations

import subprocess
import sys

import pytest

from cnfperf import nfs
from cnfperf.engine import trial_line
from cnfperf.run import kept
from cnfperf.scenario import Scenario
from harness import placed_pair, scenarios


def _refusal(**fields):
    [s] = scenarios(None, fields)
    return kept.refusal(s, nfs.kind(s.nf) if s.nfs else None)


@pytest.mark.parametrize("fields", [
    {"switch": "veth", "api": "udp"},
    {"switch": "memif", "api": "dpdk", "nfs": 1, "nf": "l2"},
    {"switch": "bridge", "api": "raw", "nfs": 2, "nf": "l3", "mode": "latency"},
    {"switch": "testpmd", "api": "dpdk", "nfs": 1, "nf_in": "vm", "tester": "single"},
])
def test_engines_are_kept_where_every_node_is_an_engine_here(fields):
    assert _refusal(**fields) is None


@pytest.mark.parametrize("fields, why", [
    ({"engine_keep": False}, "engine_keep = no"),
    ({"switch": "memif", "api": "dpdk", "nfs": 1, "nf": "testpmd"}, "not the engine's"),
    ({"switch": "bridge", "api": "raw", "nfs": 1, "nf": "router"}, "not the engine's"),
    ({"switch": "veth", "api": "udp", "fault": "link:0", "fault_at": 0.2}, "fault"),
])
def test_engines_are_fresh_for_every_trial_elsewhere(fields, why):
    assert why in (_refusal(**fields) or "")


def test_engines_in_pods_are_fresh_for_every_trial():
    # as the scenario is, unchecked: checking it asks for a running cluster
    s = Scenario(switch="bridge", api="raw", endpoint_in="pod", tester="single")
    assert "pod" in (kept.refusal(s, None) or "")


def test_a_later_trials_line_is_a_senders_rate_duration_and_warmup_and_the_others_pace():
    s, pair, _ = placed_pair(api="raw", rate="250k", duration=0.5, poll="adaptive",
                             tester="split")
    assert trial_line(pair.sender, s, 0) == "250000 0.5 0\n"
    assert trial_line(pair.receiver, s, 0) == "250000 0.5 0\n"   # adaptive: its pace
    s, pair, _ = placed_pair(api="raw", rate="250k", duration=0.5, tester="split")
    assert trial_line(pair.receiver, s, 0.3) == "0 0.5 0.3\n"    # busy: none


def test_a_trial_may_run_on_them_only_if_it_differs_in_rate_duration_or_warmup():
    [s] = scenarios(None, {"api": "raw", "rate": "20k"})
    engines = kept.KeptEngines()
    assert engines.fits(s)    # none running: anything
    engines.keep(s, [], {"procs": {"a": None}, "outputs": {}, "nodes": {}, "commands": {},
                         "started_ns": {}, "stderr": {}})
    assert engines.running and engines.trials == 1
    [faster] = scenarios(None, {"api": "raw", "rate": "40k", "duration": 0.5, "warmup": 0})
    assert engines.fits(faster)
    assert not engines.fits(s.model_copy(update={"size": 128}))


def test_release_lets_them_go_in_order_and_says_who_did_not_exit_cleanly(tmp_path):
    def proc(code: int) -> subprocess.Popen:
        return subprocess.Popen([sys.executable, "-c",
                                 f"import sys; sys.stdin.read(); sys.exit({code})"],
                                stdin=subprocess.PIPE, stdout=subprocess.PIPE)

    class Out:
        def __init__(self):
            self.raw = open(tmp_path / "x", "w")

        def join(self, timeout):
            pass
    engines = kept.KeptEngines()
    procs = {"s": proc(0), "n": proc(0), "r": proc(3)}
    engines.keep(scenarios(None, {})[0], [["s"], ["n"], ["r"]],
                 {"procs": procs, "outputs": {k: Out() for k in procs}, "nodes": {},
                  "commands": {}, "started_ns": {}, "stderr": {}})
    with pytest.raises(Exception, match="engine in r exited with code 3"):
        engines.release()
    assert not engines.running and procs["s"].returncode == 0 == procs["n"].returncode
