"""The initramfs archive: cpio's "newc" format (the one the kernel unpacks,
Documentation/driver-api/early-userspace/buffer-format.rst), written here so
that building a guest needs no cpio tool."""
from __future__ import annotations

import gzip
import stat
from dataclasses import dataclass

MAGIC = b"070701"
TRAILER = "TRAILER!!!"


@dataclass(frozen=True)
class Entry:
    path: str              # without a leading "/"
    mode: int              # file type and permission bits (stat.S_IF*)
    data: bytes = b""      # a file's content, a symlink's target
    rdev: tuple[int, int] = (0, 0)   # a device node's major and minor


def directory(path: str) -> Entry:
    return Entry(path, stat.S_IFDIR | 0o755)


def file(path: str, data: bytes, mode: int = 0o644) -> Entry:
    return Entry(path, stat.S_IFREG | mode, data)


def symlink(path: str, target: str) -> Entry:
    return Entry(path, stat.S_IFLNK | 0o777, target.encode())


def char_device(path: str, major: int, minor: int, mode: int = 0o600) -> Entry:
    return Entry(path, stat.S_IFCHR | mode, rdev=(major, minor))


def _pad(n: int) -> bytes:
    return b"\0" * (-n % 4)


def _record(ino: int, entry: Entry) -> bytes:
    name = entry.path.encode() + b"\0"
    fields = (ino, entry.mode, 0, 0, 2 if stat.S_ISDIR(entry.mode) else 1, 0, len(entry.data),
              0, 0, *entry.rdev, len(name), 0)
    header = MAGIC + b"".join(b"%08X" % f for f in fields)
    return header + name + _pad(len(header) + len(name)) + entry.data + _pad(len(entry.data))


def pack(entries: list[Entry]) -> bytes:
    """The archive, every entry owned by root and dated 0 (the same input
    gives the same bytes), a directory before what it holds."""
    out = [_record(ino, e) for ino, e in enumerate(entries, 1)]
    out.append(_record(0, Entry(TRAILER, 0)))
    return b"".join(out)


def compress(archive: bytes) -> bytes:
    """gzip, which every kernel config unpacks; level 1: decompressing is as
    quick as at any level, and the guest spends no time on a smaller file."""
    return gzip.compress(archive, compresslevel=1, mtime=0)
