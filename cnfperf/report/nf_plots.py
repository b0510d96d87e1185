"""PNG plots of network functions in a run's paths (plots.py's style and helpers).

latency_vs_nfs: one panel per set of points that differ only in the number of
NFs (report/nfs.py: slopes), p50 and p99 as measured and the least-squares line
through them, its slope in the legend.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Sequence

from cnfperf.report import nfs, summary
from cnfperf.report import axes as value_axes
from cnfperf.report.draw import Pen, grid, save
from cnfperf.report.plots import NoData, Plot

_STYLE = {"p50": "-", "p99": "--"}
FIT_STEPS = 24


def _title(s: nfs.Slope, axes: Sequence[str]) -> str:
    kind = nfs.KIND.get(s.kind, s.kind)
    extra = summary.label(s.point, axes) if axes else ""
    return f"{kind.capitalize()} latency, {s.shape} on {s.switch}" + (f"\n{extra}" if extra else "")


def latency_vs_nfs(slopes: Sequence[nfs.Slope], path: str | Path,
                   axes: Sequence[str] = ()) -> str:
    """Latency (µs) over the number of NFs, one panel per Slope; `axes`: the
    fields that tell the panels apart, for their titles. On a log axis (values
    spanning more than axes.LOG_SPAN) the fitted lines bend: they are straight
    in µs, drawn through FIT_STEPS points."""
    if not slopes:
        raise NoData("latency vs NFs: no points that differ only in the number of NFs")
    fig, panels = grid(len(slopes))
    pen = Pen([{"switch": s.switch, "switch_facts": s.point.get("switch_facts")}
               for s in slopes])
    for ax, s in zip(panels, slopes):
        xs = [x for x, _, _ in s.points]
        values: list[float] = []
        for name, index, slope, base in (("p50", 1, s.p50, s.p50_base),
                                         ("p99", 2, s.p99, s.p99_base)):
            if slope is None:
                continue
            alpha = 1.0 if name == "p50" else 0.6
            ys = [p[index] for p in s.points]
            pen.curve(ax, s.switch, xs, ys, hollow=s.contended, ls="none", alpha=alpha)
            steps = [min(xs) + (max(xs) - min(xs)) * i / FIT_STEPS for i in range(FIT_STEPS + 1)]
            ax.plot(steps, [base + slope * x for x in steps], ls=_STYLE[name],
                    color=pen.colour(s.switch), alpha=alpha,
                    label=f"{name}: {'+' if slope >= 0 else '−'}"
                          f"{value_axes.number(float(f'{abs(slope):.3g}'))} µs per NF")
            values += ys
        ax.set_xticks(sorted(set(xs)))
        ax.set_xlabel("network functions in the path")
        ax.set_title(_title(s, axes), fontsize=10)
        ax.grid(True, alpha=0.3)
        log = value_axes.values_axis(ax, values, "y")
        ax.set_ylabel(value_axes.with_scale(f"{nfs.KIND.get(s.kind, s.kind)} latency (µs)", log))
        ax.legend(fontsize=8)
    fig.suptitle("Latency vs number of network functions", fontsize=11)
    pen.footnote(fig)
    return save(fig, path)


def make(run: dict[str, Any], out_dir: str | Path) -> list[Plot]:
    """The NF plots the run's data supports."""
    found = nfs.slopes(run)
    if not found:
        return []
    axes = [f for f in summary.varying(summary.done_points(run))
            if f not in ("nfs", "switch")]
    title = "Latency vs number of network functions"
    return [Plot("latency_vs_nfs", title,
                 latency_vs_nfs(found, Path(out_dir) / "latency_vs_nfs.png", axes))]
