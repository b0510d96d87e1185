"""What a clone without a mirror folder beside it makes of `make switches`:
Snabb's pinned source is downloaded from a mirror URL (CNFPERF_SOURCES_URL; a
local HTTP server on 127.0.0.1 stands in for a company mirror), checked, and
built into an empty per-user cache; a second clone then reuses that build,
neither downloading nor building. A real build of Snabb, the quickest of the
switches (about 30 s on 2 cores); the clones are copies of switches/ (the
scripts, the lock, the patches) and builds/ (the cache's rules) in directories
with no ../shared beside them.

The source served is the one this machine has: a mirror folder, the download
cache, or CNFPERF_SOURCES_URL; with none of them the test cannot run, which
fails it under CI=true.

The real build runs when switches/ or builds/ differs from main's (their merge base, or
work not yet committed), or with CNFPERF_TEST_BUILDS=yes: otherwise it would
build the same thing on every run. Then the test checks the other half only, a
clone reusing the per-user cache's build of this lock (`make switches` made
it), and says, as a warning in the summary, why it built nothing."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tarfile
import warnings
from pathlib import Path

import switch_sources as ss
from harness import REPO, missing

CLOSED = "http://127.0.0.1:9"      # nothing listens there: no network, as it were


def _snabb_source(served: Path) -> None:
    """Snabb's pinned source, as served/snabb.tar.xz (the lock's file name)."""
    done = subprocess.run([sys.executable, str(REPO / "switches" / "sources.py"), "fetch", "snabb"],
                          capture_output=True, text=True, timeout=600)
    if done.returncode != 0:
        missing(f"Snabb's source: {done.stderr.strip().splitlines()[-1]}")
    found = Path(done.stdout.strip())
    served.mkdir()
    if found.is_dir():
        with tarfile.open(served / "snabb.tar.xz", "w:xz") as tar:
            tar.add(found, arcname="snabb")
    else:
        shutil.copy(found, served / "snabb.tar.xz")


def _clone(where: Path) -> Path:
    for folder in ("switches", "builds"):      # builds/: the cache's rules build.sh sources
        shutil.copytree(REPO / folder, where / folder,
                        ignore=shutil.ignore_patterns("__pycache__"))
    return where


def _build(clone: Path, cache: Path, url: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in ("CNFPERF_SOURCES", "CNFPERF_SWITCHES")}
    env.update(CNFPERF_SOURCES_URL=url, XDG_CACHE_HOME=str(cache))
    return subprocess.run([str(clone / "switches" / "build.sh"), "snabb"], capture_output=True,
                          text=True, env=env, timeout=900, stdin=subprocess.DEVNULL)


def _why_not_build() -> str | None:
    """Why the real build may be left out this time, or None: build it."""
    if os.environ.get("CNFPERF_TEST_BUILDS", "").lower() in ("yes", "true", "1"):
        return None

    def git(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run(["git", "-C", str(REPO), *args], capture_output=True, text=True,
                              timeout=60)
    try:
        bases = [git("merge-base", "HEAD", main) for main in ("main", "origin/main")]
    except OSError:
        return None                      # no git (a copy, not a clone): build
    base = next((b for b in bases if b.returncode == 0), None)
    if base is None:
        return None                      # no main to compare with: build
    base_id = base.stdout.strip()
    if git("diff", "--quiet", base_id, "--", "switches", "builds").returncode != 0 or \
            git("status", "--porcelain", "--", "switches", "builds").stdout.strip():
        return None
    return (f"switches/ and builds/ are as on main (merge base {base_id[:12]}): Snabb's real build is "
            "left out (CNFPERF_TEST_BUILDS=yes builds it); a clone's reuse of the cached "
            "build was checked")


def test_a_clone_downloads_checks_and_builds_and_the_next_one_reuses_it(tmp_path):
    if why := _why_not_build():
        _reuses_the_cached_build(tmp_path)
        warnings.warn(why)
        return
    _snabb_source(tmp_path / "served")
    cache = tmp_path / "cache"
    first = _clone(tmp_path / "one" / "cnfperf")
    with ss.http_server(tmp_path / "served") as url:
        built = _build(first, cache, url)
    assert built.returncode == 0, built.stdout + built.stderr
    assert f"switches: snabb: downloading {url}/snabb.tar.xz" in built.stderr
    assert "switches: snabb: built in" in built.stdout
    program = first / ".switches" / "snabb" / "bin" / "snabb"
    assert subprocess.run([str(program), "snsh", "-e", "print(6 * 7)"], capture_output=True,
                          text=True, timeout=30).stdout == "42\n"
    [download] = (cache / "cnfperf" / "sources").iterdir()
    [entry] = [p for p in (cache / "cnfperf" / "switches").iterdir() if p.name != ".lock"]

    second = _clone(tmp_path / "two" / "cnfperf")
    reused = _build(second, cache, CLOSED)            # the server is gone
    assert reused.returncode == 0, reused.stdout + reused.stderr
    assert reused.stdout == (f"switches: snabb: reusing the cached build {entry} "
                             f"(linked at {second}/.switches/snabb)\n") and reused.stderr == ""
    assert (second / ".switches" / "snabb").resolve() == entry == program.parent.parent.resolve()
    assert (second / ".switches" / "snabb.stamp").read_text() == \
        (first / ".switches" / "snabb.stamp").read_text()
    assert list((cache / "cnfperf" / "sources").iterdir()) == [download]


def _reuses_the_cached_build(tmp_path: Path) -> None:
    """A clone finds this lock's Snabb in the per-user cache: it links it,
    neither downloading (the server is closed) nor building."""
    clone = _clone(tmp_path / "one" / "cnfperf")
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    reused = _build(clone, cache, CLOSED)
    assert reused.returncode == 0 and reused.stdout.startswith(
        "switches: snabb: reusing the cached build "), \
        f"no cached Snabb build of this lock (make switches): {reused.stdout}{reused.stderr}"
    assert reused.stderr == "", reused.stderr
    program = clone / ".switches" / "snabb" / "bin" / "snabb"
    assert subprocess.run([str(program), "snsh", "-e", "print(6 * 7)"], capture_output=True,
                          text=True, timeout=30).stdout == "42\n"
