"""Studies: scenario files under studies/ that reproduce a published figure.

A study is a sweep file with a `[study]` table (title, what it reproduces, which
plots its report draws), optional `[[part]]`s and a `[quick]` variant.
"""
from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

from cnfperf import UserError

STUDIES_DIR = Path(__file__).resolve().parents[2] / "studies"


def known() -> list[str]:
    return sorted(p.stem for p in STUDIES_DIR.glob("*.toml"))


def find(name: str) -> Path:
    """studies/NAME.toml, or a study file given by its path."""
    path = Path(name)
    if path.suffix == ".toml" and path.is_file():
        return path
    path = STUDIES_DIR / f"{name}.toml"
    if "/" in name or not path.is_file():
        raise UserError("NAME", f"unknown study {name!r}; known: {', '.join(known()) or 'none'}")
    return path


# A [study] table's keys and what each holds.
TABLE = {"title": "text", "reproduces": "text", "plots": "a list of plot names",
         "experiments": "a list of the papers' experiment ids (studies/papers/experiments.toml)"}


def check_table(table: Any) -> None:
    """ValueError (`study.KEY: why`) unless `table` is a [study] table: known
    keys (TABLE), each of its kind. The plot names are the report's to know
    (checks.plan asks it)."""
    if not isinstance(table, dict):
        raise ValueError("study: must be a table")
    for key, value in table.items():
        if key not in TABLE:
            raise ValueError(f"study.{key}: unknown key; known: {', '.join(TABLE)}")
        text = isinstance(value, str) and value.strip()
        names = isinstance(value, list) and all(isinstance(v, str) and v for v in value)
        if not (names if key in ("plots", "experiments") else text):
            raise ValueError(f"study.{key}: must be {TABLE[key]} (got {value!r})")


def info(doc: dict[str, Any]) -> dict[str, Any]:
    """The study's own table: title, reproduces, plots (checked: check_table)."""
    table = doc.get("study", {})
    try:
        check_table(table)
    except ValueError as e:
        field, _, why = str(e).partition(": ")
        raise UserError(field, why) from None
    return table


def describe_all() -> list[tuple[str, str, str]]:
    """(name, title, what it reproduces) of every study."""
    rows = []
    for name in known():
        with open(STUDIES_DIR / f"{name}.toml", "rb") as f:
            table = info(tomllib.load(f))
        rows.append((name, str(table.get("title", "")), str(table.get("reproduces", ""))))
    return rows
