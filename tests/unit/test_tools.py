"""The table of tools and packages against what the code runs and what
`make deps` installs: a tool that is used but not installed would be found
missing only on a fresh machine."""
from __future__ import annotations

import ast
import re

import pytest

import harness
from cnfperf.dataplanes import ovs_host
from cnfperf.host import tools
from cnfperf.run import declared

# Calls whose first argument, when a list, is a command line.
RUNNERS = {"run", "spawn", "Popen", "check_output", "check_call", "call", "_run", "_ok",
           "_first_line", "exec", "_lines", "Console", "TestPmd"}
# Commands that are not host tools: BusyBox applets run inside containers, the
# engine itself, and what Debian's Essential packages (coreutils, dash) hold.
NOT_HOST_TOOLS = {"sh", "sleep", "true", "cat", "du", "cnfperf-engine"}
# Not Debian's: VPP from FD.io's packages, used when there is no build of it
# (dataplanes/vpp_install.find_vpp; make switches builds one).
NOT_DEBIAN = {"vpp"}


def apt_packages() -> set[str]:
    """APT_PACKAGES, the variables it names (SWITCH_BUILD_PACKAGES) expanded."""
    text = (harness.REPO / "Makefile").read_text()

    def words(var: str) -> list[str]:
        m = re.search(rf"^{var}\s*:=\s*((?:.*\\\n)*.*)$", text, re.M)
        assert m, f"{var} not found in the Makefile"
        return [p for w in m[1].replace("\\\n", " ").split()
                for p in (words(w[2:-1]) if w.startswith("$(") else [w])]
    return set(words("APT_PACKAGES"))


def commands_run() -> dict[str, list[str]]:
    """Every command named literally where code, tests or benchmarks run one."""
    found: dict[str, list[str]] = {}
    for top in ("cnfperf", "tests", "bench"):
        for path in sorted((harness.REPO / top).rglob("*.py")):
            for node in ast.walk(ast.parse(path.read_text())):
                if not isinstance(node, ast.Call) or not node.args:
                    continue
                func = node.func.attr if isinstance(node.func, ast.Attribute) else \
                    getattr(node.func, "id", "")
                first = node.args[0]
                if func == "which" and isinstance(first, ast.Constant):
                    name = first.value
                elif func in RUNNERS and isinstance(first, (ast.List, ast.Tuple)) and first.elts \
                        and isinstance(first.elts[0], ast.Constant):
                    name = first.elts[0].value
                else:
                    continue
                if isinstance(name, str):
                    where = f"{path.relative_to(harness.REPO)}:{node.lineno}"
                    found.setdefault(name, []).append(where)
    return found


def test_make_deps_installs_every_package_the_table_names():
    wanted = {t.package for t in declared.tools().values()} \
        | set(tools.ENGINE_API_PACKAGES.values()) | {tools.GUEST_KERNEL}
    assert wanted - apt_packages() == set(), "add these to APT_PACKAGES in the Makefile"


def test_every_command_the_code_runs_is_in_the_table():
    found = commands_run()
    assert {"ip", "runc", "dpdk-testpmd", "ovs-vsctl", "tshark"} <= set(found), \
        "the scan no longer sees how commands are run"
    unknown = {name: where[:3] for name, where in found.items()
               if name not in declared.tools() and name not in NOT_HOST_TOOLS | NOT_DEBIAN}
    assert unknown == {}, "add these to cnfperf/host/tools.py or the data plane's own table " \
        "(DataPlane.tools), and their package to the Makefile"


def test_a_missing_tool_is_named_with_its_package(monkeypatch):
    assert tools.missing("dpdk-testpmd") == "dpdk-testpmd not found (Debian package dpdk-dev)"
    monkeypatch.setattr(tools.shutil, "which", lambda *a, **kw: None)
    assert tools.find("ovs-vswitchd-dpdk", ovs_host.TOOLS) in \
        (None, *ovs_host.TOOLS["ovs-vswitchd-dpdk"].paths)
    assert tools.problems("ip", "trafgen") == ["ip not found (Debian package iproute2)",
                                               "trafgen not found (Debian package netsniff-ng)"]


def test_a_missing_tool_fails_a_test_under_ci_and_skips_it_elsewhere(monkeypatch):
    monkeypatch.setattr(tools, "find", lambda name, *table: None)
    monkeypatch.setenv("CI", "true")
    with pytest.raises(pytest.fail.Exception, match="dpdk-testpmd not found .*dpdk-dev"):
        harness.require("dpdk-testpmd")
    monkeypatch.delenv("CI")
    with pytest.raises(pytest.skip.Exception, match="dpdk-testpmd not found"):
        harness.require("dpdk-testpmd")


def test_test_modules_have_names_of_their_own():
    """pytest imports test modules by their file name (no packages here): two
    files of one name in different directories stop the whole collection."""
    from collections import Counter
    names = Counter(p.name for p in (harness.REPO / "tests").rglob("test_*.py"))
    assert [n for n, count in names.items() if count > 1] == []
