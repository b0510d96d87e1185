"""`cnfperf lab`'s input: a bad flag is one line and exit code 2, before
anything is made (no VM, no file under the run directory)."""
from __future__ import annotations

import os

import pytest

from cnfperf.cli import main
from cnfperf.host.keeper import Keeper
from cnfperf.remote import lab


@pytest.mark.parametrize("argv, said", [
    (["--wires", "9"], f"--wires: 9 is not within 0-{lab.MAX_WIRES}"),
    (["--pfs", "-1"], f"--pfs: -1 is not within 0-{lab.MAX_PFS}"),
    (["--name", "Dut"], "--name: 'Dut' is no host name"),
    (["--name", "local"], "--name: 'local' is this machine's name in an inventory"),
])
def test_bad_input_is_one_line_and_exit_2(argv, said, capsys, tmp_path, monkeypatch):
    monkeypatch.setattr(lab, "OWNER", tmp_path / "lab.owner")
    assert main(["lab", *argv]) == 2
    err = capsys.readouterr().err
    if os.geteuid() != 0:
        said = "lab: needs root"
    assert said in err and err.count("\n") == 1, err
    assert not any(tmp_path.iterdir())


def test_a_running_lab_is_named_and_a_second_refused_with_exit_3(capsys, tmp_path, monkeypatch):
    if os.geteuid() != 0:
        pytest.skip("cnfperf lab asks for root first")
    monkeypatch.setattr(lab, "OWNER", tmp_path / "lab.owner")
    monkeypatch.setattr(lab, "KEEPER", Keeper("a lab", lab.OWNER, lab.JOURNAL))
    with lab.owned():
        assert lab.owner() == os.getpid()
        assert main(["lab"]) == 3
        assert f"a lab runs already (pid {os.getpid()})" in capsys.readouterr().err
        with pytest.raises(lab.LabError, match="one at a time"), lab.owned():
            pass
        with pytest.raises(lab.LabError, match="not leftovers"):
            lab.leftovers()
    assert lab.owner() is None and not lab.OWNER.exists()


def test_a_dead_owner_s_journal_is_leftovers(tmp_path, monkeypatch):
    """An owner file whose pid is gone (or is another process now) keeps no lab."""
    monkeypatch.setattr(lab, "OWNER", tmp_path / "lab.owner")
    monkeypatch.setattr(lab, "JOURNAL", tmp_path / "lab.journal")
    monkeypatch.setattr(lab, "KEEPER", Keeper("a lab", lab.OWNER, lab.JOURNAL))
    lab.JOURNAL.write_text("")
    lab.OWNER.write_text('{"pid": %d, "start": "0"}' % os.getpid())   # not this process's start
    assert lab.owner() is None and lab.dead_journals() == [lab.JOURNAL]
