"""The vm runtime: one QEMU guest per node, booted from guest.py's kernel and
initramfs with the host's root over 9p, in the node's netns, its vCPU threads
pinned to the node's cores in a cgroup of its own; commands reach it through
the guest's exec server (exec.py and server.py)."""
from __future__ import annotations

import contextlib
import dataclasses
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, ClassVar, Sequence

from cnfperf import fields
from cnfperf.fields import AUTO
from cnfperf.host import tools
from cnfperf.host.journal import RUN_DIR
from cnfperf.host.system import is_static_elf, kill_tagged, spawn, tagged

from .. import rootfs
from ..base import (Container, ContainerError, ImageInfo, Journal, Mount, Nic, Quota, Runtime,
                    check_name, check_netns, check_request, host_engine)
from ..images import FULL, Image
from . import cgroup, guest as guests, nics as nic_slots, ports, probe as probes, program, qemu, qmp

KIND = "container"
# QEMU and the relays carry this in their environment, so a run killed with
# SIGKILL can still be cleaned up: remove() finds them by name.
TAG = "CNFPERF_VM"
# Each VM's sockets (QMP, exec ports), console log and QEMU's own; short paths,
# for unix sockets' 108 bytes.
VM_ROOT = RUN_DIR / "vm"
QMP_S = 60.0       # QEMU's start to its monitor's answer (vhost-user: its peer's too)
READY_S = 180.0    # QEMU start to the exec server's answer: ~10 s under TCG, slower when busy
QUIT_S = 5.0
STALE_S = 20.0     # a kept guest's exec server answers in ms; emulated and busy, in seconds
ACCELS = (AUTO, *fields.ACCELS)
# How many times longer than on the host a process in the guest takes to start
# or stop (Container.slowdown): an emulated guest's DPDK initialises in ~15 s.
SLOWDOWN = {"kvm": 2.0, "tcg": 10.0}
# Where /init mounts a disk image of the user's (vm_image), for their commands
# (cmd:, testpmd: an image whose `commands` are the user's) to run in, chrooted;
# the host's chroot.
USER_ROOT = "/run/cnfperf-user"
CHROOT = "/usr/sbin/chroot"
HOST_IMAGE = "host"
MIN_MEMORY_MB = 160     # the guest kernel, the 9p root's page cache and Python; then hugepages
PACKAGE_ROOT = str(Path(__file__).resolve().parents[3])   # what holds cnfperf/
_PATH = re.compile(r"/[A-Za-z0-9_.+/-]*")


def _drop_empty_root() -> None:
    with contextlib.suppress(OSError):
        VM_ROOT.rmdir()


def _tail(path: Path, lines: int = 8) -> str:
    with contextlib.suppress(OSError):
        said = [l for l in path.read_text(errors="replace").splitlines() if l.strip()]
        return " | ".join(said[-lines:])
    return ""


class VmContainer(Container):
    own_kernel = True

    def __init__(self, journal: Journal, name: str, cpus: tuple[int, ...], netns: str,
                 engine: str, proc: subprocess.Popen, vm_dir: Path, groups: list[Path],
                 nics: tuple[Nic, ...], hugepages_mb: int, ready_s: float, accel: str,
                 user_root: bool = False):
        super().__init__(journal, name, cpus, netns, engine)
        self.accel = accel
        self.user_root = user_root     # commands run in the user's disk image
        self.slowdown = SLOWDOWN[accel]
        self.qemu = proc
        self.dir = vm_dir
        self.groups = groups
        self.nics = nics
        self.hugepages_mb = hugepages_mb
        self.ready_s = ready_s         # QEMU's start to the exec server's answer

    @property
    def init_pid(self) -> int:
        """QEMU's: its cgroup is the VM's."""
        return self.qemu.pid

    @property
    def pids(self) -> list[int]:
        return [self.qemu.pid] if self.qemu.poll() is None else []

    def guest_cpu(self, host_core: int) -> int:
        """The vCPU that runs on that host core."""
        if host_core not in self.cpus:
            raise ValueError(f"core {host_core}: not one of VM {self.name}'s {list(self.cpus)}")
        return self.cpus.index(host_core)

    def eal_args(self, memory_mb: int, prefix: str) -> list[str]:
        """A DPDK engine's EAL in the guest holding its DPDK NICs (virtio PMD on
        uio_pci_generic: physical addresses, from the guest's own hugepages)."""
        if memory_mb > self.hugepages_mb:
            raise ValueError(f"memory {memory_mb} MB: the guest has {self.hugepages_mb} MB of "
                             "hugepages")
        args = ["--file-prefix", prefix, "--huge-dir", "/dev/hugepages", "--in-memory",
                "--socket-mem", str(memory_mb), "--socket-limit", str(memory_mb),
                "--no-telemetry", "--iova-mode", "pa"]
        for n, nic in enumerate(self.nics):
            if nic.dpdk:
                args += ["-a", nic_slots.pci(n)]
        return args

    def _command(self, argv: list[str], env: dict[str, str]) -> list[str]:
        inside = [CHROOT, USER_ROOT, *argv] if self.user_root else argv
        return [sys.executable, "-m", "cnfperf.runtimes.vm.exec", str(self.dir),
                *(f"--env={k}={v}" for k, v in env.items()), "--", *inside]

    def _env(self, env: dict[str, str]) -> dict[str, str]:
        path = os.pathsep.join(p for p in (PACKAGE_ROOT, os.environ.get("PYTHONPATH")) if p)
        return dict(os.environ, PYTHONPATH=path, **{TAG: self.name})

    def stale(self) -> str | None:
        """A kept guest serves the next point if QEMU runs and the guest's exec
        server answers (its clock set to the host's again, as at its boot)."""
        if self._destroyed or self.qemu.poll() is not None:
            return f"QEMU of VM {self.name} exited"
        try:
            ports.hello(self.dir, STALE_S, alive=lambda: self.qemu.poll() is None)
        except Exception as e:   # no answer, or one that is not its server's
            return f"VM {self.name} does not answer: {e or type(e).__name__}"
        return None

    def destroy(self) -> None:
        if self._destroyed:
            return
        self._reap()
        errors = _stop(self.name, self.qemu, self.dir, self.groups)
        if errors:
            raise ContainerError(f"destroy {self.name}: {'; '.join(errors)}")
        self._destroyed = True
        self.journal.discard(KIND, self.name)


def _stop(name: str, proc: subprocess.Popen | None, vm_dir: Path, groups: list[Path]) -> list[str]:
    """QEMU told to quit (killed if it does not), then everything of the VM's
    removed; the errors of what could not be."""
    errors = []
    if proc is not None and proc.poll() is None:
        with contextlib.suppress(ContainerError):
            qmp.execute(vm_dir / "qmp.sock", "quit", timeout=QUIT_S)
        try:
            proc.wait(timeout=QUIT_S)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    kill_tagged(TAG, name)
    try:
        cgroup.remove(groups)
    except ContainerError as e:
        errors.append(str(e))
    shutil.rmtree(vm_dir, ignore_errors=True)
    _drop_empty_root()
    return errors


class VmRuntime(Runtime):
    name = "vm"
    own_kernel = True
    keeps = True
    place = "vm"      # nf_in = vm, endpoint_in = vm
    _probed: ClassVar[dict[str, str | None] | None] = None

    def __init__(self, journal: Journal, state_dir: Path, accel: str = AUTO,
                 memory_mb: int | None = None, images_dir: Path | None = None,
                 kernel_since: tuple[int, ...] | None = None, iommu: bool = False):
        super().__init__(journal, state_dir)
        self.images_dir = images_dir
        self.iommu = iommu          # its guests get an emulated IOMMU (the lab's hosts)
        # None: the guests' kernel (guest.default_kernel); else the newest
        # installed of that version or later (the lab's: host/lab.py)
        self.kernel_since = kernel_since
        self.guest: guests.Guest | None = None
        self.engines: dict[Image, str] = {}      # image -> the host's program it runs
        self.disk: str | None = None       # vm_image: a disk image of the user's
        self.configure(accel, memory_mb)

    @classmethod
    def check(cls) -> list[str]:
        problems = cls._needs(tools.QEMU)
        problem = guests.kernel_problem()
        if problem:
            problems.append(problem)
        if not is_static_elf(rootfs.BUSYBOX):
            problems.append(tools.not_found(f"static {rootfs.BUSYBOX}",
                                            tools.TOOLS["busybox"].package))
        if not os.path.exists("/dev/net/tun"):
            problems.append("/dev/net/tun missing (the kernel's tun: a VM's tap NICs)")
        return problems

    @classmethod
    def probe(cls, timeout: float = 20.0) -> dict[str, str | None]:
        """accel (kvm, tcg) -> None when a guest boots under it here, else why
        not; asked once per process, and kept for the host's boot (probe.PROBED)."""
        if cls._probed is None:
            cls._probed = probes.boots(timeout)
        return cls._probed

    def configure(self, accel: str, memory_mb: int | None, image: str = HOST_IMAGE,
                  pin: bool = True) -> None:
        """A point's accel, vm_memory, vm_image and pin, for the VMs it creates
        next. Pinned, each vCPU thread runs on its own one of a VM's cores;
        unpinned, they float over them (the VM's cgroup holds its cpuset)."""
        if accel not in ACCELS:
            raise ValueError(f"accel {accel!r}: one of {', '.join(ACCELS)}")
        if memory_mb is not None and (why := self.memory_problem(memory_mb)):
            raise ValueError(f"memory_mb {memory_mb}: {why}")
        if image != HOST_IMAGE:
            self.image_format(image)
        self.accel, self.memory_mb, self.pin = accel, memory_mb, pin
        self.disk = None if image == HOST_IMAGE else os.path.realpath(image)

    def configure_for(self, s: Any) -> None:
        self.configure(accel=s.accel, memory_mb=s.vm_memory, image=s.vm_image, pin=s.pin)

    @classmethod
    def scenario_problem(cls, s: Any) -> tuple[str, str] | None:
        """vm_image: host, or a disk image a guest can boot your commands in."""
        if s.vm_image == HOST_IMAGE:
            return None
        try:
            cls.image_format(s.vm_image)
        except ValueError as e:
            return "vm_image", f"{e}; or {HOST_IMAGE} (the host's own root)"
        return None

    @classmethod
    def host_problems(cls, accel: str) -> list[str]:
        """What keeps this host from running virtual machines with `accel` (auto:
        whichever boots), each naming what it concerns first."""
        return [f"{cls.name}: {p}" for p in cls.check()] + \
            [f"accel {accel}: {p}" for p in cls.accel_problems(accel)]

    @classmethod
    def doctor(cls) -> dict[str, str | None]:
        """`cnfperf doctor`: whether a guest boots under each accelerator here
        (None: it does; else why not), from a tiny guest booted with a timeout;
        {} when the host cannot build a guest (check() says why)."""
        return {} if cls.check() else dict(cls.probe())

    @staticmethod
    def image_format(image: str) -> str:
        """qcow2 or raw for a vm_image of the user's; ValueError saying why not."""
        if "," in image:
            raise ValueError(f"{image}: no commas in its path (QEMU's options split at them)")
        return guests.disk_format(image)

    def accelerator(self) -> str:
        """kvm or tcg: the one asked for, or (auto) KVM where it boots a guest."""
        return self.resolve(self.accel)

    @staticmethod
    def memory_problem(memory_mb: int, dpdk_mb: int = 0) -> str | None:
        """Why a guest of `memory_mb` MB cannot hold its engines' DPDK memory
        (`dpdk_mb`, 0 without DPDK NICs): with DPDK NICs a guest reserves
        GUEST_HUGEPAGES_MB of hugepages, and needs MIN_MEMORY_MB beside them."""
        if dpdk_mb > qemu.GUEST_HUGEPAGES_MB:
            return (f"its DPDK engine needs {dpdk_mb} MB of hugepages, a guest has "
                    f"{qemu.GUEST_HUGEPAGES_MB} MB")
        need = MIN_MEMORY_MB + (qemu.GUEST_HUGEPAGES_MB if dpdk_mb else 0)
        if memory_mb < need:
            held = f" ({qemu.GUEST_HUGEPAGES_MB} MB of them hugepages for DPDK)" if dpdk_mb else ""
            return f"a VM needs at least {need} MB{held}"
        return None

    @classmethod
    def resolve(cls, accel: str) -> str:
        """kvm or tcg for a scenario's accel: auto is KVM where it boots a guest."""
        if accel != AUTO:
            return accel
        found = cls.probe()
        if found["kvm"] is None:
            return "kvm"
        if found["tcg"] is None:
            return "tcg"
        raise ContainerError(f"no VM boots here: kvm: {found['kvm']}; tcg: {found['tcg']}")

    @classmethod
    def accel_problems(cls, accel: str) -> list[str]:
        """Why VMs cannot run here with `accel` (auto: neither boots a guest);
        asks probe() (a few seconds, once per process) when the host has what a
        guest needs."""
        if cls.check():
            return []    # check() says what is missing
        found = cls.probe()
        if accel == AUTO:
            return [] if None in (found["kvm"], found["tcg"]) else \
                [f"no VM boots here (kvm: {found['kvm']}; tcg: {found['tcg']})"]
        return [] if found[accel] is None else [f"a guest does not boot under {accel} here: "
                                                f"{found[accel]}"]

    @classmethod
    def stored(cls, s: Any) -> dict[str, str]:
        return cls.facts(s.accel)

    @classmethod
    def facts(cls, accel: str) -> dict[str, str]:
        """What a point stores of how its VMs ran: the accelerator (auto
        resolved), QEMU's and the guest kernel's versions."""
        kernel = guests.default_kernel()
        return {"accel": cls.resolve(accel), "qemu": _qemu_version(),
                "guest_kernel": kernel.version if kernel else "?"}

    def prepare(self, engine: Path, image: Image = FULL) -> ImageInfo:
        """The guest (built once, cached); the engine is the host's own, at its
        host path in the guest (the static one for MINIMAL), as in netns."""
        engine = host_engine(engine, image)
        if self.guest is None:
            kernel = None
            if self.kernel_since is not None:
                kernel = guests.find_kernel(since=self.kernel_since)
                if kernel is None:
                    raise ContainerError(
                        f"no guest kernel {'.'.join(map(str, self.kernel_since))} or later in "
                        f"{guests.BOOT} (lab/parts.sh, which make deps runs, installs one)")
            self.guest = guests.build(self.images_dir, kernel)
        self.engines[image] = engine
        return self.guest.info

    def create(self, name: str, cpus: Sequence[int], netns: str,
               mounts: Sequence[Mount] = (), image: Image = FULL,
               quota: Quota | None = None, nics: Sequence[Nic] = (),
               lazy: bool = False) -> VmContainer:
        if image not in self.engines or self.guest is None:
            raise RuntimeError(f"VmRuntime.create(image={image.name!r}) before prepare()")
        cpus, _ = check_request(name, cpus, netns, mounts, quota)
        shared = _shared(mounts, self.engines[image])
        nics = tuple(nics)
        nic_slots.check(nics)
        for nic in nics:
            if nic.netns is not None:
                check_netns(nic.netns)
        vm_dir = VM_ROOT / name
        if vm_dir.exists():
            raise ValueError(f"container name {name!r}: a VM of that name exists ({vm_dir})")
        accel = self.accelerator()
        spec = qemu.Spec(name, len(cpus), accel, self.guest.kernel, self.guest.initramfs,
                         os.path.realpath(sys.executable), vm_dir, self.memory_mb, nics,
                         mounts=shared, disk=self.disk,
                         disk_format=self.image_format(self.disk) if self.disk else "raw",
                         iommu=self.iommu)
        qemu.cmdline(spec)    # too long: refused before anything exists
        if why := self.memory_problem(spec.memory, spec.hugepages * qemu.HUGEPAGE_MB):
            raise ValueError(f"memory_mb {spec.memory}: {why}")
        # Write-ahead: remove(name) undoes a VM killed at any later point.
        self.journal.add(KIND, name, runtime=self.name, dir=str(vm_dir))
        proc, groups = None, []
        try:
            vm_dir.mkdir(parents=True, mode=0o700)
            groups = cgroup.create(name, cpus, quota)
            start = time.monotonic()
            proc = self._start(spec, netns)
            cgroup.add(groups, proc.pid)
            _pin(spec, proc, cpus if self.pin else None)
            ports.hello(vm_dir, READY_S, alive=lambda: proc.poll() is None)
            ready_s = time.monotonic() - start
        except BaseException as e:
            why = _failure(e, spec)
            _stop(name, proc, vm_dir, groups)
            self.journal.discard(KIND, name)
            if isinstance(e, (ContainerError, OSError, TimeoutError)):
                raise ContainerError(f"VM {name}: {why}") from None
            raise
        return VmContainer(self.journal, name, cpus, netns, self.engines[image], proc, vm_dir,
                           groups, nics, spec.hugepages * qemu.HUGEPAGE_MB, ready_s, accel,
                           user_root=bool(self.disk) and image.commands)

    @staticmethod
    def _start(spec: qemu.Spec, netns: str) -> subprocess.Popen:
        """QEMU in the VM's netns, paused, handed its NICs' tap devices."""
        qemu_program = program.choose(spec.nics)
        fds: dict[int, int] = {}
        try:
            for n, nic in enumerate(spec.nics):
                if nic.tap is not None:
                    fds[n] = nic_slots.open_fd(nic, netns)
            spec = dataclasses.replace(spec, fds=fds)
            with open(spec.dir / "qemu.log", "wb") as log:
                return spawn(["ip", "netns", "exec", netns, *qemu.argv(qemu_program.args(), spec)],
                             what=f"QEMU of VM {spec.name}",
                             env=dict(os.environ, **qemu_program.env(), **{TAG: spec.name}),
                             stdin=subprocess.DEVNULL, stdout=log, stderr=log,
                             pass_fds=tuple(fds.values()))
        finally:
            for fd in fds.values():
                os.close(fd)

    @classmethod
    def leftovers(cls, prefix: str) -> list[str]:
        found = set(tagged(TAG, prefix).values()) | cgroup.names(prefix)
        if VM_ROOT.is_dir():
            found |= {d.name for d in VM_ROOT.glob(prefix + "*")}
        return sorted(found)

    @classmethod
    def remove(cls, name: str) -> None:
        check_name(name)
        errors = _stop(name, None, VM_ROOT / name, cgroup.dirs(name))
        if errors:
            raise ContainerError(f"remove {name}: {'; '.join(errors)}")


def _qemu_version() -> str:
    """`7.2.19`: the host's QEMU's, which a point's VMs run under."""
    found = program.host()
    return found.version if found else "?"


def _shared(mounts: Sequence[Mount], engine: str | None = None) -> tuple[str, ...]:
    """The guest sees the host's paths as they are (its root is the host's):
    a mount elsewhere is refused; a path under what the guest has of its own
    (/tmp, /run…) /init binds through. So is the engine's directory: a
    checkout under /tmp would be hidden by the guest's own /tmp."""
    if engine is not None:
        where = str(Path(engine).parent)
        mounts = (*mounts, Mount(where, where, readonly=True))
    found = []
    for m in mounts:
        source = os.path.realpath(m.source)
        if source != os.path.realpath(m.target):
            raise ValueError(f"mount target {m.target!r}: the vm runtime can only share host "
                             f"paths as they are (source {m.source!r})")
        if not _PATH.fullmatch(source) or "," in source:
            raise ValueError(f"mount {m.source!r}: only letters, digits and _.+-/ in its path")
        found.append(source)
    return tuple(dict.fromkeys(found))


def _pin(spec: qemu.Spec, proc: subprocess.Popen, cpus: tuple[int, ...] | None) -> None:
    """Each vCPU thread on its core (None: where the cgroup lets it float), then
    the guest runs. QEMU's monitor
    answers once QEMU has started: a vhost-user NIC's QEMU first waits for its
    peer (its server, or as the server its client), whichever way round."""
    deadline = time.monotonic() + QMP_S
    while not spec.qmp.exists():
        if proc.poll() is not None:
            raise ContainerError(f"QEMU exited ({proc.returncode}) as it started")
        if time.monotonic() >= deadline:
            raise ContainerError(f"QEMU made no monitor socket in {QMP_S:g} s")
        time.sleep(0.05)
    if cpus is not None:
        threads = qmp.vcpu_threads(spec.qmp, timeout=max(1.0, deadline - time.monotonic()))
        for index, tid in threads.items():
            os.sched_setaffinity(tid, {cpus[index]})
    qmp.execute(spec.qmp, "cont")


def _failure(error: BaseException, spec: qemu.Spec) -> str:
    """What went wrong, with the last words of QEMU and of the guest's console."""
    parts = [str(error) or type(error).__name__]
    said = _tail(spec.dir / "qemu.log", 3)
    if said:
        parts.append(f"QEMU said: {said}")
    console = _tail(spec.console)
    if console:
        parts.append(f"its console ended: {console}")
    return "; ".join(parts)
