"""What a stored run shows, after a run and in `results show` and `report`:
its tables, its points held to their expectations, its paper's."""
from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from cnfperf import UserError
from cnfperf.experiments import reference as paper
from cnfperf.report import build, cpu as cpu_tables, nfs as nf_tables
from cnfperf.report import gates, interference
from cnfperf.report.rows import rows_from_run
from cnfperf.report.searches import latency_loads, searches
from cnfperf.report.soak import table as soak_table
from cnfperf.report.summary import faults, noises, points as point_table, repetitions
from cnfperf.report.tables import summary_table
from cnfperf.cli.common import LAST, find_run


def paper_of(run: dict[str, Any] | None) -> Any:
    """A stored run held against the paper tables it stored (None without them,
    or when they no longer read: said on stderr)."""
    if not run:
        return None
    try:
        return paper.of_stored(run)
    except UserError as e:
        print(f"cnfperf: warning: run {run['id']}'s paper tables no longer read: {e}",
              file=sys.stderr)
        return None


def _paper_text(compared: Any) -> list[str]:
    """The paper-vs-here table, each figure's shape, the differences."""
    out = []
    if compared.rows:
        out.append(summary_table(("Paper vs here", paper.TABLE_HEADERS,
                                  paper.table_rows(compared))))
        out += paper.shape_lines(compared)
    if differs := paper.difference_lines(compared.reference):
        out += ["differences from the paper:", *(f"  {d}" for d in differs)]
    return out


def has_results(run: dict[str, Any] | None) -> bool:
    return bool(run) and any(p["status"] == "done" for p in run["points"])


def write_report(store: Any, run: dict[str, Any], out: str | None = None,
                 expect_run: str | None = None) -> Path:
    found, earlier = held(store, run, expect_run)
    return build.write(run, Path(out) if out else store.directory / "runs" / run["id"] / "report",
                       found, earlier)


def held(store: Any, run: dict[str, Any], wanted: str | None
           ) -> tuple[list[gates.Gate], dict[str, Any] | None]:
    """The run's points held to their expectations (none: []) and the run
    `run` means in them: `wanted` (an id, latest), else the newest earlier run
    of the same scenario (None: there is none, or no line asks)."""
    if not gates.expecting(run):
        return [], None
    earlier = None
    if wanted not in (None, LAST) and gates.relative(run):
        earlier = _earlier_named(store, run, wanted)
    elif gates.relative(run):
        earlier = gates.earlier_of(run, store.runs(), store.run, store.spec)
    return gates.judged(run, earlier), earlier


def _earlier_named(store: Any, run: dict[str, Any], wanted: str) -> dict[str, Any]:
    """The run --expect-run names for `run`: an id, or latest (the newest stored
    before it); never the run itself."""
    if wanted == "latest":
        before = [r for r in store.runs() if r["started"] < run["started"]]
        if not before:
            raise UserError("--expect-run", f"no run was stored before run {run['id']}")
        return store.run(max(before, key=lambda r: r["started"])["id"])
    found = find_run(store, wanted, "--expect-run")
    if found == run["id"]:
        raise UserError("--expect-run", f"{found} is the run itself: name an earlier one")
    return store.run(found)


def expectations(found: list[gates.Gate], earlier: dict[str, Any] | None) -> dict[str, Any]:
    return {"expect_run": earlier["id"] if earlier else None, **gates.counts(found),
            "verdicts": [g.to_dict() for g in found]}


def print_gates(found: list[gates.Gate], earlier: dict[str, Any] | None,
                brief: bool = False) -> None:
    """The expectations that missed or were skipped (`brief`: every one
    otherwise), and how many of each."""
    if not found:
        return
    if shown := gates.table(found, every=not brief):
        print("\n" + summary_table(shown))
    print(f"expectations: {gates.summary_line(found, earlier)}")


def print_tables(run: dict[str, Any], brief: bool = False) -> None:
    """What follows a run's table: each point's path and CPU-bound nodes (when
    there is something to say), repetitions, searches and the latency at loads
    below what they found, soaks, a victim's interference, faults and their outages,
    noisy neighbours, the network functions' tables and CPU per node (`brief`, at
    the end of a run: what `results show` has in full)."""
    rows = rows_from_run(run)
    hurt = interference.table(interference.entries(rows)) if interference.tenants(rows) else None
    notes = {**cpu_tables.NOTES, "Interference": interference.NOTE}
    for table in filter(None, (point_table(run, brief=True), repetitions(run), searches(run),
                               latency_loads(run), soak_table(run), hurt, faults(run), noises(run),
                               *nf_tables.all_tables(run, brief),
                               *cpu_tables.all_tables(run, brief))):
        print()
        print(summary_table(table, notes.get(table[0], "")))
    if compared := paper_of(run):
        print()
        print("\n".join(_paper_text(compared)))
