"""`cnfperf cluster`: the test cluster (cluster/node.py) for a user, kept
until Ctrl-C (or SIGTERM, SIGHUP), then taken down whole: the process that
keeps it is its owner (node.KEEPER), its journal written before anything
exists. A cluster killed outright is leftovers for `cnfperf cleanup` or the
next `cnfperf cluster`, which removes them before it starts."""
from __future__ import annotations

import contextlib
from typing import Callable, Iterator

from cnfperf.cluster import node
from cnfperf.host.journal import Journal
from cnfperf.run.cleanup import cluster_leftovers
from cnfperf.run.teardown import until_signal


@contextlib.contextmanager
def kept(say: Callable[[str], None] = lambda _line: None) -> Iterator[node.Cluster]:
    """The test cluster, owned by this process (node.KEEPER) and journaled,
    until the block ends; a killed cluster's leftovers removed first."""
    for line in cluster_leftovers():
        say(f"removed a killed cluster's {line}")
    with contextlib.ExitStack() as stack:
        stack.enter_context(node.KEEPER.owned())
        journal = Journal(node.JOURNAL)
        # kept where a step of the teardown failed (what it made is still in it):
        # cleanup's to finish
        stack.callback(lambda: journal.close(remove=not journal.live()))
        yield stack.enter_context(node.started(journal, say))


def serve(say: Callable[[str], None], up: Callable[[node.Cluster], None]) -> int:
    """Starts the test cluster, calls `up` with it, and keeps it until a
    signal; returns that signal's number."""
    return until_signal("the test cluster", lambda stack: up(stack.enter_context(kept(say))),
                        say, "stopping: its pods, daemons and files go")
