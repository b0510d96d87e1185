"""An NF kind's daemons beside its containers (NfKind.start_argv: FRR's routing
daemons), for one point: started in each NF's netns on its cores once every
NF is prepared, journaled so that `cnfperf cleanup` kills them after a killed
run, waited for until their sessions and routes are up, stopped with the
point (before its directories and netns go).

Each NF's daemons keep their files (configuration, pid files, sockets, their
log) in a directory of their own, `home`, under the run's state directory,
removed with the point.
"""
from __future__ import annotations

import contextlib
import shutil
import subprocess
import time
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Sequence

from cnfperf import SystemFailure
from cnfperf.dataplanes import procs

if TYPE_CHECKING:
    from cnfperf.nfs.base import NfKind
    from cnfperf.plan import NF, TestPoint
    from cnfperf.run.teardown import Teardown
    from cnfperf.runtimes import Journal

SETTLE_S = 60.0         # the longest a point waits for its daemons' sessions and routes
POLL_S = 0.2


def start(kind: NfKind, point: TestPoint, nfs: Sequence[NF], ports: Callable[[str], list],
          state: Path, journal: Journal, teardown: Teardown,
          say: Callable[[str], None] | None = None) -> dict[str, Path]:
    """Every NF's daemons, started and settled: its home by NF name ({} for a
    kind without daemons). SystemFailure naming what did not come up."""
    homes: dict[str, Path] = {}
    if not kind.daemons:
        return homes
    for nf in nfs:
        home = state / "daemons" / nf.name
        argvs = kind.start_argv(nf, ports(nf.name), point.pairs[nf.pair], point.scenario,
                                _home(home, journal, teardown))
        if not argvs:
            continue
        homes[nf.name] = home
        for link in kind.links(home):
            _link(link, home, journal, teardown)
        cores = point.cpuset(nf.cores)
        for name, argv, ready in argvs:
            _spawn(nf.name, name, argv, cores, home, journal, teardown)
            if ready is not None:
                _wait_for(ready, f"{nf.name}'s {name}", home / f"{name}.out")
        if command := kind.configure_argv(home):
            _configure(nf.name, command, home)
    if homes:
        _settle(kind, point, nfs, homes, say)
    return homes


def _home(home: Path, journal: Journal, teardown: Teardown) -> Path:
    def remove() -> None:
        shutil.rmtree(home, ignore_errors=True)
        journal.discard("dir", str(home))
    journal.add("dir", str(home))
    teardown.push(f"directory {home}", remove)
    home.mkdir(parents=True)
    return home


def _link(link: Path, home: Path, journal: Journal, teardown: Teardown) -> None:
    """`link` made a link to `home`, its parents as needed; removed with the
    point, and the parents it made once empty."""
    made = [p for p in reversed(link.parents) if not p.exists()]
    for parent in made:
        journal.add("dir", str(parent))
    journal.add("file", str(link))

    def remove() -> None:
        link.unlink(missing_ok=True)
        journal.discard("file", str(link))
        for parent in reversed(made):
            with contextlib.suppress(OSError):   # another NF's link is still there
                parent.rmdir()
                journal.discard("dir", str(parent))
    teardown.push(f"link {link}", remove)
    link.parent.mkdir(parents=True, exist_ok=True)
    link.symlink_to(home)


def _configure(netns: str, command: list[str], home: Path) -> None:
    """Its daemons configured (kind.configure_argv), its output kept in
    configure.out; SystemFailure naming what it said if it failed."""
    with open(home / "configure.out", "wb") as out:
        done = subprocess.run(command, stdout=out, stderr=subprocess.STDOUT,
                              stdin=subprocess.DEVNULL, timeout=30)
    if done.returncode != 0:
        raise SystemFailure(f"{netns}: configuring its daemons failed ({command[0]} exited "
                            f"{done.returncode}): {_said(home / 'configure.out')}")


def _spawn(netns: str, name: str, argv: list[str], cores: Sequence[int], home: Path,
           journal: Journal, teardown: Teardown) -> None:
    with open(home / f"{name}.out", "wb") as out:
        proc = procs.in_netns(netns, cores)(argv, what=f"{netns}: {name}", stdout=out,
                                            stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    label = f"{netns}:{name}"
    procs.journal_process(journal, label, proc.pid)

    def stop() -> None:
        procs.stop(proc, 0)   # SIGTERM now, SIGKILL after 5 s
        journal.discard("process", label)
    teardown.push(f"daemon {label}", stop)
    time.sleep(0.05)
    if proc.poll() is not None:
        raise SystemFailure(f"{label} exited {proc.returncode} as it started: "
                            f"{_last(home / f'{name}.out')}")


def _wait_for(path: Path, what: str, log: Path, timeout: float = 10) -> None:
    deadline = time.monotonic() + timeout
    while not path.exists():
        if time.monotonic() > deadline:
            raise SystemFailure(f"{what}: no {path.name} within {timeout:g} s: {_last(log)}")
        time.sleep(0.05)


def _settle(kind: NfKind, point: TestPoint, nfs: Sequence[NF], homes: dict[str, Path],
            say: Callable[[str], None] | None) -> None:
    """Until every NF's daemons say their sessions and routes are up."""
    start = time.monotonic()
    while True:
        waiting = {nf.name: why for nf in nfs if nf.name in homes
                   for why in [kind.settled(nf.name, nf, point.pairs[nf.pair], point.scenario,
                                            homes[nf.name])]
                   if why is not None}
        if not waiting:
            return
        spent = time.monotonic() - start
        if spent > SETTLE_S:
            name, why = next(iter(waiting.items()))
            raise SystemFailure(f"{name}'s daemons did not settle within {SETTLE_S:g} s: "
                                f"{why} (their files, the log among them: {homes[name]})")
        if say:
            say(f"daemons settling ({spent:.0f} s): {len(waiting)} NF(s) waiting")
        time.sleep(POLL_S)


def _said(path: Path) -> str:
    """The first line of a command's output that is an error (`% …`, as FRR's
    vtysh and routing daemons mark one), else its last."""
    lines = _lines(path)
    return next((line for line in lines or () if "% " in line), _last_of(lines))


def _last(path: Path) -> str:
    return _last_of(_lines(path))


def _last_of(lines: list[str] | None) -> str:
    if lines is None:
        return "?"
    return lines[-1] if lines else "(no output)"


def _lines(path: Path) -> list[str] | None:
    """A file's lines, None if it cannot be read."""
    try:
        return path.read_text(errors="replace").strip().splitlines()
    except OSError:
        return None
