"""The host's relay of one command in a VM:

    python -m cnfperf.runtimes.vm.exec SOCKDIR [--env=K=V]... -- ARGV...

claims a free exec port of the VM whose sockets are in SOCKDIR (an flock on
its lock file, released when the relay ends however it ends), sends ARGV to
the guest's exec server (server.py) and relays both ways: its stdin to the
command, the command's stdout and stderr to its own, the signals it gets to
the command; it exits as the command did (with its code, or killed by the same
signal). So a Popen of the relay is, to its owner, the command itself. When
the relay dies the server kills the command."""
from __future__ import annotations

import contextlib
import json
import os
import select
import signal
import socket
import sys
from pathlib import Path

from . import frames
from .ports import claim

FORWARDED = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT, signal.SIGUSR1,
             signal.SIGUSR2)
EXIT_LOST = 255    # the exec server went away without the command's exit


class Relay:
    def __init__(self, sock: socket.socket, argv: list[str], env: dict[str, str]):
        self.sock = sock
        self.sid = frames.new_sid()
        self.reader = frames.Reader()
        self.argv = argv
        self.env = env
        self.wakeup_r, wakeup_w = os.pipe2(os.O_NONBLOCK | os.O_CLOEXEC)
        signal.set_wakeup_fd(wakeup_w, warn_on_full_buffer=False)
        for sig in FORWARDED:
            signal.signal(sig, lambda *_: None)   # the wakeup fd says which

    def send(self, kind: int, payload: bytes = b"") -> None:
        for frame in frames.chunks(self.sid, kind, payload):
            self.sock.sendall(frame)

    def run(self) -> dict:
        """The command's exit status: {"code": N} or {"signal": N}."""
        self.send(frames.RUN, json.dumps({"argv": self.argv, "env": self.env}).encode())
        stdin_open = True
        while True:
            watched = [self.sock, self.wakeup_r] + ([0] if stdin_open else [])
            ready = select.select(watched, [], [])[0]
            if self.wakeup_r in ready:
                for sig in os.read(self.wakeup_r, 64):
                    self.send(frames.SIGNAL, str(sig).encode())
            if 0 in ready:
                data = os.read(0, frames.CHUNK)
                if data:
                    self.send(frames.STDIN, data)
                else:
                    self.send(frames.STDIN_EOF)
                    stdin_open = False
            if self.sock in ready:
                data = self.sock.recv(1 << 16)
                if not data:
                    return {}
                for sid, kind, payload in self.reader.feed(data):
                    if sid != self.sid:
                        continue    # an earlier session's, still on its way
                    if kind == frames.EXIT:
                        return json.loads(payload)
                    self._output(kind, payload)

    @staticmethod
    def _output(kind: int, payload: bytes) -> None:
        fd = {frames.STDOUT: 1, frames.STDERR: 2, frames.ERROR: 2}.get(kind)
        if fd is not None:
            with contextlib.suppress(BrokenPipeError):   # nobody reads it any more
                frames.write_all(fd, payload + (b"\n" if kind == frames.ERROR else b""))


def parse(args: list[str]) -> tuple[Path, dict[str, str], list[str]]:
    if "--" not in args or args.index("--") < 1 or args.index("--") == len(args) - 1:
        raise SystemExit("usage: python -m cnfperf.runtimes.vm.exec SOCKDIR [--env=K=V]... -- ARGV...")
    split = args.index("--")
    env = {}
    for opt in args[1:split]:
        if not opt.startswith("--env=") or "=" not in opt[6:]:
            raise SystemExit(f"cnfperf exec: unknown option {opt!r}")
        key, value = opt[6:].split("=", 1)
        env[key] = value
    return Path(args[0]), env, args[split + 1:]


def main(args: list[str]) -> int:
    sockdir, env, argv = parse(args)
    try:
        lock, sock = claim(sockdir)
    except (OSError, TimeoutError) as e:
        print(f"cnfperf exec: {e}", file=sys.stderr)
        return EXIT_LOST
    status = Relay(sock, argv, env).run()
    if "signal" in status:
        sig = int(status["signal"])
        signal.set_wakeup_fd(-1)
        if sig not in (signal.SIGKILL, signal.SIGSTOP):   # theirs cannot be set
            signal.signal(sig, signal.SIG_DFL)
        os.kill(os.getpid(), sig)
        return 128 + sig
    if "code" not in status:
        print("cnfperf exec: the VM's exec server went away", file=sys.stderr)
        return EXIT_LOST
    os.close(lock)
    return int(status["code"])


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
