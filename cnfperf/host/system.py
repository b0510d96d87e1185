"""The host's commands and processes: the one place cnfperf runs a short command,
starts a long-running process, signals processes or reads their state in /proc.

Whatever goes wrong raises CommandFailed, a SystemFailure whose message is one
line: what was being done, the command, and the most telling line of what it
said; a tool that is not installed is named with the Debian package that has it.
"""
from __future__ import annotations

import contextlib
import os
import re
import shlex
import signal
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Mapping, NamedTuple, Sequence

from cnfperf import SystemFailure
from cnfperf.host import tools


class CommandFailed(SystemFailure):
    """A command could not be started, did not finish in time, or exited non-zero
    (then returncode, stdout and stderr say how)."""

    def __init__(self, message: str, argv: Sequence[str], returncode: int | None = None,
                 stdout: str = "", stderr: str = ""):
        super().__init__(message)
        self.argv = list(argv)
        self.returncode = returncode
        self.stdout = stdout
        self.stderr = stderr


def run(argv: Sequence[str | os.PathLike], *, what: str | None = None, timeout: float = 30,
        check: bool = True, env: Mapping[str, str] | None = None,
        log: Path | None = None) -> str:
    """Run a short command and return its standard output.

    CommandFailed if it cannot be started or does not finish within `timeout`
    seconds, and (unless `check` is false) if it exits non-zero. `what` says
    what was being done, for the message. `log` is a file that takes the
    command's output instead of pipes, for a command that leaves a child holding
    its stdio (`runc run --detach`): reading a pipe would wait for that child.
    The file's text is then what is returned and what the error line is taken from.
    """
    argv = [os.fspath(a) for a in argv]
    code, out, err = _capture(argv, what, timeout, env, log)
    if check and code != 0:
        said = _complaint(out, err, code)
        raise CommandFailed(_say(what, f"`{shlex.join(argv)}` failed: {said}"), argv, code, out,
                            err)
    return out


def _capture(argv: list[str], what: str | None, timeout: float,
             env: Mapping[str, str] | None, log: Path | None) -> tuple[int, str, str]:
    """(exit code, stdout, stderr) of a command that started and finished in time."""
    # stdin is empty, so that nothing waits for input.
    with open(log, "w") if log else contextlib.nullcontext() as sink:
        try:
            done = subprocess.run(argv, stdin=subprocess.DEVNULL, stdout=sink or subprocess.PIPE,
                                  stderr=sink or subprocess.PIPE, text=True, errors="replace",
                                  timeout=timeout, env=env)
        except subprocess.TimeoutExpired:
            raise CommandFailed(_say(what, f"`{shlex.join(argv)}` did not finish in "
                                           f"{timeout:g} s"), argv) from None
        except OSError as e:
            raise CommandFailed(_say(what, _not_started(argv[0], e)), argv) from None
    if log is None:
        return done.returncode, done.stdout, done.stderr
    text = Path(log).read_text(errors="replace")
    return done.returncode, text, text


def _complaint(out: str, err: str, code: int) -> str:
    """What a failed command said: its error output's telling line, else its output's."""
    text = err if err.strip() else out
    return first_error_line(text) if text.strip() else f"exit code {code}, no output"


def spawn(argv: Sequence[str], *, what: str | None = None, cpus: Iterable[int] | None = None,
          **popen: Any) -> subprocess.Popen:
    """Start a long-running process (an engine, a switch daemon) in a session of
    its own, so that a ^C meant for cnfperf does not reach it first: its owner
    decides when and how it stops. `cpus`: the only cores it may run on.
    CommandFailed if it cannot be started; `popen` goes to subprocess.Popen."""
    affinity = set(cpus) if cpus else None

    def child() -> None:
        # Its owner stops it with SIGINT. A cnfperf started in the background
        # by a non-interactive shell (`cnfperf run … &`, a CI script) has SIGINT
        # and SIGQUIT ignored; its children would inherit that, and a shell (a
        # cmd: NF's script) cannot trap a signal ignored when it started.
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        signal.signal(signal.SIGQUIT, signal.SIG_DFL)
        if affinity:
            os.sched_setaffinity(0, affinity)

    try:
        return subprocess.Popen(list(argv), start_new_session=True, preexec_fn=child, **popen)
    except OSError as e:
        raise CommandFailed(_say(what, _not_started(argv[0], e)), argv) from None


def _say(what: str | None, problem: str) -> str:
    return f"{what}: {problem}" if what else problem


def _not_started(program: str, error: OSError) -> str:
    tool = tools.TOOLS.get(os.path.basename(program))
    if isinstance(error, FileNotFoundError) and tool is not None:
        return tools.not_found(program, tool.package)
    return f"`{program}` could not be started: {error.strerror}"


def first_error_line(output: str) -> str:
    """The line of a command's output that says what went wrong: the last one, or
    for a tool that logs as logfmt (runc: `level=error msg="..."`) its message."""
    lines = [l.strip() for l in output.splitlines() if l.strip()]
    for line in reversed(lines):
        m = re.search(r'level=(?:error|fatal)\s+msg="((?:[^"\\]|\\.)*)"', line)
        if m:
            return m.group(1).replace('\\"', '"')
    return lines[-1] if lines else "(no error output)"


# -- processes -----------------------------------------------------------------

# Clock ticks per second of /proc's CPU times (USER_HZ).
USER_HZ = os.sysconf("SC_CLK_TCK")


@dataclass(frozen=True)
class ProcStat:
    """What /proc/PID/stat (or a thread's /proc/PID/task/TID/stat) says."""

    state: str       # R running, S sleeping, D disk wait, Z zombie, X dead, …
    start_time: str  # clock ticks from boot to its start: with the pid, names it for good
    user_s: float = 0.0    # CPU time in user and kernel mode: a process's counts
    system_s: float = 0.0  # every thread it has had, exited ones included
    core: int = -1         # the CPU it last ran on

    @property
    def running(self) -> bool:
        """A zombie has exited; it only waits for its parent to reap it."""
        return self.state not in ("Z", "X")


def proc_stat(pid: int, tid: int | None = None) -> ProcStat | None:
    """The process's (or its thread tid's) state, start time, CPU times and last
    core, or None if there is no such process."""
    path = f"/proc/{pid}/stat" if tid is None else f"/proc/{pid}/task/{tid}/stat"
    try:
        with open(path) as f:
            return parse_stat(f.read())
    except (OSError, IndexError, ValueError):
        return None


def parse_stat(text: str) -> ProcStat:
    """/proc/PID/stat's line (proc(5)): field n is at n - 3 after comm."""
    # comm (field 2) may hold spaces and ')': count the rest from its end.
    fields = text.rsplit(")", 1)[1].split()
    return ProcStat(state=fields[0], start_time=fields[19], user_s=int(fields[11]) / USER_HZ,
                    system_s=int(fields[12]) / USER_HZ, core=int(fields[36]))


def running(pid: int) -> bool:
    stat = proc_stat(pid)
    return stat is not None and stat.running


def process_ids() -> list[int]:
    """Every process's pid, as /proc lists them now."""
    return [int(entry) for entry in os.listdir("/proc") if entry.isdigit()]


# A SIGKILLed process is gone in well under this; one that is not, is stuck in
# the kernel (an uninterruptible wait), and whoever waits says so.
KILL_WAIT_S = 10.0


def signal_all(pids: Iterable[int], sig: int) -> None:
    for pid in pids:
        # Gone already, or a pid reused by someone else's process: not ours to stop.
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, sig)


def signal_group(pid: int, sig: int) -> bool:
    """`sig` to the process group `pid` leads (a process spawn() started: its
    session's leader, and every child it did not move elsewhere); whether the
    group was still there."""
    try:
        os.killpg(pid, sig)
    except ProcessLookupError:
        return False
    return True


def tagged(var: str, prefix: str) -> dict[int, str]:
    """pid -> value of the live processes whose environment has `var` set to a
    value starting with prefix: a runtime tags what it starts so that a run
    killed with SIGKILL can still be cleaned up by name."""
    found = {}
    needle = f"{var}={prefix}".encode()
    for pid in process_ids():
        with contextlib.suppress(OSError):
            with open(f"/proc/{pid}/environ", "rb") as f:
                for entry in f.read().split(b"\0"):
                    if entry.startswith(needle):
                        found[pid] = entry.split(b"=", 1)[1].decode(errors="replace")
                        break
    return found


def kill_tagged(var: str, name: str, timeout: float = 5.0) -> None:
    """SIGKILL the processes tagged with exactly `name`, and wait for them."""
    pids = [pid for pid, n in tagged(var, name).items() if n == name]
    signal_all(pids, signal.SIGKILL)
    # A killed process keeps its environ until it is reaped by its parent; wait only
    # for those that are still running.
    wait_gone(pids, timeout)


def wait_gone(pids: Sequence[int], timeout: float) -> bool:
    """Wait until none of pids runs any more; whether that happened in time."""
    deadline = time.monotonic() + timeout
    while any(running(p) for p in pids):
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.02)
    return True


# -- mounts --------------------------------------------------------------------

class Mounted(NamedTuple):
    source: str
    point: str
    fstype: str
    options: str


def mounts() -> list[Mounted]:
    """The mount table (/proc/mounts), with its octal escapes (\\040 for a space) undone."""
    with open("/proc/mounts") as f:
        return [Mounted(*(_unescape(field) for field in line.split()[:4])) for line in f]


def unmount_under(path: Path, lazy: bool = False) -> None:
    """Every mount at or below `path`, deepest first, unmounted (`lazy`:
    detached even while busy); what stays busy, whoever removes the folder
    next reports."""
    root = str(path.resolve())
    for point in sorted((m.point for m in mounts()), key=len, reverse=True):
        if point == root or point.startswith(root + "/"):
            run(["umount", *(["-l"] if lazy else []), point], check=False)


def _unescape(field: str) -> str:
    return re.sub(r"\\([0-7]{3})", lambda m: chr(int(m[1], 8)), field)


def is_static_elf(path: str | Path) -> bool:
    """A 64-bit ELF file without a program interpreter (PT_INTERP): it needs no
    dynamic loader, so it runs in an image without shared objects of its own."""
    try:
        with open(path, "rb") as f:
            head = f.read(64)
            if len(head) < 64 or head[:4] != b"\x7fELF" or head[4] != 2:
                return False
            order = "little" if head[5] == 1 else "big"
            phoff = int.from_bytes(head[32:40], order)
            phentsize = int.from_bytes(head[54:56], order)
            phnum = int.from_bytes(head[56:58], order)
            f.seek(phoff)
            table = f.read(phentsize * phnum)
    except OSError:
        return False
    return phentsize > 0 and not any(int.from_bytes(table[i:i + 4], order) == 3
                                     for i in range(0, len(table), phentsize))
