"""run/daemons.py's own steps around an NF kind's daemons: a link from a
build's state directory to the NF's home, made and journaled, gone with the
point; a configuration command that fails names the daemons' error (the e2e
starts real ones: tests/e2e/orchestrator/test_faults.py)."""
from __future__ import annotations

import sys

import pytest

from cnfperf import SystemFailure
from cnfperf.host.journal import Journal
from cnfperf.run import daemons
from cnfperf.run.teardown import Signals, Teardown


def test_a_link_to_the_home_is_made_with_its_parents_and_goes_with_them(tmp_path):
    home, state = tmp_path / "home", tmp_path / "state"
    home.mkdir()
    journal = Journal(tmp_path / "run.journal")
    teardown = Teardown(Signals())
    first, second = state / "lib" / "frr" / "a", state / "lib" / "frr" / "b"
    daemons._link(first, home, journal, teardown)
    daemons._link(second, home, journal, teardown)
    assert first.resolve() == home and second.resolve() == home
    # what a killed run's cleanup removes: the parents the first made, and both links
    assert {(e.kind, e.name) for e in journal.live()} == {
        ("dir", str(state)), ("dir", str(state / "lib")), ("dir", str(state / "lib" / "frr")),
        ("file", str(first)), ("file", str(second))}
    teardown.close()
    assert not state.exists() and home.is_dir() and journal.live() == []
    assert teardown.cleaned == [f"link {second}", f"link {first}"] and not teardown.failed


def test_a_parent_that_was_there_stays(tmp_path):
    home, state = tmp_path / "home", tmp_path / "state"
    home.mkdir()
    state.mkdir()
    teardown = Teardown(Signals())
    daemons._link(state / "a", home, Journal(tmp_path / "run.journal"), teardown)
    teardown.close()
    assert state.is_dir() and list(state.iterdir()) == []


def test_a_configuration_that_fails_names_the_daemons_error(tmp_path):
    said = "Exiting?\nline 2: % Unknown command[4]: ip route garbage\n[12|mgmtd] failure: 2"
    with pytest.raises(SystemFailure, match=r"^r1: configuring its daemons failed \(.* exited "
                                            r"2\): line 2: % Unknown command\[4\]: ip route "
                                            r"garbage$"):
        daemons._configure("r1", [sys.executable, "-c",
                                  f"import sys; print({said!r}); sys.exit(2)"], tmp_path)
    assert "ip route garbage" in (tmp_path / "configure.out").read_text()
    daemons._configure("r1", [sys.executable, "-c", "pass"], tmp_path)
