"""Figures drawn with the Agg canvas directly (no pyplot), so nothing global is
touched and nothing needs a display; the helpers every plot shares."""
from __future__ import annotations

import math
from pathlib import Path
from typing import Sequence

from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter, NullLocator

DPI = 110


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


def save(fig: Figure, path: str | Path) -> str:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=DPI, format="png")
    return str(path)


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


def dash(series: tuple, all_series: Sequence[tuple]) -> str:
    """Series of one data plane share its colour and differ in line style."""
    same = [s for s in all_series if s[0] == series[0]]
    return DASHES[same.index(series) % len(DASHES)]


def legend(ax, **kw) -> None:
    n = len(ax.get_legend_handles_labels()[0]) + len(kw.get("handles", ()))
    if n > 6:   # a long legend would hide the curves: put it beside the panel
        kw.update(loc="upper left", bbox_to_anchor=(1.01, 1.0))
    ax.legend(fontsize=8, title_fontsize=8, **kw)


def time_axis(ax) -> None:
    """Log x labelled 1, 2, 5, 10, 20 … instead of 2×10^1."""
    ax.set_xscale("log")
    ax.xaxis.set_major_locator(LogLocator(subs=(1, 2, 5)))
    ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
    ax.xaxis.set_minor_formatter(NullFormatter())


def finish(ax, title: str) -> None:
    ax.set_title(title, fontsize=10)
    ax.grid(True, alpha=0.3)
    ax.set_ylim(bottom=0)
    if ax.get_legend_handles_labels()[0]:
        legend(ax, title="data plane")
