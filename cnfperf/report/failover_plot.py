"""PNG plot of failovers (points with a fault): per configuration, the outage
the receivers measured after the cut (the median bar, whiskers from the
shortest to the longest over repetitions and pairs) and, where routing daemons
ran, when they noticed (a black mark at the median: the rest of the bar is the
route's move). plots.py draws it (the `failover` plot)."""
from __future__ import annotations

import statistics
from collections import defaultdict
from pathlib import Path
from typing import Any, Mapping, Sequence

from cnfperf import fields
from cnfperf.report.draw import NoData, Pen, figure, legend, save
from cnfperf.report.rows import curve_fields


def failover(rows: Sequence[Mapping[str, Any]], path: str | Path) -> str:
    cut = [r for r in rows if r.get("fault_facts") and r.get("outage_ns") is not None]
    if not cut:
        raise NoData("failover: no point with a fault and an outage")
    outages: dict[str, list[float]] = defaultdict(list)
    noticed: dict[str, list[float]] = defaultdict(list)
    hollow: dict[str, bool] = defaultdict(bool)
    styled = []
    for r in cut:
        name = _name(r, cut)
        styled.append({**r, "switch": name})
        outages[name].append(r["outage_ns"] / 1e6)
        hollow[name] |= bool(r.get("contended"))
        if r["fault_facts"].get("noticed_ms") is not None:
            noticed[name].append(r["fault_facts"]["noticed_ms"])
    pen = Pen(styled)
    names = pen.curves(outages)
    fig = figure(1, width=max(5.0, 1.3 * len(names) + 2), height=4.0)
    ax = fig.subplots()
    for i, name in enumerate(names):
        ms = outages[name]
        mid = statistics.median(ms)
        pen.bar(ax, name, i, mid, [[mid - min(ms)], [max(ms) - mid]], hollow=hollow[name])
        ax.annotate(f"{mid:,.0f}", (i, max(ms)), ha="center", fontsize=8, xytext=(0, 3),
                    textcoords="offset points")
        if noticed[name]:
            ax.plot([i - 0.3, i + 0.3], [statistics.median(noticed[name])] * 2, color="black",
                    lw=2, label="daemons noticed (median)" if i == next(
                        j for j, n in enumerate(names) if noticed[n]) else None)
    ax.set_xticks(range(len(names)), [n.replace(" ", "\n") for n in names], fontsize=8)
    ax.set_ylabel("outage after the cut (ms)")
    ax.set_ylim(bottom=0)
    ax.set_title("Outage after a cut per configuration (median; min–max)", fontsize=10)
    ax.grid(True, axis="y", alpha=0.3)
    if noticed:
        legend(ax)
    pen.footnote(fig)
    return save(fig, path)


def _name(row: Mapping[str, Any], rows: Sequence[Mapping[str, Any]]) -> str:
    """Its path's series, and the fields that tell it from the same path's
    other points (a BFD's timers): the failover's configuration."""
    same = [r for r in rows if r["switch"] == row["switch"]]
    differ = [f for f in curve_fields(("fault", "fault_at", "fault_duration"))
              if len({str(r.get(f)) for r in same}) > 1]
    return " ".join([row["switch"], *(f"{f}={fields.show(f, row.get(f))}" for f in differ)])
