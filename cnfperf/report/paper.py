"""A study's run beside its paper, as the report's tables: every referenced
point (paper, here, their ratio), each figure's shape, the study's differences
from the paper. From the tables the run stored with its plan
(experiments/reference.py: of_stored), not today's study file."""
from __future__ import annotations

from typing import Any

from cnfperf import UserError
from cnfperf.experiments import reference
from cnfperf.report.summary import Table

POINTS = "Referenced points"   # under the section's own title, Paper vs here
NOTE = ("here/paper: the measured value over the paper's, both in the paper's unit; "
        "– where this run measured no point the row names (never 0). A figure's shape "
        "(per curve, where its rows vary more than their x axis) "
        "holds when every step between its rows, in the order listed, goes the same "
        "way here as in the paper (a change under 10 % of the larger value is flat); "
        "each series is normalised to its first value.")


def comparison(run: dict[str, Any]) -> tuple[reference.Comparison | None, str]:
    """(the run against its stored paper tables, or None; why not, if they no
    longer read)."""
    try:
        return reference.of_stored(run), ""
    except UserError as e:
        return None, f"the run's paper tables no longer read: {e}"


def tables(compared: reference.Comparison) -> list[Table]:
    out: list[Table] = []
    if compared.rows:
        out.append((POINTS, reference.TABLE_HEADERS, reference.table_rows(compared)))
    if compared.shapes:
        rows = [[s.name, "–" if s.holds is None else s.holds, *s.series()]
                for s in compared.shapes]
        out.append(("Shapes", ["figure and metric", "shape holds", "paper", "here"], rows))
    return out


def differences(compared: reference.Comparison) -> list[str]:
    """`method (000.8): latency is one-way …`, one a difference."""
    return reference.difference_lines(compared.reference)
