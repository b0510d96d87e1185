"""`cnfperf lab`: the lab's emulated host (remote/lab.py) for a user, kept
until Ctrl-C (or SIGTERM, SIGHUP), then taken down whole.

It runs in the foreground, as `kubectl port-forward` does: a lab is the
process that keeps it. Its journal (remote/lab.JOURNAL) is written before
anything exists, and its owner file says which process keeps it: a lab killed
outright is leftovers for `cnfperf cleanup` (cleanup.py) or the next `cnfperf
lab`, which removes them before it boots.
"""
from __future__ import annotations

import contextlib
import shutil
from pathlib import Path
from typing import Callable

from cnfperf.host.journal import Journal
from cnfperf.remote import lab
from cnfperf.remote.sshd import LOCAL, Lab
from cnfperf.run.cleanup import lab_leftovers
from cnfperf.run.teardown import until_signal


def serve(name: str, wires: int, pfs: int, engine: Path, say: Callable[[str], None],
          up: Callable[[Lab], None]) -> int:
    """Boots the host `name` with `wires` wires to this machine and `pfs`
    emulated SR-IOV NICs, calls `up` with it, and keeps it until a signal;
    returns that signal's number. Busy (another lab runs) and missing parts are
    the caller's to have checked: this makes things."""
    for line in lab_leftovers():
        say(f"removed a killed lab's {line}")

    def start(stack: contextlib.ExitStack) -> None:
        stack.enter_context(lab.owned())
        journal = Journal(lab.JOURNAL)
        # kept where a step of the teardown failed: cleanup's to finish
        stack.push(lambda failed, *_: journal.close(remove=failed is None))
        journal.add("dir", str(lab.HOME))
        shutil.rmtree(lab.HOME, ignore_errors=True)     # a killed lab's, never journaled
        stack.callback(shutil.rmtree, lab.HOME, ignore_errors=True)
        up(stack.enter_context(lab.hosts(lab.HOME, [name], engine, [(LOCAL, name)] * wires,
                                         {name: pfs}, journal, say)))
    return until_signal("the lab", start, say,
                        "stopping: the VM, its taps and network namespace go")
