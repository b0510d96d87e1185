"""The runtime and image contracts: every runtime says what it can as class
attributes (runtimes/base.py), nothing outside cnfperf/runtimes/ compares a
runtime's or a placement's name, a new runtime is one file and one line, and
an NF family with an image of its own is one file and one line too (the
runtimes build its declaration as they build any)."""
from __future__ import annotations

import ast
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from cnfperf import fields
from cnfperf.runtimes import (CONTAINER_RUNTIMES, RUNTIMES, Runtime, in_guest, placed,
                              placements)

PACKAGE = Path(__file__).resolve().parents[2] / "cnfperf"


@pytest.mark.parametrize("name", list(RUNTIMES))
def test_each_runtime_is_registered_under_its_own_name_with_its_capabilities(name):
    rt = RUNTIMES[name]
    assert issubclass(rt, Runtime) and rt.name == name
    for attr in ("own_kernel", "host_files", "quotas"):
        assert isinstance(getattr(rt, attr), bool), attr
    assert rt.place is None or rt.place in fields.PLACES
    # a placement's runtime is no scenario's `runtime`, and the other way round
    assert (name in CONTAINER_RUNTIMES) == (rt.place is None)


def test_placements_are_the_fields_and_name_their_runtimes():
    """nf_in and endpoint_in take what placements() has: container (the
    scenario's runtime) and each placement's runtime (vm: a VM, own kernel)."""
    assert tuple(placements()) == fields.PLACES
    assert placed("container") is None and placed("vm") == "vm"
    assert in_guest("vm") and not in_guest("container") and not in_guest("nowhere")
    assert set(CONTAINER_RUNTIMES) == {"runc", "netns", "podman"}
    assert [n for n, rt in RUNTIMES.items() if rt.host_files] == ["netns"]


# -- no runtime or placement named outside cnfperf/runtimes/ ----------------------

NAMES = set(RUNTIMES) | {p for p in placements() if placed(p)}

# Comparisons allowed outside cnfperf/runtimes/, by file, and why.
ALLOWED = {
    # a journal kind: a network namespace the runner made, not the netns runtime
    "run/cleanup.py": {"kind == 'netns'"},
    # `ip link add … peer name X netns N`: ip's keyword, not the netns runtime
    "dataplanes/kernel.py": {"'netns' not in after"},
}


def _named(node: ast.AST) -> bool:
    """A runtime's or placement's name as a literal (alone or in a tuple,
    list or set), or runtimes.VM."""
    if isinstance(node, ast.Constant):
        return node.value in NAMES
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        return any(map(_named, node.elts))
    return isinstance(node, ast.Name) and node.id == "VM"


def _compares_a_name(node: ast.Compare) -> bool:
    return any(map(_named, (node.left, *node.comparators)))


def test_no_module_outside_runtimes_compares_a_runtime_or_placement_name():
    """A rule about a runtime or a placement is a capability of its class
    (own_kernel, place, host_files…), asked through RUNTIMES or in_guest(),
    never `s.runtime != "netns"` or `s.endpoint_in == "vm"`."""
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        where = str(path.relative_to(PACKAGE))
        if where.startswith("runtimes/"):
            continue
        allowed = ALLOWED.get(where, set())
        if allowed is None:
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Compare) and _compares_a_name(node) and \
                    ast.unparse(node) not in allowed:
                found.append(f"{where}:{node.lineno}: {ast.unparse(node)}")
    assert not found, "\n".join(found)


def test_the_allowed_list_is_still_needed():
    """An allowed comparison that went away goes from ALLOWED too."""
    for where, allowed in ALLOWED.items():
        tree = ast.parse((PACKAGE / where).read_text())
        said = {ast.unparse(n) for n in ast.walk(tree)
                if isinstance(n, ast.Compare) and _compares_a_name(n)}
        assert said and (allowed is None or allowed <= said), where


# -- a runtime made up in one file ------------------------------------------------


def _copy(tmp_path: Path, files: dict[str, str], registry: str,
          edit: tuple[tuple[str, str], ...]) -> Path:
    """A copy of the package with `files` added and `registry` edited (each
    (old, new) once): the only files that differ from the package's."""
    copy = tmp_path / "cnfperf"
    shutil.copytree(PACKAGE, copy, ignore=shutil.ignore_patterns("__pycache__"))
    for name, text in files.items():
        (copy / name).write_text(text)
    text = (copy / registry).read_text()
    for old, new in edit:
        assert text.count(old) == 1, old
        text = text.replace(old, new)
    (copy / registry).write_text(text)
    changed = {str(p.relative_to(copy)) for p in copy.rglob("*.py")
               if not (PACKAGE / p.relative_to(copy)).exists()
               or (PACKAGE / p.relative_to(copy)).read_text() != p.read_text()}
    assert changed == {*files, registry}
    return copy


def _cnfperf(root: Path, *argv: str, code: str | None = None) -> subprocess.CompletedProcess:
    env = {"PATH": os.environ.get("PATH", "/usr/sbin:/usr/bin:/sbin:/bin"),
           "PYTHONPATH": str(root), "CNFPERF_RESULTS": str(root / "results"),
           "CNFPERF_IMAGES": str(root / "images")}
    args = ["-c", code] if code else ["-m", "cnfperf", *argv]
    return subprocess.run([sys.executable, *args], cwd=root, env=env, capture_output=True,
                          text=True, timeout=180)


def test_a_new_runtime_is_one_file_and_one_line(tmp_path):
    """A copy of the netns runtime registered as `jail` in a copy of the
    package, nothing else changed: a scenario's runtime takes it (and its
    capabilities rule: no quota without a cgroup), doctor names it, and the testbed builder makes its containers' runtime with it."""
    jail = (PACKAGE / "runtimes" / "netns.py").read_text() \
        .replace("class NetnsRuntime(Runtime):\n    name = \"netns\"",
                 "class JailRuntime(Runtime):\n    name = \"jail\"")
    assert "JailRuntime" in jail
    _copy(tmp_path, {"runtimes/jail.py": jail}, "runtimes/__init__.py", (
        ("from .netns import NetnsRuntime\n",
         "from .netns import NetnsRuntime\nfrom .jail import JailRuntime\n"),
        ('"pod": PodRuntime}', '"pod": PodRuntime, "jail": JailRuntime}'),
    ))
    refused = _cnfperf(tmp_path, "run", "--runtime", "jail", "--nfs", "1", "--nf-quota", "50")
    assert refused.returncode == 2
    assert refused.stderr.strip().splitlines() == [
        "cnfperf: error: nf_quota: the jail runtime cannot enforce a CPU quota (no cgroup of "
        "its own): use runtime = runc"]
    unknown = _cnfperf(tmp_path, "run", "--runtime", "cell")
    assert unknown.returncode == 2 and "known: runc, netns, podman, jail" in unknown.stderr
    doctor = _cnfperf(tmp_path, "doctor", "--json")
    assert doctor.returncode == 0, doctor.stderr
    assert "jail" in json.loads(doctor.stdout)["runtimes"]
    built = _cnfperf(tmp_path, code=(
        "from types import SimpleNamespace as NS\n"
        "from pathlib import Path\n"
        "from cnfperf.plan import place\n"
        "from cnfperf.run.testbed import Builder\n"
        "from cnfperf.runtimes import FULL\n"
        "from cnfperf.scenario import Scenario\n"
        "journal = NS(add=lambda *a, **k: None, discard=lambda *a, **k: None)\n"
        "b = Builder(journal, Path('state'), Path('/bin/true'), NS(push=lambda *a: None))\n"
        "s = Scenario(runtime='jail', api='raw')\n"
        "ep = place(s, '1a2b', host_cpus=(0, 1)).engines[0]\n"
        "rt = b._runtime(b.runtime_of(ep, s), FULL)\n"
        "print(type(rt).__name__, rt.engines[FULL], b.image('jail').name)\n"))
    assert built.returncode == 0, built.stderr
    assert built.stdout.split() == ["JailRuntime", os.path.realpath("/bin/true"), "host"]
    assert not (tmp_path / "results").exists()


# -- an NF family with an image of its own, made up in one file --------------------

ECHO = '''"""echo: a made-up NF family whose image is its own: the `echo` build's
program, alone with its libraries (one file and its registry entry)."""
from __future__ import annotations

from cnfperf.host.builds import Build
from cnfperf.nfs.base import Command, NfKind
from cnfperf.runtimes.images import BUILD, Image

ECHO = Build("echo", "a made-up NF framework", ("echo-nf",))
IMAGE = Image("echo", "echo NFs: the echo build's program and its libraries",
              program=BUILD, build=ECHO, path="/bin/echo-nf", shell=False,
              idle=("--idle",), budget_mb=16)


class EchoKind(NfKind):
    names = ("echo",)
    apis = ("raw",)

    def image(self, api, static_apis):
        return IMAGE

    def command(self, engine, nf, ports, hops, pair, s, eal, floating=()):
        return Command([engine, ports[0].iface, ports[1].iface], records=False)
'''


@pytest.mark.needs("ldd")
def test_an_nf_family_with_an_image_of_its_own_is_one_file_and_one_line(tmp_path):
    """Its kind declares the image (a build's program, no shell, a budget);
    the testbed hands the runtime that build's program, and runc's image
    builder makes it as it makes any: the program at its path, its ldd
    closure, its idle init; no runtime was edited."""
    _copy(tmp_path, {"nfs/echo.py": ECHO}, "nfs/__init__.py", (
        ("from cnfperf.nfs.testpmd import TestPmdKind\n",
         "from cnfperf.nfs.testpmd import TestPmdKind\nfrom cnfperf.nfs.echo import EchoKind\n"),
        ("    EngineKind,\n", "    EngineKind,\n    EchoKind,\n"),
    ))
    build = tmp_path / "builds" / "echo"    # the `echo` build: its program, as build.sh leaves it
    build.mkdir(parents=True)
    shutil.copy2(os.path.realpath(shutil.which("true")), build / "echo-nf")
    built = _cnfperf(tmp_path, code=(
        "import json\n"
        "from types import SimpleNamespace as NS\n"
        "from pathlib import Path\n"
        "from cnfperf import nfs\n"
        "from cnfperf.host import builds\n"
        "from cnfperf.plan import place\n"
        "from cnfperf.run.testbed import Builder\n"
        "from cnfperf.runtimes import RuncRuntime\n"
        "from cnfperf.scenario import Scenario\n"
        f"builds.program = lambda build, path=None: Path({str(tmp_path / 'builds')!r}) / "
        "build.name / build.programs[0]\n"
        "journal = NS(add=lambda *a, **k: None, discard=lambda *a, **k: None)\n"
        "b = Builder(journal, Path('state'), Path('/bin/true'), NS(push=lambda *a: None),\n"
        "            runtimes={'runc': RuncRuntime})\n"
        "s = Scenario(nfs=1, nf='echo', api='raw', nf_api='raw', tester='single')\n"
        "[nf] = place(s, '1a2b', host_cpus=(0, 1), nf=nfs.kind(s.nf)).nfs\n"
        "image = b.image_of(nf, s.nf)\n"
        "info = b.image('runc', image)\n"
        "spec = b._runtimes['runc'].images[image][1]\n"
        "print(json.dumps({'image': image.name, 'program': str(b.program(image)),\n"
        "                  'name': info.name, 'path': info.path, 'size': info.size_bytes,\n"
        "                  'init': spec.init, 'engine': spec.engine_path}))\n"))
    assert built.returncode == 0, built.stderr
    got = json.loads(built.stdout)
    assert (got["image"], got["name"], got["engine"]) == ("echo", "echo", "/bin/echo-nf")
    assert got["program"] == str(build / "echo-nf")
    assert got["init"] == ["/bin/echo-nf", "--idle"]
    root = Path(got["path"])
    assert root.is_relative_to(tmp_path / "images")
    assert (root / "bin/echo-nf").read_bytes() == (build / "echo-nf").read_bytes()
    names = {p.name for p in root.rglob("*")}
    assert "libc.so.6" in names and "busybox" not in names and "sh" not in names
    assert 0 < got["size"] <= 16 << 20
