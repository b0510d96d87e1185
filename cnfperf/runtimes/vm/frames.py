"""The exec protocol between a host's relay (exec.py) and the guest's exec
server (server.py), over one virtio-serial port: length-prefixed frames.

A frame is a header (a session id of 8 random bytes, a type, the payload's
length) and the payload. Every frame carries its session's id: a port is used
by one relay after another, and what an earlier session's process still wrote
(or a relay sent before it died) must not reach the next one. Standard
library only: the guest runs this from its initramfs."""
from __future__ import annotations

import json
import os
import struct

HEADER = struct.Struct("!8sBI")
MAX_PAYLOAD = 1 << 20
CHUNK = 32 << 10        # what one port write takes (virtio_console's buffer)
VERSION = b"cnfperf-exec 2"
PORT_NAME = "cnfperf.exec."   # the guest's name of port N: this and N

# host -> guest
HELLO = 1        # answered with HELLO and VERSION: the server is up
RUN = 2          # JSON {"argv": [...], "env": {...}}: starts the session's process
STDIN = 3
STDIN_EOF = 4
SIGNAL = 5       # the signal's number, in ASCII
CLOCK = 6        # the host's CLOCK_REALTIME in ns, in ASCII: the guest sets its own to
                 # it and answers CLOCK (an emulated guest's clock starts from the
                 # RTC's whole second, and engines' wall_ns are compared with the host's)
# guest -> host
STDOUT = 10
STDERR = 11
EXIT = 12        # JSON {"code": N} or {"signal": N}
ERROR = 13       # why the process could not start (an EXIT follows)

TYPES = {HELLO, RUN, STDIN, STDIN_EOF, SIGNAL, CLOCK, STDOUT, STDERR, EXIT, ERROR}


class ProtocolError(Exception):
    pass


def pack(sid: bytes, kind: int, payload: bytes = b"") -> bytes:
    if len(payload) > MAX_PAYLOAD:
        raise ProtocolError(f"frame of {len(payload)} bytes (at most {MAX_PAYLOAD})")
    return HEADER.pack(sid, kind, len(payload)) + payload


def pack_json(sid: bytes, kind: int, value: object) -> bytes:
    return pack(sid, kind, json.dumps(value).encode())


def chunks(sid: bytes, kind: int, data: bytes) -> list[bytes]:
    """Data of any length as frames of at most CHUNK bytes each."""
    return [pack(sid, kind, data[i:i + CHUNK]) for i in range(0, len(data), CHUNK)] or \
        [pack(sid, kind, b"")]


def new_sid() -> bytes:
    return os.urandom(HEADER.size - 5)


class Reader:
    """Frames out of a byte stream fed in pieces of any size."""

    def __init__(self) -> None:
        self.buffer = bytearray()

    def feed(self, data: bytes) -> list[tuple[bytes, int, bytes]]:
        """The (session id, type, payload) of every frame completed by `data`."""
        self.buffer += data
        frames = []
        while len(self.buffer) >= HEADER.size:
            sid, kind, length = HEADER.unpack_from(self.buffer)
            if kind not in TYPES or length > MAX_PAYLOAD:
                self.buffer.clear()
                raise ProtocolError(f"bad frame header (type {kind}, length {length})")
            end = HEADER.size + length
            if len(self.buffer) < end:
                break
            frames.append((bytes(sid), kind, bytes(self.buffer[HEADER.size:end])))
            del self.buffer[:end]
        return frames


def write_all(fd: int, data: bytes) -> None:
    """A port or a pipe may take less than asked for in one write."""
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]
