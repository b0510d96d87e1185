"""The house's floors as docs/architecture.md draws them: every import goes to
a lower floor, no two rooms (a file, or a folder taken whole) import each
other even through others, and host/ knows no plugin. Every import counts:
at a module's top, inside a function, or for type checking alone (an import
put off into a function is still a dependency, and hides a cycle)."""
from __future__ import annotations

import ast
import re
from pathlib import Path

import cnfperf

PACKAGE = Path(cnfperf.__file__).parent
# The words a switch goes by (its data plane's, its build's, its programs'):
# host/ names none of them.
SWITCH_WORDS = re.compile(r"vpp|ovs|openvswitch|vswitch|snabb|click", re.I)


def modules(package: Path) -> dict[str, Path]:
    """Every module of a package by its dotted name (a package by its own)."""
    found = {}
    for path in sorted(package.rglob("*.py")):
        name = ".".join(path.relative_to(package.parent).with_suffix("").parts)
        found[name.removesuffix(".__init__")] = path
    return found


def imports(name: str, path: Path, known: dict[str, Path]) -> set[str]:
    """The modules of `known` this one imports, anywhere in it: every Import
    and ImportFrom of its tree (in functions, under TYPE_CHECKING), relative
    ones resolved; `from a import b` is a.b where that is a module, else a."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")
                parts = parts[:len(parts) - node.level + 1]
                base = ".".join(parts + ([node.module] if node.module else []))
            targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in known else base
                       for a in node.names]
        else:
            continue
        for target in targets:
            while target and target not in known:
                target = target.rpartition(".")[0]
            if target and target != name:
                found.add(target)
    return found


def graph(package: Path) -> dict[str, set[str]]:
    known = modules(package)
    return {name: imports(name, path, known) for name, path in known.items()}


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected groups of more than one (Tarjan's, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    found = []
    for start in sorted(edges):
        if start in index:
            continue
        work = [(start, iter(sorted(edges.get(start, ()))))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on.add(child)
                    work.append((child, iter(sorted(edges.get(child, ())))))
                elif child in on:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                group = []
                while True:
                    top = stack.pop()
                    on.discard(top)
                    group.append(top)
                    if top == node:
                        break
                if len(group) > 1:
                    found.append(sorted(group))
    return found


def room(name: str) -> str:
    """A module's room: its folder below the package taken whole, or the file."""
    parts = name.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def rooms(edges: dict[str, set[str]]) -> dict[str, set[str]]:
    found: dict[str, set[str]] = {}
    for name, targets in edges.items():
        found.setdefault(room(name), set()).update(
            room(t) for t in targets if room(t) != room(name))
    return found


def floors() -> dict[str, int]:
    """Each room's floor, read from architecture.md's drawing of the layers."""
    text = (PACKAGE.parent / "docs" / "architecture.md").read_text()
    drawing = text.split("## Layers", 1)[1].split("```")[1]
    found, floor = {}, None
    for line in drawing.splitlines():
        if m := re.match(r"floor\s+(\d+)\s+(.*)", line):
            floor, rest = int(m[1]), m[2]
        elif re.match(r" {10}\S", line):      # another room on the floor above it
            rest = line.strip()
        else:
            continue                           # a room's description, continued
        names = re.match(r"([\w/.]+(?:, [\w/.]+)*)", rest)[1]
        for n in names.split(", "):
            found[n.strip("/").removesuffix(".py")] = floor
    return found


# --- the house --------------------------------------------------------------------

def test_every_import_goes_to_a_lower_floor():
    floor = floors()
    # the entry point (python -m cnfperf) stands above the CLI it runs
    floor["__main__"] = max(floor.values()) + 1
    edges = rooms(graph(PACKAGE))
    assert set(edges) <= set(floor), "rooms architecture.md's layers do not draw"
    upward = {f"{a} (floor {floor[a]}) imports {b} (floor {floor[b]})"
              for a, targets in edges.items() for b in targets if floor[b] >= floor[a]}
    assert upward == set()


def test_no_two_rooms_import_each_other():
    assert cycles(rooms(graph(PACKAGE))) == []


def test_no_two_files_import_each_other():
    assert cycles(graph(PACKAGE)) == []


def test_host_imports_no_plugin_and_names_no_switch():
    """host/ stands below every plugin: it imports none (only the floors below
    it and its own files), and names no switch, in code or in words; what a
    plugin needs of the host it declares (host/builds.Build, host/facts.Probe)."""
    edges = graph(PACKAGE)
    allowed = {"cnfperf", "cnfperf.fields", "cnfperf.rate", "cnfperf.polls"}
    below = {name: sorted(t for t in targets if t not in allowed and room(t) != "host")
             for name, targets in edges.items() if room(name) == "host"}
    assert {n: t for n, t in below.items() if t} == {}
    named = {f"{path.name}:{i}: {line.strip()}"
             for path in sorted((PACKAGE / "host").glob("*.py"))
             for i, line in enumerate(path.read_text().splitlines(), 1)
             if SWITCH_WORDS.search(line)}
    assert named == set()


# --- the checks themselves, on a made-up package ----------------------------------

def test_a_cycle_through_a_function_level_import_is_found(tmp_path):
    """The cycle that once hid in host/facts.py: a module importing its
    importer from inside a function (and one under TYPE_CHECKING)."""
    pkg = tmp_path / "house"
    (pkg / "low").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "low" / "__init__.py").write_text("")
    (pkg / "low" / "facts.py").write_text("def retry():\n    from house.engine import find\n"
                                          "    return find()\n")
    (pkg / "engine.py").write_text("from house import plane\n\ndef find():\n    return 1\n")
    (pkg / "plane.py").write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
                                  "    from house.low.facts import retry\n")
    edges = graph(pkg)
    assert edges["house.low.facts"] == {"house.engine"}
    assert cycles(edges) == [["house.engine", "house.low.facts", "house.plane"]]
    assert cycles(rooms(edges)) == [["engine", "low", "plane"]]
    (pkg / "low" / "facts.py").write_text("def retry(find):\n    return find()\n")
    assert cycles(graph(pkg)) == []


def test_the_floors_are_read_from_the_drawing():
    floor = floors()
    assert floor["cli"] > floor["run"] > floor["nfs"] > floor["engine"] > floor["dataplanes"] \
        > floor["plan"] > floor["host"] > floor["fields"] > floor["rate"]
    assert floor["runtimes"] == floor["scenario"] and floor["host"] == floor["experiments"]
