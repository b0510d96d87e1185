"""NF kinds as plugins (cnfperf/nfs/): every registered kind answers the whole
interface; a kind made up as one file and its registry entry reaches --help,
the checks, the dry-run's pollers and the testbed's image without another
edit; and no module outside cnfperf/nfs/ tests an NF kind by its name."""
from __future__ import annotations

import ast
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from cnfperf import UserError, nfs
from cnfperf.dataplanes.base import Attachment
from cnfperf.fields import NF_APIS
from cnfperf.host.facts import EngineFacts
from cnfperf.nfs.base import Command, NfKind
from cnfperf.plan import place
from cnfperf.report import style
from cnfperf.runtimes import RUNTIMES, Image, podman
from cnfperf.scenario import Scenario
from harness import REPO

CLICK_FILE = "FromDevice({iface1}) -> Queue -> ToDevice({iface2});\n" \
             "FromDevice({iface2}) -> Queue -> ToDevice({iface1});\n"


def _samples(tmp: Path) -> list[str]:
    """A value of every name and every form each registered family takes."""
    (tmp / "fwd.click").write_text(CLICK_FILE)
    (tmp / "nf.tar").write_bytes(b"")
    forms = {"cmd:TEMPLATE": "cmd:my-nf --in {iface1} --out {iface2} -c {cpu}",
             "click:FILE": f"click:{tmp / 'fwd.click'}",
             "image:REF ARGS": f"image:{tmp / 'nf.tar'} --in {{iface1}} --out {{iface2}}"}
    values = nfs.names() + [forms[f] for k in nfs.KINDS for f in k.forms]
    assert len(values) == len(nfs.values()), "a form without a sample here"
    return values


def _host(engine_nfs: list[str] | None = None, static: EngineFacts | None = None):
    """Host facts with an engine that lists engine_nfs, and without a static
    engine unless `static`."""
    engine = EngineFacts(path="/e", version="0", apis=list(NF_APIS) + ["udp"], nfs=engine_nfs)
    return type("Host", (), {"engine": engine, "static_engine": static or EngineFacts(),
                             "kernel_has": lambda self, link, option: True})()


def test_every_value_belongs_to_one_family(tmp_path):
    for value in _samples(tmp_path):
        owners = [k for k in nfs.KINDS if k.matches(value)]
        assert owners and type(nfs.kind(value)) is owners[0]
    assert nfs.find("no-such-kind") is None
    with pytest.raises(UserError, match="is not a network function: one of l2, .* or image:REF ARGS"):
        nfs.kind("no-such-kind")


@pytest.mark.parametrize("index", range(len(nfs.values())))
def test_every_kind_answers_the_whole_interface(index, tmp_path, monkeypatch):
    # a user's image runs its entrypoint (what podman would say of it)
    monkeypatch.setattr(podman, "image_config", lambda ref: (("/nf",), ()))
    value = _samples(tmp_path)[index]
    kind = nfs.kind(value)
    assert isinstance(kind, NfKind) and kind.nf == value
    assert kind.ports in (1, 2)
    assert set(kind.apis) <= set(NF_APIS) and kind.apis
    assert isinstance(kind.records, bool) and isinstance(kind.holds_ports, bool)
    assert isinstance(kind.counted, bool) and kind.settle_s >= 0
    api = kind.apis[0]
    s = Scenario(nfs=1, nf=value, nf_api=api, api="dpdk" if api == "dpdk" else "raw",
                 switch="memif" if api == "dpdk" else "veth", tester="single")
    assert kind.scenario_problem(s) is None, "a sample scenario it takes"
    kind.check(s)
    assert kind.cores_problem(s) is None
    assert all(isinstance(w, str) for w in kind.warnings(s))
    assert kind.pollers(s, 1) in (0, 1) and kind.pollers(s, 2) >= kind.pollers(s, 1)
    problems = kind.problems(s, _host())
    assert isinstance(problems, list) and all(isinstance(p, str) for p in problems)
    # one of cnfperf's images, or the user's own (its ref) in the runtime the kind names
    image = kind.image(api, lambda: list(NF_APIS))
    assert isinstance(image, Image) and image.budget_mb > 0
    if kind.runtime is None:
        assert not image.user
    else:
        assert kind.runtime in RUNTIMES and image.user and \
            image.name == value.split()[0].removeprefix("image:")
    point = place(s, "1a2b", host_cpus=(0, 1), nf=kind)
    [nf] = point.nfs
    assert len(nf.ports) == kind.ports
    ports = [Attachment(mac=p.mac, iface=None if api == "dpdk" else p.name,
                        port=n if api == "dpdk" else None) for n, p in enumerate(nf.ports)]
    hops = ("02:00:00:00:00:aa", "02:00:00:00:00:bb")[:2 if kind.ports == 2 else 0]
    command = kind.command("/prog", nf, ports, hops, point.pairs[0], s,
                           ("--vdev", "x") if api == "dpdk" else ())
    assert isinstance(command, Command) and command.argv
    assert all(isinstance(w, str) for w in command.argv)
    assert command.records == kind.records
    assert kind.ready(["nothing said"]) is None
    summary = kind.summary("")
    assert summary["nf"] == value and summary["ports"] == []
    assert {"name": value, "style": kind.style}.items() <= kind.stored().items()


def test_every_kind_named_as_it_is_has_a_style_of_its_own(tmp_path):
    """A number per name, below style.KIND_STYLES, never two alike (a report
    draws a kind by the number its points stored); a value with an argument
    (cmd:TEMPLATE, click:FILE) has none: drawn by a hash of its text."""
    numbers = {name: nfs.kind(name).style for name in nfs.names()}
    assert all(isinstance(n, int) and 0 <= n < style.KIND_STYLES for n in numbers.values())
    assert len(set(numbers.values())) == len(numbers)
    for value in _samples(tmp_path)[len(numbers):]:
        assert nfs.kind(value).style is None, value
    # each family's numbers are its names' only
    assert all(set(k.styles) <= set(k.names) for k in nfs.KINDS)


def test_a_bad_combination_is_a_field_and_one_line():
    for value, s, field in [
            ("mirror", Scenario(nfs=2, nf="mirror", api="raw", nf_api="raw"), "nf"),
            ("testpmd", Scenario(nfs=1, nf="testpmd", api="raw", nf_api="raw"), "nf_api"),
            ("click:mirror", Scenario(nfs=1, nf="click:mirror", api="raw", nf_api="xdp"), "nf_api"),
            ("cmd:x {port1}", Scenario(nfs=1, nf="cmd:x {port1}", api="raw", nf_api="raw"), "nf")]:
        problem = nfs.kind(value).scenario_problem(s)
        assert problem and problem[0] == field and "\n" not in problem[1]


def test_an_engine_kind_the_binary_lacks_is_refused_and_an_old_binary_is_believed():
    s = Scenario(nfs=1, nf="l3", api="raw", nf_api="raw")
    assert nfs.kind("l3").problems(s, _host(["l2", "mirror"])) == [
        "nf l3: the engine has no such NF (it has l2, mirror): make build"]
    assert nfs.kind("l3").problems(s, _host(None)) == []       # --version without "nfs"
    assert nfs.kind("l3").problems(s, _host(["l2", "l3"])) == []
    # on a kernel api the static engine runs it, when it was built with that api
    static = EngineFacts(path="/s", version="0", apis=["raw"], nfs=["l2"])
    assert nfs.kind("l3").problems(s, _host(["l2", "l3"], static)) == [
        "nf l3: the static engine has no such NF (it has l2): make build"]
    assert nfs.kind("l3").problems(s.model_copy(update={"api": "dpdk", "nf_api": "dpdk"}),
                                   _host(["l2", "l3"], static)) == []


def test_the_engine_s_version_says_its_nfs_or_nothing(tmp_path):
    from cnfperf.host.facts import engine_facts
    for said, nfs_ in [('{"version": "1", "apis": ["raw"], "nfs": ["l2", "l3"]}', ["l2", "l3"]),
                       ('{"version": "1", "apis": ["raw"]}', None)]:
        engine = tmp_path / "engine"
        engine.write_text(f"#!/bin/sh\necho '{said}'\n")
        engine.chmod(0o755)
        assert engine_facts(engine).nfs == nfs_


def test_preflight_and_doctor_refuse_an_engine_kind_the_binary_lacks(monkeypatch):
    from cnfperf import SystemFailure
    from cnfperf.run import checks
    monkeypatch.setattr(checks.host, "_problems", lambda *a: [])   # the data plane's and runtime's
    host = _host(["l2"])
    s = Scenario(nfs=1, nf="l3", api="raw", nf_api="raw")
    assert checks.host_problems(host)(s) == [
        "nf l3: the engine has no such NF (it has l2): make build"]
    doctor = checks.nf_matrix(host)
    assert doctor["l3"] == ["the engine has no such NF (it has l2): make build"]   # its row names it
    assert doctor["l2"] == [] and list(doctor) == nfs.names()
    with pytest.raises(SystemFailure, match="nf l3: the engine has no such NF"):
        checks.preflight([s], host)


# -- a kind made up in one file ------------------------------------------------

POLICER = '''"""policer: a made-up kind, to show that one file and its registry entry are all."""
from __future__ import annotations

from cnfperf.nfs.base import Command, NfKind
from cnfperf.runtimes import TOOLS


class PolicerKind(NfKind):
    names = ("policer",)
    apis = ("raw", "mmap")

    def scenario_problem(self, s):
        if s.nf_api not in self.apis:
            return "nf_api", f"policer polices packet sockets: nf_api = raw or mmap, not {s.nf_api}"
        return super().scenario_problem(s)

    def pollers(self, s, cores):
        return 3 * cores

    def image(self, api, static_apis):
        return TOOLS

    def command(self, engine, nf, ports, hops, pair, s, eal, floating=()):
        return Command(["policer", ports[0].iface, ports[1].iface], records=False)
'''


@pytest.fixture(scope="module")
def made_up(tmp_path_factory) -> Path:
    """A copy of the cnfperf package with the policer's file and one registry entry."""
    root = tmp_path_factory.mktemp("plugin")
    shutil.copytree(REPO / "cnfperf", root / "cnfperf",
                    ignore=shutil.ignore_patterns("__pycache__"))
    (root / "cnfperf" / "nfs" / "policer.py").write_text(POLICER)
    registry = root / "cnfperf" / "nfs" / "__init__.py"
    before = registry.read_text()
    # its import and its place in KINDS: after the engine's kinds
    after = before.replace("from cnfperf.nfs.testpmd import TestPmdKind\n",
                           "from cnfperf.nfs.testpmd import TestPmdKind\n"
                           "from cnfperf.nfs.policer import PolicerKind\n", 1) \
        .replace("    EngineKind,\n", "    EngineKind,\n    PolicerKind,\n", 1)
    assert len(after.splitlines()) == len(before.splitlines()) + 2
    registry.write_text(after)
    return root


def _run(root: Path, *argv: str, code: str | None = None) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(root), "CNFPERF_RESULTS": str(root / "results")}
    args = ["-c", code] if code else ["-m", "cnfperf", *argv]
    return subprocess.run([sys.executable, *args], cwd=root, env=env, capture_output=True,
                          text=True, timeout=120)


def test_a_made_up_kind_is_in_the_help(made_up):
    out = _run(made_up, "run", "--help")
    assert out.returncode == 0, out.stderr
    assert "l3, policer, testpmd," in " ".join(out.stdout.split())


def test_a_made_up_kind_s_rule_exits_2_with_one_line(made_up):
    out = _run(made_up, "run", "--nfs", "1", "--nf", "policer", "--api", "raw", "--nf-api", "xdp")
    assert out.returncode == 2
    assert out.stderr.strip().splitlines() == [
        "cnfperf: error: nf_api: policer polices packet sockets: nf_api = raw or mmap, not xdp"]
    assert not (made_up / "results").exists()


def test_a_made_up_kind_is_planned_with_its_pollers(made_up):
    out = _run(made_up, "run", "--dry-run", "--nfs", "1", "--nf", "policer", "--api", "raw",
               "--nf-api", "raw", "--cpus", "0")
    assert out.returncode == 0, out.stderr
    assert "tester → 1 × policer" in out.stdout
    # split: sender, receiver and the policer's 3 on the point's one core
    assert "split would put 5 busy pollers on 1 core" in out.stdout


def test_a_made_up_kind_s_image_is_chosen(made_up):
    out = _run(made_up, code=(
        "from cnfperf import nfs\n"
        "from cnfperf.plan import place\n"
        "from cnfperf.run.testbed import Builder\n"
        "from cnfperf.scenario import Scenario\n"
        "s = Scenario(nfs=1, nf='policer', api='raw', nf_api='raw', tester='single')\n"
        "[nf] = place(s, '1a2b', host_cpus=(0, 1), nf=nfs.kind(s.nf)).nfs\n"
        "print(Builder.image_of(None, nf, s.nf).name)\n"))
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "tools"


# -- no kind named outside cnfperf/nfs/ ------------------------------------------


def _named(node: ast.AST, names: set[str], prefixes: tuple[str, ...]) -> bool:
    """A string literal that is an NF kind's name or a family's prefix, alone
    or in a tuple, list or set."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value in names or node.value.startswith(prefixes)
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        return any(_named(e, names, prefixes) for e in node.elts)
    return False


# Module-level tables of kind names allowed outside cnfperf/nfs/, and why.
LISTS_ALLOWED = {
    # history: the styles the kinds had when points began to store them, to
    # fill in older points (schema 13); it never grows
    ("cnfperf/results/store.py", "_NF_STYLES_13"),
}


def _listing(node: ast.AST, names: set[str]) -> bool:
    """A tuple, list or set with NF kinds' names among its items, or a dict
    among its keys: a list of kinds kept apart from their families. Two at
    least: one alone may be another word (a data plane named testpmd)."""
    if isinstance(node, ast.Dict):
        items = node.keys
    elif isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        items = node.elts
    else:
        return False
    return sum(isinstance(e, ast.Constant) and e.value in names for e in items) >= 2


def test_no_module_outside_nfs_tests_an_nf_kind_by_name():
    """Nor keeps a module-level tuple, list or dict of kind names: a kind added
    later would be missing from it, and silently so."""
    names = set(nfs.names())
    prefixes = tuple(k.prefix for k in nfs.KINDS if k.prefix)
    found = []
    for path in sorted((REPO / "cnfperf").rglob("*.py")):
        if path.parent == REPO / "cnfperf" / "nfs":
            continue
        where = str(path.relative_to(REPO))
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            tested = []
            if isinstance(node, ast.Compare):
                tested = [node.left, *node.comparators]
            elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and \
                    node.func.attr in ("startswith", "endswith", "removeprefix"):
                tested = node.args
            if any(_named(n, names, prefixes) for n in tested):
                found.append(f"{where}:{node.lineno}: {ast.unparse(node)}")
        for node in tree.body:
            if isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is not None:
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                named = {ast.unparse(t) for t in targets}
                if any(_listing(n, names) for n in ast.walk(node.value)) and \
                        not {(where, t) for t in named} & LISTS_ALLOWED:
                    found.append(f"{where}:{node.lineno}: {', '.join(sorted(named))}")
    assert not found, "NF kinds tested or listed by name outside cnfperf/nfs/:\n" + \
        "\n".join(found)


def test_the_list_test_catches_a_table_of_kind_names():
    """What the test above reads as a list of kinds, and what it lets be."""
    names = set(nfs.names())
    listed = ['NF_STYLES = ("l2", "mirror", "strip-encap")',
              'STYLES = {"l3": 3, "testpmd": 4}', 'KINDS: list[str] = ["l2", "click:mirror"]',
              'X = 1, ("mirror", "l3")']
    alone = ['SWITCHES = ("testpmd", "ovs")', 'MODES = ("throughput", "latency")']
    assert all(any(_listing(n, names) for n in ast.walk(ast.parse(src))) for src in listed)
    assert not any(_listing(n, names) for src in alone for n in ast.walk(ast.parse(src)))
