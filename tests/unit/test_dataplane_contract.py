"""Every registered data plane answers the whole DataPlane interface from its
class (what checks, plan, runner, cleanup, doctor and the store ask), nothing
outside dataplanes/ names one, and a new kernel data plane is one file plus one
registry line."""
from __future__ import annotations

import ast
import json
import re
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path
from types import SimpleNamespace

import pytest

import cnfperf
from cnfperf import fields
from cnfperf.dataplanes import DATAPLANES, DataPlane
from cnfperf.host.facts import HostFacts
from cnfperf.report import style
from cnfperf.run import checks, cleanup
from harness import scenarios

PACKAGE = Path(cnfperf.__file__).parent
CAPABILITIES = {"joins": ("switch", "link"), "counter_view": ("switch", "node"),
                "kind": ("kernel", "dpdk")}


@pytest.fixture(params=list(DATAPLANES))
def plane(request) -> type[DataPlane]:
    return DATAPLANES[request.param]


def _host(**overrides) -> HostFacts:
    """A root host that has every kernel link type a data plane may ask for."""
    host = HostFacts(cores=2, usable_cpus=[0, 1], cpu_model="m", kernel="k", root=True,
                     iproute2=True, kernel_links={}, hugepages=None, runc=None,
                     busybox_static=None, dpdk=None, testpmd=None, libxdp=None,
                     kvm=False, engine=None)
    for name, value in overrides.items():
        setattr(host, name, value)
    return host


def test_it_is_registered_under_its_own_name(plane):
    assert DATAPLANES[plane.name] is plane
    assert plane.description and "\n" not in plane.description


def test_its_capabilities_are_of_their_kind(plane):
    for attr, allowed in CAPABILITIES.items():
        assert getattr(plane, attr) in allowed, attr
    assert plane.apis and plane.apis <= set(fields.APIS)
    assert plane.max_links is None or plane.max_links >= 1
    for attr in ("max_cores", "max_rxq", "max_size"):
        assert getattr(plane, attr) is None or getattr(plane, attr) >= 1, attr
    for attr in ("processes", "rx_interrupts", "floats", "neighbours_may_close"):
        assert isinstance(getattr(plane, attr), bool), attr
    assert plane.poll_threads in (0, 1)      # spin threads per switch core: none or one


def test_its_style_is_its_own_and_stays_below_the_data_planes_share():
    numbers = [dp.style for dp in DATAPLANES.values()]
    assert len(set(numbers)) == len(numbers)
    assert all(0 <= n < style.PLANE_STYLES for n in numbers)


def test_a_kernel_plane_names_the_kernel_links_it_needs_a_dpdk_one_none(plane):
    if plane.name == "sriov":      # its ports are a NIC's virtual functions: no link type
        assert not plane.kernel_links
    elif plane.kind == "kernel":
        assert plane.kernel_links and all(re.fullmatch(r"[A-Z0-9_]+", o)
                                          for o in plane.kernel_links.values())
    else:
        assert not plane.kernel_links


def test_a_kernel_plane_it_is_missing_links_for_says_so(plane):
    """check() asks the host for its links (HostFacts.kernel_has): the answers
    doctor then lists."""
    host = _host(kernel_links={t: False for t in plane.kernel_links})
    problems = plane.check(host)
    for link_type in plane.kernel_links:
        assert f"kernel has no {link_type} links" in problems
    assert set(host.kernel_links) == set(plane.kernel_links)


def test_it_rules_on_a_sample_scenario(plane):
    api = "raw" if "raw" in plane.apis else sorted(plane.apis)[0]
    [s] = scenarios(None, {"switch": plane.name, "api": api})
    assert plane.scenario_problem(s, 1) is None
    assert checks.switch_problem(s, plane) is None
    # one switch core, pinned: its poll threads are what it spins on
    assert plane.pollers(s, 2) == plane.poll_threads * s.switch_cores == plane.poll_threads
    why = plane.limit_problem(api)
    assert why is None or isinstance(why, str) and why


def test_its_undo_steps_are_callables_cleanup_asks(plane):
    registry = cleanup._undo_registry()
    for kind, undo in plane.undo.items():
        assert callable(undo) and registry[kind] is undo


def test_what_it_stores_is_what_the_report_reads(plane):
    stored = plane.stored()
    assert json.loads(json.dumps(stored)) == stored
    assert stored == {"name": plane.name, "description": plane.description, "kind": plane.kind,
                      "counter_view": plane.counter_view, "joins": plane.joins,
                      "style": plane.style}
    host = SimpleNamespace(probes={"vpp": "26.10 (cnfperf's build)"})
    assert all(isinstance(v, str) for v in plane.versions(host).values())


def test_it_has_the_lifecycle_methods(plane):
    assert not getattr(plane, "__abstractmethods__", set()), plane.__abstractmethods__
    for method in ("start", "attach", "eal_args", "counters", "queues", "applied", "pids",
                   "stop"):
        assert callable(getattr(plane, method)), method


def _string_constants(tree: ast.AST) -> list[ast.Constant]:
    """Every string constant but docstrings."""
    docstrings = {id(node.body[0].value) for node in ast.walk(tree)
                  if isinstance(node, (ast.Module, ast.FunctionDef, ast.ClassDef))
                  and node.body and isinstance(node.body[0], ast.Expr)
                  and isinstance(node.body[0].value, ast.Constant)}
    return [n for n in ast.walk(tree) if isinstance(n, ast.Constant)
            and isinstance(n.value, str) and id(n) not in docstrings]


def _mentions_switch(node: ast.AST) -> bool:
    return any(isinstance(n, ast.Attribute) and n.attr == "switch" or
               isinstance(n, ast.Name) and n.id == "switch" for n in ast.walk(node))


def test_run_checks_names_no_data_plane():
    """Every rule in run/checks/ asks the data plane's class: no comparison
    of a switch with a name, and no data plane's name in its strings (the NF
    kinds' rules, which name testpmd and click, are cnfperf/nfs/')."""
    paths = sorted((PACKAGE / "run" / "checks").glob("*.py"))
    assert len(paths) > 1
    for path in paths:
        _names_no_data_plane(ast.parse(path.read_text()))


def _names_no_data_plane(tree: ast.AST) -> None:
    for node in ast.walk(tree):
        if isinstance(node, ast.Compare):
            sides = [node.left, *node.comparators]
            if any(_mentions_switch(s) for s in sides):
                assert not any(isinstance(c, ast.Constant) and isinstance(c.value, str)
                               for s in sides for c in ast.walk(s)), ast.unparse(node)
    for const in _string_constants(tree):
        for name in DATAPLANES:
            assert not re.search(rf"(?<![\w-]){re.escape(name)}(?![\w-])", const.value), \
                (name, const.value, const.lineno)


def test_no_module_outside_dataplanes_compares_a_switch_with_a_name():
    """A rule about a data plane is a capability of its class, asked where the
    rule is (testers.refusal asks DataPlane.single_tester through its caller),
    never `s.switch == "memif"`."""
    for path in PACKAGE.rglob("*.py"):
        if path.parent.name == "dataplanes":
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Compare):
                sides = [node.left, *node.comparators]
                if any(_mentions_switch(s) for s in sides):
                    named = {c.value for s in sides for c in ast.walk(s)
                             if isinstance(c, ast.Constant) and c.value in DATAPLANES}
                    assert not named, f"{path.relative_to(PACKAGE)}:{node.lineno}: " \
                                      f"{ast.unparse(node)}"


NETKIT = '''\
"""netkit: a netkit pair per link (made up here: the test of one file and one line)."""
from __future__ import annotations

from cnfperf.dataplanes.kernel import KernelPlane
from cnfperf.plan import Link


class NetkitPlane(KernelPlane):
    name = "netkit"
    description = "a netkit pair per link, the peer in the next namespace"
    style = 30
    joins = "link"
    counter_view = "node"
    kernel_links = {"netkit": "NETKIT"}

    def connect(self, link: Link) -> None:
        a, b = link.a, link.b
        self.add_link(a.name, a.node, "type", "netkit", "peer", "name", b.name, "netns", b.node)
        self.count_port(a.name, a.node)
        self.count_port(b.name, b.node)
'''


def test_a_new_kernel_data_plane_is_one_file_and_one_line(tmp_path):
    """In a fresh interpreter on a copy of the package with netkit.py added and
    one line in the registry: doctor lists it (its row, and its link type among
    the kernel's), `run --help` names it, and a run refuses what it cannot do."""
    copy = tmp_path / "cnfperf"
    shutil.copytree(PACKAGE, copy, ignore=shutil.ignore_patterns("__pycache__"))
    (copy / "dataplanes" / "netkit.py").write_text(NETKIT)
    registry = copy / "dataplanes" / "__init__.py"
    text = registry.read_text()
    # the registry's entry: its import beside the others, its name in DATAPLANES
    last_import = "from cnfperf.dataplanes.vpp import VppMemifPlane, VppPlane\n"
    last = '    "snabb-wire": SnabbWirePlane,\n'
    assert last in text and last_import in text
    registry.write_text(text.replace(last_import, last_import + "from cnfperf.dataplanes.netkit "
                                     "import NetkitPlane\n")
                        .replace(last, last + '    "netkit": NetkitPlane,\n'))
    changed = {p.relative_to(copy) for p in copy.rglob("*.py")
               if not (PACKAGE / p.relative_to(copy)).exists()
               or (PACKAGE / p.relative_to(copy)).read_text() != p.read_text()}
    assert changed == {Path("dataplanes/netkit.py"), Path("dataplanes/__init__.py")}

    def cnfperf_(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "cnfperf", *args], cwd=tmp_path,
                              env={"PATH": "/usr/sbin:/usr/bin:/sbin:/bin",
                                   "PYTHONPATH": str(tmp_path),
                                   "CNFPERF_RESULTS": str(tmp_path / "results")},
                              capture_output=True, text=True, timeout=120)

    doctor = cnfperf_("doctor", "--json")
    assert doctor.returncode == 0, doctor.stderr
    found = json.loads(doctor.stdout)
    assert found["dataplanes"]["netkit"]["description"] == \
        "a netkit pair per link, the peer in the next namespace"
    assert "netkit" in found["host"]["kernel_links"]
    text = cnfperf_("doctor").stdout
    assert re.search(r"^  netkit +", text, re.M)
    assert re.search(r"kernel links .*\bnetkit:(yes|no)\b", text)
    helped = "".join(cnfperf_("run", "--help").stdout.split())   # argparse wraps at a hyphen
    assert "dataplane:veth,bridge," in helped and "snabb-wire,netkit" in helped
    refused = cnfperf_("run", "--switch", "netkit", "--api", "raw", "--limit", "1000")
    assert refused.returncode == 2
    assert refused.stderr.strip().splitlines() == [
        "cnfperf: error: limit: netkit with api raw: a sender with api raw bypasses the qdisc of "
        "its interface, where the limit would sit; use api udp or the bridge"]
    assert not (tmp_path / "results").exists()


def test_the_docs_say_how_to_add_one_with_the_real_names():
    """docs/dataplanes.md's recipe names the base class's attributes as they are."""
    text = (PACKAGE.parent / "docs" / "dataplanes.md").read_text()
    for attr in ("name", "description", "kind", "apis", "style", "kernel_links", "undo",
                 "limit_problem", "scenario_problem", "versions", "stored"):
        assert hasattr(DataPlane, attr) or attr in DataPlane.__annotations__, attr
        assert f"`{attr}" in text, attr
    assert textwrap.dedent(NETKIT).count("class NetkitPlane(KernelPlane)") == 1
