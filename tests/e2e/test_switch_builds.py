"""`make switches` is idempotent: once VPP, Snabb and Click are built, running
switches/build.sh again builds nothing (each build's stamp matches its sources,
patches and recipe) and leaves the installs as they were: links into the
per-user cache of builds.

`--check` is asked first: a stale build fails this test, naming it, rather than
starting a rebuild of many minutes inside it."""
from __future__ import annotations

import os
import signal
import subprocess

import pytest

from cnfperf.host import builds
from harness import REPO, builds_by_name

BUILDS = builds_by_name()
pytestmark = pytest.mark.needs(*BUILDS)
BUILD = str(REPO / "switches" / "build.sh")


def _run(*args: str, timeout: float) -> subprocess.CompletedProcess:
    """build.sh in a process group of its own: a timeout kills it and its compilers."""
    proc = subprocess.Popen([BUILD, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, start_new_session=True)
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        raise
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)


def _installed() -> dict[str, int]:
    """Every file under the prefix's builds, with its modification time."""
    return {str(p): p.stat().st_mtime_ns for name, b in BUILDS.items()
            for p in [builds.prefix() / f"{name}.stamp", *builds.home(b).rglob("*")]}


def test_a_second_build_builds_nothing():
    checked = _run("--check", timeout=60)
    assert checked.returncode == 0, f"not up to date (make switches):\n{checked.stdout}"
    before = _installed()
    done = _run(timeout=120)
    assert done.returncode == 0, done.stderr
    assert sorted(done.stdout.splitlines()) == sorted(
        f"switches: {name}: up to date ({builds.linked(b)})" for name, b in BUILDS.items())
    assert _installed() == before
    assert not builds.problems(*BUILDS.values())
    assert all(builds.linked(b).is_symlink() for b in BUILDS.values())
