"""VPP as FD.io's Debian packages install it, used when cnfperf has not built
one: cnfperf's own build laid out the packages' way (usr/bin/vpp and vppctl;
its libraries in usr/lib/<multiarch>/, its plugins in vpp_plugins/ there) in
a root of its own, that root's usr/bin on PATH, and a prefix without builds.
doctor names it, a run goes through it, and the store says which VPP ran; with
the memif plugin alone, vpp-memif runs and vpp is refused."""
from __future__ import annotations

import json
import os
import platform
import shutil
from pathlib import Path

import pytest

from cnfperf.dataplanes import vpp_install
from cnfperf.host import builds
import harness
from harness import missing

pytestmark = pytest.mark.e2e

MULTIARCH = f"{platform.machine()}-linux-gnu"     # Debian's: x86_64-linux-gnu, aarch64-linux-gnu


@pytest.fixture(scope="module")
def packaged(tmp_path_factory) -> Path:
    """A root holding cnfperf's VPP build where the packages put their files."""
    if problems := builds.missing(vpp_install.BUILD):
        missing(problems[0])
    root = tmp_path_factory.mktemp("root")
    built, lib = builds.home(vpp_install.BUILD).resolve(), root / "usr" / "lib" / MULTIARCH
    (root / "usr" / "bin").mkdir(parents=True)
    for program in ("vpp", "vppctl"):
        shutil.copy2(built / "bin" / program, root / "usr" / "bin")
    shutil.copytree(built / "lib", lib, symlinks=True)
    return root


def _env(root: Path, tmp_path: Path) -> dict[str, str]:
    """The environment of a host with the packages in `root` and no build. The
    loader finds the packages' libraries in /usr/lib/<multiarch> by itself; in
    a root of their own it is told (LD_LIBRARY_PATH), as a chroot would not need."""
    return {"PATH": f"{root}/usr/bin:{os.environ['PATH']}",
            builds.PREFIX_ENV: str(tmp_path / "no-builds"),
            "LD_LIBRARY_PATH": str(root / "usr" / "lib" / MULTIARCH)}


@pytest.fixture
def as_packaged(packaged, tmp_path) -> dict[str, str]:
    return _env(packaged, tmp_path)


def _described(root: Path, note: str = "") -> str:
    """What doctor and the store say of the system's VPP: the build's version."""
    version = vpp_install.describe_vpp().split()[0]
    return f"{version} at {root}/usr/bin/vpp (the system's{note})"


def test_doctor_says_the_system_s_vpp_is_the_one_a_run_uses(cli, packaged, as_packaged):
    lines = cli("doctor", **as_packaged).stdout.splitlines()
    [row] = [line for line in lines if line.strip().startswith("VPP ")]
    assert row.split(None, 1)[1] == _described(packaged)
    assert [line for line in lines if line.strip().startswith("build vpp ")][0].split(None, 2)[2] \
        .startswith("vpp not built")
    assert not [line for line in lines if line.strip().startswith(("vpp:", "vpp-memif:"))]


def test_a_run_through_the_system_s_vpp_records_it(engine, cli, no_leftovers, packaged,
                                                    as_packaged):
    done = cli("run", "--switch", "vpp", "--api", "dpdk", "--rate", "2000", "--duration", "1",
               "--warmup", "0.2", "--json", **as_packaged)
    assert done.returncode == 0, done.stderr
    run = json.loads(done.stdout)["run"]
    [point] = run["points"]
    assert point["status"] == "done", point["error"]
    [pair] = point["per_pair"]
    harness.assert_sent(point, pair, 2000)           # 2000 pps for 1 s
    assert pair["lost"] == 0 and pair["received"] == pair["sent"]
    assert point["versions"]["vpp"] == _described(packaged)


def test_a_system_vpp_with_the_memif_plugin_alone_runs_vpp_memif(engine, cli, no_leftovers,
                                                                  packaged, tmp_path):
    """The plugins are required per data plane: without vhost_plugin.so, vpp
    is refused (doctor says why) and vpp-memif runs, loading memif alone."""
    root = tmp_path / "root"
    shutil.copytree(packaged, root, symlinks=True)
    plugins = root / "usr" / "lib" / MULTIARCH / "vpp_plugins"
    (plugins / "vhost_plugin.so").unlink()
    env = _env(root, tmp_path)
    lines = cli("doctor", **env).stdout.splitlines()
    assert [line.strip() for line in lines if line.strip().startswith(("vpp:", "vpp-memif:"))] \
        == [f"vpp: the VPP at {root}/usr/bin/vpp has no vhost_plugin.so in {plugins} "
            "(FD.io's packages vpp and vpp-plugin-core)"]
    done = cli("run", "--switch", "vpp-memif", "--api", "dpdk", "--rate", "2000", "--duration",
               "1", "--warmup", "0.2", "--json", **env)
    assert done.returncode == 0, done.stderr
    [point] = json.loads(done.stdout)["run"]["points"]
    assert point["status"] == "done", point["error"]
    [pair] = point["per_pair"]
    harness.assert_sent(point, pair, 2000)           # 2000 pps for 1 s
    assert pair["lost"] == 0 and pair["received"] == pair["sent"]
    assert point["versions"]["vpp"] == _described(root, "; no vhost_plugin.so")
