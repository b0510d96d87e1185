"""`cnfperf cleanup`: remove what killed runs left, by journal first, then by name.

The journals say exactly what each run created (including things without our
prefix, such as bundle directories); the prefix scan catches what a journal
cannot know about, such as a run killed between creating a thing and writing
its journal line would have been (it journals first, but cleanup does not
assume so).
"""
from __future__ import annotations

import contextlib
import re
import shutil
import signal
from pathlib import Path
from typing import Callable

from cnfperf import PREFIX, SystemFailure
from cnfperf.cluster import node
from cnfperf.dataplanes import DATAPLANES
from cnfperf.host import hugepages, pci
from cnfperf.host.links import del_link, del_netns, give_back_nic, links, netns_list
from cnfperf.host.journal import RUN_DIR, Entry, all_journals, replay
from cnfperf.host.lock import HostBusy, HostLock
from cnfperf.remote import lab
from cnfperf.runtimes import RUNTIMES
from cnfperf.runtimes.pod import images as pod_images, pods, runtime as pod_runtime
from cnfperf.host.system import (KILL_WAIT_S, proc_stat, signal_all, unmount_under,
                                 wait_gone)
from cnfperf.run.teardown import Interrupted


# What run names look like: the prefix and a run id of 4 hex digits (plan.py).
# Names that merely start with the prefix (someone's `cnfpA`) are not ours.
RUN_NAME = re.compile(re.escape(PREFIX) + r"[0-9a-f]{4}(?![0-9a-f])")


def cleanup(force: bool = False, run_id: str | None = None) -> tuple[list[str], list[str]]:
    """(removed, failed): one line per thing, for every run or only `run_id`.
    Refuses (HostBusy) while a run holds the lock, unless forced: its resources
    are not leftovers."""
    ours = re.compile(re.escape(PREFIX + run_id) + r"(?![0-9a-f])") if run_id else RUN_NAME
    prefix = PREFIX + (run_id or "")
    lock = HostLock()
    try:
        lock.acquire("cleanup")
    except HostBusy:
        if not force:
            raise
    removed: list[str] = []
    failed: list[str] = []

    def attempt(what: str, action) -> None:
        try:
            if action() is not False:
                removed.append(what)
        except Interrupted:     # a resumed run's Ctrl-C interrupts, it does not fail a removal
            raise
        except Exception as e:  # one stuck resource must not hide the others
            failed.append(f"{what}: {e}")

    try:
        for path in all_journals():
            if not ours.match(path.name):
                continue
            _replay(path, attempt)
            removed.append(f"journal {path}")
        if run_id is None:
            _lab_leftovers(attempt)
            _cluster_leftovers(attempt)
        for name, runtime in RUNTIMES.items():
            with contextlib.suppress(Exception):
                for c in filter(ours.match, runtime.leftovers(prefix)):
                    attempt(f"{name} container {c}", lambda r=runtime, c=c: r.remove(c))
        for runtime in RUNTIMES.values():
            with contextlib.suppress(Exception):   # its state, once none of its containers is left
                runtime.tidy()
        for ns in filter(ours.match, netns_list()):
            attempt(f"netns {ns}", lambda ns=ns: del_netns(None, ns))
        for link in filter(ours.match, links()):
            attempt(f"link {link}", lambda l=link: del_link(l, None))
        for path in RUN_DIR.glob(prefix + "*"):
            if ours.match(path.name):
                attempt(f"directory {path}", lambda p=path: _remove_path(p))
    finally:
        lock.release()
    return removed, failed


def cluster_runs(kubeconfig: Path, run_id: str | None = None,
                 images: bool = False) -> tuple[list[str], list[str]]:
    """(removed, failed): the namespaces cnfperf's runs (or run `run_id`'s)
    left on the cluster of `kubeconfig`, deleted with their pods (`cnfperf
    cleanup --cluster`); a namespace journaled here goes with its run's
    journal too. `images`: and cnfperf's images imported into this node's
    containerd (--images)."""
    ours = re.compile(re.escape(PREFIX + run_id) + r"(?![0-9a-f])") if run_id else RUN_NAME
    api, names = pod_runtime.runs_on(kubeconfig)
    removed: list[str] = []
    failed: list[str] = []
    for name in filter(ours.fullmatch, names):
        try:
            pods.delete_namespace(api, name)
            removed.append(f"namespace {name} of cluster {kubeconfig}")
        except Exception as e:
            failed.append(f"namespace {name} of cluster {kubeconfig}: {e}")
    if images:
        socket = pod_runtime.containerd_of(kubeconfig)
        try:
            removed += [f"image {ref} of {socket}"   # the test cluster's sandbox image stays
                        for ref in pod_images.remove_imported(socket, keep=(node.PAUSE,))]
        except Exception as e:
            failed.append(f"cnfperf's images in {socket}: {e}")
    return removed, failed


def lab_leftovers() -> list[str]:
    """What a lab killed outright left (`cnfperf lab`: remote/lab.py), removed
    as cleanup() does; a thing that stays fails (SystemFailure): a lab would
    boot into it."""
    return _all_or_fail("a killed lab's", _lab_leftovers)


def _all_or_fail(whose: str, remove: Callable[[Callable], None]) -> list[str]:
    """What `remove` removes (each thing through the attempt it is given), a
    line each; the first thing that stays fails (SystemFailure)."""
    removed: list[str] = []

    def attempt(what: str, action) -> None:
        try:
            if action() is not False:
                removed.append(what)
        except Interrupted:
            raise
        except Exception as e:
            raise SystemFailure(f"{whose} {what} stays: {e}; "
                                "`cnfperf cleanup` tries again") from None
    remove(attempt)
    return removed


def _lab_leftovers(attempt: Callable[[str, Callable[[], object]], None]) -> None:
    """The journal of a lab whose owner is gone, then the lab's names
    (its VMs, netns and taps: a lab killed before its journal said so)."""
    for path in lab.dead_journals():
        _replay(path, attempt)
        lab.OWNER.unlink(missing_ok=True)
    if lab.owner() is None:
        for what, remove in lab.leftovers():
            attempt(f"lab's {what}", remove)


def cluster_leftovers() -> list[str]:
    """What a test cluster killed outright left (`cnfperf cluster`:
    cluster/node.py), removed; a thing that stays fails (SystemFailure)."""
    return _all_or_fail("a killed test cluster's", _cluster_leftovers)


def _cluster_leftovers(attempt: Callable[[str, Callable[[], object]], None]) -> None:
    """The journal of a test cluster whose owner is gone: its daemons, then
    its sweep (node.sweep: pods, mounts, cgroups, its bridge, its folder)."""
    for path in node.KEEPER.dead_journals():
        _replay(path, attempt)
        node.OWNER.unlink(missing_ok=True)


def _replay(path: Path, attempt: Callable[[str, Callable[[], object]], None]) -> None:
    """Undoes a journal's entries, last first, and removes it."""
    for entry in reversed(replay(path)):
        attempt(f"{entry.kind} {entry.name}", lambda e=entry: _undo(e))
    path.unlink(missing_ok=True)


def _undo(entry: Entry) -> bool:
    """Remove one journaled resource; False if it was already gone."""
    kind, name, info = entry.kind, entry.name, entry.info
    if kind == "container":
        runtime = RUNTIMES.get(info.get("runtime", ""))
        if runtime is None or name not in runtime.leftovers(name):
            return False
        runtime.remove(name)
        return True
    if kind == "netns":
        return del_netns(None, name)
    if kind == "link":
        return del_link(name, info.get("netns"))
    if kind == "nic":
        return give_back_nic(None, name, info)
    if kind in ("dir", "file"):
        return _remove_path(Path(name))
    if kind == "process":
        return _kill(int(info.get("pid", 0)), info.get("start"))
    undo = _undo_registry().get(kind)
    if undo is None:
        raise ValueError(f"unknown kind {kind!r} in the journal; remove it by hand")
    undo(name, info)
    return True


def _undo_registry() -> dict:
    """kind -> fn(name, info) for the kinds journaled beyond the ones _undo
    handles: hugepages' and PCI devices' (hugepages.UNDO, pci.UNDO), the test
    cluster's, every registered data plane's (DataPlane.undo) and runtime's
    (Runtime.undo)."""
    registry: dict = {**hugepages.UNDO, **pci.UNDO, **node.UNDO}
    for dataplane in DATAPLANES.values():
        registry.update(dataplane.undo)
    for runtime in RUNTIMES.values():
        registry.update(runtime.undo)
    return registry


def _remove_path(path: Path) -> bool:
    if path.is_dir() and not path.is_symlink():
        unmount_under(path)   # a run directory's private hugetlbfs: rmtree cannot remove it
        shutil.rmtree(path)
        return True
    if path.exists() or path.is_symlink():
        path.unlink()
        return True
    return False


def _kill(pid: int, start: str | None) -> bool:
    """Kill a journaled process, unless its pid now belongs to another process."""
    stat = proc_stat(pid) if pid > 0 else None
    if stat is None or (start is not None and str(start) != stat.start_time):
        return False
    signal_all([pid], signal.SIGKILL)
    # Later undo steps give back what it holds (hugepages, mounts): a process still
    # exiting keeps them in use, and the kernel would then keep a page in the pool.
    if not wait_gone([pid], KILL_WAIT_S):
        raise OSError(f"process {pid} still runs {KILL_WAIT_S:g} s after SIGKILL")
    return True
