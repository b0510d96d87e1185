"""The docs' reference blocks, generated from the code they describe: the
scenario fields (fields.py) in docs/scenarios.md, the data planes
(dataplanes/) in docs/dataplanes.md, the store's tables
(results/store.py) and the CSV columns (report/export.py) in docs/results.md,
the plots a study may name (report/plots.py) and the metrics a study's
[[reference]] rows may name (experiments/reference.py) in
docs/studies-and-reports.md, every experiment of the five papers with the
study that reproduces it (studies/*.toml, studies/papers/experiments.toml) in
docs/coverage.md.

A generated block sits between two markers in its Markdown file:

    <!-- generated: NAME (make docs) -->
    …
    <!-- end: NAME -->

`make docs` (python -m cnfperf.reference) rewrites every block in place;
`--check` only says which are stale, and a unit test fails on a stale one.

Defaults that depend on the mode or the api (burst, rate, poll, nf_api) are
read from the validated model itself (scenario.py's mode defaults), per mode
and api, so the table says what a point really gets.
"""
from __future__ import annotations

import argparse
import re
import sqlite3
import sys
import tempfile
from pathlib import Path
from typing import Any, Callable, Iterable

from cnfperf import UserError, fields
from cnfperf.fields import Field

BEGIN = "<!-- generated: {name} (make docs) -->"
END = "<!-- end: {name} -->"
# Contexts a default may depend on: the first is the plain default's.
CONTEXTS = tuple((mode, api) for mode in fields.MODES for api in fields.APIS)


# -- the scenario fields ----------------------------------------------------


def _text(f: Field, value: Any) -> str:
    if value is None:
        return f.unset or "none"
    if isinstance(value, float) and f.kind == "float":
        return f"{value:g}"
    return fields.show(f.name, value)


def _code(text: str) -> str:
    """A value as code; words about a value (`every usable CPU`) as words."""
    return text if " " in text else f"`{text}`"


def _cell(text: str) -> str:
    """Markdown table cells cannot hold a bare | or a line break."""
    return text.replace("|", "\\|").replace("\n", " ")


def _defaults(f: Field) -> dict[tuple[str, str], str]:
    """The field's value in a scenario that gives only the mode and the api
    (neither, where the field is one of them)."""
    from cnfperf.scenario import Scenario   # pydantic: only when the docs are made

    out = {}
    for mode, api in CONTEXTS:
        given = {k: v for k, v in (("mode", mode), ("api", api)) if k != f.name}
        out[(mode, api)] = _text(f, getattr(Scenario.model_validate(given), f.name))
    return out


def _where(contexts: set[tuple[str, str]]) -> str:
    """When a default applies, in words: `for latency`, `with api dpdk`,
    `for latency with api udp, raw`."""
    modes = sorted({m for m, _ in contexts}, key=fields.MODES.index)
    apis = sorted({a for _, a in contexts}, key=fields.APIS.index)
    if contexts == {(m, a) for m in modes for a in fields.APIS}:
        return "for " + ", ".join(modes)
    if contexts == {(m, a) for m in fields.MODES for a in apis}:
        return "with api " + ", ".join(apis)
    if len(modes) == 1:
        return f"for {modes[0]} with api " + ", ".join(apis)
    return "for " + ", ".join(f"{m} with api {a}" for m, a in sorted(contexts))


def default(f: Field) -> str:
    """`32; 1 for latency`: the plain default, then each other one and when."""
    by_context = _defaults(f)
    plain = by_context[CONTEXTS[0]]
    others: dict[str, set[tuple[str, str]]] = {}
    for context, value in by_context.items():
        if value != plain:
            others.setdefault(value, set()).add(context)
    return "; ".join([_code(plain), *(f"{_code(v)} {_where(c)}" for v, c in others.items())])


def _bounds(f: Field) -> str:
    low = f"≥ {_num(f.ge)}" if f.ge is not None else f"> {_num(f.gt)}" if f.gt is not None else ""
    high = f"≤ {_num(f.le)}" if f.le is not None else f"< {_num(f.lt)}" if f.lt is not None else ""
    if f.ge is not None and f.le is not None:
        return f"{_num(f.ge)} … {_num(f.le)}"
    return ", ".join(b for b in (low, high) if b)


def _num(x: float | None) -> str:
    return f"{x:g}" if isinstance(x, float) else str(x)


# The data planes a field concerns, by their capabilities: what its help says
# of them, and which they are (a field may say several such things).
CONCERNS = {"switch_in": [("concerns", lambda dp: dp.processes)],
            "switch_cores": [("concerns", lambda dp: dp.poll_threads and dp.max_cores != 1)],
            "switch_rxq": [("concerns", lambda dp: dp.poll_threads and dp.max_rxq != 1)],
            "pin": [("no is refused by those that pin their threads themselves",
                     lambda dp: not dp.floats)],
            "forward": [("mac and port both on", lambda dp: {"mac", "port"} <= set(dp.forwards)),
                        ("reflect on", lambda dp: "reflect" in dp.forwards)],
            "rxq_affinity": [("pinned on", lambda dp: dp.pins_rxq)],
            "switch_rxd": [("concerns", lambda dp: dp.rings)],
            "switch_txd": [("concerns", lambda dp: dp.rings)]}


def help_text(f: Field) -> str:
    """A field's help as `--help` and the docs show it: the switch's and the
    nf's go on with what their registries hold, and the switch fields name the
    data planes they concern, which fields.py (below them) cannot know."""
    if f.name == "switch":
        from cnfperf.dataplanes import DATAPLANES
        return f"{f.help}: {', '.join(DATAPLANES)}"
    if f.name in CONCERNS:
        from cnfperf.dataplanes import DATAPLANES
        said = []
        for words, concerned in CONCERNS[f.name]:
            names = [n for n, dp in DATAPLANES.items() if concerned(dp)]
            said.append(f"{words}: {', '.join(names) or 'none'}")
        return f"{f.help}; {'; '.join(said)}"
    if f.name == "nf":
        from cnfperf import nfs
        return f"{f.help}: {nfs.described()}"
    return f.help


def values(f: Field) -> str:
    """What a value may be: its choices (a registry's names where the field
    names a plugin), bounds, or kind."""
    from cnfperf import nfs
    from cnfperf.dataplanes import DATAPLANES
    from cnfperf.runtimes import CONTAINER_RUNTIMES

    named = {"switch": list(DATAPLANES), "runtime": list(CONTAINER_RUNTIMES), "nf": nfs.values(),
             "noise_on": [*fields.NOISE_PLACES, "a CPU list"],
             "noise": [*fields.NOISES, "cmd:COMMAND"],
             "fault": ["none", "link:K", "port:K", "nf:K", "nf:K@P"]}
    if f.name in named:
        return ", ".join(map(_code, named[f.name]))
    if f.kind == "choice":
        return ", ".join(map(_code, f.choices))
    if f.kind == "bool":
        return "`yes`, `no`"
    if f.kind == "rate":
        return "a rate: `1000`, `500k`, `2.5M`" + \
            ("; `ndr`, `pdr`, `pdr:X%`" if f.searchable else "")
    if f.kind == "cpus":
        return "a CPU list: `0-3`, `2,3`"
    return _bounds(f) or ("a number" if f.kind in ("int", "float") else "text")


def fields_table() -> str:
    """Every scenario field, in the table's order."""
    lines = ["| field | flag | meaning | default | values | unit |",
             "| --- | --- | --- | --- | --- | --- |"]
    for f in fields.FIELDS:
        flags = (f.flag, f"--no-{f.flag[2:]}") if f.kind == "bool" else (f.flag,)
        lines.append("| " + " | ".join(_cell(c) for c in (
            _code(f.name), ", ".join(map(_code, flags)), help_text(f), default(f), values(f),
            f.unit)) + " |")
    return "\n".join(lines)


def dataplanes_table() -> str:
    """Every registered data plane, from its class (dataplanes/base.py)."""
    from cnfperf.dataplanes import DATAPLANES

    lines = ["| switch | kind | apis | what it is | kernel links |",
             "| --- | --- | --- | --- | --- |"]
    for name, dp in DATAPLANES.items():
        lines.append("| " + " | ".join(_cell(c) for c in (
            _code(name), dp.kind, " ".join(sorted(dp.apis, key=fields.APIS.index)),
            dp.description, ", ".join(dp.kernel_links))) + " |")
    return "\n".join(lines)


# -- the store and the CSV ----------------------------------------------------


def schema() -> str:
    """Every table of a new results database and its columns, as SQLite has them."""
    from cnfperf.results.store import SCHEMA_VERSION, Store

    with tempfile.TemporaryDirectory() as tmp:
        store = Store(Path(tmp))
        try:
            tables = [r[0] for r in store.db.execute(
                "SELECT name FROM sqlite_master WHERE type = 'table' "
                "AND name NOT LIKE 'sqlite_%' ORDER BY rowid")]
            lines = [f"Schema version {SCHEMA_VERSION} (`PRAGMA user_version`).", "",
                     "| table | columns |", "| --- | --- |"]
            for table in tables:
                lines.append(f"| `{table}` | " + _columns(store.db, table) + " |")
        finally:
            store.close()
    return "\n".join(lines)


def _columns(db: sqlite3.Connection, table: str) -> str:
    return ", ".join(f"`{r[1]}` {r[2]}".rstrip() for r in db.execute(f"PRAGMA table_info({table})"))


def csv_columns() -> str:
    """The columns of each CSV `cnfperf results export` writes, in order: the
    point's, which every file starts with, then each file's own."""
    from cnfperf.report import export

    files = (("`--csv`: a row per pair of every point, and its total (`pair` = `all`)",
              export.columns()),
             ("`--csv --nf-ports`: a row per port of every network function",
              export.nf_port_columns()),
             ("`--csv --cpu`: a row per node of every point", export.cpu_columns()))
    shared = 0
    while all(len(cols) > shared and cols[shared] == files[0][1][shared] for _, cols in files):
        shared += 1
    lines = ["Every file's first columns are the point's: " +
             ", ".join(map(_code, files[0][1][:shared])) + "."]
    for what, cols in files:
        lines.append(f"- {what}, then: " + ", ".join(map(_code, cols[shared:])))
    return "\n".join(lines)


def plots_table() -> str:
    """The plots a study's `plots` may name."""
    from cnfperf.report.plots import PLOTS   # matplotlib: only when the docs are made

    return "\n".join(["| name | plot |", "| --- | --- |",
                      *(f"| `{name}` | {title} |" for name, (title, _) in PLOTS.items())])


def metrics_table() -> str:
    """The metrics a study's [[reference]] row may name, with their units."""
    from cnfperf.experiments.reference import METRICS

    return "\n".join(["| metric | what a stored point gives | units (the first its own) |",
                      "| --- | --- | --- |",
                      *(f"| `{name}` | {_cell(m.what)} | {', '.join(m.units)} |"
                        for name, m in METRICS.items())])


def coverage_table() -> str:
    """Every experiment of the five papers: its status and the study that
    reproduces it, with that study's differences (experiments/reference.py)."""
    from cnfperf.experiments import reference as paper

    covered = paper.coverage(paper.all_studies())
    counts = ", ".join(f"{sum(c.status == s for c in covered)} {s}" for s in paper.STATUSES)
    lines = [f"{len(covered)} experiments: {counts}.", "",
             "| id | figure | what | status | study | differences |",
             "| --- | --- | --- | --- | --- | --- |"]
    for c in covered:
        e = c.experiment
        lines.append("| " + " | ".join(_cell(t) for t in (
            e.id, e.figure, e.what, c.status, ", ".join(f"`{n}`" for n in c.studies) or "–",
            "; ".join(c.differences) or "–")) + " |")
    return "\n".join(lines)


def pair_fields() -> str:
    """The fields a pair's profile may set (fields.PER_PAIR), with their meaning."""
    by_name = fields.by_name()
    return "\n".join(["| field | meaning |", "| --- | --- |",
                      *(f"| `{name}` | {_cell(help_text(by_name[name]))} |"
                        for name in fields.PER_PAIR)])


# -- the blocks ---------------------------------------------------------------


# file (relative to the checkout) -> block name -> what renders it
BLOCKS: dict[str, dict[str, Callable[[], str]]] = {
    "docs/scenarios.md": {"fields": fields_table, "pair_fields": pair_fields},
    "docs/dataplanes.md": {"dataplanes": dataplanes_table},
    "docs/results.md": {"schema": schema, "csv": csv_columns},
    "docs/studies-and-reports.md": {"plots": plots_table, "metrics": metrics_table},
    "docs/coverage.md": {"coverage": coverage_table},
}


def _pattern(name: str) -> re.Pattern[str]:
    return re.compile(re.escape(BEGIN.format(name=name)) + r"\n.*?" +
                      re.escape(END.format(name=name)), re.S)


def block(name: str, body: str) -> str:
    return f"{BEGIN.format(name=name)}\n{body}\n{END.format(name=name)}"


def refresh(text: str, renderers: dict[str, Callable[[], str]], where: str = "") -> str:
    """The text with every named block rendered anew; ValueError when a block's
    markers are missing."""
    for name, render in renderers.items():
        pattern = _pattern(name)
        if not pattern.search(text):
            raise ValueError(f"{where}: no generated block {name!r} "
                             f"({BEGIN.format(name=name)} … {END.format(name=name)})")
        body = block(name, render())
        text = pattern.sub(lambda _: body, text)
    return text


def stale(root: Path, files: Iterable[str] = BLOCKS) -> list[str]:
    """The files whose generated blocks differ from what the code says."""
    return [f for f in files
            if (root / f).read_text() != refresh((root / f).read_text(), BLOCKS[f], f)]


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m cnfperf.reference",
                                description="rewrite the docs' generated reference blocks")
    p.add_argument("--root", type=Path, default=Path.cwd(), help="the checkout (default: .)")
    p.add_argument("--check", action="store_true", help="only say which files are stale")
    args = p.parse_args(argv)
    try:
        old = stale(args.root)
    except (OSError, ValueError, UserError) as e:   # UserError: a study file's tables
        print(f"cnfperf.reference: error: {e}", file=sys.stderr)
        return 2
    for name in old:
        if args.check:
            print(f"{name}: stale (make docs rewrites it)")
        else:
            path = args.root / name
            path.write_text(refresh(path.read_text(), BLOCKS[name], name))
            print(f"{name}: rewritten")
    return 1 if args.check and old else 0


if __name__ == "__main__":
    sys.exit(main())
