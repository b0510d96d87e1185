"""PNG plot of interference (interference.py): the victim's received rate, loss
and p99 against what its aggressors sent, a curve per victim in its data
plane's style, its alone baseline a dotted line of the same colour (and a
marker at no load). plots.py draws it (the `interference` plot)."""
from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping, Sequence

from cnfperf.report import axes as value_axes
from cnfperf.report import interference
from cnfperf.report.draw import NoData, Pen, grid, legend, save


def victim(rows: Sequence[Mapping[str, Any]], path: str | Path) -> str:
    found = interference.entries(rows)
    if not found:
        raise NoData("interference: no victim measured alone and beside an aggressor")
    fig, (rate, loss, latency) = grid(3, width=4.6, height=3.6)
    pen = Pen(rows)
    settings = list(dict.fromkeys(e.setting for e in found))
    lat_values: list[float] = []
    for setting in settings:
        mine = [e for e in found if e.setting == setting]
        name, alone = mine[0].switch, mine[0].alone
        xs = [0.0, *(e.sent_pps / 1e3 for e in mine)]
        hollow = [False, *(e.contended for e in mine)]
        for ax, base, ys in (
                (rate, alone.rx_pps / 1e3, [e.beside.rx_pps / 1e3 for e in mine]),
                (loss, 100 * alone.loss_ratio, [100 * e.beside.loss_ratio for e in mine])):
            pen.curve(ax, name, xs, [base, *ys], hollow=hollow,
                      label=setting if ax is rate else None)
            ax.axhline(base, color=pen.colour(name), ls=":", lw=1)
        for e in mine:   # an unpaced aggressor: its load is what it managed to send
            if e.asked_pps is None:
                rate.annotate("max", (e.sent_pps / 1e3, e.beside.rx_pps / 1e3), fontsize=8,
                              xytext=(-8, 6), textcoords="offset points")
        if alone.p99_ns is not None:
            p99 = [(x, e.beside.p99_ns / 1e3, h) for x, e, h in zip(xs[1:], mine, hollow[1:])
                   if e.beside.p99_ns is not None]
            pts = [(0.0, alone.p99_ns / 1e3, False), *p99]
            pen.curve(latency, name, [p[0] for p in pts], [p[1] for p in pts],
                      hollow=[p[2] for p in pts])
            latency.axhline(alone.p99_ns / 1e3, color=pen.colour(name), ls=":", lw=1)
            lat_values += [p[1] for p in pts]
    for ax, ylabel, title in ((rate, "victim's received rate (kpps)", "victim's throughput"),
                              (loss, "victim's loss (%)", "victim's loss")):
        ax.set_ylim(bottom=0)
        ax.set_ylabel(ylabel, fontsize=9)
        ax.set_title(title, fontsize=10)
    log = value_axes.values_axis(latency, lat_values, "y") if lat_values else False
    latency.set_ylabel(value_axes.with_scale("victim's p99 latency (µs)", log), fontsize=9)
    latency.set_title("victim's p99", fontsize=10)
    for ax in (rate, loss, latency):
        ax.set_xlabel("aggressors' sent rate (kpps; 0: alone)", fontsize=9)
        ax.grid(True, alpha=0.3)
    legend(rate, title="victim")
    pen.footnote(fig)
    return save(fig, path)
