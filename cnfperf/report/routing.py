"""Routing daemons in a run's NFs (frr): what their sessions did during each
trial, as a table of plain values (summary.py's shape). A session that went
down while no fault cut anything is a false report: paper 002's E2 counts
them under data-plane load (BFD packets lost in the same queues as the
traffic)."""
from __future__ import annotations

from typing import Any

from cnfperf.report.summary import Table, done_points, label, nf_labels, varying


def sessions(run: dict[str, Any]) -> Table | None:
    """Per point and NF with daemons: its sessions up at the end of the trial,
    how many times one went down during it, and the share of the trial's
    session-time spent down."""
    rows = []
    points = done_points(run)
    axes = varying(points) or ["switch"]
    for p in points:
        labels = nf_labels(p)
        for e in p.get("endpoints") or []:
            facts = (e.get("summary") or {}).get("routing")
            if not facts:
                continue
            total = facts["sessions"] * facts["seconds"]
            rows.append([label(p, axes), p.get("rep", 0) + 1,
                         labels.get(e["endpoint"], e["endpoint"]), facts.get("protocol"),
                         f"{facts['up']}/{facts['sessions']}", facts["downs"],
                         round(100 * facts["down_s"] / total, 2) if total else None,
                         "yes" if p.get("fault_facts") else "no"])
    if not rows:
        return None
    return ("Routing sessions during each trial",
            ["point", "rep", "NF", "protocol", "up at the end", "went down", "down %",
             "fault"], rows)
