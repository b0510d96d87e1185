"""A VM's exec ports as the host sees them: a unix socket each (QEMU listens;
qemu.py), and beside it a lock file a relay holds while it uses the port."""
from __future__ import annotations

import fcntl
import os
import select
import socket
import time
from pathlib import Path

from . import frames

CLAIM_S = 60.0     # how long to wait for a free port


def sock_path(sockdir: Path, port: int) -> Path:
    return Path(sockdir) / f"exec{port}.sock"


def lock_path(sockdir: Path, port: int) -> Path:
    return Path(sockdir) / f"exec{port}.lock"


def ports(sockdir: Path) -> int:
    return len(list(Path(sockdir).glob("exec*.sock")))


def claim(sockdir: Path, timeout: float = CLAIM_S, only: int | None = None) -> tuple[int, socket.socket]:
    """An exec port's lock (its fd, held until it is closed) and a connection to it."""
    deadline = time.monotonic() + timeout
    count = ports(sockdir)
    if not count:
        raise OSError(f"no exec port in {sockdir}")
    while True:
        for n in range(count) if only is None else (only,):
            fd = os.open(lock_path(sockdir, n), os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                os.close(fd)
                continue
            sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            try:
                sock.connect(str(sock_path(sockdir, n)))
            except OSError:
                sock.close()
                os.close(fd)
                raise
            return fd, sock
        if time.monotonic() >= deadline:
            raise TimeoutError(f"all {count} exec ports of the VM busy for {timeout:g} s")
        time.sleep(0.05)


def hello(sockdir: Path, timeout: float, alive=lambda: True) -> str:
    """Wait until the guest's exec server answers on port 0; its version. Then
    set the guest's clock to the host's (frames.CLOCK): twice, the second time
    ahead by half the first's round trip. TimeoutError when it does not answer
    in time, OSError when `alive()` turns false."""
    deadline = time.monotonic() + timeout
    lock, sock = claim(sockdir, timeout, only=0)
    reader = frames.Reader()
    try:
        version = _ask(sock, reader, frames.HELLO, b"", deadline, alive)
        ahead = 0
        for _ in range(2):
            sent = time.time_ns()
            _ask(sock, reader, frames.CLOCK, str(sent + ahead).encode(), deadline, alive)
            ahead = (time.time_ns() - sent) // 2
        return version.decode(errors="replace")
    finally:
        sock.close()
        os.close(lock)


def _ask(sock: socket.socket, reader: frames.Reader, kind: int, payload: bytes,
         deadline: float, alive) -> bytes:
    """Send one request; the payload of its answer (a frame of the same kind)."""
    sid = frames.new_sid()
    sock.sendall(frames.pack(sid, kind, payload))
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            raise TimeoutError("the guest's exec server did not answer in time")
        if not alive():
            raise OSError("QEMU exited")
        if select.select([sock], [], [], min(left, 0.2))[0]:
            data = sock.recv(65536)
            if not data:
                raise OSError("the VM closed its exec port")
            for got, got_kind, answer in reader.feed(data):
                if got == sid and got_kind == kind:
                    return answer
