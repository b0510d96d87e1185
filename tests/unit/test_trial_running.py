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


def _trial(tmp_path, codes: dict[str, int | None]) -> Trial:
    t = Trial.__new__(Trial)
    t.out = tmp_path
    t.procs = {name: Proc(code) for name, code in codes.items()}
    t.nodes = {name: NS(name=name, role="nf" if "n" in name else "send") for name in codes}
    t.outputs = {name: NS(join=lambda timeout: None, problems=[]) for name in codes}
    return t


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
