"""What this host offers: the facts `cnfperf doctor` prints and data planes check.

Gathering only reads (files, `--version` outputs); it never creates anything.
"""
from __future__ import annotations

import glob
import gzip
import json
import os
import platform
import shutil
import struct
import subprocess
from dataclasses import asdict, dataclass, field
from pathlib import Path

from cnfperf import __version__, tools

# Kernel link type -> the config option that provides it.
LINK_CONFIG = {"veth": "VETH", "bridge": "BRIDGE", "macvlan": "MACVLAN", "dummy": "DUMMY"}
OVS_DPDK = "/usr/lib/openvswitch-switch-dpdk/ovs-vswitchd-dpdk"


@dataclass
class EngineFacts:
    path: str | None = None
    version: str | None = None
    apis: list[str] = field(default_factory=list)
    problem: str | None = None


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
    kernel_links: dict[str, bool]
    hugepages: Hugepages
    runc: str | None
    busybox_static: str | None
    dpdk: str | None
    testpmd: str | None
    ovs_dpdk: str | None
    libxdp: str | None
    kvm: bool
    engine: EngineFacts
    cnfperf: str = __version__

    def to_dict(self) -> dict:
        return asdict(self)


def gather(engine: Path | None) -> HostFacts:
    return HostFacts(
        cores=os.cpu_count() or 1,
        usable_cpus=sorted(os.sched_getaffinity(0)),
        cpu_model=_cpu_model(),
        kernel=platform.release(),
        root=os.geteuid() == 0,
        iproute2=bool(tools.find("ip") and tools.find("bridge")),
        kernel_links={t: _kernel_has(t, opt) for t, opt in LINK_CONFIG.items()},
        hugepages=_hugepages(),
        runc=_first_line(["runc", "--version"], strip="runc version "),
        busybox_static=_static_busybox(),
        dpdk=_first_line(["pkg-config", "--modversion", "libdpdk"]),
        testpmd=tools.find("dpdk-testpmd"),
        ovs_dpdk=_ovs_dpdk(),
        libxdp=_first_line(["pkg-config", "--modversion", "libxdp"]),
        kvm=os.access("/dev/kvm", os.R_OK | os.W_OK),
        engine=engine_facts(engine),
    )


def engine_facts(engine: Path | None) -> EngineFacts:
    if engine is None or not engine.exists():
        return EngineFacts(path=str(engine) if engine else None,
                           problem="engine not built (make build)")
    try:
        done = subprocess.run([str(engine), "--version"], capture_output=True, text=True,
                              timeout=10)
    except (OSError, subprocess.TimeoutExpired) as e:
        return EngineFacts(path=str(engine), problem=f"{engine} --version: {e}")
    try:
        info = json.loads(done.stdout.strip().splitlines()[0])
        return EngineFacts(path=str(engine), version=str(info["version"]),
                           apis=list(info.get("apis", [])))
    except (json.JSONDecodeError, IndexError, KeyError, TypeError):
        why = done.stderr.strip().splitlines()[-1:] or [f"exit code {done.returncode}"]
        return EngineFacts(path=str(engine), problem=f"{engine} --version gave no version "
                                                     f"JSON ({why[0]})")


def _run(argv: list[str]) -> str | None:
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return done.stdout if done.returncode == 0 else None


def _first_line(argv: list[str], strip: str = "") -> str | None:
    out = _run(argv)
    return out.strip().splitlines()[0].removeprefix(strip) if out and out.strip() else None


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
        facts.mounts = [l.split()[1] for l in open("/proc/mounts") if l.split()[2] == "hugetlbfs"]
    except (OSError, ValueError, IndexError):
        pass
    return facts


def _static_busybox() -> str | None:
    for path in ("/bin/busybox", "/usr/bin/busybox", *glob.glob("/usr/lib/*/busybox")):
        if os.path.isfile(path) and _is_static(path):
            return path
    return None


def _is_static(path: str) -> bool:
    """An ELF64 file without a PT_INTERP program header needs no dynamic loader."""
    try:
        with open(path, "rb") as f:
            head = f.read(64)
            if head[:5] != b"\x7fELF\x02":
                return False
            phoff, = struct.unpack_from("<Q", head, 0x20)
            phentsize, phnum = struct.unpack_from("<HH", head, 0x36)
            f.seek(phoff)
            table = f.read(phentsize * phnum)
    except (OSError, struct.error):
        return False
    return all(struct.unpack_from("<I", table, i * phentsize)[0] != 3 for i in range(phnum))


def _ovs_dpdk() -> str | None:
    for binary in (OVS_DPDK, shutil.which("ovs-vswitchd")):
        out = _run([binary, "--version"]) if binary and os.path.exists(binary) else None
        if out and "DPDK" in out:
            ovs = out.splitlines()[0].rsplit(" ", 1)[-1]
            dpdk = next(l for l in out.splitlines() if l.startswith("DPDK")).split()[-1]
            return f"{ovs} (DPDK {dpdk}, {binary})"
    return None


# -- doctor --------------------------------------------------------------------

def usable(host: HostFacts) -> dict:
    """Which runtimes, and which data planes × APIs, work here (and why not)."""
    from cnfperf.dataplanes import DATAPLANES
    from cnfperf.runtimes import RUNTIMES
    from cnfperf.scenario import APIS

    runtimes = {name: rt.check() for name, rt in RUNTIMES.items()}
    planes = {}
    for name, dp in DATAPLANES.items():
        problems = dp.check(host)
        cells = {}
        for api in APIS:
            if api not in dp.apis:
                cells[api] = "n/a"
            elif api not in host.engine.apis:
                cells[api] = "no engine"
            else:
                cells[api] = "no" if problems else "yes"
        if host.engine.apis and not any(cells[api] in ("yes", "no") for api in APIS):
            # Usable through none of its apis: say which package the engine lacked.
            problems = problems + [f"api {api}: {tools.engine_without(api)}"
                                   for api in APIS if cells[api] == "no engine"]
        planes[name] = {"apis": cells, "problems": problems, "description": dp.description}
    return {"runtimes": runtimes, "dataplanes": planes}


def render(host: HostFacts, matrix: dict) -> str:
    from cnfperf.scenario import APIS

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
        ("OVS-DPDK", host.ovs_dpdk or tools.missing("ovs-vswitchd-dpdk")),
        ("AF_XDP", f"libxdp {host.libxdp}" if host.libxdp
         else tools.not_found("libxdp", tools.ENGINE_API_PACKAGES["xdp"])),
        ("KVM", "/dev/kvm usable" if host.kvm else "no /dev/kvm"),
        ("kernel links", " ".join(f"{k}:{'yes' if v else 'no'}"
                                  for k, v in host.kernel_links.items())),
        ("engine", f"{e.version} at {e.path}; apis {' '.join(e.apis)}" if not e.problem
         else e.problem + (f" ({e.path})" if e.path else "")),
    ]
    width = max(len(k) for k, _ in facts)
    lines = [f"cnfperf {host.cnfperf}"] + [f"  {k.ljust(width)}  {v}" for k, v in facts]
    lines.append("runtimes")
    for name, problems in matrix["runtimes"].items():
        lines.append(f"  {name.ljust(width)}  {'usable' if not problems else '; '.join(problems)}")
    cols = [max(len(a), *(len(i["apis"][a]) for i in matrix["dataplanes"].values()))
            for a in APIS]
    lines.append("data planes".ljust(width + 4)
                 + "  ".join(a.ljust(w) for a, w in zip(APIS, cols)).rstrip())
    for name, info in matrix["dataplanes"].items():
        cells = "  ".join(info["apis"][a].ljust(w) for a, w in zip(APIS, cols))
        lines.append(f"  {name.ljust(width)}  {cells}".rstrip())
    for name, info in matrix["dataplanes"].items():
        for p in info["problems"]:
            lines.append(f"  {name}: {p}")
    return "\n".join(lines)


def _cpulist(cpus: list[int]) -> str:
    out, start = [], None
    for i, c in enumerate(cpus):
        if start is None:
            start = c
        if i + 1 == len(cpus) or cpus[i + 1] != c + 1:
            out.append(str(start) if start == c else f"{start}-{c}")
            start = None
    return ",".join(out)
