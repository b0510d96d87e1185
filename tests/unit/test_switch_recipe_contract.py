"""A new source-built switch is one folder under switches/ and one registry
line: on a copy of the checkout (the package and switches/, without the
project's patches) with a made-up switch `toy` added as switches/toy/ (its
recipe, and its source pinned beside it) and a data plane declaring its build
and a probe (dataplanes/toy.py, and its line in DATAPLANES), build.sh finds the
folder and builds it from a tiny local source into a prefix and cache of the
test's own, and doctor, in a fresh interpreter, reports the build, its
stamp, its state and the probe's fact, where before it named the command that
makes it. Nothing else of the copy changes."""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import cnfperf
import switch_sources as ss
from cnfperf.dataplanes import DATAPLANES

PACKAGE = Path(cnfperf.__file__).parent
REPO = PACKAGE.parent

# The build's steps: the source's template made a program that says the
# source's version (a shell script stands for what a compiler makes).
RECIPE = '''# toy: a made-up switch (switches/build.sh sources this).

recipe_toy() {
	mkdir -p "$out/bin"
	sed "s/@VERSION@/$(cat "$work/VERSION")/" "$work/toy.in" > "$out/bin/toy"
	chmod 755 "$out/bin/toy"
}
'''
SOURCE = {"VERSION": "1.2.3\n", "toy.in": "#!/bin/sh\necho 'toy @VERSION@'\n"}

PLANE = '''"""toy: a made-up switch built from source (switches/toy/)."""
from __future__ import annotations

from cnfperf.dataplanes.dpdk_base import DpdkPlane
from cnfperf.host import builds
from cnfperf.host.facts import Probe
from cnfperf.host.system import CommandFailed, run

BUILD = builds.Build("toy", "a made-up switch built from source", ("bin/toy",))


def version() -> str | None:
    """What the built program says of itself; None while it is not built."""
    if builds.missing(BUILD):
        return None
    try:
        return run([str(builds.program(BUILD))], timeout=10).strip()
    except CommandFailed:
        return None


class ToyPlane(DpdkPlane):
    name = "toy"
    description = "a made-up switch built from source"
    style = 31
    build = BUILD
    probes = (Probe("toy", "Toy", version, lambda: "not built (switches/build.sh toy)"),)

    @classmethod
    def versions(cls, host):
        return {"toy": host.probes.get("toy") or ""}

    def start(self, point):
        raise NotImplementedError

    def attach(self, port):
        raise NotImplementedError

    def counters(self):
        return {}

    def stop(self):
        pass
'''


def _copy(tmp: Path) -> None:
    """The package and switches/ (its scripts, lock and recipe folders, no patches)."""
    shutil.copytree(PACKAGE, tmp / "cnfperf", ignore=shutil.ignore_patterns("__pycache__"))
    ss.scripts(tmp, (REPO / "switches" / "sources.lock").read_text(), build=True)


def _changed(tmp: Path) -> set[Path]:
    """What differs from the checkout, in the copy's package and switches/."""
    found = set()
    for top in ("cnfperf", "switches"):
        for p in (tmp / top).rglob("*"):
            theirs = REPO / p.relative_to(tmp)
            if p.is_file() and "__pycache__" not in p.parts and \
                    (not theirs.exists() or theirs.read_bytes() != p.read_bytes()):
                found.add(p.relative_to(tmp))
    return found


def test_a_new_source_built_switch_is_one_folder_and_one_registry_line(tmp_path):
    _copy(tmp_path)
    # the folder: its recipe, and its source pinned beside it
    archive = ss.pack(tmp_path / "src" / "toy.tar.gz", SOURCE, "toy")
    folder = tmp_path / "switches" / "toy"
    folder.mkdir()
    (folder / "recipe.sh").write_text(RECIPE)
    (folder / "sources.lock").write_text(
        ss.lock_entry("toy", ss.tree_hash(archive), "http://127.0.0.1:9/toy.tar.gz"))
    # the data plane declaring it, and its line in the registry
    (tmp_path / "cnfperf" / "dataplanes" / "toy.py").write_text(PLANE)
    registry = tmp_path / "cnfperf" / "dataplanes" / "__init__.py"
    text = registry.read_text()
    last = f'    "{list(DATAPLANES)[-1]}": {list(DATAPLANES.values())[-1].__name__},\n'
    assert last in text
    registry.write_text("from cnfperf.dataplanes.toy import ToyPlane\n"
                        + text.replace(last, last + '    "toy": ToyPlane,\n'))
    assert _changed(tmp_path) == {Path("cnfperf/dataplanes/toy.py"),
                                  Path("cnfperf/dataplanes/__init__.py"),
                                  Path("switches/toy/recipe.sh"),
                                  Path("switches/toy/sources.lock")}

    env = {"PATH": os.environ["PATH"], "HOME": str(tmp_path), "PYTHONPATH": str(tmp_path),
           "CNFPERF_SOURCES": str(tmp_path / "src"), "CNFPERF_SWITCHES": str(tmp_path / "prefix"),
           "XDG_CACHE_HOME": str(tmp_path / "cache"), "CNFPERF_RESULTS": str(tmp_path / "results")}

    def doctor(*args: str) -> subprocess.CompletedProcess:
        done = subprocess.run([sys.executable, "-m", "cnfperf", "doctor", *args], cwd=tmp_path,
                              env=env, capture_output=True, text=True, timeout=180)
        assert done.returncode == 0, done.stderr
        return done

    before = json.loads(doctor("--json").stdout)
    why = f"toy not built ({tmp_path}/prefix/toy/bin/toy missing: make switches, or " \
          "switches/build.sh toy)"
    assert before["host"]["builds"]["toy"] == {
        "what": "a made-up switch built from source", "path": f"{tmp_path}/prefix/toy",
        "stamp": "", "state": "not built", "problem": why}
    assert before["host"]["toy"] is None
    assert why in before["dataplanes"]["toy"]["problems"]

    built = subprocess.run([str(tmp_path / "switches" / "build.sh"), "toy"], env=env,
                           capture_output=True, text=True, timeout=60)
    assert built.returncode == 0, built.stdout + built.stderr
    assert "switches: toy: built in" in built.stdout
    assert (tmp_path / "prefix" / "toy").resolve().parent == tmp_path / "cache" / "cnfperf" / \
        "switches"
    stamp = (tmp_path / "prefix" / "toy.stamp").read_text().strip()

    after = doctor().stdout
    assert re.search(rf"^  build toy +{tmp_path}/prefix/toy \(stamp {stamp[:12]}\)$", after, re.M)
    assert re.search(r"^  Toy +toy 1\.2\.3$", after, re.M)
    assert why not in after
    # found among every build, with no list naming it (the others are not built here)
    checked = subprocess.run([str(tmp_path / "switches" / "build.sh"), "--check"],
                             env=env, capture_output=True, text=True, timeout=60)
    assert sorted(checked.stdout.splitlines()) == [
        "switches: bess: not built", "switches: click-dpdk: not built", "switches: click: not built", "switches: frr: not built",
        "switches: snabb: not built", "switches: toy: up to date", "switches: vpp: not built"]
