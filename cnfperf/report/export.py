"""`cnfperf results export RUN --csv`: one row per pair of every point, then the
point's total (pair `all`, also for one pair, and the only row of a point that
failed), with the point's parameters, its paths' shape and its CPU-bound nodes
on every row (a pair's own values in their fields' columns where the point's
pairs differed: a profile). With `--nf-ports`: one row per port of every
network function instead (its NF's place and kind, the port's counters and drops by reason),
with the same point columns. With `--cpu`: one row per node of every point
(the store's cpu_usage: its CPU use over the measured window; threads as JSON).

Numbers are written as Python prints them (shortest text that reads back to the
same float), missing values as empty cells: reading the file back gives exactly
what the store holds.
"""
from __future__ import annotations

import csv
import json
from typing import IO, Any

from cnfperf import fields
from cnfperf.results.model import DROP_REASONS, LATENCY_KEYS

SEARCH_COLUMNS = ("search_rate_pps", "search_loss_ratio", "search_offered_pps",
                  "search_verified", "generator_limited")
VALUE_COLUMNS = ("pair", "offered_pps", "tx_pps", "rx_pps", "steady_rx_pps", "rx_bps", "sent",
                 "received", "lost", "loss_ratio", "reordered", "duplicates", "conformance_sigma",
                 "conformance_exceeded", "latency_kind",
                 *(f"lat_{k}_ns" for k in LATENCY_KEYS), "outage_ns", "outage_lost")


# The point's own columns besides its fields: its paths' shape (pair, chain,
# pipeline), the nodes whose poller was CPU-bound (comma-separated names), why
# its tester (`tester`: the one used), its busy pollers and how many cores they shared,
# how long its fault held its target down (ns; empty without one), its generator
# baseline's received rate and its own as a share of it (empty without one).
POINT_COLUMNS = ("shape", "cpu_bound", "tester_why", "pollers", "point_cores", "fault_ns",
                 "baseline_pps", "baseline_share")
# An NF port's row: its NF (named; `nf` is the point's field, the NF's kind) and
# place on the pair's path (0 next to the sender), the port (1 faces the sender),
# its counters (rx and drops at the ingress port, tx and tx_refused at the egress).
NF_PORT_COLUMNS = ("pair", "nf_name", "nf_index", "port", "rx_packets", "tx_packets",
                   "tx_refused", *(f"dropped_{k}" for k in DROP_REASONS), "delayed")


# A node's row: the store's cpu_usage columns (store.py, _SCHEMA_7).
CPU_COLUMNS = ("node", "kind", "cores", "quota", "user_s", "system_s", "softirq_s", "wall_s",
               "packets", "cycles_per_packet", "tsc_hz", "tsc_source", "threads")


def _identity() -> tuple[str, ...]:
    """The point's columns on every row."""
    return ("run", "idx", "key", "rep", "status", *(f.name for f in fields.stored()),
            *POINT_COLUMNS)


def columns() -> tuple[str, ...]:
    """The point's identity, its stored fields (fields.py), search results, values."""
    return (*_identity(), *SEARCH_COLUMNS, *VALUE_COLUMNS)


def nf_port_columns() -> tuple[str, ...]:
    return (*_identity(), *NF_PORT_COLUMNS)


def cpu_columns() -> tuple[str, ...]:
    return (*_identity(), *CPU_COLUMNS)


def _base(run: dict[str, Any], p: dict[str, Any]) -> dict[str, Any]:
    scenario = p.get("scenario") or {}
    base = {c: p.get(c) for c in ("idx", "key", "rep", "status", *POINT_COLUMNS,
                                  *SEARCH_COLUMNS)}
    for f in fields.stored():
        # A column added after the point was stored is empty: its scenario knows.
        base[f.name] = p[f.name] if p.get(f.name) is not None else scenario.get(f.name)
    base["run"] = run["id"]
    return base


def rows(run: dict[str, Any]) -> list[dict[str, Any]]:
    out = []
    for p in run["points"]:
        base = _base(run, p)
        entries = [(pair["pair"], pair) for pair in p.get("per_pair") or []]
        entries.append(("all", p))   # always: filtering on pair = all gives every point once
        for name, r in entries:
            # a pair of a point whose pairs differed: its own values in the fields'
            # columns (pairs.profile: what it was asked), the point's on `all`
            own = {k: _as_column(k, v) for k, v in (r.get("profile") or {}).items()
                   if name != "all"}
            out.append({**base, **own, **{c: r.get(c) for c in VALUE_COLUMNS}, "pair": name})
    return out


def _as_column(name: str, value: Any) -> Any:
    """A profile's value (JSON) as its field's column holds it: 20000.0 as the
    point's rate reads, 1 for yes."""
    f = fields.by_name().get(name)
    if f is None or value is None or isinstance(value, str):
        return value
    if f.column == "REAL":
        return float(value)
    return int(value) if f.column == "INTEGER" else value


def nf_port_rows(run: dict[str, Any]) -> list[dict[str, Any]]:
    """A row per port of every NF of every point, in path order."""
    out = []
    for p in run["points"]:
        base = _base(run, p)
        for nf in p.get("nf_results") or []:
            for port in nf["ports"]:
                out.append({**base, **port, "pair": nf["pair"], "nf_name": nf["name"],
                            "nf_index": nf["idx"]})
    return out


def cpu_rows(run: dict[str, Any]) -> list[dict[str, Any]]:
    """A row per node of every point, threads as JSON."""
    return [{**_base(run, p), **usage, "threads": json.dumps(usage.get("threads") or [])}
            for p in run["points"] for usage in p.get("cpu_usage") or []]


def write_csv(run: dict[str, Any], stream: IO[str]) -> int:
    """Writes the CSV; returns the number of data rows."""
    return _write(rows(run), columns(), stream)


def write_nf_ports_csv(run: dict[str, Any], stream: IO[str]) -> int:
    """Writes the NF ports' CSV; returns the number of data rows."""
    return _write(nf_port_rows(run), nf_port_columns(), stream)


def write_cpu_csv(run: dict[str, Any], stream: IO[str]) -> int:
    """Writes the nodes' CPU use as CSV; returns the number of data rows."""
    return _write(cpu_rows(run), cpu_columns(), stream)


def _write(data: list[dict[str, Any]], names: tuple[str, ...], stream: IO[str]) -> int:
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
