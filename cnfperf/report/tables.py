"""Plain-text tables of a run, from the rows the results store returns.

One table per run: a row per pair of every point, then the point's total when
it has more than one pair. Throughput rows report the one-way latency the
receiver measured (sender and receiver share the host's clock); latency rows
the round trip the client measured.
"""
from __future__ import annotations

from typing import Any, Sequence

from cnfperf.scenario import format_rate

HEADERS = ("switch", "api", "mode", "pair", "offered", "tx kpps", "rx kpps", "sent",
           "received", "loss %", "rx Mbit/s", "p50 µs", "p99 µs", "max µs")
RIGHT = set(HEADERS[4:])


def render(headers: Sequence[str], rows: list[Sequence[str]], right: set[str] = RIGHT) -> str:
    widths = [max(len(h), *(len(r[i]) for r in rows)) if rows else len(h)
              for i, h in enumerate(headers)]

    def line(cells: Sequence[str]) -> str:
        return "  ".join(c.rjust(w) if h in right else c.ljust(w)
                         for c, w, h in zip(cells, widths, headers)).rstrip()

    return "\n".join([line(headers), line(["-" * w for w in widths]), *map(line, rows)])


def run_table(run: dict[str, Any]) -> str:
    rows: list[list[str]] = []
    notes: list[str] = []
    for point in run["points"]:
        label = [point["switch"], point["api"], point["mode"]]
        if point["status"] != "done":
            rows.append([*label, "-", format_rate(point["rate"] or 0), point["status"],
                         *[""] * (len(HEADERS) - 6)])
            notes.append(f"point {point['idx'] + 1} {point['status']}: {point.get('error') or ''}")
            continue
        pairs = point["per_pair"]
        for i, pair in enumerate(pairs):
            rows.append([*(label if i == 0 else ["", "", ""]), str(pair["pair"]), *_cells(pair)])
        if len(pairs) > 1:
            rows.append(["", "", "", "all", *_cells(point)])
    return "\n".join([render(HEADERS, rows), *notes])


def _cells(r: dict[str, Any]) -> list[str]:
    # "offered" is what was asked for; tx kpps what the senders really sent.
    return [format_rate(r["offered_pps"] or 0), f"{(r['tx_pps'] or 0) / 1e3:.1f}",
            f"{(r['rx_pps'] or 0) / 1e3:.1f}", str(r["sent"]), str(r["received"]),
            f"{100 * (r['loss_ratio'] or 0):.3f}", f"{(r['rx_bps'] or 0) / 1e6:.1f}",
            _us(r.get("lat_p50_ns")), _us(r.get("lat_p99_ns")), _us(r.get("lat_max_ns"))]


def _us(ns: float | None) -> str:
    if ns is None:
        return "-"
    us = ns / 1e3
    return f"{us:.1f}" if us < 1000 else f"{us:.0f}"


def runs_table(runs: list[dict[str, Any]]) -> str:
    import time

    rows = [[r["id"], time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(r["started"])),
             r["status"], f"{r['stored']}/{r['points']}", r["switches"] or "", r["apis"] or "",
             r["modes"] or ""] for r in runs]
    return render(("run", "started", "status", "points", "switches", "apis", "modes"), rows,
                  right={"points"})
