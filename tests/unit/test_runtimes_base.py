"""Input checks every runtime applies before it creates anything."""
import os
import shutil
import tempfile

import pytest

from cnfperf.runtimes import RUNTIMES, NetnsRuntime, PodmanRuntime, PodRuntime, RuncRuntime, VmRuntime
from cnfperf.runtimes.base import (Mount, check_cpus, check_mounts, check_name, check_netns,
                                   cpu_list)


@pytest.mark.parametrize("name", ["cnfp1", "cnfp-a1b2-pair0-tx", "a", "x.y_z-1", "A" * 63])
def test_good_names(name):
    assert check_name(name) == name


@pytest.mark.parametrize("name", ["", "-x", ".x", "_x", "a b", "a/b", "a:b", "ä", "A" * 64,
                                  "../etc", None, 3])
def test_bad_names_refused_with_the_field(name):
    with pytest.raises(ValueError, match="container name"):
        check_name(name)


def test_netns_name_checked_before_path(tmp_path):
    with pytest.raises(ValueError, match="netns '../x'"):
        check_netns("../x")
    with pytest.raises(ValueError, match="no such network namespace"):
        check_netns("cnfp-surely-not-there-7f3a")


@pytest.mark.parametrize("cpus,text", [([1], "1"), ([0, 1, 2, 3], "0-3"), ([3, 1, 0], "0-1,3"),
                                       ([0, 2, 4, 5, 6, 9], "0,2,4-6,9")])
def test_cpu_list(cpus, text):
    assert cpu_list(cpus) == text


def test_cpus_usable():
    usable = sorted(os.sched_getaffinity(0))
    assert check_cpus([usable[-1]]) == (usable[-1],)


@pytest.mark.parametrize("cpus,why", [([], "at least one"), ([-1], "non-negative"),
                                      ([1, 1], "twice"), ([4096], "not available"),
                                      (["1"], "non-negative"), ([True], "non-negative")])
def test_bad_cpus(cpus, why):
    with pytest.raises(ValueError, match=why):
        check_cpus(cpus)


def test_mounts_checked(tmp_path):
    check_mounts([Mount(str(tmp_path), "/mnt/x")])
    with pytest.raises(ValueError, match="mount source"):
        check_mounts([Mount(str(tmp_path / "nope"), "/mnt/x")])
    with pytest.raises(ValueError, match="absolute"):
        check_mounts([Mount(str(tmp_path), "mnt/x")])
    with pytest.raises(ValueError, match="absolute"):
        check_mounts([Mount(str(tmp_path), "/mnt/../etc")])
    with pytest.raises(ValueError, match="twice"):
        check_mounts([Mount(str(tmp_path), "/mnt/x"), Mount("/", "/mnt/x")])


def test_registry():
    assert RUNTIMES == {"runc": RuncRuntime, "netns": NetnsRuntime, "podman": PodmanRuntime,
                        "vm": VmRuntime, "pod": PodRuntime}
    assert all(cls.name == key for key, cls in RUNTIMES.items())


def test_check_reports_problems_as_lines():
    for cls in RUNTIMES.values():
        problems = cls.check()
        assert isinstance(problems, list) and all(isinstance(p, str) and p for p in problems)
        if os.geteuid() != 0:
            assert any("root" in p for p in problems)


def test_images_are_declarations_checked_where_declared(tmp_path):
    """An image is a declaration (images.Image), not a name a runtime knows:
    the core ones, and the ones their owners declare (the click ones, the
    switch's, the neighbour's), each with a budget; a bad declaration is
    refused where it is made, a user's image by a runtime that builds none."""
    from pathlib import Path

    from cnfperf.dataplanes import click, snabb, vpp
    from cnfperf.dataplanes.switch_image import SWITCH
    from cnfperf.nfs.click import CLICK_DPDK_IMAGE, CLICK_IMAGE
    from cnfperf.run.noise import IMAGE as NOISE
    from cnfperf.runtimes import CORE, FULL, MINIMAL, TOOLS, ContainerError, Image, user_image
    from cnfperf.runtimes.images import BUILD
    assert CORE == (FULL, MINIMAL, TOOLS)
    every = (*CORE, NOISE, SWITCH, vpp.IMAGE, snabb.IMAGE, click.IMAGE, CLICK_IMAGE,
             CLICK_DPDK_IMAGE)
    assert [i.name for i in every] == ["full", "minimal", "tools", "noise", "switch",
                                       "switch-vpp", "switch-snabb", "switch-click", "click",
                                       "click-dpdk"]
    assert all(i.budget_mb > 0 and i.about for i in every)
    assert (CLICK_IMAGE.program, CLICK_IMAGE.build.name, CLICK_DPDK_IMAGE.build.name) == \
        (BUILD, "click", "click-dpdk")
    with pytest.raises(ValueError, match="names its build"):
        Image("tiny", "x", program=BUILD)
    with pytest.raises(ValueError, match="program 'perl'"):
        Image("tiny", "x", program="perl")
    with pytest.raises(ValueError, match="tool 'nope'"):
        Image("tiny", "x", tools=("nope",))
    rt = NetnsRuntime(None, tmp_path)
    with pytest.raises(ContainerError, match="image localhost/x:1: a user's image runs in podman"):
        rt.prepare(Path("/bin/true"), user_image("localhost/x:1"))


def test_netns_runs_the_host_engine_of_each_image(tmp_path):
    """No image: a kind's containers run the binary prepare() was given; the
    minimal kind's must be static, as in runc's minimal image."""
    from pathlib import Path

    from cnfperf.runtimes import FULL, MINIMAL, ContainerError
    rt = NetnsRuntime(None, tmp_path)
    assert rt.prepare(Path("/bin/true")).size_bytes == 0
    assert rt.engines == {FULL: os.path.realpath("/bin/true")}
    with pytest.raises(ContainerError, match="not statically linked"):
        rt.prepare(Path("/bin/true"), MINIMAL)
    with pytest.raises(RuntimeError, match="image='minimal'.*before prepare"):
        rt.create("cnfp1", [0], "cnfp1", image=MINIMAL)


def test_every_runtime_creates_with_the_same_parameters():
    """The testbed calls every runtime's create() alike (nics among them)."""
    import inspect
    from cnfperf.runtimes.base import Runtime
    expected = list(inspect.signature(Runtime.create).parameters)
    for name, rt in RUNTIMES.items():
        assert list(inspect.signature(rt.create).parameters) == expected, name


def test_a_built_switch_s_image_holds_its_files_or_says_why_there_is_none(tmp_path):
    """A switch built from source (VPP, Snabb, Click) has an image of its own:
    its files at their host paths, line-buffered; one not built is refused
    when the image is made, naming why."""
    from cnfperf.dataplanes.switch_image import built
    from cnfperf.runtimes import ContainerError
    from cnfperf.runtimes.rootfs import LIBSTDBUF
    program = shutil.which("true")
    found = built("switch-x", "X", lambda: (program,), budget_mb=8).found()
    assert (found.tools, found.preloads) == ((program,), (LIBSTDBUF,))
    with pytest.raises(ContainerError, match=r"image switch-y: \S+/nope is not there "
                                             r"\(make switches\)"):
        built("switch-y", "Y", lambda: (str(tmp_path / "nope"),), budget_mb=8).found()
    # a file a container would not see: under a directory it mounts its own over
    with tempfile.NamedTemporaryFile(dir="/tmp") as f, \
            pytest.raises(ContainerError, match=r"image switch-w: /tmp/\S+ is under /tmp, which "
                                                r"a container mounts its own over: keep the "
                                                r"build elsewhere \(XDG_CACHE_HOME, "
                                                r"CNFPERF_SWITCHES\)$"):
        built("switch-w", "W", lambda: (f.name,), budget_mb=8).found()

    def unbuilt():
        raise LookupError("no vpp on PATH")
    with pytest.raises(ContainerError, match="^image switch-z: no vpp on PATH$"):
        built("switch-z", "Z", unbuilt, budget_mb=8).found()
