"""The container images, each built from its declaration (images.Image: the
core ones there, the others where they are needed: an NF kind's, a data
plane's, the noisy neighbour's), alike:

- with a shell (full, tools, the switch's, the neighbour's): static BusyBox, the
  program (the engine) and only the shared objects it and the image's tools
  need at run time (their ldd closure, plus the DPDK drivers the EAL loads from
  its plugin directory and the BPF objects libxdp loads).
- without (minimal, click, click-dpdk): the program alone with its ldd closure,
  nothing else: no shell, no loader for a static one (the minimal image's
  engine, whose libxdp's BPF objects come too). The container's init is the
  program itself, idle (`--idle`; Click with an element that does nothing; a
  lazy container's is the NF's engine: runc.py).

Images are cached by a hash of everything that goes in, so a rebuilt engine or an
upgraded library gives a new image and an unchanged host reuses the old one."""
from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable, Sequence

from cnfperf.host.system import CommandFailed, is_static_elf, proc_stat, run
from cnfperf.host import tools as host_tools
from cnfperf.host.tools import TOOLS, not_found

from . import oci
from .base import ContainerError, ImageInfo
from .images import ENGINE_PATH, STATIC_ENGINE_PATH, Found, Image

FORMAT = "cnfperf-rootfs-2"          # bump when the layout below changes
BUSYBOX = Path("/bin/busybox")

# An image with a shell keeps its containers alive with it (oci.INIT); one
# without has its program as init, idle until a signal stops it (the static
# engine's --idle; Click with an element that does nothing): the program
# handles TERM and INT, which pid 1 would otherwise ignore.
ENGINE_INIT = (STATIC_ENGINE_PATH, "--idle")

# Mount points runc mounts on (oci.py) and the scratch directories: they must
# exist in the image, which is read-only and shared, so runc never creates one.
SKELETON_DIRS = ("bin", "dev", "proc", "sys", "run", "tmp", "mnt", "var")
DEFAULT_IMAGES_DIR = Path("/var/lib/cnfperf/images")
IMAGES_ENV = "CNFPERF_IMAGES"

# Enough to look around and keep a container alive; everything else is `busybox X`.
APPLETS = ("sh", "sleep", "cat", "echo", "ls", "ps", "kill", "ip", "env", "true",
           "false", "grep", "head", "tail", "mount", "hostname", "taskset", "wc")

# The EAL dlopen()s every driver in its plugin directory at start, and fails if one
# of them cannot be loaded; so we take the drivers our data planes use (vdevs,
# virtio-user, vhost, memif, AF_PACKET/AF_XDP, tap, PCI for VFs) with their
# dependencies instead of the whole directory (~380 files, mlx/crypto stacks).
DPDK_DRIVERS = ("bus_pci", "bus_vdev", "mempool_ring", "mempool_stack",
                "net_af_packet", "net_af_xdp", "net_memif", "net_null", "net_ring",
                "net_tap", "net_vhost", "net_virtio")

# Loaded by glibc itself with dlopen() (thread cancellation and exit unwind
# through it), so no ldd lists it; looked for next to the libc in use.
GLIBC_DLOPENED = ("libgcc_s.so.1",)

# What libxdp loads from disk when an AF_XDP socket is bound without a program.
LIBXDP_OBJECTS = ("xdp-dispatcher.o", "xsk_def_xdp_prog.o", "xsk_def_xdp_prog_5.3.o")

# coreutils' stdbuf library. `runc exec` hands a process pipes, not our
# terminal, and through a pipe testpmd keeps a command's answer in its stdout
# buffer until it exits; preloaded with this environment its stdout is line
# buffered, as `stdbuf -oL` makes it. The switch image holds it.
LIBSTDBUF = "/usr/libexec/coreutils/libstdbuf.so"
LINE_BUFFERED = {"LD_PRELOAD": LIBSTDBUF, "_STDBUF_O": "L"}

_LDD_LINE = re.compile(r"^\s*(?:(\S+)\s+=>\s+)?(\S+)(?:\s+\(0x[0-9a-f]+\))?\s*$")


def parse_ldd(text: str) -> tuple[list[str], list[str]]:
    """ldd output -> (resolved paths, names not found). The vDSO has no file."""
    found: list[str] = []
    missing: list[str] = []
    for line in text.splitlines():
        line = line.strip()
        if not line or "statically linked" in line or "not a dynamic executable" in line:
            continue
        if "=> not found" in line:
            missing.append(line.split()[0])
            continue
        m = _LDD_LINE.match(line)
        if not m:
            continue
        path = m.group(2)
        if path.startswith("/"):
            found.append(path)
    return found, missing


# ldd's answers, kept beside the images: ~40 ms each, a dozen for the full
# image (the engine, the DPDK drivers), asked again by every run. One holds
# while the file and every object it named are the same (path, inode, size,
# mtime: one rebuilt may need others) and the loader would search the same
# way: ldconfig rewrites its cache whenever a library is installed, removed or
# upgraded, and any change to it drops every answer.
LDD_CACHE = "ldd.json"
LD_SO_CACHE = Path("/etc/ld.so.cache")


def _identity(path: str | Path) -> str | None:
    with contextlib.suppress(OSError):
        st = os.stat(path)
        return f"{os.path.realpath(path)}:{st.st_dev}:{st.st_ino}:{st.st_size}:{st.st_mtime_ns}"
    return None


def _loader() -> str:
    return f"{_identity(LD_SO_CACHE)}|{os.environ.get('LD_LIBRARY_PATH', '')}"


def _ldd_cache() -> dict:
    with contextlib.suppress(OSError, ValueError):
        cache = json.loads((images_dir() / LDD_CACHE).read_text())
        if isinstance(cache, dict) and cache.get("loader") == _loader():
            return cache
    return {"loader": _loader(), "files": {}}


def ldd(path: str | Path) -> list[str]:
    """The shared objects `path` loads (ldd's answer, cached: LDD_CACHE)."""
    key = _identity(path)
    cache = _ldd_cache()
    known = cache["files"].get(key) if key else None
    if isinstance(known, dict) and known.get("ids") == [_identity(f) for f in known["found"]]:
        return list(known["found"])
    found = _ldd(path)
    if key:
        cache["files"][key] = {"found": found, "ids": [_identity(f) for f in found]}
        # answers for files since changed or gone are of no more use
        cache["files"] = {k: v for k, v in cache["files"].items()
                          if _identity(k.rsplit(":", 4)[0]) == k}
        with contextlib.suppress(OSError):
            base = images_dir()
            base.mkdir(parents=True, exist_ok=True)
            tmp = base / f".{LDD_CACHE}.{os.getpid()}"
            tmp.write_text(json.dumps(cache))
            os.replace(tmp, base / LDD_CACHE)   # readers see the old answers or the new
    return found


def _ldd(path: str | Path) -> list[str]:
    try:
        out = run(["ldd", path], what="image")
    except CommandFailed as e:
        if "not a dynamic executable" not in e.stdout + e.stderr:
            raise
        out = e.stdout  # a static executable needs no shared object
    found, missing = parse_ldd(out)
    if missing:
        raise ContainerError(f"image: {path} needs {', '.join(missing)}, not found on this host")
    return found


def library_closure(roots: Iterable[str | Path], resolve=ldd,
                    transitive: bool = True) -> list[str]:
    """Every shared object the roots load. ldd runs the real loader, so its answer
    for a root already names every object loaded with it, found the way the loader
    finds them at run time: with `transitive` those are not walked again (walking
    them would also add copies the loader never opens, and costs ~1 s of ldd
    calls for a DPDK engine)."""
    seen: set[str] = set()
    todo = [str(r) for r in roots]
    walked: set[str] = set()
    while todo:
        path = todo.pop()
        if path in walked:
            continue
        walked.add(path)
        for lib in resolve(path):
            if lib not in seen:
                seen.add(lib)
                if not transitive:
                    todo.append(lib)
    return sorted(seen)


def dpdk_plugin_dir(eal: str | Path) -> Path | None:
    """The directory the EAL loads drivers from, as compiled into librte_eal
    (RTE_EAL_PMD_PATH appears there as 'DPDK_PLUGIN_PATH=<dir>')."""
    data = Path(eal).read_bytes()
    m = re.search(rb"DPDK_PLUGIN_PATH=([^\x00]*)\x00", data)
    if not m or not m.group(1):
        return None
    path = Path(m.group(1).decode())
    return path if path.is_dir() else None


def dpdk_drivers(plugin_dir: Path, drivers: Sequence[str] = DPDK_DRIVERS) -> list[str]:
    """Files of the chosen drivers, under every name the EAL scans (x.so, x.so.N...)."""
    out = []
    for entry in sorted(os.listdir(plugin_dir)):
        m = re.match(r"librte_(.+?)\.so(\.|$)", entry)
        if m and m.group(1) in drivers:
            out.append(str(plugin_dir / entry))
    return out


def libxdp_object_dir(libxdp: str | Path) -> Path | None:
    """libxdp's compiled-in BPF object directory (BPF_OBJECT_PATH)."""
    data = Path(libxdp).read_bytes()
    for m in re.finditer(rb"\x00(/[\w./+-]*/bpf)\x00", data):
        path = Path(m.group(1).decode())
        if (path / LIBXDP_OBJECTS[0]).exists():
            return path
    return None


@dataclass
class ImageSpec:
    """One image as built here: its declaration, its program on the host and
    the host files that go in with it (at their own paths)."""

    image: Image
    engine: Path                      # the program (the engine, Click…) on the host
    busybox: Path | None = BUSYBOX    # None: no shell (image.shell false)
    files: list[str] = field(default_factory=list)   # host paths copied to the same path
    dpdk: bool = False                # the program's closure holds DPDK's EAL
    tools: list[str] = field(default_factory=list)   # host binaries besides the program

    @property
    def minimal(self) -> bool:
        return self.image.static

    @property
    def name(self) -> str:
        if self.image.shell:
            # its programs, not the plugins a program loads (VPP's)
            programs = [os.path.basename(t) for t in self.tools]
            return "busybox+engine" + ("+dpdk" if self.dpdk else "") + \
                "".join("+" + t.removeprefix("dpdk-") for t in programs if ".so" not in t)
        return "engine-static" if self.image.static else self.image.name

    @property
    def engine_path(self) -> str:
        """Where the program is inside the image."""
        return self.image.path

    @property
    def init(self) -> tuple[str, ...]:
        """What keeps a container of this image alive (its pid 1)."""
        return self.image.init or tuple(oci.INIT)

    def _own(self) -> list[tuple[str, Path]]:
        if self.busybox is None:
            return [(self.engine_path, self.engine)]
        return [(self.engine_path, self.engine), ("/bin/busybox", self.busybox)]

    def _format(self) -> bytes:
        shell = " ".join(APPLETS) if self.busybox else ""
        return "\0".join((FORMAT, self.engine_path, shell, " ".join(self.init))).encode() + b"\0"

    def digest(self) -> str:
        h = hashlib.sha256()
        h.update(self._format())
        own = self._own()
        for dest, src in own + [(f, Path(f)) for f in self.files]:
            h.update(dest.encode() + b"\0")
            if os.path.islink(src) and dest not in dict(own):
                h.update(b"-> " + os.readlink(src).encode() + b"\0")
            h.update(_file_hash(src) + b"\0")
        return h.hexdigest()


def _file_hash(path: Path) -> bytes:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while chunk := f.read(1 << 20):
            h.update(chunk)
    return h.hexdigest().encode()


def host_parts(image: Image) -> Found:
    """An image's `tools` as host paths and its `found()`'s, its preloads: what
    goes in besides the program (ContainerError: one is missing)."""
    paths = []
    for name in image.tools:
        path = host_tools.find(name)
        if path is None:
            raise ContainerError(f"image {image.name}: " + host_tools.missing(name))
        paths.append(path)
    extra = image.found() if image.found else Found()
    return Found(tuple(paths) + extra.tools, image.preloads + extra.preloads)


def spec_for(image: Image, program: Path, busybox: Path = BUSYBOX, resolve=ldd) -> ImageSpec:
    """What goes into `image` built around `program` (its declaration's: the
    engine, the static engine, a build's program): BusyBox if it has a shell;
    for a dynamic program its ldd closure with its tools' and preloads' (and,
    when DPDK's EAL is among them, the drivers it loads from its plugin
    directory), what glibc loads itself and the BPF objects libxdp loads; for
    a static one those BPF objects alone (linked in: read from the program)."""
    if not program.is_file() or not os.access(program, os.X_OK):
        built = f" (switches/build.sh {image.build.name})" if image.build else ""
        raise ContainerError(f"image {image.name}: {program} is not an executable file{built}")
    if image.static and not is_static_elf(program):
        raise ContainerError(f"image {image.name}: engine {program} is not statically linked; "
                             "the image has no loader (build cnfperf-engine-static: make build)")
    if image.shell and not busybox.is_file():
        raise ContainerError(f"image {image.name}: "
                             + not_found(str(busybox), TOOLS["busybox"].package))
    parts = host_parts(image)
    tools, preloads = list(parts.tools), list(parts.preloads)
    spec = ImageSpec(image=image, engine=program, busybox=busybox if image.shell else None,
                     tools=tools)
    if image.static:
        if obj_dir := libxdp_object_dir(program):
            spec.files = [str(obj_dir / o) for o in LIBXDP_OBJECTS if (obj_dir / o).exists()]
        return spec
    libs = library_closure([program, *tools, *preloads], resolve) + preloads
    extra: list[str] = []
    eal = next((l for l in libs if os.path.basename(l).startswith("librte_eal.so")), None)
    if eal:
        spec.dpdk = True
        plugin_dir = dpdk_plugin_dir(eal)
        if plugin_dir:
            drivers = dpdk_drivers(plugin_dir)
            extra += drivers
            # A tool may link drivers from the plugin directory itself (testpmd
            # does: mlx5, i40e…): another EAL of the image (OVS's) dlopen()s them
            # too, finding what they need the loader's way, not the tool's RUNPATH.
            linked = {os.path.realpath(l) for l in libs if Path(l).parent == plugin_dir}
            libs = sorted(set(libs) | set(library_closure(
                [d for d in drivers if not os.path.islink(d)] + sorted(linked), resolve)))
    libc = next((l for l in libs if os.path.basename(l) == "libc.so.6"), None)
    if libc:
        extra += [p for n in GLIBC_DLOPENED
                  if os.path.exists(p := os.path.join(os.path.dirname(libc), n))]
    xdp = next((l for l in libs if os.path.basename(l).startswith("libxdp.so")), None)
    if xdp and (obj_dir := libxdp_object_dir(xdp)):
        extra += [str(obj_dir / o) for o in LIBXDP_OBJECTS if (obj_dir / o).exists()]
    spec.files = sorted(set(libs) | set(extra) | set(tools))
    return spec


def copy_into(root: Path, host_path: str, _depth: int = 0) -> None:
    """Copy host_path into root at the same path, recreating every symlink met on
    the way (/lib -> usr/lib, libfoo.so.1 -> libfoo.so.1.2) so the loader finds
    objects under the names ldd reported."""
    if _depth > 40:
        raise ContainerError(f"image: too many symlinks resolving {host_path}")
    cur = Path("/")
    parts = Path(os.path.normpath(host_path)).parts[1:]
    for i, part in enumerate(parts):
        cur = cur / part
        dst = root / cur.relative_to("/")
        if cur.is_symlink():
            target = os.readlink(cur)
            if not os.path.lexists(dst):
                dst.parent.mkdir(parents=True, exist_ok=True)
                os.symlink(target, dst)
            resolved = Path(target) if os.path.isabs(target) else cur.parent / target
            copy_into(root, str(resolved.joinpath(*parts[i + 1:])), _depth + 1)
            return
        if i == len(parts) - 1:
            if not os.path.lexists(dst):
                dst.parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(cur, dst)
        else:
            dst.mkdir(exist_ok=True)


def _skeleton(root: Path, spec: ImageSpec) -> None:
    for d in SKELETON_DIRS:
        (root / d).mkdir(mode=0o755)
    (root / "tmp").chmod(0o1777)
    os.symlink("../run", root / "var/run")
    engine = root / spec.engine_path.lstrip("/")
    engine.parent.mkdir(parents=True, exist_ok=True)
    shutil.copy2(spec.engine, engine)
    engine.chmod(0o755)
    if spec.busybox is None:
        return
    shutil.copy2(spec.busybox, root / "bin/busybox")
    for applet in APPLETS:
        os.symlink("busybox", root / "bin" / applet)
    (root / "etc").mkdir(mode=0o755)
    (root / "etc/passwd").write_text("root:x:0:0:root:/:/bin/sh\n")
    (root / "etc/group").write_text("root:x:0:\n")


def tree_size(path: Path) -> int:
    """Apparent size of a tree, as `du -sb` counts it (files, dirs, symlinks)."""
    total = os.lstat(path).st_size
    for dirpath, dirnames, filenames in os.walk(path):
        for n in dirnames + filenames:
            total += os.lstat(os.path.join(dirpath, n)).st_size
    return total


def images_dir(override: Path | None = None) -> Path:
    if override:
        return Path(override)
    return Path(os.environ.get(IMAGES_ENV) or DEFAULT_IMAGES_DIR)


def _remove_abandoned_builds(base: Path) -> None:
    """A build killed midway leaves .build-PID-*; drop those whose builder is gone."""
    for entry in base.glob(".build-*"):
        pid = entry.name.split("-")[1]
        if pid.isdigit() and proc_stat(int(pid)) is None:
            shutil.rmtree(entry, ignore_errors=True)


def build(spec: ImageSpec, base: Path) -> ImageInfo:
    """Build the image once; later calls with the same content reuse it."""
    digest = spec.digest()
    final = base / digest[:16]
    rootfs = final / "rootfs"
    if not rootfs.is_dir():
        base.mkdir(parents=True, exist_ok=True)
        _remove_abandoned_builds(base)
        tmp = Path(tempfile.mkdtemp(prefix=f".build-{os.getpid()}-", dir=base))
        try:
            os.chmod(tmp, 0o755)
            (tmp / "rootfs").mkdir(mode=0o755)
            _skeleton(tmp / "rootfs", spec)
            for f in spec.files:
                copy_into(tmp / "rootfs", f)
            (tmp / "digest").write_text(digest + "\n")
            # rename is atomic: other builders and readers see no image or a whole one.
            try:
                os.rename(tmp, final)
            except OSError:
                if not rootfs.is_dir():
                    raise
        finally:
            with contextlib.suppress(FileNotFoundError):
                shutil.rmtree(tmp)
    info = ImageInfo(name=spec.name, path=str(rootfs), size_bytes=tree_size(rootfs))
    over_budget(spec.image, info.size_bytes)
    return info


def over_budget(image: Image, size_bytes: int) -> None:
    """An image larger than its declaration allows is refused, built or
    found: a library that pulls in a stack of others shows here, not as a
    slow run."""
    if size_bytes > image.budget_mb * MB:
        raise ContainerError(f"image {image.name}: {size_bytes / MB:.1f} MB, over its budget of "
                             f"{image.budget_mb:g} MB (its declaration's budget_mb; what it "
                             "holds: its program's ldd closure, its tools and files)")


MB = 1 << 20
