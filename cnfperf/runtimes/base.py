"""The container runtime interface: what the runner needs to put an engine
endpoint in its own namespaces, pinned to its planned cores."""
from __future__ import annotations

import os
import re
import subprocess
from abc import ABC, abstractmethod
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar, Protocol, Sequence

NETNS_DIR = Path("/var/run/netns")

# runc accepts [\w+-.]; we are stricter so a name is also a safe netns, cgroup and
# file name, and short enough to show in `ip netns` and `runc list` without wrapping.
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,62}")


class Journal(Protocol):
    """Write-ahead record of created resources, kept by the runner."""

    def add(self, kind: str, name: str, **info: object) -> None: ...

    def discard(self, kind: str, name: str) -> None: ...


@dataclass(frozen=True)
class Mount:
    source: str
    target: str
    readonly: bool = False


@dataclass(frozen=True)
class ImageInfo:
    name: str
    path: str
    size_bytes: int


class ContainerError(RuntimeError):
    """A runtime command failed; the message names the command and its error."""


def check_name(name: str, what: str = "container name") -> str:
    if not isinstance(name, str) or not _NAME.fullmatch(name):
        raise ValueError(f"{what} {name!r}: use 1-63 letters, digits, '_', '.', '-' "
                         "(not starting with '.', '_' or '-')")
    return name


def online_cpus() -> set[int]:
    return set(os.sched_getaffinity(0))


def check_cpus(cpus: Sequence[int]) -> tuple[int, ...]:
    """Cores must be given, distinct, and usable by this process (a cpuset the
    kernel would reject fails later with a far less helpful message)."""
    if not cpus:
        raise ValueError("cpus: at least one core is needed")
    if any(not isinstance(c, int) or isinstance(c, bool) or c < 0 for c in cpus):
        raise ValueError(f"cpus {list(cpus)!r}: cores are non-negative integers")
    if len(set(cpus)) != len(cpus):
        raise ValueError(f"cpus {list(cpus)!r}: a core is listed twice")
    usable = online_cpus()
    missing = sorted(set(cpus) - usable)
    if missing:
        raise ValueError(f"cpus {list(cpus)!r}: core(s) {missing} not available "
                         f"(usable: {cpu_list(sorted(usable))})")
    return tuple(cpus)


def cpu_list(cpus: Sequence[int]) -> str:
    """The kernel's list format (cpuset.cpus, taskset -c): '1', '0,2', '4-7'."""
    out: list[str] = []
    ordered = sorted(cpus)
    i = 0
    while i < len(ordered):
        j = i
        while j + 1 < len(ordered) and ordered[j + 1] == ordered[j] + 1:
            j += 1
        out.append(str(ordered[i]) if i == j else f"{ordered[i]}-{ordered[j]}")
        i = j + 1
    return ",".join(out)


def check_netns(netns: str) -> Path:
    check_name(netns, "netns")
    path = NETNS_DIR / netns
    if not path.exists():
        raise ValueError(f"netns {netns!r}: no such network namespace ({path} missing)")
    return path


def check_mounts(mounts: Sequence[Mount]) -> None:
    targets = set()
    for m in mounts:
        if not os.path.exists(m.source):
            raise ValueError(f"mount source {m.source!r}: does not exist")
        if not m.target.startswith("/") or ".." in Path(m.target).parts:
            raise ValueError(f"mount target {m.target!r}: must be an absolute path without '..'")
        if m.target in targets:
            raise ValueError(f"mount target {m.target!r}: mounted twice")
        targets.add(m.target)


def first_error_line(stderr: str) -> str:
    """runc logs as logfmt (`level=error msg="..."`); people want the msg."""
    lines = [l.strip() for l in stderr.splitlines() if l.strip()]
    for line in reversed(lines):
        m = re.search(r'level=(?:error|fatal)\s+msg="((?:[^"\\]|\\.)*)"', line)
        if m:
            return m.group(1).replace('\\"', '"')
    return lines[-1] if lines else "(no error output)"


def run_checked(argv: list[str], what: str, timeout: float = 30) -> str:
    """Run a short command; on failure raise ContainerError naming it."""
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=timeout,
                              stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        raise ContainerError(f"{what}: `{' '.join(argv)}` did not finish in {timeout:g} s") from None
    except OSError as e:
        raise ContainerError(f"{what}: `{argv[0]}` could not be started: {e.strerror}") from None
    if done.returncode != 0:
        raise ContainerError(f"{what}: `{' '.join(argv)}` failed: {first_error_line(done.stderr)}")
    return done.stdout


class Container(ABC):
    """One endpoint's isolated place to run engine processes."""

    name: str
    netns: str
    cpus: tuple[int, ...]
    engine: str

    @abstractmethod
    def exec(self, argv: list[str], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
             stdin=subprocess.DEVNULL) -> subprocess.Popen:
        """Start argv inside (its netns, pinned to its cpus). Signals sent to the
        returned Popen reach the process inside, and so do its stdin and stdout
        (an unbuffered pipe each when asked for)."""

    @abstractmethod
    def destroy(self) -> None:
        """Kill what exec() started and remove the container; safe to call twice."""

    def __enter__(self) -> "Container":
        return self

    def __exit__(self, *exc: object) -> None:
        self.destroy()


class Runtime(ABC):
    name: ClassVar[str]

    def __init__(self, journal: Journal, state_dir: Path):
        self.journal = journal
        self.state_dir = Path(state_dir)

    @classmethod
    @abstractmethod
    def check(cls) -> list[str]:
        """Problems that make this runtime unusable on this host; [] if none."""

    @abstractmethod
    def prepare(self, engine: Path) -> ImageInfo:
        """Make the engine binary available to containers (build or reuse an image)."""

    @abstractmethod
    def create(self, name: str, cpus: Sequence[int], netns: str,
               mounts: Sequence[Mount] = ()) -> Container:
        """A container joined to the existing network namespace `netns`."""

    @classmethod
    @abstractmethod
    def leftovers(cls, prefix: str) -> list[str]:
        """Names of this runtime's containers starting with prefix."""

    @classmethod
    @abstractmethod
    def remove(cls, name: str) -> None:
        """Force-remove one leftover container; no error if it is already gone."""
