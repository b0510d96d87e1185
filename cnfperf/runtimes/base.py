"""The container runtime interface: what the runner needs to put an engine
endpoint in its own namespaces, pinned to its planned cores."""
from __future__ import annotations

import contextlib
import os
import re
import subprocess
from abc import ABC, abstractmethod
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar, Iterable, Mapping, Protocol, Sequence

from cnfperf import SystemFailure
from cnfperf.host import tools
from cnfperf.host.links import NETNS_DIR
from cnfperf.host.system import is_static_elf, spawn

from .images import FULL, Image


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
    # a hugetlbfs its process takes this many MB of pages from: a pod asks
    # its node for them where the node accounts hugepages (runtimes/pod)
    hugepages_mb: int = 0


def gathered(mounts: Iterable[Mount]) -> tuple[Mount, ...]:
    """Each place mounted once, in order; a hugetlbfs named once per port
    (each port's engine memory) asks for the sum of them."""
    places: dict[tuple[str, str, bool], int] = {}
    for m in mounts:
        key = (m.source, m.target, m.readonly)
        places[key] = places.get(key, 0) + m.hugepages_mb
    return tuple(Mount(*key, hugepages_mb=mb) for key, mb in places.items())


MIN_QUOTA_US = 1000   # cgroup v1 and v2 refuse a CFS quota below 1 ms


@dataclass(frozen=True)
class Quota:
    """A CFS bandwidth limit: `percent` of one core's time in every `period_us`
    (200 = two cores' worth, spread over the container's cpuset)."""

    percent: float
    period_us: int = 100_000

    @classmethod
    def of(cls, percent: float | None, period_us: int) -> Quota | None:
        """A scenario's quota field (None: no limit) with its quota_period."""
        return None if percent is None else cls(percent, period_us)

    @property
    def quota_us(self) -> int:
        return round(self.percent / 100 * self.period_us)

    def check(self, cores: int) -> None:
        """More than all its cores can give is no limit at all, and the kernel
        refuses less than 1 ms per period: refuse both."""
        if not 0 < self.percent <= 100 * cores:
            raise ValueError(f"quota {self.percent:g} %: more than 0 and at most 100 × its "
                             f"{cores} core(s) = {100 * cores} %")
        if self.quota_us < MIN_QUOTA_US:
            raise ValueError(f"quota {self.percent:g} % of {self.period_us} µs is "
                             f"{self.quota_us} µs; the kernel's least is {MIN_QUOTA_US} µs "
                             "(a longer quota_period allows less)")


@dataclass(frozen=True)
class Nic:
    """One network card of a VM (runtimes/vm): a virtio-net PCI device, the
    guest sees them in the order given. Exactly one backend: a tap device
    (`tap`, in netns `netns`, None: the VM's own; `macvtap`: that link is a
    macvtap) or a vhost-user socket (`socket`; `server`: QEMU creates it).
    The guest's kernel names it `name`, with `mtu`; `dpdk`: bound instead to
uio_pci_generic for DPDK's virtio PMD. `model` igb: an emulated Intel
    82576 with SR-IOV instead (on a tap; its virtual functions are the
    guest's to make: QEMU >= 8, runtimes/vm/program.py). Container runtimes
    have their ports in their netns already and take none."""

    mac: str
    name: str
    mtu: int = 1500
    dpdk: bool = False
    tap: str | None = None
    netns: str | None = None
    macvtap: bool = False
    socket: str | None = None
    server: bool = False
    model: str = "virtio"     # virtio | igb


@dataclass(frozen=True)
class ImageInfo:
    name: str
    path: str
    size_bytes: int


class ContainerError(SystemFailure):
    """A container or its image cannot be made or used; a runtime command that
    fails raises CommandFailed (cnfperf.host.system) instead."""


def host_engine(engine: Path, image: Image) -> str:
    """The host's program that runtimes without an image of their own (netns,
    vm) run for `image`: an executable, statically linked for a static one."""
    if image.user:
        raise ContainerError(f"image {image.name}: a user's image runs in podman "
                             "(runtime = podman)")
    engine = Path(engine).resolve()
    if not engine.is_file() or not os.access(engine, os.X_OK):
        raise ContainerError(f"engine {engine} is not an executable file")
    if image.static and not is_static_elf(engine):
        raise ContainerError(f"engine {engine} is not statically linked "
                             f"(the {image.name} image's engine is)")
    return str(engine)


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


def check_request(name: str, cpus: Sequence[int], netns: str,
                  mounts: Sequence[Mount], quota: Quota | None = None) -> tuple[tuple[int, ...], Path]:
    """What every runtime's create() refuses (ValueError) before anything exists;
    returns the cores and the namespace's path."""
    check_name(name)
    checked = check_cpus(cpus)
    if quota is not None:
        quota.check(len(checked))
    path = check_netns(netns)
    check_mounts(mounts)
    return checked, path


def check_no_nics(nics: Sequence[Nic]) -> None:
    if nics:
        raise ValueError("virtual NICs are a virtual machine's: a container's ports are "
                         "in its netns")


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


class Container(ABC):
    """One endpoint's isolated place to run engine processes."""

    # A virtual machine's: a kernel of its own (its cores are the guest's
    # vCPUs, guest_cpu(); its DPDK ports PCI devices, eal_args(); its
    # interfaces and counters are read inside it).
    own_kernel: ClassVar[bool] = False
    # How many times longer than on the host a process inside takes to start or
    # stop (an emulated guest's: many); what waits for one allows for it.
    slowdown: float = 1.0

    def __init__(self, journal: Journal, name: str, cpus: tuple[int, ...], netns: str,
                 engine: str):
        self.journal = journal
        self.name = name
        self.cpus = cpus
        self.netns = netns
        self.engine = engine            # the engine's path as processes inside see it
        self._procs: list[subprocess.Popen] = []
        self._destroyed = False

    def exec(self, argv: list[str], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
             stdin=subprocess.DEVNULL, env: Mapping[str, str] | None = None) -> subprocess.Popen:
        """Start argv inside (its netns, pinned to its cpus), with `env` added to
        the container's environment. Signals sent to the returned Popen reach the
        process inside, and so do its stdin and stdout (an unbuffered pipe each
        when asked for)."""
        if self._destroyed:
            raise ContainerError(f"exec in {self.name}: container was destroyed")
        if not argv or not all(isinstance(a, str) for a in argv):
            raise ValueError(f"exec argv {argv!r}: a non-empty list of strings is needed")
        proc = spawn(self._command(argv, dict(env or {})), what=f"exec in {self.name}",
                     env=self._env(dict(env or {})), stdin=stdin, stdout=stdout, stderr=stderr,
                     bufsize=0)
        self._procs.append(proc)
        return proc

    @property
    def pids(self) -> list[int]:
        """Host pids of what exec() started that still runs (for a runtime whose
        exec runs argv in place; runc's are `runc exec` processes)."""
        return [p.pid for p in self._procs if p.poll() is None]

    @property
    def init_pid(self) -> int | None:
        """The host pid of the container's init, whose cgroup is the container's;
        None when the container has no cgroup of its own, or (a lazy one) no
        process yet."""
        return None

    def facts(self) -> dict[str, Any]:
        """What a point stores of how this container runs beyond its runtime's
        (a pod's QoS class and the cores it was given); {}: nothing."""
        return {}

    def guest_cpu(self, core: int) -> int:
        """The CPU number a process inside sees for host core `core`."""
        return core

    def eal_args(self, memory_mb: int, file_prefix: str) -> list[str]:
        """A DPDK engine's EAL arguments for the container's own DPDK devices
        (a virtual machine's NICs); a container has none: the data plane's
        vdevs serve it."""
        raise ContainerError(f"{self.name}: no DPDK devices of its own")

    @abstractmethod
    def _command(self, argv: list[str], env: dict[str, str]) -> list[str]:
        """The host command that runs argv inside, as argv's own process, with
        `env` in its environment (when the command passes it on itself)."""

    def _env(self, env: dict[str, str]) -> dict[str, str] | None:
        """The host command's environment; None: cnfperf's own."""
        return None

    def _reap(self, grace: float = 0.0) -> None:
        """Every process exec() started has ended: each given `grace` seconds to
        exit on its own (its container killed already takes it along), then
        killed."""
        for proc in self._procs:
            if grace:
                with contextlib.suppress(subprocess.TimeoutExpired):
                    proc.wait(timeout=grace)
            if proc.poll() is None:
                proc.kill()
            proc.wait()

    def release(self) -> None:
        """The point is over and the container is kept for the next (its
        runtime keeps): what exec() started for it has ended, killed if not."""
        self._reap()
        self._procs.clear()

    def stale(self) -> str | None:
        """Why a kept container cannot serve another point, or None when it can."""
        return f"{self.name} was destroyed" if self._destroyed else None

    @abstractmethod
    def destroy(self) -> None:
        """Kill what exec() started and remove the container; safe to call twice."""

    def __enter__(self) -> "Container":
        return self

    def __exit__(self, *exc: object) -> None:
        self.destroy()


class Runtime(ABC):
    name: ClassVar[str]
    # What the rest of cnfperf asks of a runtime, as capabilities, never its
    # name. `own_kernel`: its containers are virtual machines with a kernel
    # and a clock of their own; a scenario's `runtime` names none such, a
    # placement (`place`) puts nodes in it. `place`: the nf_in and endpoint_in value
    # that puts nodes in it (None: a container runtime, the `container`
    # placement's, named by `runtime`). `host_files`: its containers see the
    # host's files as they are (no image, no mount namespace: nothing is
    # mounted in, a program is the host's: it builds no image, it runs the
    # host's program of each).
    own_kernel: ClassVar[bool] = False
    place: ClassVar[str | None] = None
    host_files: ClassVar[bool] = False
    # Whether create() can hold a container to a CPU quota (it needs a cgroup).
    quotas: ClassVar[bool] = True
    # Its create() moves the node's ports out of its netns into another (a
    # pod's), which then takes the netns's name: what is made of the ports
    # (addresses, routes: an NF kind's prepare) is made once it exists.
    takes_ports: ClassVar[bool] = False
    # Its containers are worth keeping between points made alike (run/keep.py):
    # virtual machines, whose boot takes seconds to a minute; a container is
    # made anew each point.
    keeps: ClassVar[bool] = False
    # kind -> fn(name, info): how `cnfperf cleanup` undoes the journal lines
    # of its own kinds (a cluster's namespace)
    undo: ClassVar[dict[str, Any]] = {}

    @classmethod
    def scenario_problem(cls, s: Any) -> tuple[str, str] | None:
        """(field, why) for its own fields a scenario sets as it cannot take (the
        vm runtime's vm_image), or None; run/checks asks every runtime (exit 2).
        `s`: a Scenario (runtimes stand below scenario.py and import none of it)."""
        return None

    @classmethod
    def placement_problem(cls, s: Any) -> str | None:
        """Why this host cannot place the scenario's nodes it holds (a cluster
        that does not answer), or None: a study leaves such points out, where a
        run refuses them (scenario_problem says it too)."""
        return None

    def __init__(self, journal: Journal, state_dir: Path):
        self.journal = journal
        self.state_dir = Path(state_dir)

    @classmethod
    @abstractmethod
    def check(cls) -> list[str]:
        """Problems that make this runtime unusable on this host; [] if none."""

    @classmethod
    def _needs(cls, *names: str) -> list[str]:
        """What every runtime needs: root, and these tools (cnfperf.host.tools names)."""
        problems = [] if os.geteuid() == 0 else [f"{cls.name} runtime needs root"]
        return problems + tools.problems(*names)

    @abstractmethod
    def prepare(self, engine: Path, image: Image = FULL) -> ImageInfo:
        """Make the image's program `engine` (its declaration says which:
        images.Image.program) available to containers created with the same
        `image` (build or reuse that image)."""

    @abstractmethod
    def create(self, name: str, cpus: Sequence[int], netns: str,
               mounts: Sequence[Mount] = (), image: Image = FULL,
               quota: Quota | None = None, nics: Sequence[Nic] = (),
               lazy: bool = False) -> Container:
        """A container joined to the existing network namespace `netns`, running
        the engine `prepare(…, image)` was given; its `engine` says where. Its
        processes may run on `cpus`, for at most `quota` of their time. `nics`:
        a virtual machine's NICs (a container's ports are in its netns).
        `lazy`: the container need not run before its first exec(), whose
        process may become its init (it then ends with that process, which
        must handle SIGINT and SIGTERM itself: NfKind.lazy); a runtime
        without such a start (netns, podman, vm) makes it as any other."""

    def close(self) -> str | None:
        """What the run's containers shared, removed once the run is done (a
        cluster's namespace); what it was, for the teardown's report (None:
        nothing, the default)."""
        return None

    def configure_for(self, s: Any) -> None:
        """A point's settings for the containers it creates next (a VM's
        accelerator, memory, disk and pinning); most runtimes have none."""

    @classmethod
    def stored(cls, s: Any) -> dict[str, str]:
        """What a point stores of how its nodes in this runtime ran (a guest
        runtime's accelerator and versions); {}: nothing."""
        return {}

    @classmethod
    @abstractmethod
    def leftovers(cls, prefix: str) -> list[str]:
        """Names of this runtime's containers starting with prefix."""

    @classmethod
    @abstractmethod
    def remove(cls, name: str) -> None:
        """Force-remove one leftover container; no error if it is already gone."""

    @classmethod
    def tidy(cls) -> None:
        """Its own state, once no container of cnfperf's is left (runc's root,
        podman's run-time directory): what a killed run's containers kept,
        which removing them (remove) would have dropped. Nothing by default."""
