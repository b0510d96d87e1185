"""What this host offers: the facts `cnfperf doctor` prints and data planes check.

Gathering only reads (files, `--version` outputs); it never creates anything.
What a plugin alone needs to know of the host (a switch's version, its builds)
it declares (Probe, builds.Build), and gather() is handed those declarations:
this module names no data plane.
"""
from __future__ import annotations

import contextlib
import functools
import glob
import gzip
import json
import os
import platform
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Callable, Iterable

from cnfperf import __version__
from cnfperf.host import cgroups, tools, tuning
from cnfperf.host.builds import Build, facts as build_facts
from cnfperf.host.engine_describe import DescribeError, describe
from cnfperf.fields import APIS
from cnfperf.host.system import CommandFailed, is_static_elf, mounts, run


@dataclass
class EngineFacts:
    path: str | None = None
    version: str | None = None
    apis: list[str] = field(default_factory=list)
    problem: str | None = None
    # Its NF kinds (--version's `nfs`); None when it does not say (built before
    # it did): unknown, not none.
    nfs: list[str] | None = None
    # Its apis that poll a queue per thread (nf_cores, endpoint_cores: --describe);
    # None when it does not say.
    queues: list[str] | None = None


@dataclass(frozen=True)
class Probe:
    """A fact of the host a plugin declares: doctor prints it (its row `label`)
    and the plugin reads it back from HostFacts.probes[key] (its stored versions)."""
    key: str                            # its name in the host's facts (and what runs store)
    label: str                          # doctor's row
    read: Callable[[], str | None]      # the fact, or None: not found
    missing: Callable[[], str] = lambda: "not found"   # doctor's row when it is not


@dataclass
class Hugepages:
    size_kb: int = 0
    total: int = 0
    free: int = 0
    mounts: list[str] = field(default_factory=list)


@dataclass
class HostFacts:
    cores: int
    usable_cpus: list[int]
    cpu_model: str
    kernel: str
    root: bool
    iproute2: bool
    # kernel link types -> whether this kernel has them: what the data planes
    # asked (kernel_has), each once
    kernel_links: dict[str, bool]
    hugepages: Hugepages
    runc: str | None
    busybox_static: str | None
    dpdk: str | None
    testpmd: str | None
    libxdp: str | None
    kvm: bool
    engine: EngineFacts
    cnfperf: str = __version__
    # the static build beside it: network functions on a kernel api run it
    static_engine: EngineFacts = field(default_factory=EngineFacts)
    # cgroups.Layout: the version and the controllers cnfperf can use, where
    cgroups: dict = field(default_factory=dict)
    # what `make switches` built (builds.facts): the builds the plugins declare
    builds: dict = field(default_factory=dict)
    # the plugins' probes (Probe.key -> its fact, None: not found), in their order
    probes: dict[str, str | None] = field(default_factory=dict)
    # doctor's row of each probe: its label and what it says when not found
    probe_rows: dict[str, tuple[str, str]] = field(default_factory=dict, repr=False)
    # how the host is tuned (tuning.py: governor, SMT, isolated cores, …)
    tuning: dict[str, str] = field(default_factory=dict)

    def to_dict(self) -> dict:
        """The facts as runs store them and agents send them: each probe's fact
        under its key, beside the others (probe_rows are doctor's alone)."""
        d = asdict(self)
        del d["probe_rows"]
        probed = d.pop("probes")
        return {**d, **probed}

    def kernel_has(self, link_type: str, option: str) -> bool:
        """Whether this kernel has a link type (its module loaded, its config
        option CONFIG_<option> built in, or a module modprobe finds); the data
        planes ask for theirs (DataPlane.kernel_links), and doctor lists the
        answers."""
        if link_type not in self.kernel_links:
            self.kernel_links[link_type] = _kernel_has(link_type, option)
        return self.kernel_links[link_type]


def gather(engine: Path | None, builds: Iterable[Build] = (),
           probes: Iterable[Probe] = (), compare: bool = False) -> HostFacts:
    """The host's facts, with the builds and probes the plugins declare (each
    once, in the order given: two data planes may declare one); compare: each
    build against its sources too (builds.facts: doctor's, a second's work)."""
    made = list({b.name: b for b in builds}.values())
    declared = list({p.key: p for p in probes}.values())
    # a probe's fact is stored beside the host's own (to_dict): never in place of one
    if clash := {p.key for p in declared} & {f.name for f in fields(HostFacts)}:
        raise ValueError(f"probes named like host facts: {', '.join(sorted(clash))}")
    return HostFacts(
        cores=os.cpu_count() or 1,
        usable_cpus=sorted(os.sched_getaffinity(0)),
        cpu_model=_cpu_model(),
        kernel=platform.release(),
        root=os.geteuid() == 0,
        iproute2=bool(tools.find("ip") and tools.find("bridge")),
        kernel_links={},   # asked for by the data planes' checks: kernel_has
        hugepages=_hugepages(),
        runc=_first_line(["runc", "--version"], strip="runc version "),
        busybox_static=_static_busybox(),
        dpdk=_first_line(["pkg-config", "--modversion", "libdpdk"]),
        testpmd=tools.find("dpdk-testpmd"),
        libxdp=_first_line(["pkg-config", "--modversion", "libxdp"]),
        kvm=os.access("/dev/kvm", os.R_OK | os.W_OK),
        engine=engine_facts(engine),
        static_engine=engine_facts(static_engine(engine) if engine else None),
        cgroups=cgroups.layout().to_dict(),
        builds=build_facts(made, compare),
        probes={p.key: p.read() for p in declared},
        probe_rows={p.key: (p.label, p.missing()) for p in declared},
        tuning=tuning.read(),
    )


def static_engine(engine: Path) -> Path:
    """The static build beside an engine (cnfperf-engine-static next to
    cnfperf-engine; engine/meson.build): what network functions on a kernel
    api run, alone in their image (runtimes/rootfs.py)."""
    return engine.with_name(engine.name + "-static")


def engine_facts(engine: Path | None) -> EngineFacts:
    if engine is None or not engine.exists():
        return EngineFacts(path=str(engine) if engine else None,
                           problem="engine not built (make build)")
    try:
        out = run([engine, "--version"], timeout=10)
    except CommandFailed as e:
        return EngineFacts(path=str(engine), problem=str(e))
    try:
        info = json.loads(out.strip().splitlines()[0])
        nfs = info.get("nfs")
        return EngineFacts(path=str(engine), version=str(info["version"]),
                           apis=list(info.get("apis", [])),
                           nfs=[str(n) for n in nfs] if isinstance(nfs, list) else None,
                           queues=_queue_apis(engine))
    except (json.JSONDecodeError, IndexError, KeyError, TypeError):
        said = out.strip().splitlines()[:1] or ["no output"]
        return EngineFacts(path=str(engine), problem=f"{engine} --version gave no version "
                                                     f"JSON ({said[0][:80]})")


def _queue_apis(engine: Path) -> list[str] | None:
    """The engine's apis that poll a queue of a port per thread, as --describe says."""
    try:
        apis = describe(engine).apis
    except DescribeError:
        return None
    if any(a.queues is None for a in apis):
        return None
    return [a.name for a in apis if a.queues]


def _run(argv: list[str]) -> str | None:
    """Its output, or None if it is missing or fails: gathering only asks."""
    try:
        return run(argv, timeout=10)
    except CommandFailed:
        return None


def _first_line(argv: list[str], strip: str = "") -> str | None:
    out = _run(argv)
    return out.strip().splitlines()[0].removeprefix(strip) if out and out.strip() else None


# How many times longer a process takes to start or stop on a host that is
# itself an emulated machine (QEMU's TCG names its CPU so: the lab's host), as
# in a TCG guest of the vm runtime's (its SLOWDOWN).
EMULATED_CPU, EMULATED_SLOWDOWN = "QEMU TCG CPU", 10.0


def slowdown() -> float:
    """This host's own: EMULATED_SLOWDOWN where it is an emulated machine, else 1."""
    return EMULATED_SLOWDOWN if _cpu_model().startswith(EMULATED_CPU) else 1.0


def _cpu_model() -> str:
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.machine()


def _kernel_config() -> dict[str, str]:
    for path in ("/proc/config.gz", f"/boot/config-{platform.release()}"):
        try:
            opener = gzip.open if path.endswith(".gz") else open
            with opener(path, "rt") as f:
                return dict(line.strip().split("=", 1) for line in f
                            if line.startswith("CONFIG_") and "=" in line)
        except OSError:
            continue
    return {}


_CONFIG: dict[str, str] | None = None


def kernel_option(module: str, option: str) -> bool:
    """Whether this kernel has what CONFIG_<option> builds (module loaded, built
    in, or a module modprobe finds): for what is no link type (a qdisc, a
    netfilter hook: host/buckets.py)."""
    return _kernel_has(module, option)


def _kernel_has(module: str, option: str) -> bool:
    global _CONFIG
    if Path(f"/sys/module/{module}").exists():
        return True
    if _CONFIG is None:
        _CONFIG = _kernel_config()
    value = _CONFIG.get(f"CONFIG_{option}")
    if value == "y":
        return True
    # A module only helps if modprobe can find it for this kernel.
    if value == "m" or not _CONFIG:
        return _run(["modprobe", "-n", "-q", module]) is not None
    return False


def _hugepages() -> Hugepages:
    facts = Hugepages()
    try:
        for line in open("/proc/meminfo"):
            key, _, value = line.partition(":")
            if key == "HugePages_Total":
                facts.total = int(value)
            elif key == "HugePages_Free":
                facts.free = int(value)
            elif key == "Hugepagesize":
                facts.size_kb = int(value.split()[0])
        facts.mounts = [m.point for m in mounts() if m.fstype == "hugetlbfs"]
    except (OSError, ValueError, IndexError):
        pass
    return facts


def _static_busybox() -> str | None:
    for path in ("/bin/busybox", "/usr/bin/busybox", *glob.glob("/usr/lib/*/busybox")):
        if os.path.isfile(path) and is_static_elf(path):
            return path
    return None


@functools.cache   # doctor, every data-plane check and the switch's start ask; runs tools
def first_built_with(candidates: tuple[str, ...], word: str) -> tuple[str, str] | None:
    """(program, its --version output) of the first candidate whose --version
    says `word` (a program built with DPDK among a package's alternatives)."""
    for binary in dict.fromkeys(candidates):
        with contextlib.suppress(CommandFailed):
            out = run([binary, "--version"], timeout=10)
            if word in out:
                return binary, out
    return None


@functools.cache
def alternatives(name: str) -> tuple[str, ...]:
    """The programs registered as Debian alternatives of `name` (update-alternatives)."""
    with contextlib.suppress(CommandFailed):
        return tuple(run(["update-alternatives", "--list", name], timeout=10).split())
    return ()


def beside_engine(engine: Path | None, name: str) -> str | None:
    """A file the engine's build makes beside its program (a preload library), if there."""
    found = engine.resolve().parent / name if engine else None
    return str(found) if found and found.exists() else None


# -- doctor --------------------------------------------------------------------

def render(host: HostFacts, matrix: dict) -> str:
    """`cnfperf doctor`: the host's facts, then checks.matrix() as a table."""
    hp = host.hugepages
    e = host.engine
    facts = [
        ("cores", f"{host.cores} ({host.cpu_model}); usable {_cpulist(host.usable_cpus)}"),
        ("kernel", host.kernel),
        ("root", "yes" if host.root else "no (runs need root)"),
        ("hugepages", f"{hp.total} × {hp.size_kb} kB, {hp.free} free, "
                      f"{'mounted at ' + ', '.join(hp.mounts) if hp.mounts else 'not mounted'}"),
        ("runc", host.runc or tools.missing("runc")),
        ("busybox-static", host.busybox_static or tools.missing("busybox")),
        ("DPDK", (f"{host.dpdk}, testpmd {host.testpmd or tools.missing('dpdk-testpmd')}"
                  if host.dpdk else tools.not_found("libdpdk", tools.ENGINE_API_PACKAGES["dpdk"]))),
        *((label, host.probes.get(key) or missing) for key, (label, missing)
          in host.probe_rows.items()),
        ("AF_XDP", f"libxdp {host.libxdp}" if host.libxdp
         else tools.not_found("libxdp", tools.ENGINE_API_PACKAGES["xdp"])),
        ("KVM", "/dev/kvm usable" if host.kvm else "no /dev/kvm"),
        ("tuning", "; ".join(f"{k} {v or '–'}" for k, v in host.tuning.items())),
        ("kernel links", " ".join(f"{k}:{'yes' if v else 'no'}"
                                  for k, v in host.kernel_links.items())),
        ("engine", _engine(e)),
        ("static engine", _engine(host.static_engine)
         + ("" if host.static_engine.problem else " (network functions on these apis run it)")),
        *_cgroups(host.cgroups),
        *((f"build {name}", _build(b)) for name, b in host.builds.items()),
    ]
    width = max(len(k) for k in (*(k for k, _ in facts), *matrix.get("nfs", {})))
    lines = [f"cnfperf {host.cnfperf}"] + [f"  {k.ljust(width)}  {v}" for k, v in facts]
    lines.append("runtimes")
    for name, problems in matrix["runtimes"].items():
        lines.append(_usable(name, width, problems))
    if matrix.get("vms"):
        lines.append(_accels(matrix["vms"], width))
    if matrix.get("pods"):
        lines.append(f"  {'pod cluster'.ljust(width)}  {matrix['pods']}")
    cols = [max(len(a), *(len(i["apis"][a]) for i in matrix["dataplanes"].values()))
            for a in APIS]
    if matrix.get("nfs"):
        lines.append("network functions")
        for name, problems in matrix["nfs"].items():
            lines.append(_usable(name, width, problems))
    lines.append("data planes".ljust(width + 4)
                 + "  ".join(a.ljust(w) for a, w in zip(APIS, cols)).rstrip())
    for name, info in matrix["dataplanes"].items():
        cells = "  ".join(info["apis"][a].ljust(w) for a, w in zip(APIS, cols))
        lines.append(f"  {name.ljust(width)}  {cells}".rstrip())
    for name, info in matrix["dataplanes"].items():
        for p in info["problems"]:
            lines.append(f"  {name}: {p}")
    return "\n".join(lines)


CGROUP_VERSIONS = {"hybrid": "hybrid (v1 controllers, and a v2 hierarchy beside them)",
                   "none": "none mounted"}
# What cnfperf does with each controller, for doctor's rows.
CGROUP_USES = {"cpuset": "pins containers to their cores", "cpu": "CFS quotas",
               "cpuacct": "CPU time per container"}


def _accels(boots: dict[str, str | None], width: int) -> str:
    """`vm accel  kvm: no (…); tcg: boots: accel = auto runs VMs under tcg`."""
    said = "; ".join(f"{a}: {'boots' if why is None else 'no (' + why + ')'}"
                     for a, why in boots.items())
    auto = next((a for a, why in boots.items() if why is None), None)
    then = f"accel = auto runs VMs under {auto}" + (" (emulated: slow)" if auto == "tcg" else "") \
        if auto else "no VM can run here"
    return f"  {'vm accel'.ljust(width)}  {said}: {then}"


def _usable(name: str, width: int, problems: list[str]) -> str:
    return f"  {name.ljust(width)}  {'; '.join(problems) if problems else 'usable'}"


def _cgroups(layout: dict) -> list[tuple[str, str]]:
    """A row for the cgroup version, one per controller: where it is, or why not."""
    if not layout:
        return []
    rows = [("cgroups", CGROUP_VERSIONS.get(layout["version"], layout["version"]))]
    for name, use in CGROUP_USES.items():
        c = layout["controllers"].get(name)
        rows.append((f"cgroup {name}", f"v{c['version']} at {c['mount']} ({', '.join(c['files'])}): "
                                       f"{use}" if c else
                     f"unusable: {layout['missing'].get(name, '?')} (no {use})"))
    return rows


def _build(b: dict) -> str:
    """A switch build's row: what is missing, or where it is and its stamp."""
    if b["problem"]:
        return b["problem"]
    stale = {"stale": ", stale: make switches",
             "cached": ", stale: make switches links the cached build"}.get(b.get("state"), "")
    return f"{b['path']} (stamp {b['stamp']}{stale})"


def _engine(e: EngineFacts) -> str:
    if e.problem:
        return e.problem + (f" ({e.path})" if e.path else "")
    return f"{e.version} at {e.path}; apis {' '.join(e.apis)}" + \
        (f"; nfs {' '.join(e.nfs)}" if e.nfs is not None else "") + \
        (f"; a queue per core on {' '.join(e.queues)} (nf_cores, endpoint_cores)"
         if e.queues else "")


def _cpulist(cpus: list[int]) -> str:
    out, start = [], None
    for i, c in enumerate(cpus):
        if start is None:
            start = c
        if i + 1 == len(cpus) or cpus[i + 1] != c + 1:
            out.append(str(start) if start == c else f"{start}-{c}")
            start = None
    return ",".join(out)


def checkout_commit(checkout: Path | None = None) -> str:
    """The commit cnfperf's checkout is at ("" outside one): two hosts' agents
    must run the same code, which the version alone does not say."""
    root = checkout or Path(__file__).resolve().parents[2]
    git = root / ".git"
    try:
        if git.is_file():   # a worktree: "gitdir: <its directory>"
            git = (root / git.read_text().split(":", 1)[1].strip()).resolve()
        head = (git / "HEAD").read_text().strip()
        if not head.startswith("ref:"):
            return head
        ref = head.split(":", 1)[1].strip()
        common = git / "commondir"
        base = (git / common.read_text().strip()).resolve() if common.exists() else git
        for where in (git, base):
            if (where / ref).exists():
                return (where / ref).read_text().strip()
        for line in (base / "packed-refs").read_text().splitlines():
            if line.endswith(" " + ref):
                return line.split()[0]
    except (OSError, IndexError):
        pass
    return ""
