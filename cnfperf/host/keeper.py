"""What one process keeps on this machine until it ends (`cnfperf lab`'s
emulated host, `cnfperf cluster`'s test cluster): an owner file says which
process (its pid and start time, so a reused pid is no owner), and a journal
what it made. While the owner lives its things are not leftovers; once it is
gone (killed outright), its journal is `cnfperf cleanup`'s to replay."""
from __future__ import annotations

import contextlib
import json
import os
from pathlib import Path
from typing import Iterator

from cnfperf.host.system import proc_stat


class Busy(Exception):
    """Another process keeps it already."""


class Keeper:
    def __init__(self, what: str, owner_file: Path, journal: Path):
        self.what, self.owner_file, self.journal = what, owner_file, journal

    def owner(self) -> int | None:
        """The pid of the process that keeps it, while that process lives."""
        try:
            said = json.loads(self.owner_file.read_text())
        except (OSError, ValueError):
            return None
        stat = proc_stat(int(said.get("pid", 0)))
        return said["pid"] if stat is not None and stat.start_time == said.get("start") else None

    @contextlib.contextmanager
    def owned(self) -> Iterator[None]:
        """This process keeps it while inside: another is refused (Busy)."""
        if (pid := self.owner()) is not None:
            raise Busy(f"{self.what} runs already (pid {pid}): one at a time")
        self.owner_file.parent.mkdir(parents=True, exist_ok=True)
        stat = proc_stat(os.getpid())
        self.owner_file.write_text(json.dumps({"pid": os.getpid(),
                                               "start": stat.start_time if stat else None}))
        try:
            yield
        finally:
            self.owner_file.unlink(missing_ok=True)

    def dead_journals(self) -> list[Path]:
        """The journal of a keeper that is gone: what it made is leftovers."""
        if self.journal.exists() and self.owner() is None:
            return [self.journal]
        return []
