"""Processes a data plane runs (testpmd, ovsdb-server, ovs-vswitchd, Click, bessd):
start, on the host or inside the switch's container, talk to over a terminal
(Console; Daemon: one that SIGINT stops), find again after a killed run, stop."""
from __future__ import annotations

import contextlib
import os
import pty
import signal
import subprocess
import termios
import threading
import time
from typing import TYPE_CHECKING, Mapping, Protocol, Sequence

from cnfperf import SystemFailure
from cnfperf.runtimes.rootfs import LINE_BUFFERED
from cnfperf.host.system import CommandFailed, proc_stat, process_ids, signal_all, spawn, wait_gone

if TYPE_CHECKING:
    from cnfperf.runtimes.base import Container


class Launch(Protocol):
    """How a data plane starts one of its processes: `env` holds the variables
    it needs besides its usual environment; `popen` its stdio."""

    def __call__(self, argv: Sequence[str], *, what: str,
                 env: Mapping[str, str] | None = None, **popen) -> subprocess.Popen: ...


def on_host(cpus: Sequence[int] | None = None) -> Launch:
    """On the host, in cnfperf's environment, on `cpus` (None: anywhere)."""
    def launch(argv, *, what, env=None, **popen):
        return spawn(argv, what=what, cpus=cpus, env=dict(os.environ, **env) if env else None,
                     **popen)
    return launch


def in_netns(netns: str, cpus: Sequence[int] | None = None) -> Launch:
    """On the host, in a network namespace (`ip netns exec` execs the
    program: the Popen is the program's own)."""
    host = on_host(cpus)

    def launch(argv, *, what, env=None, **popen):
        return host(["ip", "netns", "exec", netns, *argv], what=what, env=env, **popen)
    return launch


def inside(container: Container) -> Launch:
    """In the container (its netns, cgroup and cpuset; made from the switch
    image), through its runtime's exec, which passes signals and stdio on: the
    Popen stands for the process. Its stdout reaches us through runc's pipe,
    not our terminal: it is made line-buffered (rootfs.LINE_BUFFERED)."""
    def launch(argv, *, what, env=None, **popen):
        env = dict(env or {})
        preload = " ".join(p for p in (LINE_BUFFERED["LD_PRELOAD"], env.pop("LD_PRELOAD", "")) if p)
        return container.exec(list(argv), env={**LINE_BUFFERED, **env, "LD_PRELOAD": preload},
                              **popen)
    return launch


class ProcessError(SystemFailure):
    """A data plane process exited or did not answer; the message says which."""


class Console:
    """A child whose stdout/stderr is a terminal, so stdio is line buffered and
    what it prints reaches us before its prompt (through a pipe, testpmd holds
    command output in its buffer until exit). stdin stays a pipe: no line editing.

    A thread drains the terminal all the time: testpmd logs from its vhost thread
    whenever a peer connects, and a full terminal buffer would block that thread
    in write() and with it every further vhost-user connection."""

    LOG_KEEP = 1 << 16  # bytes of output kept for error messages
    PENDING_KEEP = 1 << 18  # unread output kept: far more than one command's answer

    def __init__(self, argv: Sequence[str], name: str, cpus: Sequence[int] | None = None,
                 launch: Launch | None = None):
        """`launch`: how it is started (default: on the host, on `cpus`)."""
        self.name = name
        master, slave = pty.openpty()
        attrs = termios.tcgetattr(slave)
        attrs[1] &= ~termios.OPOST  # keep "\n" as is
        attrs[3] &= ~termios.ECHO
        termios.tcsetattr(slave, termios.TCSANOW, attrs)
        try:
            self.proc = (launch or on_host(cpus))(argv, what=name, stdin=subprocess.PIPE,
                                                   stdout=slave, stderr=slave)
        except CommandFailed:
            os.close(master)
            raise
        finally:
            os.close(slave)
        self._master = master
        self._pending = b""          # output not yet consumed by read_until()
        self.log = bytearray()       # the last LOG_KEEP bytes of output
        self._eof = False
        self._cond = threading.Condition()
        self._reader = threading.Thread(target=self._drain, daemon=True,
                                         name=f"console-{name}")
        self._reader.start()

    @property
    def pid(self) -> int:
        return self.proc.pid

    def _drain(self) -> None:
        while True:
            try:
                chunk = os.read(self._master, 65536)
            except OSError:  # EIO: every writer closed the terminal
                chunk = b""
            with self._cond:
                if not chunk:
                    self._eof = True
                    self._cond.notify_all()
                    return
                self._pending = (self._pending + chunk)[-self.PENDING_KEEP:]
                self.log += chunk
                del self.log[:-self.LOG_KEEP]
                self._cond.notify_all()

    def read_until(self, token: str, timeout: float) -> str:
        """Output up to and including token; ProcessError if it exits or stalls."""
        want = token.encode()
        deadline = time.monotonic() + timeout
        with self._cond:
            while want not in self._pending:
                if self._eof:
                    code = self.proc.wait(5)
                    raise ProcessError(f"{self.name} exited with code {code}: "
                                       f"{self.last_lines()}")
                left = deadline - time.monotonic()
                if left <= 0:
                    raise ProcessError(f"{self.name}: no {token.strip()!r} within {timeout:g} s;"
                                       f" last output: {self.last_lines()}")
                self._cond.wait(min(left, 0.5))
            end = self._pending.index(want) + len(want)
            out, self._pending = self._pending[:end], self._pending[end:]
        return out.decode(errors="replace")

    def send(self, line: str) -> None:
        """Send one command line. What was printed before it (log lines of other
        threads, an old prompt) is dropped, so the answer starts after it."""
        with self._cond:
            self._pending = b""
        try:
            self.proc.stdin.write(line.encode() + b"\n")
            self.proc.stdin.flush()
        except (BrokenPipeError, ValueError):
            raise ProcessError(f"{self.name} is gone (exit code {self.proc.poll()}): "
                               f"{self.last_lines()}") from None

    def last_lines(self, n: int = 3) -> str:
        lines = [l.strip() for l in bytes(self.log).decode(errors="replace").splitlines()
                 if l.strip()]
        return " | ".join(lines[-n:]) or "(no output)"

    def close(self, timeout: float = 10) -> int | None:
        """Wait for a clean exit, then escalate: SIGTERM, SIGKILL."""
        with contextlib.suppress(OSError, ValueError):
            self.proc.stdin.close()
        code = stop(self.proc, timeout)
        # The reader ends at EOF, once the child and its children closed the terminal.
        self._reader.join(2)
        with contextlib.suppress(OSError):
            os.close(self._master)
        return code


# How long a Daemon has to exit after SIGINT.
DAEMON_STOP_TIMEOUT = 15


class Daemon:
    """A switch's own process on a terminal (Console), which SIGINT stops
    cleanly (Click's, BESS's): started by launch_process(), whose pid is
    journaled before its owner waits for it to be ready."""

    def __init__(self, argv: Sequence[str], name: str, launch: Launch | None = None):
        self.argv = list(argv)
        self.name = name
        self.launch = launch
        self.console: Console | None = None

    @property
    def pid(self) -> int | None:
        return self.console.pid if self.console else None

    def launch_process(self) -> int:
        """Start it; its pid (journal it before waiting for it)."""
        self.console = Console(self.argv, self.name, launch=self.launch)
        return self.console.pid

    def exited(self) -> None:
        """ProcessError with its last words if it has exited."""
        code = self.console.proc.poll()
        if code is not None:
            raise ProcessError(f"{self.name} exited with code {code}: "
                               f"{self.console.last_lines()}")

    def stop(self, timeout: float = DAEMON_STOP_TIMEOUT) -> int | None:
        """SIGINT (it stops its threads, cleans up and exits), then SIGTERM and
        SIGKILL if it does not (stop())."""
        if self.console is None:
            return None
        console, self.console = self.console, None
        if console.proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                console.proc.send_signal(signal.SIGINT)
        return console.close(timeout)


def stop(proc: subprocess.Popen, timeout: float = 10) -> int | None:
    for sig in (None, signal.SIGTERM, signal.SIGKILL):
        if sig is not None and proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                proc.send_signal(sig)
        try:
            return proc.wait(timeout if sig is None else 5)
        except subprocess.TimeoutExpired:
            continue
    return proc.poll()


def find(token: str, comms: Sequence[str]) -> list[int]:
    """Pids of processes named one of comms (as /proc/PID/comm shows them, at most
    15 characters) whose command line mentions token: how a killed run's switch
    is found again without trusting a pid that may have been reused."""
    found = []
    for pid in process_ids():
        if pid == os.getpid():
            continue
        try:
            with open(f"/proc/{pid}/comm") as f:
                comm = f.read().strip()
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                cmdline = f.read().decode(errors="replace")
        except OSError:
            continue
        if comm in comms and token in cmdline:
            found.append(pid)
    return found


def kill_all(token: str, comms: Sequence[str], timeout: float = 5) -> list[int]:
    """SIGTERM, then SIGKILL, every process found by token; return their pids."""
    pids = find(token, comms)
    for sig in (signal.SIGTERM, signal.SIGKILL):
        signal_all(pids, sig)
        if wait_gone(pids, timeout):
            break
    return pids


def journal_process(journal, name: str, pid: int) -> None:
    """Record a started process the way `cnfperf cleanup` kills it (kind `process`):
    with its start time, so that a pid reused meanwhile is left alone."""
    if journal is not None:
        stat = proc_stat(pid)
        journal.add("process", name, pid=pid, start=stat.start_time if stat else None)
