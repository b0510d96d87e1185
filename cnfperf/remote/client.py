"""The controller's side of a host's cnfperf agent (run/agent.py is the other).

One agent per host and run, on one SSH channel: requests and answers as JSON
lines, one object each, `{"id": N, "op": ...}` answered by `{"id": N, "ok":
...}` or `{"id": N, "error": ..., "user": bool}`; a process the agent runs
for the controller speaks in events `{"proc": P, "out"|"err": text}` and
`{"proc": P, "exit": code}`. A process here looks like a local one
(subprocess.Popen's part a trial uses: stdout a pipe to read lines from,
stdin to close, poll, wait, send_signal, kill), so the trial cannot tell an
engine on another host from one on this host.

The controller pings the agent every PING_S: an agent that hears nothing
for its SILENCE_S (run/agent.py) undoes its part, and a ping unanswered for
LOST_S is a lost connection here, a cut cable included (TCP alone would
wait many minutes). When the connection is lost every waiting request fails,
and every process of that host ends with EXIT_LOST; the agent, seeing its
stdin end or its controller silent, undoes its host's part of the run by
its journal.
"""
from __future__ import annotations

import contextlib
import itertools
import json
import os
import subprocess
import threading
from collections import deque
from collections.abc import Callable
from typing import IO, Any

from cnfperf import SystemFailure, UserError

EXIT_LOST = 255             # a process whose host went away
# A request that runs on and on: a lost host is the pings' to notice (LOST_S),
# so this only bounds one the agent never finishes, and is long enough for a
# slow host's: an emulated one (TCG) takes two minutes and more to say hello
# (its imports and facts), a build of many containers takes long anywhere.
CALL_TIMEOUT = 600.0
STDERR_LINES = 20           # the agent's last words, for the error that ends it
GOODBYE_S = 60.0            # for the agent to undo its part once its stdin ends
PING_S = 3.0                # how often the controller says it is there
LOST_S = 10.0               # a ping unanswered this long: the connection is gone


class Lost(SystemFailure):
    """The connection to a host's agent is gone."""


class Agent:
    """A host's agent: call() it; exec() a process on it."""

    def __init__(self, name: str, stdin: IO[bytes], stdout: IO[bytes], stderr: IO[bytes],
                 close: Callable[[], None] = lambda: None):
        self.name = name
        self._stdin = stdin
        self._close = close
        self._ids = itertools.count(1)
        self._write = threading.Lock()
        self._pending: dict[int, dict[str, Any]] = {}
        self._answered = threading.Condition()
        self._procs: dict[int, RemoteProcess] = {}
        self._early: dict[int, list[dict[str, Any]]] = {}   # events before exec() returned
        self.stderr: deque[str] = deque(maxlen=STDERR_LINES)
        self.lost: str | None = None
        self._reader = threading.Thread(target=self._read, args=(stdout,), daemon=True,
                                        name=f"agent {name}")
        self._reader.start()
        self._errors = threading.Thread(target=self._read_stderr, args=(stderr,), daemon=True,
                                        name=f"agent {name} stderr")
        self._errors.start()
        self._closing = threading.Event()
        self._spoke = threading.Event()      # the agent has said its first line
        threading.Thread(target=self._heartbeat, daemon=True, name=f"agent {name} ping").start()

    # -- requests ----------------------------------------------------------------------
    def call(self, op: str, timeout: float = CALL_TIMEOUT, **args: Any) -> Any:
        """The agent's answer to one request; its error as UserError (bad input
        there) or SystemFailure, each naming the host."""
        n = next(self._ids)
        with self._answered:
            self._pending[n] = {}
        self._send({"id": n, "op": op, **args})
        with self._answered:
            if not self._answered.wait_for(lambda: self._pending[n] or self.lost, timeout):
                self._pending.pop(n, None)
                raise SystemFailure(f"host {self.name}: no answer to {op} within {timeout:g} s")
            answer = self._pending.pop(n)
        if not answer:
            raise Lost(f"host {self.name}: {self.lost}")
        if "error" in answer:
            if answer.get("user"):
                raise UserError(f"host {self.name}", answer["error"])
            raise SystemFailure(f"host {self.name}: {answer['error']}")
        return answer.get("ok")

    def exec(self, node: str, argv: list[str], stderr: Any = None) -> RemoteProcess:
        """A process in a node's container on the host; its stderr goes to
        `stderr` (a file of this host's, as Popen's stderr= takes it)."""
        proc = RemoteProcess(self, stderr)
        try:
            answer = self.call("exec", node=node, argv=argv)
        except BaseException:
            proc.end(EXIT_LOST)     # its pipe and stderr closed: nothing runs
            raise
        proc.pid, proc.id = answer["pid"], answer["proc"]
        with self._answered:
            # its first lines may have come before this answer: they go first,
            # before the reader hands it any later one (it waits for this lock)
            self._procs[proc.id] = proc
            for event in self._early.pop(proc.id, []):
                proc.event(event)
        if self.lost:
            proc.lost(f"cnfperf: host {self.name}: {self.lost}\n")
        return proc

    def send(self, message: dict[str, Any]) -> None:
        """A request that needs no answer (a process's stdin end, a signal)."""
        self._send({"id": 0, **message})

    def close(self, timeout: float = GOODBYE_S) -> None:
        """End the session: the agent undoes what is left of its part, then exits."""
        self._closing.set()
        with contextlib.suppress(OSError):
            self._stdin.close()
        self._reader.join(timeout)
        self._close()

    # -- the channel -------------------------------------------------------------------
    def _send(self, message: dict[str, Any]) -> None:
        line = (json.dumps(message) + "\n").encode()
        try:
            with self._write:
                self._stdin.write(line)
                self._stdin.flush()
        except (OSError, EOFError) as e:
            self._gone(f"the connection was lost ({e})")

    def _read(self, stdout: IO[bytes]) -> None:
        try:
            for raw in iter(stdout.readline, b""):
                try:
                    message = json.loads(raw)
                except ValueError:
                    self.stderr.append(raw.decode(errors="replace").rstrip())
                    continue
                self._dispatch(message)
        except (OSError, EOFError):
            pass
        self._errors.join(1)    # its last words say why, when it could say
        self._gone("the connection was lost" + (f": {self.stderr[-1]}" if self.stderr else ""))

    def _heartbeat(self) -> None:
        # Pings begin once the agent has spoken: until then it is starting (its
        # imports take tens of seconds on a slow or emulated host) and reads no
        # line; the request that waits for its first answer (hello) has a
        # timeout of its own.
        while not self._spoke.wait(PING_S):
            if self._closing.is_set() or self.lost:
                return
        while not self._closing.wait(PING_S) and not self.lost:
            try:
                self.call("ping", timeout=LOST_S)
            except Lost:
                return
            except SystemFailure:
                if not self._closing.is_set():
                    self._gone(f"no answer for {LOST_S:g} s")
                    self._close()   # the transport too: nothing more goes through it
                return

    def _read_stderr(self, stderr: IO[bytes]) -> None:
        with contextlib.suppress(OSError, EOFError):
            for raw in iter(stderr.readline, b""):
                self.stderr.append(raw.decode(errors="replace").rstrip())

    def _dispatch(self, message: dict[str, Any]) -> None:
        self._spoke.set()
        if "proc" in message and "id" not in message:
            with self._answered:
                proc = self._procs.get(message["proc"])
                if proc is None:
                    self._early.setdefault(message["proc"], []).append(message)
                    return
            proc.event(message)
            return
        with self._answered:
            if message.get("id") in self._pending:
                self._pending[message["id"]] = message
                self._answered.notify_all()

    def _gone(self, why: str) -> None:
        with self._answered:
            if self.lost is None:
                self.lost = why
            self._answered.notify_all()
            procs = list(self._procs.values())
        for proc in procs:
            proc.lost(f"cnfperf: host {self.name}: {why}\n")


class _Stdin:
    """A remote process's stdin: closing it ends the process's stdin there."""

    def __init__(self, proc: RemoteProcess):
        self._proc = proc
        self.closed = False

    def close(self) -> None:
        if not self.closed:
            self.closed = True
            self._proc.agent.send({"op": "stdin_close", "proc": self._proc.id})


class RemoteProcess:
    """A process on another host, as a trial sees a subprocess.Popen."""

    def __init__(self, agent: Agent, stderr: Any = None):
        self.agent = agent
        self.id = 0
        self.pid = 0
        self.returncode: int | None = None
        read, self._write = os.pipe()
        self.stdout = os.fdopen(read, "rb")
        self.stdin = _Stdin(self)
        self._stderr = os.dup(stderr.fileno()) if stderr is not None and \
            hasattr(stderr, "fileno") else None
        self._exited = threading.Event()
        self._lock = threading.Lock()

    def event(self, message: dict[str, Any]) -> None:
        if "out" in message:
            self._put(self._write, message["out"])
        elif "err" in message:
            self._put(self._stderr, message["err"])
        elif "exit" in message:
            self.end(int(message["exit"]))

    def _put(self, fd: int | None, text: str) -> None:
        with self._lock:
            if fd is None or self._exited.is_set():
                return
            data = text.encode()
            with contextlib.suppress(OSError):   # nobody reads it any more
                while data:
                    data = data[os.write(fd, data):]

    def lost(self, why: str) -> None:
        """Its host's connection is gone: it ends with EXIT_LOST, saying so."""
        self._put(self._stderr, why)
        self.end(EXIT_LOST)

    def end(self, code: int) -> None:
        with self._lock:
            if self._exited.is_set():
                return
            self.returncode = code
            for fd in (self._write, self._stderr):
                if fd is not None:
                    with contextlib.suppress(OSError):
                        os.close(fd)
            self._exited.set()

    def poll(self) -> int | None:
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        if not self._exited.wait(timeout):
            raise subprocess.TimeoutExpired(f"process {self.pid} on host {self.agent.name}",
                                            timeout or 0)
        assert self.returncode is not None
        return self.returncode

    def send_signal(self, sig: int) -> None:
        if self.returncode is None:
            self.agent.send({"op": "signal", "proc": self.id, "signal": int(sig)})

    def kill(self) -> None:
        self.send_signal(9)

    def terminate(self) -> None:
        self.send_signal(15)
