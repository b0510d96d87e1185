"""The docs tell the truth about the code: generated blocks are current, every
relative link and anchor resolves, the signatures docs/architecture.md quotes are
the code's, README.md stays a front door."""
from __future__ import annotations

import ast
import re
from collections import defaultdict
from pathlib import Path

import pytest

from cnfperf import fields, reference
from harness import REPO

DOCS = sorted((REPO / "docs").glob("*.md"))
PAGES = [REPO / "README.md", REPO / "engine" / "README.md", *DOCS]
FENCE = re.compile(r"^```.*?^```", re.S | re.M)
LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)\)")


def test_generated_blocks_are_current():
    assert reference.stale(REPO) == [], "the docs' generated blocks are stale: run `make docs`"


def test_a_block_is_rewritten_between_its_markers_only():
    text = f"before\n{reference.block('x', 'old')}\nafter\n"
    assert reference.refresh(text, {"x": lambda: "new"}) == \
        f"before\n{reference.block('x', 'new')}\nafter\n"
    with pytest.raises(ValueError, match="no generated block 'y'"):
        reference.refresh(text, {"y": lambda: ""}, "page.md")


def test_mode_dependent_defaults_say_when_they_apply():
    """fields.py's plain default is the throughput one; the model fills in others."""
    by_name = fields.by_name()
    assert reference.default(by_name["burst"]) == "`32`; `1` for latency"
    assert reference.default(by_name["rate"]) == "`max`; `1k` for latency"
    assert reference.default(by_name["poll"]) == "`busy`; `interrupt` for latency with api udp, raw"
    assert reference.default(by_name["nf_api"]) == \
        "`mmap`; `dpdk` with api dpdk; `raw` for latency with api udp, raw, mmap, xdp"
    assert reference.default(by_name["api"]) == "`udp`"
    assert reference.default(by_name["cpus"]) == "every usable CPU"


def _slug(heading: str) -> str:
    """GitHub's anchor of a heading: lower case, punctuation dropped, spaces as -."""
    text = re.sub(r"[`*_]|\[([^\]]*)\]\([^)]*\)", r"\1", heading.strip().lower())
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def _anchors(page: Path) -> set[str]:
    seen: dict[str, int] = defaultdict(int)
    out = set()
    for line in FENCE.sub("", page.read_text()).splitlines():
        if m := re.match(r"#{1,6} (.+)", line):
            slug = _slug(m.group(1))
            out.add(slug if not seen[slug] else f"{slug}-{seen[slug]}")
            seen[slug] += 1
    return out


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(REPO)))
def test_every_relative_link_resolves(page):
    broken = []
    for target in LINK.findall(FENCE.sub("", page.read_text())):
        if re.match(r"[a-z]+:", target):
            continue
        path, _, anchor = target.partition("#")
        goal = (page.parent / path).resolve() if path else page
        if not goal.exists():
            broken.append(f"{target}: no file {goal}")
        elif anchor and anchor not in _anchors(goal):
            broken.append(f"{target}: no heading #{anchor} in {goal.name}")
    assert not broken, "\n".join(broken)


def test_readme_is_a_front_door():
    lines = (REPO / "README.md").read_text().splitlines()
    assert len(lines) <= 200, f"README.md has {len(lines)} lines: move a topic to docs/"


def test_every_study_is_listed():
    page = (REPO / "docs" / "studies-and-reports.md").read_text()
    missing = [p.stem for p in (REPO / "studies").glob("*.toml") if f"`{p.stem}`" not in page]
    assert not missing, f"docs/studies-and-reports.md does not list {missing}"


# -- the signatures architecture.md quotes ------------------------------------


def _shape(node: ast.AST) -> str:
    """A def as its decorators, arguments and return annotation; an annotated
    attribute as its annotation and value."""
    if isinstance(node, ast.AnnAssign):
        return ast.unparse(node.annotation) + (f" = {ast.unparse(node.value)}" if node.value else "")
    decorators = " ".join("@" + ast.unparse(d) for d in node.decorator_list)
    returns = f" -> {ast.unparse(node.returns)}" if node.returns else ""
    return f"{decorators} ({ast.unparse(node.args)}){returns}"


def _members(tree: ast.Module):
    """(class name or None, member name, shape) of every def and class attribute."""
    for node in tree.body:
        if isinstance(node, ast.FunctionDef):
            yield None, node.name, _shape(node)
        if isinstance(node, ast.ClassDef):
            for item in node.body:
                if isinstance(item, ast.FunctionDef):
                    yield node.name, item.name, _shape(item)
                elif isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name):
                    yield node.name, item.target.id, _shape(item)


def test_quoted_signatures_are_the_codes():
    code: dict[tuple[str | None, str], set[str]] = defaultdict(set)
    for path in (REPO / "cnfperf").rglob("*.py"):
        for cls, name, shape in _members(ast.parse(path.read_text())):
            code[(cls, name)].add(shape)
    page = (REPO / "docs" / "architecture.md").read_text()
    blocks = re.findall(r"^```python\n(.*?)^```", page, re.S | re.M)
    assert blocks, "architecture.md quotes no code"
    wrong = [f"{cls + '.' if cls else ''}{name}: {shape}"
             for block in blocks for cls, name, shape in _members(ast.parse(block))
             if shape not in code[(cls, name)]]
    assert not wrong, "architecture.md quotes signatures the code does not have:\n" + \
        "\n".join(wrong)
