"""One run per host: two runs would share cores and names and measure each other."""
from __future__ import annotations

import fcntl
import json
import os
import time
from pathlib import Path

from cnfperf.host.journal import RUN_DIR

LOCK_PATH = RUN_DIR / "lock"


class HostBusy(Exception):
    def __init__(self, holder: dict):
        self.holder = holder
        who = f"run {holder.get('run', '?')} (pid {holder.get('pid', '?')})"
        since = holder.get("since")
        if since:
            who += f", started {time.strftime('%H:%M:%S', time.localtime(since))}"
        super().__init__(f"another cnfperf run holds the host lock: {who}; "
                         "wait for it to finish or stop it, then retry")


class HostLock:
    """flock(2) on a file that exists only while held.

    The holder unlinks the file before closing it; whoever locked a file that was
    unlinked meanwhile sees a different inode at the path and tries again. So no
    lock file outlives a run, and a killed run's lock dies with its process.
    """

    def __init__(self, path: Path = LOCK_PATH):
        self.path = path
        self._fd: int | None = None

    def acquire(self, run_id: str) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        while True:
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                holder = _read(fd)
                os.close(fd)
                raise HostBusy(holder) from None
            try:
                same = os.fstat(fd).st_ino == os.stat(self.path).st_ino
            except FileNotFoundError:
                same = False
            if same:
                break
            os.close(fd)
        os.ftruncate(fd, 0)
        os.write(fd, json.dumps({"run": run_id, "pid": os.getpid(),
                                 "since": round(time.time())}).encode())
        self._fd = fd

    def release(self) -> None:
        if self._fd is None:
            return
        self.path.unlink(missing_ok=True)
        os.close(self._fd)
        self._fd = None

    def __enter__(self) -> HostLock:
        return self

    def __exit__(self, *exc) -> None:
        self.release()


def _read(fd: int) -> dict:
    try:
        return json.loads(os.pread(fd, 4096, 0) or b"{}")
    except (OSError, json.JSONDecodeError):
        return {}
