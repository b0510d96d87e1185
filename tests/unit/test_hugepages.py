"""Hugepage accounting against a pool directory laid out like sysfs
(/sys/kernel/mm/hugepages/hugepages-2048kB): no root, no real pages."""
from __future__ import annotations

from pathlib import Path

import pytest

from cnfperf.host import hugepages
from cnfperf.host.hugepages import HugepageError, pages_for, pool_state, release, reserve
from cnfperf.host.journal import Journal


def make_pool(tmp_path: Path, total: int, free: int | None = None, resv: int = 0) -> Path:
    pool = tmp_path / "hugepages-2048kB"
    pool.mkdir()
    (pool / "nr_hugepages").write_text(f"{total}\n")
    (pool / "free_hugepages").write_text(f"{total if free is None else free}\n")
    (pool / "resv_hugepages").write_text(f"{resv}\n")
    return pool


def total(pool: Path) -> int:
    return int((pool / "nr_hugepages").read_text())


@pytest.mark.parametrize("mb,pages", [(0, 0), (1, 1), (2, 1), (3, 2), (64, 32), (256, 128)])
def test_pages_cover_the_megabytes(mb, pages):
    assert pages_for(mb) == pages


def test_free_pages_exclude_the_reserved_ones(tmp_path):
    state = pool_state(make_pool(tmp_path, total=100, free=40, resv=15))
    assert (state.total, state.available) == (100, 25)


def test_reserve_adds_on_top_of_pages_others_hold_and_release_gives_back_the_same(tmp_path):
    pool = make_pool(tmp_path, total=64, free=64)   # free, but perhaps someone's
    journal = Journal(tmp_path / "run.journal")
    added = reserve(96, "cnfp0001", journal, pool)
    assert added == 96 and total(pool) == 160
    entry, = journal.live()
    assert (entry.kind, entry.name, entry.info["added"], entry.info["before"]) == \
        ("hugepages", "cnfp0001", 96, 64)
    release(added, pool)
    assert total(pool) == 64


def test_release_leaves_pages_another_user_added_meanwhile(tmp_path):
    pool = make_pool(tmp_path, total=10)
    added = reserve(20, "cnfp0002", None, pool)
    (pool / "nr_hugepages").write_text("45\n")      # someone else added 15
    release(added, pool)
    assert total(pool) == 25


def test_nothing_to_reserve_touches_nothing(tmp_path):
    pool = make_pool(tmp_path, total=7)
    assert reserve(0, "cnfp0003", None, pool) == 0
    release(0, pool)
    assert total(pool) == 7


def _kernel_grants_at_most(monkeypatch, limit: int) -> None:
    """sysfs semantics: the kernel keeps what it could allocate, not what was asked."""
    write = hugepages._write_total

    def capped(want: int, pool: Path) -> int:
        return write(min(want, limit), pool)
    monkeypatch.setattr(hugepages, "_write_total", capped)


def test_a_short_grant_is_rolled_back_and_explained(tmp_path, monkeypatch):
    pool = make_pool(tmp_path, total=8, free=2)
    journal = Journal(tmp_path / "run.journal")
    _kernel_grants_at_most(monkeypatch, 40)
    with pytest.raises(HugepageError) as err:
        reserve(100, "cnfp0004", journal, pool)
    assert total(pool) == 8, "the partial grant is given back"
    assert journal.live() == []
    msg = str(err.value)
    assert "100 hugepages of 2 MB (200 MB)" in msg and "granted 32" in msg
    assert "hugepages=N" in msg


def test_a_short_grant_is_enough_when_free_pages_cover_it(tmp_path, monkeypatch):
    # Fragmented memory, but the admin reserved plenty at boot.
    pool = make_pool(tmp_path, total=512, free=512)
    _kernel_grants_at_most(monkeypatch, 520)
    assert reserve(100, "cnfp0005", None, pool) == 8
    assert total(pool) == 520


def test_writing_the_pool_needs_root(tmp_path, monkeypatch):
    pool = make_pool(tmp_path, total=0)
    # What writing sysfs's nr_hugepages answers a user who is not root (root
    # itself writes a read-only file in tmp_path, so the answer is imitated).
    def refused(self, *args, **kw):
        raise PermissionError(13, "Permission denied", str(self))
    monkeypatch.setattr(hugepages.Path, "write_text", refused)
    with pytest.raises(HugepageError, match="needs root"):
        reserve(4, "cnfp0006", None, pool)


def test_a_pool_that_cannot_be_written_is_reported(tmp_path):
    pool = make_pool(tmp_path, total=0)
    (pool / "nr_hugepages").unlink()
    (pool / "nr_hugepages").mkdir()          # reads fail as they would on a broken sysfs
    with pytest.raises(HugepageError, match="cannot read the hugepage pool"):
        reserve(4, "cnfp0008", None, pool)


def test_undo_of_a_killed_run_gives_its_pages_back(tmp_path):
    pool = make_pool(tmp_path, total=30)
    journal = Journal(tmp_path / "run.journal")
    reserve(12, "cnfp0007", journal, pool)
    entry, = journal.live()
    assert hugepages.UNDO["hugepages"](entry.name, entry.info) is True
    assert total(pool) == 30


def test_every_kind_journaled_here_can_be_undone():
    assert set(hugepages.UNDO) == {"hugepages", "hugetlbfs", "dpdk-files"}


@pytest.mark.parametrize("prefix", ["rte", "", "../cnfp", "cnfp/../x", "ovs"])
def test_only_our_dpdk_files_are_ever_removed(prefix):
    with pytest.raises(ValueError):
        hugepages.remove_dpdk_files(prefix)


def test_a_missing_pool_is_reported_not_crashed(tmp_path):
    with pytest.raises(HugepageError, match="no 2 MB hugepages"):
        pool_state(tmp_path / "nope")
