"""A trend plot per point (trend.py): a panel per metric, the runs of the series
along x (oldest first), each run's value in the data plane's colour and
marker (its repetitions as small dots), each group's average as a step line,
and every change between groups marked where its group starts: the step drawn
as an arrow, red for a regression, green for a progression (a regression of
latency points up), with the change in %."""
from __future__ import annotations

import re
from pathlib import Path
from typing import Sequence

from matplotlib.lines import Line2D

from cnfperf.report import axes as value_axes
from cnfperf.report import style
from cnfperf.report.draw import footnote, grid, legend, save
from cnfperf.report.trend import NORMAL, PROGRESSION, REGRESSION, Trend

# Okabe and Ito's vermillion and bluish green (style.COLOURS): red and green that
# a colour-blind reader still tells apart; a change is an arrow (no data plane's
# marker is one), which also says which way the values went.
CHANGES = {REGRESSION: "#D55E00", PROGRESSION: "#009E73"}
STEPS = "0.25"            # the groups' averages
RUN_INCHES = 0.22         # a panel's width per run beyond the first MANY
MANY = 16
NOTE = ("Groups by jumpavg (FD.io CSIT's trending): the runs a step line spans are "
        "one distribution; the latest group against the one before gives the verdict.")


def file_name(label: str, taken: set[str]) -> str:
    """`veth udp size=64` → `veth_udp_size=64.png`, unique among `taken`."""
    stem = re.sub(r"[^A-Za-z0-9.=+-]+", "_", label).strip("_") or "point"
    name, n = f"{stem}.png", 2
    while name in taken:
        name, n = f"{stem}_{n}.png", n + 1
    taken.add(name)
    return name


def _title(t: Trend) -> str:
    if t.metric.name == "rate":
        what = "rate found" if t.facts.get("trials") else "received rate"
    else:
        kind = "round trip" if t.facts.get("latency_kind") == "rtt" else "latency"
        what = f"{t.metric.name} {kind}"
    return f"{what} ({t.metric.unit})"


def _heading(t: Trend) -> str:
    """The point's label, led by its data plane, api and mode where it lacks them."""
    head = " ".join(str(t.facts.get(k)) for k in ("switch", "api", "mode") if t.facts.get(k))
    if t.point.startswith(head):
        return t.point
    return head if t.point == t.facts.get("switch") else f"{head}: {t.point}"


def _panel(ax, t: Trend, series: Sequence[str], look: style.Style) -> list[float]:
    """One metric's values, groups and changes; returns the values drawn."""
    at = {run: series.index(run) for run in t.runs}
    xs = [at[r] for r in t.runs]
    drawn: list[float] = []
    for x, samples in zip(xs, t.samples):
        if len(samples) > 1:
            ax.plot([x] * len(samples), samples, ls="none", marker=".", ms=4,
                    color=look.colour, alpha=0.4, zorder=2)
            drawn += samples
    ax.plot(xs, t.values, ls=":", lw=0.8, marker=look.marker, ms=6, color=look.colour,
            zorder=3)
    drawn += t.values
    # the groups' averages, one step line: a level over each group's runs, the
    # steps between groups where the later one starts
    path_x, path_y = [], []
    for g in t.groups:
        path_x += [at[g.runs[0]] - 0.5, at[g.runs[-1]] + 0.5]
        path_y += [g.average, g.average]
    ax.plot(path_x, path_y, color=STEPS, lw=1.6, zorder=2)
    drawn += [g.average for g in t.groups]
    before = t.groups[0].average
    for g in t.groups[1:]:
        level, before = before, g.average
        if g.verdict == NORMAL:
            continue
        colour = CHANGES[g.verdict]
        x = at[g.runs[0]] - 0.5
        ax.axvline(x, color=colour, lw=0.8, ls="--", alpha=0.7, zorder=1)
        # the step itself, as an arrow from the level before to the group's
        ax.annotate("", (x, g.average), xytext=(x, level), zorder=4,
                    arrowprops=dict(arrowstyle="-|>", color=colour, lw=2.4,
                                    mutation_scale=16, shrinkA=0, shrinkB=0))
        if g.change is not None:
            ax.annotate(f"{g.change:+.1f} %", (x, (level + g.average) / 2), xytext=(5, 0),
                        textcoords="offset points", fontsize=8, color=colour, va="center",
                        fontweight="bold",
                        bbox=dict(boxstyle="round,pad=0.15", fc="white", ec="none", alpha=0.8))
    return drawn


def draw(trends: Sequence[Trend], series: Sequence[str], path: str | Path) -> str:
    """The trends of one point (a panel per metric) over the series' runs."""
    fig, axes = grid(len(trends), width=5.2 + RUN_INCHES * max(0, len(series) - MANY))
    look = style.learn([trends[0].facts]).dataplane(str(trends[0].facts.get("switch")))
    for ax, t in zip(axes, trends):
        values = _panel(ax, t, series, look)
        ax.set_xticks(range(len(series)), list(series), fontsize=8)
        ax.set_xlim(-0.6, len(series) - 0.4)
        ax.set_xlabel("run (oldest first)", fontsize=9)
        log = value_axes.values_axis(ax, values, "y")
        ax.set_ylabel(value_axes.with_scale(_title(t), log), fontsize=9)
        ax.grid(True, which="major", alpha=0.3)
        since = f" since {t.since}" if t.since else ""
        ax.set_title(f"{t.metric.name}: {t.verdict}{since}", fontsize=10,
                     color=CHANGES.get(t.verdict, "black"))
        handles = [Line2D([], [], ls=":", marker=look.marker, color=look.colour,
                          label="each run" + (" (dots: repetitions)"
                                              if any(len(s) > 1 for s in t.samples) else "")),
                   Line2D([], [], color=STEPS, lw=1.6, label="group average")]
        handles += [Line2D([], [], ls="none", marker=r"$\updownarrow$", color=CHANGES[v],
                           ms=10, label=v)
                    for v in (REGRESSION, PROGRESSION) if any(g.verdict == v for g in t.groups)]
        legend(ax, handles=handles, loc="best")
    fig.suptitle(_heading(trends[0]), fontsize=11)
    footnote(fig, NOTE)
    return save(fig, path)


def draw_all(trends: Sequence[Trend], series: Sequence[str], out: Path) -> dict[tuple, str]:
    """A PNG per point in `out`: {what the point measured (Trend.key): its path}."""
    by_point: dict[tuple, list[Trend]] = {}
    for t in trends:
        by_point.setdefault(t.key, []).append(t)
    taken: set[str] = set()
    return {key: draw(mine, series, out / file_name(mine[0].point, taken))
            for key, mine in by_point.items()}
