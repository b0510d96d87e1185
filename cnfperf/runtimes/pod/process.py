"""A command started in a pod through the API server's exec stream, as a
trial sees a subprocess.Popen: its stdout a pipe to read lines from, its
stderr copied where asked, poll(), wait(), and signals.

The exec stream carries no signal, and the process it started outlives a
closed stream (kubernetes/kubernetes#89031). So the command is started as
`sh -c 'echo $$; exec "$@"'`: its first line is its pid in the pod, and a
signal is a second exec's `kill`. The image needs a shell (cnfperf's images
with one: images.Image.shell).
"""
from __future__ import annotations

import contextlib
import os
import subprocess
import threading
from typing import IO, Any, Callable, Sequence

from kubernetes import client
from kubernetes.stream import stream
from kubernetes.stream.ws_client import (ERROR_CHANNEL, STDERR_CHANNEL, STDIN_CHANNEL,
                                        STDOUT_CHANNEL, V5_CHANNEL_PROTOCOL)

from . import pods
from .pods import ClusterError

START = ["sh", "-c", 'echo $$; exec "$@"', "sh"]
PID_S = 30.0         # the pid line: the exec's start through the API server and kubelet
LOST = 255           # the exit status of a process whose stream ended without one


class Stdin:
    """A command's stdin through its exec stream: what is written reaches it;
    close() is its end of file, where the API server speaks the stream's
    version 5 (Kubernetes 1.30 on), else a SIGTERM (an engine holding its
    ports, --hold, ends on either)."""

    def __init__(self, process: "Process"):
        self._process = process
        self.closed = False

    def write(self, data: bytes | str) -> None:
        self._process._ws.write_stdin(data if isinstance(data, str) else data.decode())

    def flush(self) -> None:
        """Nothing to do: write() sent it."""

    def close(self) -> None:
        if self.closed:
            return
        self.closed = True
        ws = self._process._ws
        if getattr(ws, "subprotocol", None) == V5_CHANNEL_PROTOCOL:
            with contextlib.suppress(Exception):   # a stream that ended has no stdin left
                ws.close_channel(STDIN_CHANNEL)
        else:
            self._process.terminate()


def copy_to(to: Any) -> int | None:
    """Our own descriptor of where a stream goes, given as Popen takes it: a
    file's or a descriptor's (the caller may close its own), /dev/null's for
    DEVNULL; None for PIPE or None."""
    if to == subprocess.DEVNULL:
        return os.open(os.devnull, os.O_WRONLY)
    if hasattr(to, "fileno"):
        return os.dup(to.fileno())
    return os.dup(to) if isinstance(to, int) and to >= 0 else None


class Process:
    """`argv` in `pod`'s container; `env` added to its environment; with
    `stdin` a pipe to it (Stdin), else none (its stdin is empty). Its stdout
    and stderr go where Popen's would (a file, a descriptor: a terminal for
    procs.Console; DEVNULL; stderr to STDOUT), else its stdout is a pipe
    (`stdout`) and its stderr dropped. `on_host`: its pid on this host for
    its pid in the pod (0: not here), where the pod runs on this host."""

    def __init__(self, api: client.ApiClient, namespace: str, pod: str, argv: Sequence[str],
                 stderr: Any = None, env: dict[str, str] | None = None,
                 stdin: bool = False, stdout: Any = None,
                 on_host: Callable[[int], int] | None = None):
        self.api, self.namespace, self.pod = api, namespace, pod
        self.argv = list(argv)
        self.returncode: int | None = None
        prefix = ["env", *(f"{k}={v}" for k, v in (env or {}).items())] if env else []
        self._ws = stream(client.CoreV1Api(api).connect_get_namespaced_pod_exec, pod, namespace,
                          command=START + prefix + self.argv, stdin=stdin, stdout=True,
                          stderr=True, tty=False, _preload_content=False)
        self.stdin = Stdin(self) if stdin else None
        self.stdout: IO[bytes] | None = None
        self._out = copy_to(stdout)
        if self._out is None:
            read, self._out = os.pipe()
            self.stdout = os.fdopen(read, "rb", buffering=0)
        self._err = os.dup(self._out) if stderr == subprocess.STDOUT else copy_to(stderr)
        self.stderr: IO[bytes] | None = None    # never a pipe: PIPE drops it (see the class)
        self._pid_known = threading.Event()
        self._exited = threading.Event()
        self.inner = 0      # its pid in the pod (what a signal's `kill` names)
        self.pid = 0        # its pid on this host (`on_host`), what a journal keeps; 0: unknown
        self._on_host = on_host
        self._pending = b""
        self._reader = threading.Thread(target=self._read, daemon=True,
                                        name=f"exec {pod}")
        self._reader.start()
        if not self._pid_known.wait(PID_S) or not self.inner:
            with contextlib.suppress(Exception):
                self._ws.close()
            raise ClusterError(f"`{' '.join(self.argv)}` in pod {pod}: it did not start "
                               f"within {PID_S:g} s")

    def _read(self) -> None:
        code = LOST
        try:
            while self._ws.is_open():
                self._ws.update(timeout=1)
                if self._ws.peek_channel(STDOUT_CHANNEL):
                    self._stdout(self._ws.read_channel(STDOUT_CHANNEL).encode())
                if self._ws.peek_channel(STDERR_CHANNEL):
                    self._put(self._err, self._ws.read_channel(STDERR_CHANNEL).encode())
            with contextlib.suppress(ClusterError, ValueError):
                code = pods.exit_code(self._ws.read_channel(ERROR_CHANNEL))
        except Exception as e:      # the stream broke: said where stderr goes
            self._put(self._err, f"exec in pod {self.pod}: {e}\n".encode())
        finally:
            self._end(code)

    def _stdout(self, data: bytes) -> None:
        """The first line is the pid (START's); the rest is the command's."""
        if not self._pid_known.is_set():
            self._pending += data
            if b"\n" not in self._pending:
                return
            line, _, data = self._pending.partition(b"\n")
            with contextlib.suppress(ValueError):
                self.inner = int(line)
                self.pid = self._on_host(self.inner) if self._on_host else 0
            self._pid_known.set()
        self._put(self._out, data)

    @staticmethod
    def _put(fd: int | None, data: bytes) -> None:
        with contextlib.suppress(OSError):      # nobody reads it any more
            while fd is not None and data:
                data = data[os.write(fd, data):]

    def _end(self, code: int) -> None:
        self.returncode = code
        self._pid_known.set()
        for fd in (self._out, self._err):
            if fd is not None:
                with contextlib.suppress(OSError):
                    os.close(fd)
        with contextlib.suppress(Exception):
            self._ws.close()
        self._exited.set()

    def poll(self) -> int | None:
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        if not self._exited.wait(timeout):
            raise subprocess.TimeoutExpired(f"`{' '.join(self.argv)}` in pod {self.pod}",
                                            timeout or 0)
        assert self.returncode is not None
        return self.returncode

    def send_signal(self, sig: int) -> None:
        """`kill -SIG pid` in the pod; nothing once the process has ended."""
        if self.returncode is None and self.inner:
            pods.run(self.api, self.namespace, self.pod, ["kill", f"-{int(sig)}", str(self.inner)])

    def kill(self) -> None:
        self.send_signal(9)

    def terminate(self) -> None:
        self.send_signal(15)
