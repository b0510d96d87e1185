"""Write-ahead record of every resource a run creates, on disk, one file per run.

A resource is added *before* the call that creates it and discarded after the
call that removes it, each line fsync'd: if the run is SIGKILLed anywhere in
between, `cnfperf cleanup` finds a superset of what exists and removes it,
tolerating entries whose creation never happened.
"""
from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

# tmpfs: a journal describes kernel state (netns, links, processes) that a reboot
# removes too, so it must not outlive one.
RUN_DIR = Path(os.environ.get("CNFPERF_RUN_DIR", "/run/cnfperf"))


@dataclass(frozen=True)
class Entry:
    kind: str
    name: str
    info: dict[str, Any]


class Journal:
    """Implements cnfperf.runtimes.base.Journal."""

    def __init__(self, path: Path):
        self.path = path
        path.parent.mkdir(parents=True, exist_ok=True)
        self._file = open(path, "a", encoding="utf-8")
        _fsync_dir(path.parent)

    def add(self, kind: str, name: str, **info: Any) -> None:
        self._write({"op": "add", "kind": kind, "name": name, "info": info})

    def discard(self, kind: str, name: str) -> None:
        self._write({"op": "discard", "kind": kind, "name": name})

    def live(self) -> list[Entry]:
        return replay(self.path)

    def close(self, remove: bool) -> None:
        """Remove the file only when teardown left nothing behind."""
        if self._file.closed:
            return
        self._file.close()
        if remove:
            self.path.unlink(missing_ok=True)

    def _write(self, record: dict[str, Any]) -> None:
        record["t"] = round(time.time(), 3)
        self._file.write(json.dumps(record, default=str) + "\n")
        self._file.flush()
        os.fsync(self._file.fileno())


def replay(path: Path) -> list[Entry]:
    """Entries added and not yet discarded, in the order they were added."""
    live: dict[tuple[str, str], Entry] = {}
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except FileNotFoundError:
        return []
    for line in lines:
        try:
            rec = json.loads(line)
        except json.JSONDecodeError:
            continue  # a line torn by a kill: the entry before it is still valid
        key = (rec.get("kind", ""), rec.get("name", ""))
        if rec.get("op") == "add":
            live.pop(key, None)  # re-added: now the newest
            live[key] = Entry(key[0], key[1], rec.get("info") or {})
        elif rec.get("op") == "discard":
            live.pop(key, None)
    return list(live.values())


def undo_each(entries: list[tuple[str, dict]], undo: Callable[[str, dict], object],
              what: str) -> None:
    """undo(name, info) for every entry, the last first, each even if one
    before failed (what was lent first may hold what was lent after);
    `entries` is emptied; the failures are raised once all were tried."""
    failed = []
    for name, info in reversed(entries):
        try:
            undo(name, info)
        except Exception as e:     # noqa: BLE001 - the others still go back
            failed.append(f"{name}: {e}")
    entries.clear()
    if failed:
        raise RuntimeError(f"{what} not given back: " + "; ".join(failed))


def journal_path(prefix: str) -> Path:
    return RUN_DIR / f"{prefix}.journal"


def all_journals() -> list[Path]:
    return sorted(RUN_DIR.glob("*.journal"))


def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
