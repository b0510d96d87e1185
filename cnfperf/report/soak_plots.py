"""PNG plot of a run's soaks (plots.py's style and helpers): per second of the
soak, the received rate, the loss and the latency (p50 solid, p99 dashed), a
curve per soaked point in its data plane's style; a resumed soak's segments
follow each other on one time axis, each new one marked by a dotted line."""
from __future__ import annotations

from pathlib import Path
from typing import Any

from cnfperf.report import axes as value_axes
from cnfperf.report import soak, summary
from cnfperf.report.draw import Pen, grid, save
from cnfperf.report.plots import NoData, Plot


def series(run: dict[str, Any], path: str | Path) -> str:
    points = soak.soaked(run)
    if not points:
        raise NoData("soak: no point soaked")
    axes = summary.varying(summary.done_points(run))
    fig, (rate, loss, latency) = grid(3, max_cols=1, width=8.0, height=2.6)
    pen = Pen([{"switch": p.get("switch"), "switch_facts": p.get("switch_facts")}
               for p in points])
    minutes = max(r["at_s"] for p in points for r in p["soak"]) > 300
    scale, unit = (60.0, "min") if minutes else (1.0, "s")
    lat_values: list[float] = []
    for p in points:
        rows = p["soak"]
        name = str(p.get("switch"))
        label = summary.label(p, axes) if axes else name
        ts = [r["at_s"] / scale for r in rows]
        pen.curve(rate, name, ts, [(r["rx_pps"] or 0) / 1e3 for r in rows], label=label)
        pen.curve(loss, name, ts, [100 * (r["loss_ratio"] or 0) for r in rows])
        for key, ls in (("lat_p50_ns", "-"), ("lat_p99_ns", "--")):
            ys = [(r[key] or 0) / 1e3 for r in rows]
            pen.curve(latency, name, ts, ys, ls=ls,
                      label=f"{label} {key[4:7]}" if len(points) == 1 else None)
            lat_values += ys
        for a, b in zip(rows, rows[1:]):
            if b["segment"] != a["segment"]:
                for ax in (rate, loss, latency):
                    ax.axvline(a["at_s"] / scale, color="grey", ls=":", lw=1)
    rate.set_ylabel("received (kpps)")
    loss.set_ylabel("loss (%)")
    loss.set_ylim(bottom=0)
    log = value_axes.values_axis(latency, lat_values, "y")
    latency.set_ylabel(value_axes.with_scale("latency (µs)", log))
    latency.set_xlabel(f"time into the soak ({unit})")
    for ax in (rate, loss, latency):
        ax.grid(True, alpha=0.3)
    rate.legend(fontsize=8)
    if len(points) == 1:
        latency.legend(fontsize=8)
    pen.footnote(fig)
    return save(fig, path)


def make(run: dict[str, Any], out_dir: str | Path) -> list[Plot]:
    if not soak.soaked(run):
        return []
    return [Plot("soak", "Soak: every second of it",
                 series(run, Path(out_dir) / "soak.png"))]
