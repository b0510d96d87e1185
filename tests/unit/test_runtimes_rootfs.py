"""The two images (full and minimal): which files go in, how they are laid out,
how they are cached."""
import os
import subprocess
from pathlib import Path

import pytest

from cnfperf.runtimes import FULL, MINIMAL, Image, rootfs
from cnfperf.runtimes.base import ContainerError
from cnfperf.host.system import is_static_elf

LDD_DPDK = """\
\tlinux-vdso.so.1 (0x00007ffd1a5f2000)
\tlibrte_eal.so.23 => /lib/x86_64-linux-gnu/librte_eal.so.23 (0x00007f0e9c000000)
\tlibxdp.so.1 => /lib/x86_64-linux-gnu/libxdp.so.1 (0x00007f0e9bfe0000)
\tlibc.so.6 => /lib/x86_64-linux-gnu/libc.so.6 (0x00007f0e9be00000)
\t/lib64/ld-linux-x86-64.so.2 (0x00007f0e9c100000)
"""


def test_parse_ldd_paths_interpreter_no_vdso():
    found, missing = rootfs.parse_ldd(LDD_DPDK)
    assert found == ["/lib/x86_64-linux-gnu/librte_eal.so.23", "/lib/x86_64-linux-gnu/libxdp.so.1",
                     "/lib/x86_64-linux-gnu/libc.so.6", "/lib64/ld-linux-x86-64.so.2"]
    assert missing == []


def test_parse_ldd_not_found_and_static():
    found, missing = rootfs.parse_ldd("\tlibfoo.so.1 => not found\n"
                                      "\tlibc.so.6 => /lib/libc.so.6 (0x1)\n")
    assert found == ["/lib/libc.so.6"] and missing == ["libfoo.so.1"]
    assert rootfs.parse_ldd("\tstatically linked\n") == ([], [])
    assert rootfs.parse_ldd("\tnot a dynamic executable\n") == ([], [])


def test_closure_walks_every_new_object_once():
    graph = {"/e": ["/l/a", "/l/b"], "/l/a": ["/l/c"], "/l/b": ["/l/c", "/l/a"],
             "/l/c": []}
    calls = []

    def resolve(path):
        calls.append(path)
        return graph[path]

    assert rootfs.library_closure(["/e"], resolve, transitive=False) == ["/l/a", "/l/b", "/l/c"]
    assert sorted(calls) == ["/e", "/l/a", "/l/b", "/l/c"]


def test_closure_trusts_a_transitive_resolver():
    graph = {"/e": ["/l/a", "/l/c"], "/d": ["/l/a", "/l/x"]}
    calls = []

    def resolve(path):
        calls.append(path)
        return graph[path]

    assert rootfs.library_closure(["/e", "/d"], resolve) == ["/l/a", "/l/c", "/l/x"]
    assert sorted(calls) == ["/d", "/e"]


@pytest.mark.needs("gcc", "ldd")
def test_missing_library_named(tmp_path):
    """A real executable whose library was removed after linking."""
    (tmp_path / "q.c").write_text("int q(void) { return 0; }\n")
    (tmp_path / "m.c").write_text("int q(void); int main(void) { return q(); }\n")
    subprocess.run(["gcc", "-shared", "-fPIC", "-o", tmp_path / "libcnfpq.so", tmp_path / "q.c"],
                   check=True)
    subprocess.run(["gcc", "-o", tmp_path / "m", tmp_path / "m.c", f"-L{tmp_path}", "-lcnfpq"],
                   check=True)
    (tmp_path / "libcnfpq.so").unlink()
    with pytest.raises(ContainerError, match="needs libcnfpq.so, not found"):
        rootfs.ldd(tmp_path / "m")


def test_dpdk_plugin_dir_read_from_eal(tmp_path):
    plugins = tmp_path / "pmds-23.0"
    plugins.mkdir()
    eal = tmp_path / "librte_eal.so.23"
    eal.write_bytes(b"\x7fELF junk\x00DPDK_PLUGIN_PATH=" + str(plugins).encode() + b"\x00more")
    assert rootfs.dpdk_plugin_dir(eal) == plugins
    eal.write_bytes(b"\x7fELF junk\x00DPDK_PLUGIN_PATH=\x00")
    assert rootfs.dpdk_plugin_dir(eal) is None


def test_dpdk_drivers_chosen_under_every_name(tmp_path):
    for drv in ("net_vhost", "net_mlx5", "bus_vdev", "crypto_qat"):
        real = tmp_path / f"librte_{drv}.so.23.0"
        real.write_bytes(b"")
        os.symlink(real.name, tmp_path / f"librte_{drv}.so.23")
        os.symlink(f"librte_{drv}.so.23", tmp_path / f"librte_{drv}.so")
    got = [Path(p).name for p in rootfs.dpdk_drivers(tmp_path)]
    assert got == ["librte_bus_vdev.so", "librte_bus_vdev.so.23", "librte_bus_vdev.so.23.0",
                   "librte_net_vhost.so", "librte_net_vhost.so.23", "librte_net_vhost.so.23.0"]


def test_libxdp_object_dir(tmp_path):
    objs = tmp_path / "lib" / "bpf"
    objs.mkdir(parents=True)
    (objs / "xdp-dispatcher.o").write_bytes(b"")
    lib = tmp_path / "libxdp.so.1"
    lib.write_bytes(b"abc\x00" + str(objs).encode() + b"\x00def")
    assert rootfs.libxdp_object_dir(lib) == objs


def test_copy_into_recreates_symlinks(tmp_path):
    host = tmp_path / "host"
    (host / "usr/lib").mkdir(parents=True)
    os.symlink("usr/lib", host / "lib")
    (host / "usr/lib/libx.so.1.2").write_text("x")
    os.symlink("libx.so.1.2", host / "usr/lib/libx.so.1")
    os.symlink(str(host / "usr/lib/libx.so.1"), host / "usr/lib/abs.so")  # absolute link
    root = tmp_path / "root"
    root.mkdir()
    rootfs.copy_into(root, str(host / "lib/libx.so.1"))
    rootfs.copy_into(root, str(host / "usr/lib/abs.so"))
    mirror = root / str(host).lstrip("/")
    assert os.readlink(mirror / "lib") == "usr/lib"
    assert os.readlink(mirror / "usr/lib/libx.so.1") == "libx.so.1.2"
    assert (mirror / "usr/lib/libx.so.1.2").read_text() == "x"
    assert not (mirror / "usr/lib/libx.so.1.2").is_symlink()
    assert os.readlink(mirror / "usr/lib/abs.so") == str(host / "usr/lib/libx.so.1")


def _spec(tmp_path, engine_text="engine-v1"):
    engine = tmp_path / "engine"
    engine.write_text(engine_text)
    engine.chmod(0o755)
    busybox = tmp_path / "busybox"
    busybox.write_text("busybox")
    lib = tmp_path / "libs" / "libq.so.1"
    lib.parent.mkdir(exist_ok=True)
    lib.write_text("q")
    return rootfs.ImageSpec(FULL, engine=engine, busybox=busybox, files=[str(lib)])


def test_build_layout_and_size(tmp_path):
    info = rootfs.build(_spec(tmp_path), tmp_path / "images")
    root = Path(info.path)
    assert info.name == "busybox+engine"
    assert (root / "bin/cnfperf-engine").read_text() == "engine-v1"
    assert os.access(root / "bin/cnfperf-engine", os.X_OK)
    assert os.readlink(root / "bin/sh") == "busybox"
    assert os.readlink(root / "var/run") == "../run"
    for d in ("dev", "proc", "sys", "run", "tmp", "mnt"):
        assert (root / d).is_dir()
    assert (root / str(tmp_path / "libs/libq.so.1").lstrip("/")).read_text() == "q"
    du = int(subprocess.run(["du", "-sb", str(root)], capture_output=True, text=True,
                            check=True).stdout.split()[0])
    assert info.size_bytes == du


def test_build_cached_by_content(tmp_path):
    first = rootfs.build(_spec(tmp_path), tmp_path / "images")
    stamp = os.stat(first.path).st_ino
    again = rootfs.build(_spec(tmp_path), tmp_path / "images")
    assert again == first and os.stat(again.path).st_ino == stamp
    changed = rootfs.build(_spec(tmp_path, "engine-v2"), tmp_path / "images")
    assert changed.path != first.path
    assert sorted(p.name for p in (tmp_path / "images").iterdir()) == \
        sorted([Path(first.path).parent.name, Path(changed.path).parent.name])


def test_abandoned_build_removed_and_never_used(tmp_path):
    images = tmp_path / "images"
    images.mkdir()
    dead = subprocess.Popen(["true"])
    dead.wait()
    half = images / f".build-{dead.pid}-xyz"
    (half / "rootfs").mkdir(parents=True)
    info = rootfs.build(_spec(tmp_path), images)
    assert not half.exists()
    assert Path(info.path).parent.parent == images


def test_failed_build_leaves_nothing(tmp_path):
    spec = _spec(tmp_path)
    gone = tmp_path / "vanished.so"
    gone.write_text("v")
    spec.files.append(str(gone))
    digest = spec.digest()
    gone.unlink()  # vanishes after hashing, midway through the copy
    spec.digest = lambda: digest
    with pytest.raises(FileNotFoundError):
        rootfs.build(spec, tmp_path / "images")
    assert list((tmp_path / "images").iterdir()) == []


def _static_elf(path: Path, rodata: bytes = b"") -> Path:
    """An ELF64 file with no program header at all (so no PT_INTERP: static
    as is_static_elf sees it), followed by `rodata`."""
    header = bytearray(64)
    header[:6] = b"\x7fELF\x02\x01"
    header[32:40] = (64).to_bytes(8, "little")       # e_phoff
    header[54:56] = (56).to_bytes(2, "little")       # e_phentsize; e_phnum stays 0
    path.write_bytes(bytes(header) + rodata)
    path.chmod(0o755)
    return path


def _bpf_dir(tmp_path) -> Path:
    """Where a libxdp linked into the engine would load its BPF objects from."""
    objects = tmp_path / "lib" / "bpf"
    objects.mkdir(parents=True)
    for name in rootfs.LIBXDP_OBJECTS:
        (objects / name).write_text(name)
    (objects / "xdpdump_bpf.o").write_text("not ours")
    return objects


def test_minimal_image_holds_the_static_engine_and_nothing_else(tmp_path):
    objects = _bpf_dir(tmp_path)
    engine = _static_elf(tmp_path / "cnfperf-engine-static",
                         b"\0" + str(objects).encode() + b"\0xdp-dispatcher.o\0")
    spec = rootfs.spec_for(MINIMAL, engine)
    assert spec.minimal and spec.name == "engine-static" and spec.busybox is None
    assert spec.engine_path == "/bin/cnfperf-engine-static"
    assert spec.init == ("/bin/cnfperf-engine-static", "--idle")
    assert spec.files == [str(objects / o) for o in rootfs.LIBXDP_OBJECTS]
    info = rootfs.build(spec, tmp_path / "images")
    root = Path(info.path)
    assert info.name == "engine-static"
    files = sorted(str(p.relative_to(root)) for p in root.rglob("*")
                   if p.is_file() or p.is_symlink())
    inside = str(objects).lstrip("/")
    assert files == sorted(["bin/cnfperf-engine-static", "var/run",
                            *(f"{inside}/{o}" for o in rootfs.LIBXDP_OBJECTS)])
    assert (root / "bin/cnfperf-engine-static").read_bytes() == engine.read_bytes()
    assert os.access(root / "bin/cnfperf-engine-static", os.X_OK)
    # what runc mounts on, and the scratch directories, exist: nothing is made in the image
    for d in ("dev", "proc", "sys", "run", "tmp", "mnt"):
        assert (root / d).is_dir()
    assert not (root / "bin/sh").exists() and not (root / "etc").exists()
    du = int(subprocess.run(["du", "-sb", str(root)], capture_output=True, text=True,
                            check=True).stdout.split()[0])
    assert info.size_bytes == du


def test_minimal_image_without_libxdp_is_the_engine_alone(tmp_path):
    spec = rootfs.spec_for(MINIMAL, _static_elf(tmp_path / "e"))
    assert spec.files == []
    root = Path(rootfs.build(spec, tmp_path / "images").path)
    assert [p.name for p in root.rglob("*") if p.is_file()] == ["cnfperf-engine-static"]


def test_minimal_and_full_images_of_one_engine_are_cached_apart(tmp_path):
    engine = _static_elf(tmp_path / "e")
    busybox = tmp_path / "busybox"
    busybox.write_text("busybox")
    minimal = rootfs.build(rootfs.spec_for(MINIMAL, engine), tmp_path / "images")
    full = rootfs.build(rootfs.ImageSpec(FULL, engine=engine, busybox=busybox), tmp_path / "images")
    assert minimal.path != full.path and minimal.size_bytes < full.size_bytes
    assert rootfs.build(rootfs.spec_for(MINIMAL, engine), tmp_path / "images") == minimal
    _static_elf(engine, b"rebuilt")
    assert rootfs.build(rootfs.spec_for(MINIMAL, engine), tmp_path / "images").path != minimal.path


def test_minimal_image_refuses_a_dynamic_engine(tmp_path):
    with pytest.raises(ContainerError, match="not statically linked"):
        rootfs.spec_for(MINIMAL, Path("/bin/true"))
    with pytest.raises(ContainerError, match="not an executable"):
        rootfs.spec_for(MINIMAL, tmp_path / "nope")


def test_images_dir_override(tmp_path, monkeypatch):
    monkeypatch.delenv(rootfs.IMAGES_ENV, raising=False)
    assert rootfs.images_dir() == rootfs.DEFAULT_IMAGES_DIR
    monkeypatch.setenv(rootfs.IMAGES_ENV, str(tmp_path))
    assert rootfs.images_dir() == tmp_path
    assert rootfs.images_dir(tmp_path / "x") == tmp_path / "x"


@pytest.mark.needs("ldd")
def test_spec_of_a_real_binary_holds_libc_loader_and_libgcc(tmp_path):
    spec = rootfs.spec_for(FULL, Path("/bin/true"), busybox=Path("/bin/true"))
    names = {os.path.basename(f) for f in spec.files}
    assert "libc.so.6" in names
    assert any(n.startswith("ld-linux") for n in names)
    assert not spec.dpdk
    assert spec.digest() == rootfs.spec_for(FULL, Path("/bin/true"), busybox=Path("/bin/true")).digest()


def test_spec_refuses_a_missing_engine(tmp_path):
    with pytest.raises(ContainerError, match="not an executable"):
        rootfs.spec_for(FULL, tmp_path / "nope")


def test_spec_names_the_package_of_a_missing_busybox(tmp_path):
    """One line naming the Debian package, not a traceback."""
    with pytest.raises(ContainerError, match="busybox-static"):
        rootfs.spec_for(FULL, Path("/bin/true"), busybox=tmp_path / "busybox")


@pytest.mark.needs("busybox")
def test_static_elf_detection():
    assert is_static_elf(Path("/bin/busybox"))
    assert not is_static_elf(Path("/bin/true"))
    assert not is_static_elf(Path("/nonexistent/busybox"))


@pytest.mark.needs("gcc", "ldd")
def test_ldd_answers_kept_until_a_file_or_the_loader_changes(tmp_path, monkeypatch):
    """ldd runs once per file: a later run reads its answer beside the images,
    until the file, an object it named, or the loader's cache changes."""
    monkeypatch.setenv(rootfs.IMAGES_ENV, str(tmp_path / "images"))
    loader = tmp_path / "ld.so.cache"
    loader.write_text("1")
    monkeypatch.setattr(rootfs, "LD_SO_CACHE", loader)
    (tmp_path / "q.c").write_text("int q(void) { return 0; }\n")
    (tmp_path / "m.c").write_text("int q(void); int main(void) { return q(); }\n")
    lib = tmp_path / "libcnfpq.so"

    def build_lib(body: str = "0") -> None:
        (tmp_path / "q.c").write_text(f"int q(void) {{ return {body}; }}\n")
        subprocess.run(["gcc", "-shared", "-fPIC", "-o", lib, tmp_path / "q.c"], check=True)
    build_lib()
    subprocess.run(["gcc", "-o", tmp_path / "m", tmp_path / "m.c", f"-L{tmp_path}", "-lcnfpq",
                    f"-Wl,-rpath,{tmp_path}"], check=True)
    asked = []
    real = rootfs._ldd
    monkeypatch.setattr(rootfs, "_ldd", lambda p: asked.append(p) or real(p))
    first = rootfs.ldd(tmp_path / "m")
    assert str(lib) in first
    assert rootfs.ldd(tmp_path / "m") == first and len(asked) == 1
    assert (tmp_path / "images" / rootfs.LDD_CACHE).is_file()
    build_lib("1")                      # an object it named, rebuilt
    assert rootfs.ldd(tmp_path / "m") == first and len(asked) == 2
    assert rootfs.ldd(tmp_path / "m") == first and len(asked) == 2
    loader.write_text("22")             # ldconfig ran
    assert rootfs.ldd(tmp_path / "m") == first and len(asked) == 3


def test_an_image_over_its_budget_is_refused_when_built(tmp_path):
    """A declaration's budget_mb holds an image to its size: one line naming
    the image, its size and its budget, whether it was just built or found."""
    spec = _spec(tmp_path)
    tiny = Image("tiny", "a test's", budget_mb=1e-5)
    with pytest.raises(ContainerError, match=r"image tiny: 0\.\d MB, over its budget of 1e-05 MB"):
        rootfs.build(rootfs.ImageSpec(tiny, spec.engine, spec.busybox, spec.files),
                     tmp_path / "images")
    info = rootfs.build(spec, tmp_path / "images")     # within the full image's
    assert info.size_bytes < FULL.budget_mb * rootfs.MB
