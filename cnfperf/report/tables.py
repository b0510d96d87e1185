"""Plain-text tables of a run, from the rows the results store returns.

The run table: a row per pair of every point, then the point's total when
it has more than one pair. Its `latency` column says what the p50/p99/max
columns hold: throughput rows the one-way latency the receiver measured (sender
and receiver share the host's clock; none when they ran on two hosts:
summary.two_clocks); latency rows the round trip a split tester's client
measured, or one way on a single tester's clock (kinds.py).
"""
from __future__ import annotations

import textwrap
import time
from typing import Any, Callable, Sequence

from cnfperf import fields
from cnfperf.experiments.sweep import format_seconds, nominal_seconds
from cnfperf.rate import show
from cnfperf.results.model import STALL_MARK
from cnfperf.report import baselines, emulation, gates as gated, kinds, stalls
from cnfperf.report.html import fmt
from cnfperf.report.summary import param, two_clocks, varying
from cnfperf.runtimes.base import cpu_list
from cnfperf import testers
from cnfperf.testers import SET

HEADERS = ("switch", "api", "mode", "pair", "offered", "tx kpps", "rx kpps", "sent",
           "received", "loss %", stalls.COLUMN, "rx Mbit/s", "latency", "p50 µs", "p99 µs",
           "max µs")
RIGHT = set(HEADERS[4:]) - {"latency"}


def render(headers: Sequence[str], rows: list[Sequence[str]], right: set[str] = RIGHT) -> str:
    widths = [max(len(h), *(len(r[i]) for r in rows)) if rows else len(h)
              for i, h in enumerate(headers)]

    def line(cells: Sequence[str]) -> str:
        return "  ".join(c.rjust(w) if h in right else c.ljust(w)
                         for c, w, h in zip(cells, widths, headers)).rstrip()

    return "\n".join([line(headers), line(["-" * w for w in widths]), *map(line, rows)])


def run_table(run: dict[str, Any], gates: Sequence[gated.Gate] = ()) -> str:
    """The run's table; with `gates` (its points held to their expectations:
    report/gates.py) a column saying whether each point met them."""
    points = run["points"]
    # A sweep's other axes (size, burst, …) get a column of their own; the
    # offered rate has its own already.
    extra = varying(points, [f.name for f in fields.labelled()
                             if f.label == "named" and f.name not in ("rate", "tester")])
    if any(p.get("rep") for p in points):
        extra.append("rep")
    # Points with VMs say how they ran (`1 tcg (emulated)`), as the report does.
    vms = [emulation.COLUMN] if emulation.any_vms(points) else []
    # A run that measured its generator first (generator_baseline): each
    # point's received rate as a share of what the generator moved alone.
    gen = [baselines.COLUMN] if baselines.any_share(points) else []
    gen += [gated.COLUMN] if gates else []
    headers = (*HEADERS[:3], "tester", *vms, *extra, *HEADERS[3:], *gen)
    rows: list[list[str]] = []
    notes: list[str] = tester_notes(points)
    if notice := emulation.notice(points):
        notes.append(notice)
    if clocks := two_clocks(points):
        notes.append(clocks)
    notes += baselines.notes(run)
    for point in points:
        label = [point["switch"], point["api"], point["mode"], point.get("tester") or MISSING,
                 *([emulation.said(point)] if vms else []),
                 *(str(point.get(f, 0) + 1) if f == "rep" else _axis(point, f) for f in extra)]
        said = [gated.said(point, gates)] if gates else []
        if point["status"] != "done":
            rows.append([*label, MISSING, show(point["rate"] or 0), point["status"],
                         *[""] * (len(HEADERS) - 6 + len(gen) - len(said)), *said])
            notes.append(f"point {point['idx'] + 1} {point['status']}: {point.get('error') or ''}")
            continue
        pairs = point["per_pair"]
        # the share is the point's (all its pairs' against its baseline's)
        mine = ([_percent(baselines.percent(point))] if baselines.COLUMN in gen else []) + said
        for i, pair in enumerate(pairs):
            rows.append([*(label if i == 0 else [""] * len(label)), str(pair["pair"]),
                         *_cells(pair, stalls.said(point, pair["pair"])),
                         *(mine if len(pairs) == 1 else [""] * len(gen))])
        if len(pairs) > 1:
            rows.append([*[""] * len(label), "all", *_cells(point, stalls.said(point)), *mine])
    if any(stalls.stalled(p) for p in points if p["status"] == "done"):
        notes.append(f"{stalls.COLUMN}: the most any poller of the pair (tester end, NF) lost "
                     f"to stalls in its window; ! more than {100 * STALL_MARK:g} % of it")
    right = RIGHT | set(extra) | (set(gen) - {gated.COLUMN})
    return "\n".join([render(headers, rows, right), *notes])


def tester_notes(points: Sequence[dict[str, Any]]) -> list[str]:
    """Why the points' testers: `tester single for ovs, testpmd (auto: split would
    put 3 busy pollers on 2 cores)`; a set tester only where its busy pollers
    outnumbered the cores. Points stored before cnfperf said why say nothing."""
    groups: dict[tuple[str, str], dict[str, None]] = {}
    for p in points:
        why, pollers, cores = p.get("tester_why"), p.get("pollers"), p.get("point_cores")
        if why == SET and pollers is not None and cores and pollers > cores:
            why = f"set; {pollers} busy pollers on {cores} cores: CPU contention"
        elif why == SET or not why:
            continue
        groups.setdefault((str(p.get("tester")), why), {})[str(p.get("switch"))] = None
    return [f"tester {tester} for {', '.join(switches)} ({why})"
            for (tester, why), switches in groups.items()]


def _axis(point: dict[str, Any], name: str) -> str:
    value = param(point, name)
    if value is None and fields.profiled(name):
        return "–"   # a pair's own value, in a point without that pair
    return fields.show(name, value)


# A value the store does not have (NULL: not measured, or stored before its
# column came): a dash, never 0, which would read as a measured rate or no loss.
MISSING = "–"


def _cells(r: dict[str, Any], stall: str = MISSING) -> list[str]:
    # "offered" is what was asked for; tx kpps what the senders really sent.
    return [MISSING if r.get("offered_pps") is None else show(r["offered_pps"]),
            _scaled(r.get("tx_pps"), 1e-3, ".1f"), _scaled(r.get("rx_pps"), 1e-3, ".1f"),
            _scaled(r.get("sent"), 1, "d"), _scaled(r.get("received"), 1, "d"),
            _scaled(r.get("loss_ratio"), 100, ".3f"), stall,
            _scaled(r.get("rx_bps"), 1e-6, ".1f"),
            kinds.said(r.get("latency_kind")) if r.get("lat_p50_ns") is not None else MISSING,
            _us(r.get("lat_p50_ns")), _us(r.get("lat_p99_ns")), _us(r.get("lat_max_ns"))]


def _scaled(value: float | None, factor: float, spec: str) -> str:
    return MISSING if value is None else format(value * factor if factor != 1 else value, spec)


def _percent(value: float | None) -> str:
    return MISSING if value is None else f"{value:.1f}"


def _us(ns: float | None) -> str:
    if ns is None:
        return MISSING
    us = ns / 1e3
    return f"{us:.1f}" if us < 1000 else f"{us:.0f}"


def runs_table(runs: list[dict[str, Any]]) -> str:
    rows = [[r["id"], time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(r["started"])),
             r["status"], f"{r['stored']}/{r['points']}", r["switches"] or "", r["apis"] or "",
             r["modes"] or ""] for r in runs]
    return render(("run", "started", "status", "points", "switches", "apis", "modes"), rows,
                  right={"points"})


def summary_table(table: tuple[str, list[str], list[list[Any]]], note: str = "") -> str:
    """A table of report/summary.py as text: its title, then the columns, then
    the note that says how to read them, if any."""
    title, headers, rows = table
    cells = [[fmt(v) for v in row] for row in rows]
    right = {h for i, h in enumerate(headers)
             if rows and all(isinstance(r[i], (int, float)) and not isinstance(r[i], bool)
                             or r[i] is None for r in rows)}
    text = f"{title}\n{render(headers, cells, right)}"
    return f"{text}\n{textwrap.fill(note, 100)}" if note else text


def plan_text(swept: Any, placed_points: Sequence[Any], done: set[str] = frozenset(),
              problems: Callable[[Any], list[str]] | None = None) -> str:
    """What --dry-run prints: the sweep, then every point as the run would place
    it (runner.test_points): its tester, its cores, and with `problems`
    (checks.host_problems) what keeps this host from running it; then why the
    testers (tester_notes, as the run's table says it)."""
    lines = [swept.plan.describe(), "points"]
    width = len(str(len(placed_points)))
    seconds = 0.0
    for i, (p, placed) in enumerate(zip(swept.plan.points, placed_points)):
        s = placed.scenario
        noise = {e.name for pair in placed.noise_pairs for e in pair.endpoints}
        cores = " ".join(f"{'noise-' if e.name in noise else ''}{e.role}:{cpu_list(e.all_cores)}"
                         for e in placed.engines)
        cores += "".join(f" nf:{cpu_list(nf.cores or (nf.cpu,))}" for nf in placed.nfs)
        state = "  (done)" if p.key in done else ""
        if not state:
            seconds += nominal_seconds(s.model_dump())
        # The sweep's other axes (mmsg, …) and the repetition, after describe()'s.
        extra = fields.undescribed(p.label(swept.plan.axes), also=("burst",))
        lines.append(f"  [{i + 1:>{width}}] {' '.join([s.describe(), f'burst={s.burst}', *extra])}"
                     f"  cores {cores}{state}")
        if s.nfs:
            lines.append(f"        path: {placed.path()}")
        if not s.pin:
            lines.append("        unpinned: the switch and NFs may run on cores "
                         f"{cpu_list(placed.cpus)}")
        if s.noise != "none":
            lines.append(f"        noise: {s.noise} on {s.noise_on}")
        if s.fault != "none":
            lines.append(f"        fault: {s.fault} down {s.fault_at:g} s into the measured "
                         f"window, for {s.fault_duration:g} s")
        lines += [f"        warning: {w}" for w in placed.warnings]
        lines += [f"        cannot run here: {why}" for why in (problems(s) if problems else ())]
    # generator_baseline: what is measured before the points (run/baseline.py)
    first = dict.fromkeys(f"{b.describe()} burst={b.burst}" for b in
                          (testers.baseline(p.scenario) for p in placed_points) if b)
    lines += [f"  generator baseline first: {b}" for b in first]
    lines += [f"  {note}" for note in tester_notes([
        {"tester": p.scenario.tester, "switch": p.scenario.switch, "tester_why": p.tester_why,
         "pollers": p.pollers, "point_cores": len(p.cpus)} for p in placed_points])]
    switches = ", ".join(dict.fromkeys(p.scenario.switch for p in placed_points))
    lines.append(f"data planes: {switches}; traffic time ≥ {format_seconds(seconds)} "
                 "(plus setup and teardown of every point)")
    return "\n".join(lines)
