"""Every kind of resource cnfperf journals, `cnfperf cleanup` can undo: a kind
it does not know would fail the cleanup of a killed run and leak the resource
for good (a data plane says how to undo its own: DataPlane.undo)."""
import re
from pathlib import Path

from cnfperf.run import cleanup

PACKAGE = Path(cleanup.__file__).parents[1]
# The kinds cleanup._undo handles itself.
OWN = {"container", "netns", "link", "nic", "dir", "file", "process"}


def _journaled() -> set[str]:
    kinds = set()
    for path in PACKAGE.rglob("*.py"):
        kinds |= set(re.findall(r'journal\.add\(\s*"([\w-]+)"', path.read_text()))
    return kinds


def test_cleanup_undoes_every_kind_that_is_journaled():
    kinds = _journaled()
    assert {"vpp-shm", "hugepages", "dir", "link"} <= kinds     # the scan finds them
    unknown = kinds - OWN - set(cleanup._undo_registry())
    assert not unknown, f"journaled but not undone by cnfperf cleanup: {sorted(unknown)}"
