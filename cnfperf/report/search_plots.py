"""PNG plots of a run's searches (plots.py's style and helpers).

latency_vs_load: the latency trials after each search, as FD.io CSIT shows
latency at fractions of the PDR: a panel per percentile (p50, p99, p99.9),
x the load as a share of the rate the search found for its last goal, a curve
per searched point in its data plane's style.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Sequence

from cnfperf.report import axes as value_axes
from cnfperf.report import searches, summary
from cnfperf.report.draw import Pen, grid, save
from cnfperf.report.plots import NoData, Plot

PANELS = (("p50", "median (p50)"), ("p99", "p99"), ("p999", "p99.9"))


def _curves(points: Sequence[dict[str, Any]]) -> list[tuple[dict[str, Any], list[tuple]]]:
    """(point, [(load % of the rate found, trial)…]) of the points with latency trials."""
    out = []
    for p in points:
        goals = p.get("goals") or []
        found = goals[-1]["conditional_pps"] if goals else p.get("search_rate_pps")
        loads = sorted(((100 * t["offered_pps"] / found, t) for t in p["trials"]
                        if t["phase"] == "latency" and found), key=lambda x: x[0])
        if loads:
            out.append((p, loads))
    return out


def latency_vs_load(run: dict[str, Any], path: str | Path) -> str:
    curves = _curves(searches.searched(run))
    if not curves:
        raise NoData("latency vs load: no latency trials after a search")
    axes = [f for f in summary.varying(summary.done_points(run)) if f != "rate"]
    fig, panels = grid(len(PANELS), width=4.6, height=3.6)
    pen = Pen([{"switch": p.get("switch"), "switch_facts": p.get("switch_facts")}
               for p, _ in curves])
    kind = next((t.get("latency_kind") for _, loads in curves for _, t in loads), "one_way")
    word = "round-trip" if kind == "rtt" else "one-way"
    for ax, (key, title) in zip(panels, PANELS):
        values: list[float] = []
        for p, loads in curves:
            xs = [x for x, t in loads if t.get(f"lat_{key}_ns") is not None]
            ys = [t[f"lat_{key}_ns"] / 1e3 for _, t in loads if t.get(f"lat_{key}_ns") is not None]
            pen.curve(ax, str(p.get("switch")), xs, ys,
                      label=summary.label(p, axes) if axes else str(p.get("switch")))
            values += ys
        log = value_axes.values_axis(ax, values, "y")
        ax.set_ylabel(value_axes.with_scale(f"{word} latency (µs)", log))
        ax.set_xlabel("load (% of the rate found)")
        ax.set_xlim(0, 100)
        ax.set_title(title, fontsize=10)
        ax.grid(True, alpha=0.3)
    panels[0].legend(fontsize=8)
    pen.footnote(fig)
    return save(fig, path)


def make(run: dict[str, Any], out_dir: str | Path) -> list[Plot]:
    """The search plots the run's data supports."""
    if not _curves(searches.searched(run)):
        return []
    return [Plot("latency_vs_load", "Latency vs load, below the rate each search found",
                 latency_vs_load(run, Path(out_dir) / "latency_vs_load.png"))]
