"""Host preparation for DPDK: 2 MB hugepages, a private hugetlbfs mount, and the
removal of what DPDK processes leave on the host.

A test point adds the pages it needs to the pool and later takes exactly that
many away again, so pages someone else reserved (at boot, or another tool) are
neither used nor released by us. Every step is journaled before it happens;
`UNDO` reverses a journal entry after a killed run, and tolerates steps that
never happened.
"""
from __future__ import annotations

import contextlib
import glob
import os
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from cnfperf import PREFIX, SystemFailure
from cnfperf.host.system import CommandFailed, mounts, run

PAGE_MB = 2
POOL = Path("/sys/kernel/mm/hugepages/hugepages-2048kB")
DPDK_RUNTIME = Path("/var/run/dpdk")


class HugepageError(SystemFailure):
    """Hugepages could not be reserved, mounted or released."""


@dataclass(frozen=True)
class PoolState:
    total: int
    free: int
    reserved: int  # promised to a mapping but not yet faulted in: not usable by us

    @property
    def available(self) -> int:
        return self.free - self.reserved


def pages_for(megabytes: int) -> int:
    """2 MB pages covering `megabytes`, rounded up."""
    return -(-int(megabytes) // PAGE_MB)


def pool_state(pool: Path = POOL) -> PoolState:
    def read(name: str) -> int:
        return int((pool / name).read_text())
    try:
        return PoolState(read("nr_hugepages"), read("free_hugepages"), read("resv_hugepages"))
    except FileNotFoundError:
        raise HugepageError(f"{pool}: this kernel offers no 2 MB hugepages "
                            "(CONFIG_HUGETLBFS off?)") from None
    except (OSError, ValueError) as e:
        raise HugepageError(f"cannot read the hugepage pool {pool}: {e}") from None


def _write_total(total: int, pool: Path) -> int:
    path = pool / "nr_hugepages"
    try:
        path.write_text(f"{total}\n")
    except PermissionError:
        raise HugepageError(f"cannot write {path}: reserving hugepages needs root") from None
    except OSError as e:
        raise HugepageError(f"cannot write {path}: {e.strerror}") from None
    return pool_state(pool).total


def reserve(pages: int, name: str, journal: Any = None, pool: Path = POOL) -> int:
    """Add `pages` 2 MB pages to the pool; return how many were added.

    On top of what is there, not "up to": free pages in the pool may be someone
    else's, reserved but not yet mapped, and counting them as ours would starve
    one of us halfway through a run. Only when the kernel cannot grant more
    (memory fragmented) do pages already free do, if there are enough."""
    before = pool_state(pool)
    if pages <= 0:
        return 0
    if journal is not None:
        journal.add("hugepages", name, before=before.total, added=pages, pool=str(pool))
    granted = max(0, _write_total(before.total + pages, pool) - before.total)
    if granted < pages and pool_state(pool).available < pages:
        release(granted, pool)
        if journal is not None:
            journal.discard("hugepages", name)
        raise HugepageError(
            f"could not reserve {pages} hugepages of 2 MB ({pages * PAGE_MB} MB): the kernel "
            f"granted {granted} and {before.available} were free; free some memory, or reserve "
            "them at boot (kernel command line hugepages=N) and retry")
    if journal is not None and granted != pages:
        journal.add("hugepages", name, before=before.total, added=granted, pool=str(pool))
    return granted


def release(added: int, pool: Path = POOL) -> None:
    """Give back the pages reserve() added, as a difference: pages other users
    added or gave back meanwhile stay theirs."""
    if added <= 0:
        return
    current = pool_state(pool).total
    _write_total(max(0, current - added), pool)


def hugetlbfs_mounts() -> dict[str, str]:
    """Mount point -> source for every hugetlbfs mount of 2 MB pages."""
    return {m.point: m.source for m in mounts()
            if m.fstype == "hugetlbfs" and "pagesize=1024M" not in m.options}


def mount(path: Path, name: str, journal: Any = None) -> None:
    """Mount a private hugetlbfs at path; the source is named after the run so
    `cnfperf cleanup` recognises it in /proc/mounts."""
    if journal is not None:
        journal.add("hugetlbfs", str(path), source=name)
    path.mkdir(parents=True, exist_ok=True)
    try:
        run(["mount", "-t", "hugetlbfs", "-o", "pagesize=2M,mode=1770", name, path],
            what=f"mount hugetlbfs at {path}")
    except CommandFailed:
        with contextlib.suppress(OSError):
            path.rmdir()
        raise


def unmount(path: Path) -> None:
    """Unmount and remove the mount point. A process that still maps a file keeps
    the mount busy: then detach it lazily, so its pages go when that process does."""
    if str(path) in hugetlbfs_mounts():
        try:
            run(["umount", path])
        except CommandFailed:
            run(["umount", "--lazy", path], check=False)
    with contextlib.suppress(FileNotFoundError):
        for leftover in path.iterdir():
            leftover.unlink()  # still mounted (busy) or plain files: both ours
        try:
            path.rmdir()
        except OSError as e:
            raise HugepageError(f"cannot remove {path}: {e.strerror}; "
                                "a process still uses it, retry `cnfperf cleanup` later") from None


def remove_dpdk_files(file_prefix: str) -> list[str]:
    """Remove DPDK runtime directories and hugepage files whose names start with
    file_prefix; return what was removed. Only our own prefixes are accepted."""
    if not file_prefix.startswith(PREFIX) or "/" in file_prefix:
        raise ValueError(f"file prefix {file_prefix!r}: only {PREFIX}… prefixes are removed")
    removed = []
    for d in glob.glob(f"{glob.escape(str(DPDK_RUNTIME))}/{glob.escape(file_prefix)}*"):
        shutil.rmtree(d, ignore_errors=True)
        removed.append(d)
    for point in hugetlbfs_mounts():
        for f in glob.glob(f"{glob.escape(point)}/{glob.escape(file_prefix)}*"):
            with contextlib.suppress(FileNotFoundError, IsADirectoryError):
                os.unlink(f)
                removed.append(f)
    return removed


class Hugepages:
    """Pages and a private hugetlbfs mount for one test point.

        with Hugepages(96, "cnfp1a2b", run_dir, journal) as hp:
            ... DPDK processes use --huge-dir hp.mount_point ...
    On exit: DPDK files with the prefix removed, mount gone, pages given back.
    """

    def __init__(self, pages: int, prefix: str, run_dir: Path, journal: Any = None,
                 pool: Path = POOL):
        if not prefix.startswith(PREFIX):
            raise ValueError(f"prefix {prefix!r} must start with {PREFIX}")
        self.pages = pages
        self.prefix = prefix
        self.mount_point = Path(run_dir) / f"{prefix}.hugepages"
        self.journal = journal
        self.pool = pool
        self.added = 0
        self._mounted = False

    def __enter__(self) -> "Hugepages":
        try:
            if self.journal is not None:
                self.journal.add("dpdk-files", self.prefix)
            self.added = reserve(self.pages, self.prefix, self.journal, self.pool)
            mount(self.mount_point, f"{self.prefix}-hugetlbfs", self.journal)
            self._mounted = True
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Safe to call twice and after a partial start."""
        try:
            remove_dpdk_files(self.prefix)
            self._discard("dpdk-files", self.prefix)
            if self._mounted or self.mount_point.exists():
                unmount(self.mount_point)
                self._mounted = False
                self._discard("hugetlbfs", str(self.mount_point))
        finally:  # a busy mount must not keep the pages
            if self.added:
                release(self.added, self.pool)
                self.added = 0
                self._discard("hugepages", self.prefix)

    def _discard(self, kind: str, name: str) -> None:
        if self.journal is not None:
            self.journal.discard(kind, name)


class OwnDir(Hugepages):
    """Hugepages whose mount is in a run directory of their own (a data plane's
    that has no other), made and journaled before them, removed after them."""

    def __init__(self, pages: int, prefix: str, run_dir: Path, journal: Any = None):
        super().__init__(pages, prefix, run_dir, journal)
        self.run_dir = Path(run_dir)

    def __enter__(self) -> "OwnDir":
        if self.journal is not None:
            self.journal.add("dir", str(self.run_dir))
        self.run_dir.mkdir(parents=True)
        super().__enter__()
        return self

    def close(self) -> None:
        try:
            super().close()
        finally:
            shutil.rmtree(self.run_dir, ignore_errors=True)
            self._discard("dir", str(self.run_dir))


# Undo a journal entry left by a killed run: kind -> fn(name, info) -> whether
# there was anything left to undo.
def _undo_hugepages(name: str, info: dict[str, Any]) -> bool:
    # The entry is written just before the pool grows: a run killed in between
    # (one write(2)) would give back pages it never got; accepted, as the
    # alternative is keeping every page a killed run took.
    added = int(info.get("added", 0))
    release(added, Path(info.get("pool", POOL)))
    return added > 0


def _undo_mount(name: str, info: dict[str, Any]) -> bool:
    path = Path(name)
    if not path.exists():
        return False
    unmount(path)
    return True


def _undo_dpdk_files(name: str, info: dict[str, Any]) -> bool:
    return bool(remove_dpdk_files(name))


UNDO: dict[str, Callable[[str, dict[str, Any]], bool]] = {
    "hugepages": _undo_hugepages,
    "hugetlbfs": _undo_mount,
    "dpdk-files": _undo_dpdk_files,
}
