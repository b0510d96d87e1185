"""While the senders run, a trial looks at every other node's process
(run/trial.py, Trial._running): one that ended fails the point at once, with
its last words, instead of when the senders have had their whole duration (a
crashed NF; a host whose connection was lost ends its processes: remote/client.py)."""
from __future__ import annotations

from types import SimpleNamespace as NS

import pytest

from cnfperf import SystemFailure
from cnfperf.run.trial import Trial


class Proc:
    def __init__(self, code=None):
        self.code = code

    def poll(self):
        return self.code


def _trial(tmp_path, codes: dict[str, int | None], switch: str | None = None) -> Trial:
    """`switch`: what a switch that keeps says of itself (stale())."""
    t = Trial.__new__(Trial)
    t.out = tmp_path
    t.bed = NS(dataplane=NS(keeps=True, stale=lambda: switch))
    t.procs = {name: Proc(code) for name, code in codes.items()}
    t.nodes = {name: NS(name=name, role="nf" if "n" in name else "send") for name in codes}
    t.outputs = {name: NS(join=lambda timeout: None, problems=[]) for name in codes}
    t.stderr = {name: tmp_path / f"{name}.stderr" for name in codes}
    return t


def test_an_engine_s_failure_quotes_its_last_lines_and_a_gone_switch(tmp_path):
    lines = [f"EAL: line {i}" for i in range(20)] + ["dpdk: port 0 not found"]
    (tmp_path / "n0.stderr").write_text("\n".join(lines) + "\n")
    t = _trial(tmp_path, {"a0": None, "n0": 1},
               switch="ovs-vswitchd exited with code -11: dpdk|ERR|out of memory")
    with pytest.raises(SystemFailure) as failed:
        t._running([NS(name="a0")])
    said = str(failed.value)
    assert "EAL: line 13 | " in said and "EAL: line 12" not in said
    assert said.endswith("dpdk: port 0 not found; the switch: ovs-vswitchd exited with "
                         "code -11: dpdk|ERR|out of memory")


def test_every_node_running_is_no_failure(tmp_path):
    _trial(tmp_path, {"a0": None, "n0": None, "r0": None})._running([NS(name="a0")])


def test_a_sender_is_its_own_wait_s_to_watch(tmp_path):
    # the senders end by themselves with their summaries: _await's to judge
    _trial(tmp_path, {"a0": 0, "n0": None})._running([NS(name="a0")])


def test_a_node_that_ended_fails_the_point_with_its_last_words(tmp_path):
    (tmp_path / "n0.stderr").write_text("cnfperf: host dut: the connection was lost\n")
    t = _trial(tmp_path, {"a0": None, "n0": 255})
    with pytest.raises(SystemFailure, match="engine nf in n0 exited with code 255 while the "
                                            "senders ran: cnfperf: host dut: the connection "
                                            "was lost"):
        t._running([NS(name="a0")])
