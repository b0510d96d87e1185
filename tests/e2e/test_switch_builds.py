"""`make switches` is idempotent: once VPP, Snabb and Click are built, running
switches/build.sh again builds nothing (each build's stamp matches its sources,
patches and recipe) and leaves the installs as they were."""
from __future__ import annotations

import subprocess

import pytest

from cnfperf import builds
from harness import REPO

pytestmark = pytest.mark.needs(*builds.BUILDS)


def test_a_second_build_builds_nothing():
    before = {name: (builds.prefix() / f"{name}.stamp").stat().st_mtime_ns
              for name in builds.BUILDS}
    done = subprocess.run([str(REPO / "switches" / "build.sh")], capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert sorted(lines) == sorted(f"switches: {name}: up to date ({builds.home(name)})"
                                   for name in builds.BUILDS), done.stdout
    assert before == {name: (builds.prefix() / f"{name}.stamp").stat().st_mtime_ns
                      for name in builds.BUILDS}
    assert not builds.problems(*builds.BUILDS)


def test_an_unknown_build_is_refused():
    done = subprocess.run([str(REPO / "switches" / "build.sh"), "bess"], capture_output=True,
                          text=True, timeout=60)
    assert done.returncode == 2 and "unknown build bess" in done.stderr
