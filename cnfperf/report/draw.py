"""Figures drawn with the Agg canvas directly (no pyplot), so nothing global is
touched and nothing needs a display; what every plot shares.

A Pen draws one figure's curves: each in its data plane's colour and marker
(style.py), curves of one style apart by a shade of it (and, where the line
style is free, by that), and the points
measured with more busy pollers than cores (contention.py) hollow, with a
footnote under the figure that says what hollow means (and what the marks of
zeros on a log axis are: axes.zeros_at_floor).
"""
from __future__ import annotations

import math
import textwrap
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence
from weakref import WeakKeyDictionary

from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.ticker import FuncFormatter, NullLocator

from cnfperf.report import axes as value_axes
from cnfperf.report import style
from cnfperf.report.rows import order

DPI = 110
HOLLOW = ("{}: measured with more busy pollers than cores; those numbers show "
          "CPU contention, not only the data plane.")
ZEROS = ("Arrows on the floor of a log axis: 0 (e.g. nothing received), which a log "
         "scale cannot show.")
FOOTNOTE_INCHES = 0.28   # room kept under the panels for a footnote's first line
LINE_INCHES = 0.15       # and for each further line (8 pt)
CHARS_PER_INCH = 15      # 8 pt characters in an inch, a few to spare


class NoData(ValueError):
    """The rows hold nothing this plot can show."""


@dataclass
class Plot:
    """A drawn plot: its name (a study's `plots` word), title and PNG."""

    name: str
    title: str
    path: str


def curves(values: Iterable[Any], styles: style.Styles) -> list:
    """Curve names, or tuples led by one, once each, by their data planes' style
    numbers as the run stored them (style.Styles.rank), then by name: legends
    list data planes alike in every report."""
    def key(v: Any) -> tuple:
        name = str(v[0] if isinstance(v, tuple) else v)
        return styles.rank(name), order(v)
    return sorted(set(values), key=key)


def figure(ncols: int, nrows: int = 1, width: float = 5.2, height: float = 3.8) -> Figure:
    fig = Figure(figsize=(width * ncols, height * nrows), layout="constrained")
    FigureCanvasAgg(fig)
    return fig


def grid(n: int, max_cols: int = 3, width: float = 5.2, height: float = 3.8) -> tuple[Figure, list]:
    """A figure with n panels, wrapped after max_cols; unused cells hidden."""
    cols = min(n, max_cols)
    rows = math.ceil(n / cols)
    fig = figure(cols, rows, width, height)
    axes = list(fig.subplots(rows, cols, squeeze=False).flat)
    for ax in axes[n:]:
        ax.set_visible(False)
    return fig, axes[:n]


def rows_grid(counts: Sequence[int], max_cols: int = 3, width: float = 5.2,
              height: float = 3.8) -> tuple[Figure, list[list]]:
    """A figure with a group of panels per entry of `counts` (e.g. a latency
    kind's), each group starting a row of its own, wrapped after max_cols;
    unused cells hidden. Returns each group's panels."""
    cols = min(max(counts), max_cols)
    rows = [math.ceil(n / cols) for n in counts]
    fig = figure(cols, sum(rows), width, height)
    cells = fig.subplots(sum(rows), cols, squeeze=False)
    groups, first = [], 0
    for n, r in zip(counts, rows):
        mine = list(cells[first:first + r].flat)
        for ax in mine[n:]:
            ax.set_visible(False)
        groups.append(mine[:n])
        first += r
    return fig, groups


def save(fig: Figure, path: str | Path) -> str:
    """The figure as a PNG, its tick labels first kept apart (axes.declutter)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    value_axes.declutter(fig)
    fig.savefig(path, dpi=DPI, format="png")
    return str(path)


def footnote(fig: Figure, text: str) -> None:
    """Small text under every panel, wrapped to the figure's width, with room kept
    for it."""
    width, height = fig.get_size_inches()
    lines = textwrap.wrap(text, int(width * CHARS_PER_INCH))
    room = FOOTNOTE_INCHES + LINE_INCHES * (len(lines) - 1)
    fig.get_layout_engine().set(rect=(0, room / height, 1, 1 - room / height))
    fig.text(0.01, 0.08 / height, "\n".join(lines), fontsize=8, color="0.3", ha="left",
             va="bottom")


def size_axis(ax, sizes: Sequence[int]) -> None:
    ax.set_xscale("log")
    ax.xaxis.set_minor_locator(NullLocator())
    ax.set_xticks(sorted(sizes))
    ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
    ordered = sorted(sizes)
    if any(b / a < 1.6 for a, b in zip(ordered, ordered[1:])):   # 1024 and 1500 collide
        ax.tick_params(axis="x", labelrotation=45, labelsize=8)
    ax.set_xlabel("frame size (bytes, log scale)")


DASHES = ("-", "--", ":", "-.")


INSIDE = 4               # entries a legend may have inside its panel
LEGEND_ROWS = 20         # entries a legend column holds beside its panel
LEGEND_CHAR_INCHES = 0.06    # an 8 pt character's width, about
LEGEND_PAD_INCHES = 0.3      # a legend column's marker, line and padding


def legend(ax, **kw) -> None:
    """The panel's legend; a long one beside the panel, in as many columns as it
    needs, the figure widened to hold it (constrained layout would otherwise
    shrink the panel to nothing)."""
    labels = [h.get_label() for h in kw.get("handles", ())] or ax.get_legend_handles_labels()[1]
    if len(labels) > INSIDE:   # a long legend would hide the curves: put it beside the panel
        cols = math.ceil(len(labels) / LEGEND_ROWS)
        kw.update(loc="upper left", bbox_to_anchor=(1.01, 1.0), ncols=cols)
        longest = max(len(str(t)) for t in [*labels, kw.get("title") or ""])
        _widen(ax, cols * (LEGEND_PAD_INCHES + LEGEND_CHAR_INCHES * longest))
    ax.legend(fontsize=8, title_fontsize=8, **kw)


_ROOM: WeakKeyDictionary[Figure, dict[int, float]] = WeakKeyDictionary()   # widened by


def _widen(ax, inches: float) -> None:
    """Room for `inches` more in the panel's column of the figure (once per column)."""
    fig = ax.get_figure()
    grown = _ROOM.setdefault(fig, {})
    column = ax.get_subplotspec().colspan.start if ax.get_subplotspec() else 0
    more = inches - grown.get(column, 0.0)
    if more > 0:
        width, height = fig.get_size_inches()
        fig.set_size_inches(width + more, height)
        grown[column] = inches


def time_axis(ax, values: Iterable[float]) -> None:
    """Log x over the values, labelled 1, 2, 5, 10, 20 … (fewer over a wide span)
    instead of 2×10^1."""
    ax.set_xscale("log")
    value_axes.log_ticks(ax.xaxis, values)


def finish(ax, title: str, values: Iterable[float | None] = (), ylabel: str = "",
           key: bool = True) -> None:
    """Title, grid, legend (`key`: a figure whose panels hold the same curves keys
    only one); the value (y) axis logarithmic when `values` span more than
    axes.LOG_SPAN (`ylabel` then says so), else from 0."""
    ax.set_title(title, fontsize=10)
    ax.grid(True, which="major", alpha=0.3)
    log = value_axes.values_axis(ax, values, "y")
    if ylabel:
        ax.set_ylabel(value_axes.with_scale(ylabel, log), fontsize=9)
    labels = ax.get_legend_handles_labels()[1]
    if key and labels:
        named = [t for t in labels if t != "received = sent"]
        legend(ax, title="data plane" if all(" " not in t for t in named) else "path")


class Pen:
    """Draws one figure's curves. `rows` are the plot's rows (rows.py), for each
    curve's style: the numbers their points stored (style.learn) and which
    curve is which (Styles.for_curves); `series` every curve the figure will
    draw, as (curve name, what else tells it apart…), for their line styles."""

    def __init__(self, rows: Iterable[Mapping[str, Any]], series: Iterable[tuple] = ()):
        rows = list(rows)
        self.styles = style.learn(rows)
        self.style_of = self.styles.for_curves(rows)
        self.contended: set[str] = set()   # what was drawn hollow: "markers", "bars"
        # curves that share a style (one data plane's paths) each take a shade of it
        self._colours: dict[str, str] = {}
        shades: dict[style.Style, int] = {}
        for name in self.curves(str(r.get("switch")) for r in rows):
            st = self.style_of(name)
            self._colours[name] = style.shade(st.colour, shades.get(st, 0))
            shades[st] = shades.get(st, 0) + 1
        self._dashes: dict[tuple, str] = {}
        used: dict[style.Style, int] = {}
        for s in self.curves(series):   # curves of one style share its colour, not its dash
            st = self.style_of(str(s[0]))
            self._dashes[s] = DASHES[used.get(st, 0) % len(DASHES)]
            used[st] = used.get(st, 0) + 1

    def curves(self, values: Iterable[Any]) -> list:
        """The figure's curves (names, or tuples led by one) in legend order (curves)."""
        return curves(values, self.styles)

    def dash(self, series: tuple) -> str:
        return self._dashes.get(series, "-")

    def colour(self, name: str) -> str:
        """The curve's colour: its style's, or a shade of it beside curves of one style."""
        return self._colours.get(name) or self.style_of(name).colour

    def curve(self, ax, name: str, xs: Sequence[float], ys: Sequence[float],
              yerr: Sequence[float] | None = None, hollow: Sequence[bool] = (),
              ls: Any = "-", label: str | None = None, **kw) -> None:
        """A curve with error bars; the points flagged in `hollow` drawn hollow."""
        st = self.style_of(name)
        line_kw = dict(color=self.colour(name), marker=st.marker, ms=5, ls=ls, **kw)
        if yerr is not None:
            ax.errorbar(xs, ys, yerr=yerr, capsize=2, label=label, **line_kw)
        else:
            ax.plot(xs, ys, label=label, **line_kw)
        self.hollow(ax, name, [(x, y) for x, y, h in zip(xs, ys, hollow) if h],
                    ms=5, alpha=kw.get("alpha", 1.0))

    def hollow(self, ax, name: str, points: Sequence[tuple[float, float]], ms: float = 5,
               alpha: float = 1.0) -> None:
        """White-filled markers over the given points of the curve `name`."""
        if not points:
            return
        st = self.style_of(name)
        xs, ys = zip(*points)
        ax.plot(xs, ys, ls="none", marker=st.marker, ms=ms, mfc="white", mec=self.colour(name),
                mew=1.3, alpha=alpha, zorder=3, label="_hollow")
        self.contended.add("markers")

    def bar(self, ax, name: str, at: float, value: float, err: float | None = None,
            hollow: bool = False, horizontal: bool = False, **kw) -> None:
        """A bar in the curve's colour; hollow and hatched when contended."""
        colour = self.colour(name)
        look = (dict(color="white", edgecolor=colour, hatch="////", linewidth=1.3) if hollow
                else dict(color=colour))
        if horizontal:
            ax.barh(at, value, xerr=err, capsize=3, **look, **kw)
        else:
            ax.bar(at, value, yerr=err, capsize=3, **look, **kw)
        if hollow:
            self.contended.add("bars")

    def handle(self, name: str, label: str | None = None, ls: Any = "-") -> Line2D:
        return Line2D([], [], color=self.colour(name), marker=self.style_of(name).marker, ls=ls,
                      label=label or name)

    def footnote(self, fig: Figure) -> None:
        """Says what hollow markers and the marks of zeros on a log axis
        (axes.zeros_at_floor) mean, when the figure has any."""
        notes = []
        if self.contended:
            what = " and ".join({"markers": "Hollow markers", "bars": "hatched bars"}[k]
                                for k in sorted(self.contended, reverse=True))
            notes.append(HOLLOW.format(what[0].upper() + what[1:]))
        if value_axes.has_zeros(fig):
            notes.append(ZEROS)
        if notes:
            footnote(fig, " ".join(notes))
