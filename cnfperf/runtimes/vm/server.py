"""The guest's exec server: runs the host's commands in the VM.

It serves the VM's virtio-serial ports named frames.PORT_NAME + N, one thread
each. On each, one relay at a time (exec.py, on the host) sends a RUN frame;
the server starts the command (a session of its own) and relays its stdin,
stdout and stderr, the signals the relay forwards, and its exit. When the
relay goes away (the host side of the port closes), the command's process
group is killed. Standard library only: the guest's /init starts it with the
host's Python from the host's root, read-only over 9p, before anything of
cnfperf's is importable there."""
from __future__ import annotations

import contextlib
import fcntl
import json
import os
import queue
import select
import signal
import subprocess
import sys
import threading
import time

if __package__:
    from . import frames
else:                     # run as a script in the guest
    import frames

PORTS = "/sys/class/virtio-ports"
# The host side of a port (re)connects: virtio_console sends SIGIO to whoever
# asked for it. The poll in between is a fallback only.
connected = threading.Condition()
RECHECK_S = 0.5
BASE_ENV = {"PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
            "HOME": "/root", "LANG": "C.UTF-8", "PYTHONDONTWRITEBYTECODE": "1"}


def _on_sigio(signum, frame) -> None:
    with connected:
        connected.notify_all()


class Session:
    """One relay's command: its process and the threads that move its bytes."""

    def __init__(self, port: "Port", sid: bytes, request: dict):
        self.port = port
        self.sid = sid
        self.dead = False
        self.stdin: queue.Queue = queue.Queue()
        try:
            self.proc = subprocess.Popen(
                request["argv"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                stderr=subprocess.PIPE, env={**BASE_ENV, **request.get("env", {})},
                cwd="/", start_new_session=True, bufsize=0)
        except (OSError, ValueError, KeyError, TypeError) as e:
            self.proc = None
            port.send(frames.pack(sid, frames.ERROR, f"cannot run {request.get('argv')!r}: "
                                                      f"{e}".encode()))
            code = 127 if isinstance(e, FileNotFoundError) else 126
            port.send(frames.pack_json(sid, frames.EXIT, {"code": code}))
            return
        pumps = [self._thread(self._pump, self.proc.stdout, frames.STDOUT),
                 self._thread(self._pump, self.proc.stderr, frames.STDERR)]
        self._thread(self._feed)
        self._thread(self._wait, pumps)

    @staticmethod
    def _thread(target, *args) -> threading.Thread:
        t = threading.Thread(target=target, args=args, daemon=True)
        t.start()
        return t

    def _pump(self, pipe, kind: int) -> None:
        while True:
            data = pipe.read(frames.CHUNK)
            if not data:
                return
            if not self.dead:
                self.port.send(frames.pack(self.sid, kind, data))

    def _feed(self) -> None:
        """stdin in its own thread: a process that does not read it must not
        hold up the signals that come after."""
        while True:
            data = self.stdin.get()
            try:
                if data is None:
                    self.proc.stdin.close()
                    return
                self.proc.stdin.write(data)
            except OSError:     # the process closed its stdin or is gone
                with contextlib.suppress(OSError):
                    self.proc.stdin.close()
                return

    def _wait(self, pumps: list[threading.Thread]) -> None:
        for t in pumps:
            t.join()
        code = self.proc.wait()
        status = {"signal": -code} if code < 0 else {"code": code}
        if not self.dead:
            self.port.send(frames.pack_json(self.sid, frames.EXIT, status))

    def handle(self, kind: int, payload: bytes) -> None:
        if self.proc is None:
            return
        if kind == frames.STDIN:
            self.stdin.put(payload)
        elif kind == frames.STDIN_EOF:
            self.stdin.put(None)
        elif kind == frames.SIGNAL:
            with contextlib.suppress(OSError, ValueError):
                os.kill(self.proc.pid, int(payload))

    def kill(self) -> None:
        """Its relay is gone: so is everything it started."""
        self.dead = True
        self.stdin.put(None)
        # Until it is reaped its pid is its own, and so is its process group.
        if self.proc is not None and self.proc.poll() is None:
            with contextlib.suppress(OSError):
                os.killpg(self.proc.pid, signal.SIGKILL)


class Port:
    """One exec port (or, in tests, any connected stream's fd)."""

    def __init__(self, fd: int, name: str = "", set_clock=None):
        self.fd = fd
        self.name = name
        self.lock = threading.Lock()
        # frames.CLOCK: the guest's CLOCK_REALTIME (tests pass their own)
        self.set_clock = set_clock or (lambda ns: time.clock_settime_ns(time.CLOCK_REALTIME, ns))

    @classmethod
    def open(cls, path: str) -> "Port":
        """A virtio-serial port, which sends us SIGIO when its host side connects."""
        fd = os.open(path, os.O_RDWR)
        fcntl.fcntl(fd, fcntl.F_SETOWN, os.getpid())
        fcntl.fcntl(fd, fcntl.F_SETFL, fcntl.fcntl(fd, fcntl.F_GETFL) | os.O_ASYNC)
        return cls(fd, path)

    def send(self, data: bytes) -> None:
        """While the host side is closed a write waits for the next relay, which
        drops what is not of its session."""
        with self.lock:
            with contextlib.suppress(OSError):
                frames.write_all(self.fd, data)

    def serve(self) -> None:
        while True:
            self.serve_connection()
            self._wait_connected()

    def serve_connection(self) -> None:
        """Requests until the host side closes (a read finds nothing); the
        session of the relay that closed it is killed."""
        reader = frames.Reader()
        session: Session | None = None
        try:
            while True:
                data = os.read(self.fd, 65536)
                if not data:
                    return
                try:
                    found = reader.feed(data)
                except frames.ProtocolError as e:
                    print(f"cnfperf-exec: {self.name}: {e}", file=sys.stderr, flush=True)
                    found = []
                for sid, kind, payload in found:
                    if kind == frames.HELLO:
                        self.send(frames.pack(sid, frames.HELLO, frames.VERSION))
                    elif kind == frames.CLOCK:
                        try:
                            self.set_clock(int(payload))
                        except (OSError, ValueError) as e:
                            print(f"cnfperf-exec: clock: {e}", file=sys.stderr, flush=True)
                        self.send(frames.pack(sid, frames.CLOCK))
                    elif kind == frames.RUN:
                        if session is not None:   # a relay after one that died
                            session.kill()
                        session = Session(self, sid, json.loads(payload))
                    elif session is not None and sid == session.sid:
                        session.handle(kind, payload)
        finally:
            if session is not None:
                session.kill()

    def _wait_connected(self) -> None:
        poller = select.poll()
        poller.register(self.fd, select.POLLIN)
        while True:
            events = dict(poller.poll(0)).get(self.fd, 0)
            if events & select.POLLIN or not events & select.POLLHUP:
                return
            with connected:
                connected.wait(RECHECK_S)


def ports() -> list[str]:
    found = []
    for entry in sorted(os.listdir(PORTS)):
        with contextlib.suppress(OSError):
            with open(os.path.join(PORTS, entry, "name")) as f:
                if f.read().strip().startswith(frames.PORT_NAME):
                    found.append("/dev/" + entry)
    return found


def main() -> None:
    signal.signal(signal.SIGIO, _on_sigio)
    served = [Port.open(path) for path in ports()]
    if not served:
        sys.exit("cnfperf-exec: no virtio-serial port named " + frames.PORT_NAME + "N")
    for port in served:
        threading.Thread(target=port.serve, daemon=True).start()
    with open("/proc/uptime") as f:
        up = f.read().split()[0]
    print(f"cnfperf-guest: exec server on {len(served)} ports {up} s", flush=True)
    while True:
        signal.pause()


if __name__ == "__main__":
    main()
