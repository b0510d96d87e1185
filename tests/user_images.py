"""A network function as users ship one: a container image, built here from
nothing (FROM scratch: the static BusyBox and the static engine, whose
entrypoint is the engine; or the engine with its DPDK libraries), in podman's
default store as `podman build` puts it, or saved to an archive as `podman
save` writes it. No registry is asked."""
from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import tarfile
import tempfile
from pathlib import Path
from typing import Iterator

import harness
from cnfperf.runtimes import podman

REF = "localhost/cnfperf-test-nf:1"
CONTAINERFILE = """\
FROM scratch
COPY busybox /bin/busybox
COPY engine /bin/cnfperf-engine-static
ENTRYPOINT ["/bin/cnfperf-engine-static"]
"""
# What ARGS make of its engine an l2 NF between the NF's two kernel ports.
L2_ARGS = ("nf --nf l2 --api raw --iface {iface1} --iface2 {iface2} --dst-mac {peer1} "
           "--dst-mac2 {peer2} --cpu {cpu} --duration 0")


def static_engine() -> Path:
    static = harness.engine().with_name("cnfperf-engine-static")
    if not static.exists():
        harness.missing(f"static engine not built ({static}; make build)")
    return static


def _podman(*args: str) -> subprocess.CompletedProcess:
    """podman as a user runs it, on its default store (with the one setting
    this host needs: podman's default NOFILE is above its hard limit)."""
    with tempfile.NamedTemporaryFile("w", suffix=".conf") as conf:
        conf.write('[containers]\ndefault_ulimits = []\n')
        conf.flush()
        return subprocess.run(["podman", *args], capture_output=True, text=True, timeout=120,
                              env={**os.environ, "CONTAINERS_CONF": conf.name})


@contextlib.contextmanager
def user_image(ref: str = REF) -> Iterator[str]:
    """The image, built into podman's default store; removed afterwards."""
    with tempfile.TemporaryDirectory() as ctx:
        shutil.copy2("/bin/busybox", Path(ctx) / "busybox")
        shutil.copy2(static_engine(), Path(ctx) / "engine")
        (Path(ctx) / "Containerfile").write_text(CONTAINERFILE)
        done = _podman("build", "-q", "-t", ref, ctx)
        assert done.returncode == 0, done.stderr
    try:
        yield ref
    finally:
        _podman("rmi", "-f", ref)
        podman.drop_idle()


@contextlib.contextmanager
def image_archive(directory: Path) -> Iterator[Path]:
    """The image saved to an archive (and no longer in any store)."""
    archive = directory / "nf.tar"
    with user_image("localhost/cnfperf-test-nf:archived") as ref:
        done = _podman("save", "-o", str(archive), ref)
        assert done.returncode == 0, done.stderr
    try:
        yield archive
    finally:
        with contextlib.suppress(Exception):
            podman.podman("rmi", "-f", "localhost/cnfperf-test-nf:archived")
        podman.drop_idle()


# The engine as built, DPDK and all: ARGS make it an l2 NF between its two
# DPDK ports, the EAL arguments cnfperf hands every DPDK node last.
DPDK_ARGS = ("nf --nf l2 --api dpdk --port {port1} --port2 {port2} --dst-mac {peer1} "
             "--dst-mac2 {peer2} --cpu {cpu} --duration 0 -- {eal}")


@contextlib.contextmanager
def dpdk_image(ref: str = "localhost/cnfperf-test-nf:dpdk") -> Iterator[str]:
    """An image of the engine with its shared objects and DPDK drivers (the
    directory the runc runtime's full image is), its entrypoint the engine,
    imported into podman's default store; removed afterwards."""
    from cnfperf.runtimes import RuncRuntime, rootfs

    with tempfile.TemporaryDirectory() as state:
        info = RuncRuntime(None, Path(state)).prepare(harness.engine())
    with tempfile.NamedTemporaryFile(suffix=".tar") as tar:
        with tarfile.open(tar.name, "w") as archive:
            archive.add(info.path, arcname=".")
        done = _podman("import", "--change", f'ENTRYPOINT ["{rootfs.ENGINE_PATH}"]', tar.name, ref)
        assert done.returncode == 0, done.stderr
    try:
        yield ref
    finally:
        _podman("rmi", "-f", ref)
