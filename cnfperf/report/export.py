"""`cnfperf results export RUN --csv`: one row per pair of every point, then the
point's total (pair `all`, also for one pair, and the only row of a point that
failed), with the point's parameters on every row.

Numbers are written as Python prints them (shortest text that reads back to the
same float), missing values as empty cells: reading the file back gives exactly
what the store holds.
"""
from __future__ import annotations

import csv
from typing import IO, Any

from cnfperf import fields
from cnfperf.results.model import LATENCY_KEYS

SEARCH_COLUMNS = ("search_rate_pps", "search_loss_ratio", "search_offered_pps",
                  "search_verified", "generator_limited")
VALUE_COLUMNS = ("pair", "offered_pps", "tx_pps", "rx_pps", "steady_rx_pps", "rx_bps", "sent",
                 "received", "lost", "loss_ratio", "reordered", "duplicates", "latency_kind",
                 *(f"lat_{k}_ns" for k in LATENCY_KEYS))


def columns() -> tuple[str, ...]:
    """The point's identity, its stored fields (fields.py), search results, values."""
    return ("run", "idx", "key", "rep", "status", *(f.name for f in fields.stored()),
            *SEARCH_COLUMNS, *VALUE_COLUMNS)


def rows(run: dict[str, Any]) -> list[dict[str, Any]]:
    out = []
    for p in run["points"]:
        scenario = p.get("scenario") or {}
        base = {c: p.get(c) for c in ("idx", "key", "rep", "status", *SEARCH_COLUMNS)}
        for f in fields.stored():
            # A column added after the point was stored is empty: its scenario knows.
            base[f.name] = p[f.name] if p.get(f.name) is not None else scenario.get(f.name)
        base["run"] = run["id"]
        entries = [(pair["pair"], pair) for pair in p.get("per_pair") or []]
        entries.append(("all", p))   # always: filtering on pair = all gives every point once
        for name, r in entries:
            out.append({**base, **{c: r.get(c) for c in VALUE_COLUMNS}, "pair": name})
    return out


def write_csv(run: dict[str, Any], stream: IO[str]) -> int:
    """Writes the CSV; returns the number of data rows."""
    data = rows(run)
    names = columns()
    writer = csv.DictWriter(stream, fieldnames=names, lineterminator="\n")
    writer.writeheader()
    for row in data:
        writer.writerow({c: _cell(row.get(c)) for c in names})
    return len(data)


def _cell(value: Any) -> Any:
    if value is None:
        return ""
    if isinstance(value, float):
        return repr(value)
    return value
