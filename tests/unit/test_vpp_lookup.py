"""Which VPP a run uses (builds.find_vpp): the one CNFPERF_VPP names, else
cnfperf's build, else the system's, laid out as FD.io's Debian packages lay it
out (/usr/bin/vpp, /usr/bin/vppctl, /usr/lib/<multiarch>/vpp_plugins); what
doctor and the store say of it. Made-up installs: scripts that print a version."""
from __future__ import annotations

from pathlib import Path

import pytest

from cnfperf.host import builds
from cnfperf.dataplanes.vpp import VppMemifPlane, VppPlane

PLUGINS = ("vhost_plugin.so", "memif_plugin.so")


def _program(path: Path, says: str = "") -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"#!/bin/sh\necho '{says}'\n")
    path.chmod(0o755)
    return path


def _install(bindir: Path, plugins: Path, version: str, plugin_files=PLUGINS) -> Path:
    """vpp and vppctl in bindir, the plugins in `plugins`; returns vpp."""
    vpp = _program(bindir / "vpp", f"vpp v{version} built by someone on somewhere at sometime")
    _program(bindir / "vppctl")
    plugins.mkdir(parents=True, exist_ok=True)
    for p in plugin_files:
        (plugins / p).write_text("")
    return vpp


@pytest.fixture
def system(tmp_path, monkeypatch) -> Path:
    """A system VPP as FD.io's packages install it, under a root of its own, on PATH."""
    root = tmp_path / "root"
    vpp = _install(root / "usr" / "bin", root / "usr" / "lib" / "x86_64-linux-gnu" / "vpp_plugins",
                   "25.10-release")
    monkeypatch.setenv("PATH", f"{root / 'usr' / 'bin'}:/usr/bin:/bin")
    monkeypatch.delenv(builds.VPP_ENV, raising=False)
    return vpp


@pytest.fixture
def built(tmp_path, monkeypatch) -> Path:
    """cnfperf's build, in a prefix of its own, stamped."""
    prefix = tmp_path / "prefix"
    vpp = _install(prefix / "vpp" / "bin", prefix / "vpp" / "lib" / "vpp_plugins", "26.10-rc0")
    (prefix / "vpp.stamp").write_text("0123456789abcdef\n")
    monkeypatch.setenv(builds.PREFIX_ENV, str(prefix))
    return vpp


@pytest.fixture
def nothing_built(tmp_path, monkeypatch):
    monkeypatch.setenv(builds.PREFIX_ENV, str(tmp_path / "empty"))


def test_cnfperf_s_build_comes_before_the_system_s(system, built):
    found = builds.find_vpp()
    assert found == builds.Vpp(built, built.with_name("vppctl"),
                               built.parent.parent / "lib" / "vpp_plugins", "build")
    assert builds.describe_vpp() == f"26.10-rc0 at {built} (cnfperf's build)"


def test_without_a_build_the_system_s_vpp_is_used_where_the_packages_put_it(system, nothing_built):
    found = builds.find_vpp()
    assert found.origin == "system" and found.program == system
    assert found.plugins == system.parent.parent / "lib" / "x86_64-linux-gnu" / "vpp_plugins"
    assert builds.problems("vpp") == []
    # not from a Debian package here: its own --version says
    assert builds.describe_vpp() == f"25.10-release at {system} (the system's)"


def test_cnfperf_vpp_names_the_one_to_use_and_nothing_else(system, built, tmp_path, monkeypatch):
    monkeypatch.setenv(builds.VPP_ENV, str(system))
    assert builds.find_vpp().origin == builds.VPP_ENV and builds.find_vpp().program == system
    monkeypatch.setenv(builds.VPP_ENV, str(tmp_path / "nowhere" / "vpp"))
    nowhere = tmp_path / "nowhere" / "vpp"
    assert builds.problems("vpp") == [
        f"{builds.VPP_ENV}={nowhere}: {nowhere} is not an executable file"]


def test_a_system_vpp_without_its_plugins_is_named_with_the_package(system, nothing_built):
    for p in (system.parent.parent / "lib" / "x86_64-linux-gnu" / "vpp_plugins").iterdir():
        p.unlink()
    [problem] = builds.problems("vpp")
    assert problem.startswith("the system's VPP: no vhost_plugin.so or memif_plugin.so in ")
    assert problem.endswith("(FD.io's packages vpp and vpp-plugin-core)")


def test_a_system_vpp_with_one_plugin_runs_the_data_plane_that_uses_it(system, nothing_built):
    plugins = system.parent.parent / "lib" / "x86_64-linux-gnu" / "vpp_plugins"
    (plugins / "vhost_plugin.so").unlink()
    assert builds.problems("vpp") == [] and builds.vpp_plugin_problems("memif_plugin.so") == []
    assert builds.vpp_plugin_problems("vhost_plugin.so") == [
        f"the VPP at {system} has no vhost_plugin.so in {plugins} (FD.io's packages vpp and "
        "vpp-plugin-core)"]
    assert builds.describe_vpp() == f"25.10-release at {system} (the system's; no vhost_plugin.so)"
    assert [dp.plugin for dp in (VppPlane, VppMemifPlane)] == list(builds.VPP_PLUGINS)


def test_a_link_to_vpp_is_followed_to_its_plugins(tmp_path, monkeypatch, nothing_built):
    """/usr/local/bin/vpp -> /opt/vpp/bin/vpp: the plugins are beside the
    program, not beside the link (nor is vppctl, here)."""
    opt = tmp_path / "opt" / "vpp"
    real = _install(opt / "bin", opt / "lib" / "vpp_plugins", "25.06-release")
    link = tmp_path / "usr" / "local" / "bin" / "vpp"
    link.parent.mkdir(parents=True)
    link.symlink_to(real)
    monkeypatch.setenv("PATH", f"{link.parent}:/usr/bin:/bin")
    monkeypatch.delenv(builds.VPP_ENV, raising=False)
    found = builds.find_vpp()
    assert found == builds.Vpp(link, opt / "bin" / "vppctl", opt / "lib" / "vpp_plugins", "system")
    assert builds.describe_vpp() == f"25.06-release at {real} (the system's)"


def test_no_vpp_at_all_names_both_ways_to_get_one(nothing_built, tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", "/nonexistent")
    monkeypatch.delenv(builds.VPP_ENV, raising=False)
    [problem] = builds.problems("vpp")
    assert problem == (f"vpp not built ({tmp_path}/empty/vpp/bin/vpp missing: make switches, or "
                       "switches/build.sh vpp), and no vpp on PATH (FD.io's packages vpp and "
                       "vpp-plugin-core)")
    assert builds.describe_vpp() == problem
    with pytest.raises(LookupError):
        builds.vpp()


def test_doctor_s_build_row_is_about_cnfperf_s_build_alone(system, nothing_built):
    assert builds.facts()["vpp"]["problem"].startswith("vpp not built")
