"""Value axes that show small and large values alike, and tick labels that never
overlap.

A linear axis holding veth's 0.3 Mpps beside memif's 48 Mpps draws veth on the
floor: where a plot's positive values span more than LOG_SPAN, its value axis
is logarithmic, ticked 1-2-5 per decade over a narrow span, 1-3 over a wider
one and once a decade over more, labelled as plain numbers (0.5, 20, 1,000, not 10^3).
A log axis has no 0: a zero (a point that received nothing) is marked on the
axis' floor by an arrow pointing below it (ZERO; no data plane's marker is an
arrow), which the footnote explains.

Whatever the ticks, declutter() (called on every figure before it is saved)
draws the figure, and where two tick labels of an axis intersect it keeps
every other tick of a numeric axis, or turns the labels of a category axis
(30°, then upright), until none do.
"""
from __future__ import annotations

import math
from typing import Iterable

from matplotlib.colors import to_hex
from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

LOG_SPAN = 20.0   # max / min of an axis' positive values beyond which it is logarithmic
PAD = 2           # pixels two labels keep between them
ZERO = "_zero"    # the label of the marks of zeros on a log axis' floor
ZERO_MARKERS = {"y": r"$\downarrow$", "x": r"$\leftarrow$"}


def span(values: Iterable[float | None]) -> float:
    """max / min of the positive values (1 with fewer than two)."""
    positive = [v for v in values if v is not None and v > 0 and math.isfinite(v)]
    return max(positive) / min(positive) if len(positive) > 1 else 1.0


def number(v: float, _pos: object = None) -> str:
    """A tick label: 0.05, 2, 500, 1,000, 20,000; never a power of ten."""
    if v == 0:
        return "0"
    if abs(v) >= 1000:
        return f"{v:,.0f}"
    return f"{v:.3g}"


def log_ticks(axis, values: Iterable[float | None]) -> None:
    """Major ticks on a log axis: 1, 2, 5 per decade over up to 1.5 decades, 1, 3
    up to 3.5, each decade over more; minor ticks unlabelled."""
    decades = math.log10(span(values))
    subs = (1.0, 2.0, 5.0) if decades <= 1.5 else (1.0, 3.0) if decades <= 3.5 else (1.0,)
    axis.set_major_locator(LogLocator(subs=subs))
    axis.set_major_formatter(FuncFormatter(number))
    axis.set_minor_formatter(NullFormatter())


def values_axis(ax, values: Iterable[float | None], which: str = "y") -> bool:
    """Log scale when the values span more than LOG_SPAN, else linear from 0.
    Returns whether the axis is logarithmic (its label should say so)."""
    values = list(values)
    axis = ax.yaxis if which == "y" else ax.xaxis
    if span(values) > LOG_SPAN:
        (ax.set_yscale if which == "y" else ax.set_xscale)("log", nonpositive="clip")
        log_ticks(axis, values)
        positive = [v for v in values if v is not None and v > 0]
        low, high = min(positive), max(positive)
        # room for error bars and markers: a third of a decade each side
        (ax.set_ylim if which == "y" else ax.set_xlim)(low / 2.2, high * 2.2)
        if any(v is not None and v <= 0 for v in values):
            zeros_at_floor(ax, which)
        return True
    axis.set_major_formatter(FuncFormatter(number))
    (ax.set_ylim if which == "y" else ax.set_xlim)(0, None)   # bottom / left at 0
    return False


def zeros_at_floor(ax, which: str) -> None:
    """Marks every zero the axes' curves and bars hold on the log axis' floor
    (the log scale would clip them out of sight), in the curve's colour."""
    floor = (ax.get_ylim if which == "y" else ax.get_xlim)()[0]
    at: dict[str, set[float]] = {}     # colour → where along the other axis

    for line in list(ax.get_lines()):
        if line.get_label() == ZERO:
            continue
        here, other = (line.get_ydata(), line.get_xdata()) if which == "y" else \
            (line.get_xdata(), line.get_ydata())
        for v, o in zip(here, other):
            if _zero(v):   # the edge: a hollow marker's colour is there
                at.setdefault(to_hex(line.get_markeredgecolor()), set()).add(float(o))
    for bar in ax.patches:
        if hasattr(bar, "get_height") and _zero(bar.get_height() if which == "y"
                                                else bar.get_width()):
            middle = bar.get_x() + bar.get_width() / 2 if which == "y" else \
                bar.get_y() + bar.get_height() / 2
            edge = bar.get_edgecolor()     # a hatched bar's colour, a filled one's none
            at.setdefault(to_hex(edge if edge[3] else bar.get_facecolor()), set()).add(middle)
    for colour, where in at.items():
        spots = sorted(where)
        xs, ys = ([floor] * len(spots), spots) if which == "x" else (spots, [floor] * len(spots))
        ax.plot(xs, ys, ls="none", marker=ZERO_MARKERS[which], ms=10, color=colour,
                clip_on=False, zorder=4, label=ZERO)


def _zero(v: object) -> bool:
    try:
        return math.isfinite(float(v)) and float(v) <= 0     # type: ignore[arg-type]
    except (TypeError, ValueError):
        return False


def has_zeros(fig) -> bool:
    """Whether zeros_at_floor marked any in the figure."""
    return any(line.get_label() == ZERO for ax in fig.axes for line in ax.get_lines())


def with_scale(label: str, log: bool) -> str:
    """`rate (Mpps)` → `rate (Mpps, log scale)` on a log axis."""
    if not log:
        return label
    if label.endswith(")"):
        return label[:-1] + ", log scale)"
    return f"{label} (log scale)"


# --- overlapping tick labels ---------------------------------------------------

def _labels(axis, renderer) -> list:
    """The axis' visible, non-empty major tick labels, with their boxes."""
    out = []
    lo, hi = sorted(axis.get_view_interval())
    for tick in axis.get_major_ticks():
        text = tick.label1
        if not (text.get_visible() and text.get_text()) or not lo <= tick.get_loc() <= hi:
            continue
        out.append((tick.get_loc(), text.get_window_extent(renderer)))
    return sorted(out, key=lambda t: t[0])


def _clash(a, b) -> bool:
    return (a.x0 - PAD < b.x1 and b.x0 - PAD < a.x1 and
            a.y0 - PAD < b.y1 and b.y0 - PAD < a.y1)


def overlaps(fig) -> list[tuple[str, str]]:
    """Pairs of tick labels that intersect on the drawn figure: [(axis title, text)]."""
    renderer = fig.canvas.get_renderer()
    fig.draw(renderer)
    found = []
    for ax in fig.axes:
        if not ax.get_visible():
            continue
        for axis in (ax.xaxis, ax.yaxis):
            boxes = _labels(axis, renderer)
            for i, (_, a) in enumerate(boxes):
                if any(_clash(a, b) for _, b in boxes[i + 1:]):
                    found.append((ax.get_title(), axis.axis_name))
                    break
    return found


def _numeric(axis) -> bool:
    texts = [t.get_text().replace(",", "").replace("−", "-") for t in axis.get_ticklabels()]
    try:
        [float(t) for t in texts if t]
    except ValueError:
        return False
    return True


def declutter(fig, rounds: int = 6) -> None:
    """Until no two tick labels of an axis intersect (or `rounds` tries): a numeric
    axis keeps every other tick, a category x axis turns its labels 30°, then upright
    (category y axes, bar charts' names, are given room by their figure's height)."""
    for _ in range(rounds):
        renderer = fig.canvas.get_renderer()
        fig.draw(renderer)
        changed = False
        for ax in fig.axes:
            if not ax.get_visible():
                continue
            for axis in (ax.xaxis, ax.yaxis):
                boxes = _labels(axis, renderer)
                if not any(_clash(a, b) for (_, a), (_, b) in zip(boxes, boxes[1:])):
                    continue
                if _numeric(axis):   # every other tick, the last one kept
                    locs = [loc for loc, _ in boxes]
                    axis.set_ticks(sorted({*locs[::2], locs[-1]} - {locs[-2]}
                                          if len(locs) % 2 == 0 else set(locs[::2])))
                    changed = True
                elif axis.axis_name == "x" and axis.get_ticklabels()[0].get_rotation() < 90:
                    angle = 30 if not axis.get_ticklabels()[0].get_rotation() else 90
                    for text in axis.get_ticklabels():
                        text.set(rotation=angle, ha="right" if angle < 90 else "center",
                                 rotation_mode="anchor" if angle < 90 else "default")
                    changed = True
        if not changed:
            return
