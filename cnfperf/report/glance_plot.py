"""The at-a-glance chart (glance.py's entries): a row of panels per mode, a panel
per frame size, a horizontal bar per data plane, the best on top, its value
written beside it. Throughput bars are the best received rate; latency bars the
median (p50), a line on to the p99 mark. Error bars: the 95% confidence
interval, when repeated."""
from __future__ import annotations

from pathlib import Path
from typing import Sequence

from cnfperf.report import axes as value_axes
from cnfperf.report import kinds
from cnfperf.report.draw import Pen, figure, save
from cnfperf.report.glance import Entry
from cnfperf.report.plots import NoData

MAX_SIZES = 3          # panels per mode: the smallest, a middle and the largest size
BAR_INCHES = 0.32      # height of a panel per bar
PANEL_INCHES = 1.3     # and for its title and axis


def sizes(found: Sequence[Entry], board: tuple[str, str]) -> list[int]:
    """The frame sizes a row of panels shows (Entry.board: what it ranks)."""
    every = sorted({e.size for e in found if e.board == board})
    if len(every) <= MAX_SIZES:
        return every
    return [every[0], every[len(every) // 2], every[-1]]


def _err(s, scale: float) -> list[list[float]] | None:
    if s is None or s.ci_low is None:
        return None
    return [[(s.mean - s.ci_low) / scale], [(s.ci_high - s.mean) / scale]]


def _num(v: float) -> str:
    return value_axes.number(float(f"{v:.3g}"))


def _throughput(ax, pen: Pen, mine: Sequence[Entry]) -> None:
    values = [e.value.mean / 1e6 for e in mine]
    for i, (e, v) in enumerate(zip(mine, values)):
        pen.bar(ax, e.curve, i, v, _err(e.value, 1e6), e.contended, horizontal=True,
                height=0.7)
    log = value_axes.values_axis(ax, values, "x")
    floor = ax.get_xlim()[0]        # a log axis' 0: its number goes there (axes.ZERO)
    ends = [max(v, (e.value.ci_high or 0) / 1e6, floor) for e, v in zip(mine, values)]
    for i, (v, end) in enumerate(zip(values, ends)):
        ax.text(end, i, f"  {_num(v)}", va="center", fontsize=8)
    _room(ax, log)
    ax.set_xlabel(value_axes.with_scale("best received rate (Mpps)", log))


def _latency(ax, pen: Pen, mine: Sequence[Entry]) -> None:
    p50 = [e.value.mean / 1e3 for e in mine]
    p99 = [None if e.p99 is None else e.p99.mean / 1e3 for e in mine]
    for i, (e, mid, tail) in enumerate(zip(mine, p50, p99)):
        pen.bar(ax, e.curve, i, mid, _err(e.value, 1e3), e.contended, horizontal=True,
                height=0.7)
        if tail is not None:
            colour = pen.colour(e.curve)
            ax.plot([mid, tail], [i, i], color=colour, lw=1.2)
            ax.plot([tail], [i], marker="|", ms=12, mew=2, color=colour)
    log = value_axes.values_axis(ax, [*p50, *(v for v in p99 if v is not None)], "x")
    floor = ax.get_xlim()[0]
    for i, (mid, tail) in enumerate(zip(p50, p99)):
        text = f"  {_num(mid)}" + (f" · {_num(tail)}" if tail is not None else "")
        ax.text(max(tail if tail is not None else mid, floor), i, text, va="center",
                fontsize=8)
    _room(ax, log)
    ax.set_xlabel(value_axes.with_scale("p50 bar · p99 mark (µs)", log))


def _room(ax, log: bool) -> None:
    """Room right of the longest bar for its number."""
    low, high = ax.get_xlim()
    ax.set_xlim(low, high * (6 if log else 1.3))


def chart(found: Sequence[Entry], path: str | Path) -> str:
    """A row of panels per board (throughput; latency of each kind), a panel per
    frame size (up to MAX_SIZES)."""
    boards = list(dict.fromkeys(e.board for e in found))   # entries come in board order
    if not boards:
        raise NoData("at a glance: no throughput or latency points")
    shown = {b: sizes(found, b) for b in boards}
    cols = max(len(s) for s in shown.values())
    heights = [BAR_INCHES * max(sum(e.board == b and e.size == s for e in found)
                                for s in shown[b]) + PANEL_INCHES for b in boards]
    # a panel wide enough for its longest path name beside the bars (~0.06 in a
    # character at 8 pt), so that the bars and the title keep their room
    longest = max(len(e.curve) for e in found)
    fig = figure(cols, 1, width=max(5.4, 3.0 + 0.06 * longest), height=sum(heights))
    grid = fig.add_gridspec(len(boards), cols, height_ratios=heights)
    pen = Pen([{"switch": e.curve, "switch_facts": e.switch_facts} for e in found])
    for row, board in enumerate(boards):
        for col, size in enumerate(shown[board]):
            ax = fig.add_subplot(grid[row, col])
            mine = [e for e in found if e.board == board and e.size == size]
            (_latency if board[0] == "latency" else _throughput)(ax, pen, mine)
            ax.set_yticks(range(len(mine)), [e.curve for e in mine], fontsize=8)
            ax.set_ylim(len(mine) - 0.5, -0.5)   # the best on top
            ax.grid(True, axis="x", which="major", alpha=0.3)
            ax.set_axisbelow(True)
            what = f"Latency ({kinds.said(board[1])})" if board[0] == "latency" \
                else "Throughput"
            ax.set_title(f"{what}, {size} B frames", fontsize=10)
    pen.footnote(fig)
    return save(fig, path)
