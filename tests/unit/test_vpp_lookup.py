"""Which VPP a run uses (vpp_install.find_vpp, the VPP plugin's): the one CNFPERF_VPP names, else
cnfperf's build, else the system's, laid out as FD.io's Debian packages lay it
out (/usr/bin/vpp, /usr/bin/vppctl, /usr/lib/<multiarch>/vpp_plugins); what
doctor and the store say of it. Made-up installs: scripts that print a version."""
from __future__ import annotations

from pathlib import Path

import pytest

from cnfperf.host import builds
from cnfperf.dataplanes import vpp_install as vi
from cnfperf.host.facts import EngineFacts, HostFacts, Hugepages
from cnfperf.dataplanes.vpp import VppMemifPlane, VppPlane
from cnfperf.run import checks
from cnfperf.scenario import validate

PLUGINS = ("vhost_plugin.so", "memif_plugin.so", "af_packet_plugin.so")


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
    monkeypatch.delenv(vi.VPP_ENV, raising=False)
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
    found = vi.find_vpp()
    assert found == vi.Vpp(built, built.with_name("vppctl"),
                               built.parent.parent / "lib" / "vpp_plugins", "build")
    assert vi.describe_vpp() == f"26.10-rc0 at {built} (cnfperf's build)"


def test_without_a_build_the_system_s_vpp_is_used_where_the_packages_put_it(system, nothing_built):
    found = vi.find_vpp()
    assert found.origin == "system" and found.program == system
    assert found.plugins == system.parent.parent / "lib" / "x86_64-linux-gnu" / "vpp_plugins"
    assert builds.problems(vi.BUILD) == []
    # not from a Debian package here: its own --version says
    assert vi.describe_vpp() == f"25.10-release at {system} (the system's)"


def test_cnfperf_vpp_names_the_one_to_use_and_nothing_else(system, built, tmp_path, monkeypatch):
    monkeypatch.setenv(vi.VPP_ENV, str(system))
    assert vi.find_vpp().origin == vi.VPP_ENV and vi.find_vpp().program == system
    monkeypatch.setenv(vi.VPP_ENV, str(tmp_path / "nowhere" / "vpp"))
    nowhere = tmp_path / "nowhere" / "vpp"
    assert builds.problems(vi.BUILD) == [
        f"{vi.VPP_ENV}={nowhere}: {nowhere} is not an executable file"]


def test_a_system_vpp_without_its_plugins_is_named_with_the_package(system, nothing_built):
    for p in (system.parent.parent / "lib" / "x86_64-linux-gnu" / "vpp_plugins").iterdir():
        p.unlink()
    [problem] = builds.problems(vi.BUILD)
    assert problem.startswith("the system's VPP: no vhost_plugin.so or memif_plugin.so in ")
    assert problem.endswith("(FD.io's packages vpp and vpp-plugin-core)")


def test_a_system_vpp_with_one_plugin_runs_the_data_plane_that_uses_it(system, nothing_built):
    plugins = system.parent.parent / "lib" / "x86_64-linux-gnu" / "vpp_plugins"
    (plugins / "vhost_plugin.so").unlink()
    assert builds.problems(vi.BUILD) == [] and vi.vpp_plugin_problems("memif_plugin.so") == []
    assert vi.vpp_plugin_problems("vhost_plugin.so") == [
        f"the VPP at {system} has no vhost_plugin.so in {plugins} (FD.io's packages vpp and "
        "vpp-plugin-core)"]
    assert vi.describe_vpp() == f"25.10-release at {system} (the system's; no vhost_plugin.so)"
    assert [dp.plugin for dp in (VppPlane, VppMemifPlane)] == list(vi.PORT_PLUGINS)


def test_a_build_without_af_packet_runs_every_point_but_a_wire_s(built):
    """A build from before af_packet was built: found, and its data planes
    run; only a wire's NIC as a port needs the plugin, and building again
    adds it."""
    plugins = built.parent.parent / "lib" / "vpp_plugins"
    (plugins / "af_packet_plugin.so").unlink()
    found = vi.find_vpp()
    assert found.origin == "build" and found.has == {"vhost_plugin.so", "memif_plugin.so"}
    assert vi.vpp_plugin_problems(VppPlane.plugin) == []
    assert VppPlane.nic_problems(None) == [
        f"the VPP at {built} has no af_packet_plugin.so in {plugins} (make switches)"]
    assert vi.describe_vpp() == \
        f"26.10-rc0 at {built} (cnfperf's build; no af_packet_plugin.so)"


def test_a_system_vpp_with_af_packet_alone_is_no_vpp_to_run(system, nothing_built):
    plugins = system.parent.parent / "lib" / "x86_64-linux-gnu" / "vpp_plugins"
    for p in vi.PORT_PLUGINS:
        (plugins / p).unlink()
    [problem] = builds.problems(vi.BUILD)
    assert problem.startswith("the system's VPP: no vhost_plugin.so or memif_plugin.so in ")


def test_a_link_to_vpp_is_followed_to_its_plugins(tmp_path, monkeypatch, nothing_built):
    """/usr/local/bin/vpp -> /opt/vpp/bin/vpp: the plugins are beside the
    program, not beside the link (nor is vppctl, here)."""
    opt = tmp_path / "opt" / "vpp"
    real = _install(opt / "bin", opt / "lib" / "vpp_plugins", "25.06-release")
    link = tmp_path / "usr" / "local" / "bin" / "vpp"
    link.parent.mkdir(parents=True)
    link.symlink_to(real)
    monkeypatch.setenv("PATH", f"{link.parent}:/usr/bin:/bin")
    monkeypatch.delenv(vi.VPP_ENV, raising=False)
    found = vi.find_vpp()
    assert found == vi.Vpp(link, opt / "bin" / "vppctl", opt / "lib" / "vpp_plugins", "system")
    assert vi.describe_vpp() == f"25.06-release at {real} (the system's)"


def test_no_vpp_at_all_names_both_ways_to_get_one(nothing_built, tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", "/nonexistent")
    monkeypatch.delenv(vi.VPP_ENV, raising=False)
    [problem] = builds.problems(vi.BUILD)
    assert problem == (f"vpp not built ({tmp_path}/empty/vpp/bin/vpp missing: make switches, or "
                       "switches/build.sh vpp), and no vpp on PATH (FD.io's packages vpp and "
                       "vpp-plugin-core)")
    assert vi.describe_vpp() == problem
    with pytest.raises(LookupError):
        vi.vpp()


def test_doctor_s_build_row_is_about_cnfperf_s_build_alone(system, nothing_built):
    assert builds.facts([vi.BUILD])["vpp"]["problem"].startswith("vpp not built")


def test_preflight_asks_for_af_packet_only_where_a_wire_s_nic_is_a_port(built):
    """The host under test's preflight (its agent's: here = dut): a TG–DUT point
    needs the plugin there, a point on that host alone does not, nor does the
    tester's host."""
    (built.parent.parent / "lib" / "vpp_plugins" / "af_packet_plugin.so").unlink()
    host = HostFacts(cores=2, usable_cpus=[0, 1], cpu_model="x", kernel="6.1", root=True,
                     iproute2=True, kernel_links={}, hugepages=Hugepages(0, 0, 2048, []),
                     runc=None, busybox_static=None, dpdk=None, testpmd=None,
                     libxdp=None, kvm=False, engine=EngineFacts(version="0.1.0", apis=["dpdk"]))

    def lacks(tester_host: str, here: str) -> list[str]:
        s = validate({"switch": "vpp", "api": "dpdk", "tester": "single", "dut_host": "dut",
                      "tester_host": tester_host, "hosts": "hosts.toml"})
        return [p for p in checks.host_problems(host, here=here)(s) if "af_packet" in p]

    assert lacks("local", "dut") == [
        f"vpp: the VPP at {built} has no af_packet_plugin.so in "
        f"{built.parent.parent / 'lib' / 'vpp_plugins'} (make switches)"]
    assert lacks("dut", "dut") == [] and lacks("local", "local") == []


def test_a_build_s_programs_are_named_where_the_prefix_links_to(tmp_path, monkeypatch):
    """make switches links $prefix/NAME to the per-user cache: a build's files
    are named there (a switch's container holds them at those paths; a
    checkout under /tmp would be hidden under its own /tmp)."""
    cache = tmp_path / "cache" / "vpp-0123"
    (cache / "bin").mkdir(parents=True)
    (tmp_path / "prefix").mkdir()
    (tmp_path / "prefix" / "vpp").symlink_to(cache)
    monkeypatch.setenv(builds.PREFIX_ENV, str(tmp_path / "prefix"))
    assert builds.program(vi.BUILD) == cache / "bin" / "vpp"
    monkeypatch.setenv(builds.PREFIX_ENV, str(tmp_path / "none"))
    assert builds.program(vi.BUILD) == tmp_path / "none" / "vpp" / "bin" / "vpp"
