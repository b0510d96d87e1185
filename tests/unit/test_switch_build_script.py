"""switches/build.sh's own rules, on a tiny source of its own (a Makefile that
writes a script where Snabb's build puts its program) and a copy of the script
without the project's patches, so no real build runs:
a stamp skips a second build, a failed build keeps the last good install,
--check builds nothing, bad names and missing sources are said at once."""
from __future__ import annotations

import io
import os
import subprocess
import tarfile
from pathlib import Path

import shutil

import pytest

from harness import REPO

BUILD = str(REPO / "switches" / "build.sh")


def _source(dir: Path, recipe: str) -> None:
    """A snabb.tar.gz whose `make` runs `recipe` and installs src/snabb."""
    dir.mkdir(exist_ok=True)
    files = {"snabb/Makefile": f"all:\n\t{recipe}\n\tmkdir -p src && printf '#!/bin/sh\\n' > src/snabb\n"}
    with tarfile.open(dir / "snabb.tar.gz", "w:gz") as tar:
        for name, text in files.items():
            data = text.encode()
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))


def _build(tmp: Path, *args: str, ci: bool = False) -> subprocess.CompletedProcess:
    script = tmp / "switches" / "build.sh"     # its patches/ are beside it: none here
    if not script.exists():
        script.parent.mkdir()
        shutil.copy(BUILD, script)
    env = {**os.environ, "CNFPERF_SOURCES": str(tmp / "src"),
           "CNFPERF_SWITCHES": str(tmp / "prefix"), "CI": "true" if ci else ""}
    return subprocess.run([str(script), *args], capture_output=True, text=True, env=env, timeout=60)


def test_a_stamp_skips_the_second_build_and_a_failure_keeps_the_last_good_one(tmp_path):
    _source(tmp_path / "src", "true")
    first = _build(tmp_path, "snabb")
    assert first.returncode == 0, first.stderr
    program = tmp_path / "prefix" / "snabb" / "bin" / "snabb"
    stamp = (tmp_path / "prefix" / "snabb.stamp").read_text()
    assert program.is_file() and "switches: snabb: built in" in first.stdout
    assert _build(tmp_path, "--check", "snabb").stdout == "switches: snabb: up to date\n"
    again = _build(tmp_path, "snabb")
    assert again.stdout == f"switches: snabb: up to date ({tmp_path}/prefix/snabb)\n"

    _source(tmp_path / "src", "echo broken >&2; false")      # new sources that fail
    checked = _build(tmp_path, "--check", "snabb")
    assert checked.returncode == 1 and checked.stdout == "switches: snabb: stale\n"
    failed = _build(tmp_path, "snabb")
    assert failed.returncode == 1 and "build failed" in failed.stderr and "broken" in failed.stderr
    assert program.is_file() and (tmp_path / "prefix" / "snabb.stamp").read_text() == stamp
    leftovers = [p.name for d in (".stage", ".build") if (tmp_path / "prefix" / d).exists()
                 for p in (tmp_path / "prefix" / d).iterdir()]
    assert leftovers == []


def test_an_unknown_name_is_refused_before_anything_is_built(tmp_path):
    _source(tmp_path / "src", "true")
    done = _build(tmp_path, "snabb", "bess")
    assert done.returncode == 2 and done.stderr.startswith("switches: unknown build bess")
    assert not (tmp_path / "prefix").exists()


@pytest.mark.parametrize("ci", [False, True])
def test_missing_sources_are_skipped_with_one_line_or_fail_under_ci(tmp_path, ci):
    (tmp_path / "src").mkdir()
    done = _build(tmp_path, "vpp", ci=ci)
    assert f"no sources for vpp in {tmp_path}/src" in done.stdout + done.stderr
    assert done.returncode == (2 if ci else 0)
    assert not (tmp_path / "prefix" / "vpp").exists()
    checked = _build(tmp_path, "--check", "vpp")
    assert checked.returncode == 1 and checked.stdout == "switches: vpp: no sources\n"
