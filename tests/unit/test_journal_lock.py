"""The write-ahead journal and the host lock, on real files."""
from __future__ import annotations

import json
import multiprocessing
import os

import pytest

from cnfperf.host.journal import Journal, replay
from cnfperf.host.lock import LOCK_PATH, HostBusy, HostLock


def test_replay_keeps_what_was_added_and_not_discarded_in_order(tmp_path):
    j = Journal(tmp_path / "cnfp1a2b.journal")
    j.add("netns", "cnfp1a2bp0s")
    j.add("netns", "cnfp1a2bp0r")
    j.add("link", "cnfp1a2bp0s", netns="cnfp1a2bp0s")
    j.add("container", "cnfp1a2bp0s", runtime="runc", bundle=tmp_path / "b")
    j.discard("netns", "cnfp1a2bp0r")
    live = j.live()
    assert [(e.kind, e.name) for e in live] == [
        ("netns", "cnfp1a2bp0s"), ("link", "cnfp1a2bp0s"), ("container", "cnfp1a2bp0s")]
    assert live[2].info == {"runtime": "runc", "bundle": str(tmp_path / "b")}
    j.close(remove=False)
    assert (tmp_path / "cnfp1a2b.journal").exists()


def test_a_line_torn_by_a_kill_does_not_hide_the_others(tmp_path):
    path = tmp_path / "j"
    j = Journal(path)
    j.add("netns", "a")
    j.close(remove=False)
    with open(path, "a") as f:
        f.write('{"op": "add", "kind": "netns", "na')
    assert [e.name for e in replay(path)] == ["a"]


def test_closing_a_clean_journal_removes_it(tmp_path):
    j = Journal(tmp_path / "j")
    j.add("dir", "/x")
    j.discard("dir", "/x")
    j.close(remove=not j.live())
    assert not (tmp_path / "j").exists()


def _hold(path: str, run_id: str, locked, release) -> None:
    lock = HostLock(__import__("pathlib").Path(path))
    lock.acquire(run_id)
    locked.set()
    release.wait(10)
    lock.release()


def test_second_holder_is_refused_with_the_first_ones_name(tmp_path):
    path = tmp_path / "lock"
    ctx = multiprocessing.get_context("fork")
    locked, release = ctx.Event(), ctx.Event()
    holder = ctx.Process(target=_hold, args=(str(path), "1a2b", locked, release))
    holder.start()
    try:
        assert locked.wait(10)
        with pytest.raises(HostBusy) as e:
            HostLock(path).acquire("beef")
        assert e.value.holder["run"] == "1a2b" and e.value.holder["pid"] == holder.pid
        assert "run 1a2b" in str(e.value) and f"pid {holder.pid}" in str(e.value)
    finally:
        release.set()
        holder.join(10)
    # Released: the file is gone and the next run gets the lock.
    assert not path.exists()
    lock = HostLock(path)
    lock.acquire("beef")
    assert json.loads(path.read_text())["pid"] == os.getpid()
    lock.release()
    assert not path.exists()


def test_a_stale_lock_file_of_a_killed_run_is_taken_over(tmp_path):
    path = tmp_path / "lock"
    path.write_text('{"run": "dead", "pid": 999999}')
    lock = HostLock(path)
    lock.acquire("1a2b")
    assert json.loads(path.read_text())["run"] == "1a2b"
    lock.release()


def test_a_run_asks_for_the_lock_before_it_checks_the_host(tmp_path):
    """Another run's switch or links must not pass for a problem of this host:
    a second run is told the host is busy (exit 3), not that it cannot run."""
    from cnfperf.run import runner
    from cnfperf.host.facts import EngineFacts
    from cnfperf.scenario import Scenario

    checked = []
    host = type("Host", (), {"engine": EngineFacts(problem="not built")})()
    opts = runner.RunOptions(engine=tmp_path / "engine", results=tmp_path / "results", host=host,
                             command=[], state=tmp_path, names=list,
                             check=lambda scenarios, host: checked.append(1))
    with HostLock(tmp_path / LOCK_PATH.name) as first:
        first.acquire("cafe")
        with pytest.raises(HostBusy, match="run cafe"):
            runner.execute([Scenario()], opts)
    assert checked == [], "the host was checked before the lock was taken"
