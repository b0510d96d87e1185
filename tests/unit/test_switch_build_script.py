"""switches/build.sh's own rules, on a tiny source of its own (a Makefile that
writes a script where Snabb's build puts its program) pinned by a lock of its
own, and a copy of the script without the project's patches, so no real build
runs: a build goes to the per-user cache and is linked into the prefix, a stamp
skips a second build, a second prefix (another clone) reuses the cached build
without sources, a failed build or a wrong source keeps the last good install,
--check builds nothing, bad names and missing sources are said at once."""
from __future__ import annotations

import contextlib
import os
import re
import signal
import subprocess
import time
from pathlib import Path

import pytest

import switch_sources as ss
from harness import require

UNREACHABLE = "http://127.0.0.1:9/snabb.tar.gz"     # nothing listens there


def _tree(recipe: str) -> ss.Tree:
    """A snabb source whose `make` runs `recipe` and makes src/snabb."""
    return {"Makefile": f"all:\n\t{recipe}\n\tmkdir -p src && printf '#!/bin/sh\\n' > src/snabb\n"}


def _source(tmp: Path, recipe: str) -> None:
    """The mirror's snabb.tar.gz, and the lock pinning it."""
    archive = ss.pack(tmp / "src" / "snabb.tar.gz", _tree(recipe), "snabb")
    ss.scripts(tmp, ss.lock_entry("snabb", ss.tree_hash(archive), UNREACHABLE), build=True)


def _env(tmp: Path, ci: bool = False, prefix: str = "prefix",
         sources: bool = True) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "CNFPERF_SOURCES_URL"}
    env.update({"CNFPERF_SOURCES": str(tmp / ("src" if sources else "empty")),
                "CNFPERF_SWITCHES": str(tmp / prefix), "XDG_CACHE_HOME": str(tmp / "cache"),
                "CI": "true" if ci else ""})
    (tmp / "empty").mkdir(exist_ok=True)
    return env


def _build(tmp: Path, *args: str, ci: bool = False, prefix: str = "prefix",
           sources: bool = True) -> subprocess.CompletedProcess:
    return subprocess.run([str(tmp / "switches" / "build.sh"), *args], capture_output=True,
                          text=True, env=_env(tmp, ci, prefix, sources), timeout=60)


def _cache(tmp: Path) -> Path:
    return tmp / "cache" / "cnfperf" / "switches"


def _builds(tmp: Path) -> list[str]:
    """The cache's builds and leftovers."""
    return sorted(p.name for p in _cache(tmp).iterdir() if p.name != ".lock")


def test_a_build_is_cached_linked_and_stamped_and_not_done_twice(tmp_path):
    _source(tmp_path, "true")
    first = _build(tmp_path, "snabb")
    assert first.returncode == 0, first.stderr
    [built] = _builds(tmp_path)
    link = tmp_path / "prefix" / "snabb"
    assert link.is_symlink() and link.resolve() == _cache(tmp_path) / built
    assert (link / "bin" / "snabb").is_file() and "switches: snabb: built in" in first.stdout
    stamp = (tmp_path / "prefix" / "snabb.stamp").read_text()
    assert built == f"snabb-{stamp[:16]}"
    assert _build(tmp_path, "--check", "snabb").stdout == "switches: snabb: up to date\n"
    again = _build(tmp_path, "snabb")
    assert again.stdout == f"switches: snabb: up to date ({tmp_path}/prefix/snabb)\n"


def test_another_prefix_reuses_the_cached_build_without_sources(tmp_path):
    _source(tmp_path, "true")
    assert _build(tmp_path, "snabb").returncode == 0
    [built] = _builds(tmp_path)
    checked = _build(tmp_path, "--check", "snabb", prefix="clone")
    assert checked.stdout == "switches: snabb: cached\n"
    reused = _build(tmp_path, "snabb", prefix="clone", sources=False)
    assert reused.returncode == 0, reused.stderr
    assert reused.stdout == (f"switches: snabb: reusing the cached build "
                             f"{_cache(tmp_path)}/{built} (linked at {tmp_path}/clone/snabb)\n")
    assert (tmp_path / "clone" / "snabb").resolve() == _cache(tmp_path) / built
    assert (tmp_path / "clone" / "snabb.stamp").read_text() == \
        (tmp_path / "prefix" / "snabb.stamp").read_text()


def test_a_failed_build_keeps_the_last_good_one(tmp_path):
    _source(tmp_path, "true")
    assert _build(tmp_path, "snabb").returncode == 0
    program = tmp_path / "prefix" / "snabb" / "bin" / "snabb"
    stamp = (tmp_path / "prefix" / "snabb.stamp").read_text()

    _source(tmp_path, "echo broken >&2; false")      # new sources (and lock) that fail
    checked = _build(tmp_path, "--check", "snabb")
    assert checked.returncode == 1 and checked.stdout == "switches: snabb: stale\n"
    failed = _build(tmp_path, "snabb")
    assert failed.returncode == 1 and "build failed" in failed.stderr and "broken" in failed.stderr
    assert program.is_file() and (tmp_path / "prefix" / "snabb.stamp").read_text() == stamp
    assert len(_builds(tmp_path)) == 1             # the good one: no stage or tree left


def test_a_source_that_is_not_the_pinned_one_is_refused_in_one_line(tmp_path):
    _source(tmp_path, "true")
    assert _build(tmp_path, "snabb").returncode == 0
    stamp = (tmp_path / "prefix" / "snabb.stamp").read_text()
    lock = tmp_path / "switches" / "sources.lock"
    pinned = re.search(r'tree = "(\w+)"', lock.read_text()).group(1)
    lock.write_text(lock.read_text().replace(pinned, "f" * 64))   # another tree is pinned
    done = _build(tmp_path, "snabb")
    assert done.returncode == 1
    [line] = done.stderr.splitlines()
    assert line.startswith(f"switches: snabb: {tmp_path}/src/snabb.tar.gz is not the pinned source")
    assert (tmp_path / "prefix" / "snabb" / "bin" / "snabb").is_file()
    assert (tmp_path / "prefix" / "snabb.stamp").read_text() == stamp
    assert len(_builds(tmp_path)) == 1


def test_a_build_made_in_place_is_replaced_by_a_link(tmp_path):
    _source(tmp_path, "true")
    old = tmp_path / "prefix" / "snabb" / "bin"
    old.mkdir(parents=True)
    (old / "snabb").write_text("an older build.sh built me here\n")
    (tmp_path / "prefix" / "snabb.stamp").write_text("old\n")
    assert _build(tmp_path, "--check", "snabb").stdout == "switches: snabb: stale\n"
    assert _build(tmp_path, "snabb").returncode == 0
    assert (tmp_path / "prefix" / "snabb").is_symlink()
    assert sorted(p.name for p in (tmp_path / "prefix").iterdir()) == \
        ["snabb", "snabb.log", "snabb.stamp"]


def test_prune_removes_the_builds_this_checkout_would_not_use(tmp_path):
    _source(tmp_path, "true")
    assert _build(tmp_path, "snabb").returncode == 0
    [kept] = _builds(tmp_path)
    (_cache(tmp_path) / "snabb-00000000deadbeef" / "bin").mkdir(parents=True)
    (_cache(tmp_path) / ".build" / "vpp-0000000000000000").mkdir(parents=True)
    done = _build(tmp_path, "--prune")
    assert done.returncode == 0, done.stderr
    assert f"switches: removed {_cache(tmp_path)}/snabb-00000000deadbeef" in done.stdout
    assert _builds(tmp_path) == [kept]
    assert _build(tmp_path, "--prune", "snabb").returncode == 2


def test_without_home_or_xdg_cache_home_nothing_is_built(tmp_path):
    _source(tmp_path, "true")
    env = {k: v for k, v in _env(tmp_path).items() if k not in ("HOME", "XDG_CACHE_HOME")}
    done = subprocess.run([str(tmp_path / "switches" / "build.sh"), "snabb"], capture_output=True,
                          text=True, env=env, timeout=60)
    assert (done.returncode, done.stderr) == (2, "switches: neither XDG_CACHE_HOME nor HOME is "
                                                 "set: the cache of builds is below one\n")
    assert not (tmp_path / "prefix").exists()


def test_an_unknown_name_is_refused_before_anything_is_built(tmp_path):
    _source(tmp_path, "true")
    done = _build(tmp_path, "snabb", "lagopus")
    assert done.returncode == 2 and done.stderr.startswith("switches: unknown build lagopus")
    assert not (tmp_path / "prefix").exists() and not (tmp_path / "cache").exists()


@pytest.mark.parametrize("ci", [False, True])
def test_missing_sources_are_skipped_with_one_line_or_fail_under_ci(tmp_path, ci):
    _source(tmp_path, "true")
    done = _build(tmp_path, "snabb", ci=ci, sources=False)
    assert f"switches: snabb: no sources: none in {tmp_path}/empty, and {UNREACHABLE} could not " \
           "be downloaded" in done.stderr
    assert done.returncode == (2 if ci else 0)
    if not ci:
        assert done.stdout.splitlines()[-1] == \
            "switches: snabb: skipped (its data planes and tests say it is not built)"
    assert not (tmp_path / "prefix" / "snabb").exists() and _builds(tmp_path) == []
    checked = _build(tmp_path, "--check", "snabb", sources=False)
    assert checked.returncode == 1 and checked.stdout == "switches: snabb: not built\n"


# A VPP source of the size of a test: VPP's layout (src/CMakeLists.txt, the
# targets and libraries recipe_vpp builds and installs) and its way of learning
# its version (src/scripts/version: .version if it is there, else git describe).
FAKE_VPP: ss.Tree = {
    "src/CMakeLists.txt": """cmake_minimum_required(VERSION 3.13)
project(vpp C)
execute_process(COMMAND ${CMAKE_SOURCE_DIR}/scripts/version
                OUTPUT_VARIABLE VPP_VERSION OUTPUT_STRIP_TRAILING_WHITESPACE)
set(CMAKE_RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/bin)
set(CMAKE_LIBRARY_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/lib)
foreach(l vppinfra svm vlib vlibapi vlibmemory vnet)
  add_library(${l} SHARED lib.c)
  set_target_properties(${l} PROPERTIES VERSION 1.0 SOVERSION 1)
endforeach()
add_executable(vpp vpp.c)
target_compile_definitions(vpp PRIVATE "VERSION=\\"${VPP_VERSION}\\"")
target_link_libraries(vpp vppinfra svm vlib vlibapi vlibmemory vnet)
add_executable(vppctl vpp.c)
target_compile_definitions(vppctl PRIVATE VERSION="ctl")
foreach(p vhost memif af_packet)
  add_library(${p}_plugin MODULE lib.c)
  set_target_properties(${p}_plugin PROPERTIES PREFIX ""
                        LIBRARY_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/lib/vpp_plugins)
endforeach()
""",
    "src/vpp.c": '#include <stdio.h>\nint main(void) { puts("vpp v" VERSION); return 0; }\n',
    "src/lib.c": "int vpp_lib(void) { return 0; }\n",
    "src/scripts/version": ("x", "#!/bin/sh\ncd \"$(dirname \"$0\")\"\n"
                                 "if [ -f .version ]; then cat .version; "
                                 "else git describe --long --dirty --match 'v*'; fi\n"),
}


@pytest.mark.parametrize("form", ["archive", "checkout"])
def test_vpp_is_told_the_lock_s_version_and_never_asks_a_mirror_s_git(tmp_path, form):
    """VPP's recipe, on a source of its layout: its version is the lock's,
    from an archive and from a mirror directory that is a git checkout alike
    (whose .git is the mirror's, not the pinned tree's, and not copied)."""
    require("cmake", "ninja", "gcc")
    mirror = tmp_path / "src"
    if form == "archive":
        ss.pack(mirror / "vpp.tar.gz", FAKE_VPP, "vpp")
    else:
        ss.unpacked(mirror / "vpp", FAKE_VPP)
        ss.unpacked(mirror / "vpp" / ".git", {"HEAD": "ref: refs/heads/main\n",
                                              "config": "[core]\n\tfsmonitor = false\n"})
    pinned = ss.tree_hash(ss.pack(tmp_path / "pinned.tar.gz", FAKE_VPP, "vpp"))
    ss.scripts(tmp_path, ss.lock_entry("vpp", pinned, UNREACHABLE, version="99.99-rc9"),
               build=True)
    done = _build(tmp_path, "vpp")
    assert done.returncode == 0, done.stdout + done.stderr
    vpp = tmp_path / "prefix" / "vpp" / "bin" / "vpp"
    said = subprocess.run([str(vpp)], capture_output=True, text=True, timeout=10).stdout
    assert said == "vpp v99.99-rc9\n"


def _gone(pid: int) -> bool:
    """No such process, or one that has ended and waits to be reaped."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z"
    except FileNotFoundError:
        return True


def _default_signals() -> None:
    """build.sh as a terminal starts it: bash cannot trap a signal ignored when
    it started, and pytest may run with SIGINT and SIGHUP ignored (a CI script's
    background job, nohup)."""
    for sig in (signal.SIGINT, signal.SIGHUP, signal.SIGTERM):
        signal.signal(sig, signal.SIG_DFL)


@pytest.mark.parametrize("sig, code, keep", [(signal.SIGTERM, 143, False),
                                             (signal.SIGINT, 130, False),
                                             (signal.SIGHUP, 129, False),
                                             (signal.SIGTERM, 143, True)])
def test_an_interrupted_build_leaves_nothing_of_itself(tmp_path, sig, code, keep):
    """A signal to build.sh alone (not its process group) while a recipe runs:
    the recipe's processes are ended, its tree (unless KEEP_BUILD=1) and stage
    removed, the last good build kept, and the exit status says which signal."""
    _source(tmp_path, "true")
    assert _build(tmp_path, "snabb").returncode == 0
    good = (tmp_path / "prefix" / "snabb").resolve()
    sleeping = tmp_path / "sleeping"
    _source(tmp_path, f"echo $$$$ > {sleeping}; exec sleep 60")
    env = {**_env(tmp_path), "KEEP_BUILD": "1" if keep else ""}
    proc = subprocess.Popen([str(tmp_path / "switches" / "build.sh"), "snabb"], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True, preexec_fn=_default_signals)
    try:
        deadline = time.monotonic() + 30
        while not (sleeping.exists() and sleeping.read_text().strip()):
            assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()
            time.sleep(0.05)
        recipe = int(sleeping.read_text())
        os.kill(proc.pid, sig)
        out, err = proc.communicate(timeout=20)
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
    assert proc.returncode == code, out + err
    assert err.splitlines()[-1] == "switches: snabb: interrupted; not built"
    deadline = time.monotonic() + 5
    while not _gone(recipe):
        assert time.monotonic() < deadline, f"the recipe's sleep ({recipe}) outlived build.sh"
        time.sleep(0.05)
    assert (tmp_path / "prefix" / "snabb").resolve() == good
    left = sorted(p.relative_to(_cache(tmp_path)).as_posix()
                  for p in _cache(tmp_path).glob(".*/*"))
    built = re.search(r"^switches: snabb: building into \S+/(snabb-\w+) ", out, re.M)[1]
    assert left == ([f".build/{built}"] if keep else [])


# A Click source of the size of a test: a configure that does nothing and a
# make that puts a program (a copy of true: strip takes it) where Click's does.
FAKE_CLICK: ss.Tree = {
    "configure": ("x", "#!/bin/sh\nexit 0\n"),
    "Makefile": "all:\n\tmkdir -p userlevel && cp /bin/true userlevel/click\n",
}


def _tools(tmp: Path, **versions: str) -> None:
    """cc, c++ and pkg-config on the front of PATH (see _env), saying `versions`."""
    bin_dir = tmp / "tools"
    bin_dir.mkdir(exist_ok=True)
    for tool, says in versions.items():
        (bin_dir / tool).write_text(f"#!/bin/sh\necho '{says}'\n")
        (bin_dir / tool).chmod(0o755)


def test_a_build_is_stale_after_its_compiler_or_its_dpdk_changed(tmp_path):
    """Builds are shared by every checkout: one made against an older compiler
    or DPDK must not be reused after an upgrade of either (DPDK's counts for the
    builds that link it alone)."""
    archive = ss.pack(tmp_path / "src" / "click.tar.gz", FAKE_CLICK, "click")
    ss.scripts(tmp_path, ss.lock_entry("click", ss.tree_hash(archive), UNREACHABLE), build=True)
    env = {k: v for k, v in _env(tmp_path).items() if k not in ("CC", "CXX")}
    env["PATH"] = f"{tmp_path / 'tools'}:{os.environ['PATH']}"

    def run(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([str(tmp_path / "switches" / "build.sh"), *args],
                              capture_output=True, text=True, env=env, timeout=120)

    _tools(tmp_path, **{"cc": "cc 12.2.0", "c++": "c++ 12.2.0", "pkg-config": "22.11.4"})
    built = run("click", "click-dpdk")
    assert built.returncode == 0, built.stdout + built.stderr
    assert run("--check", "click", "click-dpdk").returncode == 0
    _tools(tmp_path, **{"pkg-config": "22.11.5"})
    assert run("--check", "click", "click-dpdk").stdout == \
        "switches: click: up to date\nswitches: click-dpdk: stale\n"
    _tools(tmp_path, **{"pkg-config": "22.11.4", "c++": "c++ 12.3.0"})
    assert run("--check", "click", "click-dpdk").stdout == \
        "switches: click: stale\nswitches: click-dpdk: stale\n"
    _tools(tmp_path, **{"c++": "c++ 12.2.0"})         # back as it was: the cached builds
    assert run("--check", "click", "click-dpdk").returncode == 0
