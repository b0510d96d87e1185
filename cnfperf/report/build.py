"""`cnfperf report RUN`: a stored run turned into PNG plots and one HTML file.

A study's run draws the plots its `[study]` table names; any other run every
plot its data supports (plots.make_all).
"""
from __future__ import annotations

import time
from pathlib import Path
from typing import Any, Sequence

from cnfperf.report import (baselines, contention, cpu, emulation, gates, glance, html,
                            interference, nfs, paper, searches, soak, stalls, summary)

# Host facts worth a line in the report (the store keeps them all).
HOST_FACTS = ("cpu_model", "cores", "usable_cpus", "kernel", "runc", "dpdk", "ovs_dpdk",
              "libxdp", "cnfperf")


def write(run: dict[str, Any], out_dir: Path, held: Sequence[gates.Gate] = (),
          earlier: dict[str, Any] | None = None) -> Path:
    """Writes out_dir/*.png and out_dir/report.html; returns the HTML's path.
    `held`: its points held to their expectations (gates.judged), `run` in
    them being `earlier`."""
    # matplotlib: only when a report is drawn
    from cnfperf.report import nf_plots, plots, search_plots, soak_plots
    from cnfperf.report.rows import rows_from_run

    spec = run.get("spec") or {}
    study = (spec.get("doc") or {}).get("study") or {}
    rows = rows_from_run(run)
    compared, unread = paper.comparison(run)
    published = compared.reference.rows if compared else ()
    out_dir.mkdir(parents=True, exist_ok=True)
    made = (plots.make(rows, out_dir, study["plots"], published) if study.get("plots")
            else plots.make_all(rows, out_dir, published))
    made += nf_plots.make(run, out_dir)
    made += search_plots.make(run, out_dir)
    made += soak_plots.make(run, out_dir)
    figures = [html.Figure(p.title, p.path, _caption(p.name)) for p in made]
    notes = {**cpu.NOTES, "Interference": interference.NOTE,
             "Generator baselines": baselines.NOTE}
    tables = [html.Table(title, headers, rows_, notes.get(title, ""))
              for title, headers, rows_ in summary.all_tables(
                  run, [*nfs.all_tables(run), *cpu.all_tables(run)],
                  [*searches.all_tables(run),
                   *filter(None, [baselines.table(run), soak.table(run),
                                  interference.table(interference.entries(rows))
                                  if interference.tenants(rows) or "interference" in
                                  (study.get("plots") or ()) else None])])]
    if held:   # first: whether the run passed is what a CI job's reader looks for
        tables.insert(0, html.Table(*gates.table(held), f"{gates.NOTE} Here: "
                                    f"{gates.summary_line(held, earlier)}."))
    title = f"cnfperf run {run['id']}" + (f": {study['title']}" if study.get("title") else "")
    done = summary.done_points(run)
    text = f"{len(done)} of {run.get('planned') or len(run.get('points', []))} points"
    if study.get("reproduces"):
        text += f" · reproduces {study['reproduces']}"
    started = time.strftime("%Y-%m-%d %H:%M", time.localtime(run["started"]))
    return Path(html.write(out_dir / "report.html", title, figures=figures, tables=tables,
                           params=_params(run, started), host=_host(run.get("host") or {}),
                           summary=text, glance=_glance(run, out_dir),
                           paper=[html.Table(t, h, r, paper.NOTE if t == paper.POINTS else "")
                                  for t, h, r in (paper.tables(compared) if compared else ())],
                           differences=paper.differences(compared) if compared else (),
                           notice=" ".join(filter(None, (gates.notice(held), notice(done),
                                                         stalls.notice(done),
                                                         emulation.notice(done),
                                                         _sentence(summary.two_clocks(done)),
                                                         _sentence(unread))))))


def _glance(run: dict[str, Any], out_dir: Path) -> list[html.Figure | html.Table]:
    """The at-a-glance chart, then its tables (glance.py); the chart only where
    there is something to rank (two entries at one size and mode)."""
    from cnfperf.report import glance_plot
    found = glance.entries(run)
    out: list[html.Figure | html.Table] = []
    if glance.ranked(found):
        out.append(html.Figure("Data planes ranked", glance_plot.chart(
            found, out_dir / "at_a_glance.png"), _caption("at_a_glance")))
    tables = [t for t in (glance.throughput_table(found), *glance.latency_tables(found)) if t]
    return out + [html.Table(t, h, r, glance.NOTE if i == len(tables) - 1 else "")
                  for i, (t, h, r) in enumerate(tables)]


def notice(points: list[dict[str, Any]]) -> str:
    """The header's warning when points were measured with more busy pollers than
    cores, else nothing."""
    crowded, worst = contention.count(points)
    if not crowded:
        return ""
    return (f"CPU contention: {crowded} of {len(points)} points were measured with more "
            f"busy pollers than cores (up to {worst}). Their numbers show how the "
            "scheduler shared the cores as much as what the data plane can do; they are "
            "drawn hollow in the plots and flagged in the tables' CPU contended column.")


def _sentence(text: str) -> str:
    """A note as a sentence of the header's notice: capitalised, a full stop."""
    return f"{text[0].upper()}{text[1:]}." if text else ""


def _caption(name: str) -> str:
    return {
        "at_a_glance": "Per frame size, each data plane at its best, the best on top: throughput "
                       "is the highest received rate, latency the median (bar) and p99 (mark). "
                       "Error bars: 95% confidence interval of the mean over repetitions.",
        "rx_vs_offered": "The dashed diagonal is received = offered; a curve leaving it "
                         "marks where that data plane starts to drop.",
        "throughput_vs_size": "Best received rate per frame size; Gbps counts frame bytes. "
                              "Hollow diamonds: the paper's values, where the study gives "
                              "them.",
        "scalability": "Left: mean per pair; right: total of all pairs.",
        "rtt_vs_size": "Solid: median (p50); dashed: p99. Round trips (a split tester's "
                       "client) and one-way times (a single tester's) in panels of their "
                       "own, as each title says. Hollow diamonds: the paper's values, "
                       "where the study gives them.",
        "latency_cdf": "Fraction of packets whose latency took at most x: round trips "
                       "(a split tester's client) and one-way times (a single tester's) "
                       "in panels of their own, as each title says.",
        "throughput_bars": "Best received rate of each configuration.",
        "failover": "The receivers' longest gap after the cut (bar: median, whiskers: "
                    "shortest to longest), and where routing daemons ran, when they said "
                    "a session went down (black: median); the rest is the route's move.",
        "latency_vs_load": "Latency trials after each search, at its lowest load and at "
                           "fractions of the rate it found for its last goal (the PDR).",
        "soak": "Every second of each soak: received rate, loss (the receivers' sequence "
                "gaps) and latency (solid p50, dashed p99; the worst pair's). A dotted line "
                "marks where a resumed soak went on.",
        "vs_quota": "Hollow diamonds: the paper's values, where the study gives them.",
        "interference": "The victim (pair 0) beside aggressors (the other pairs) at each load "
                        "they sent, its alone baseline at 0 and dotted across.",
        "latency_vs_nfs": "Markers: each point's p50 and (faded) p99; lines: least-squares "
                          "fits (solid p50, dashed p99) over points alike but for their "
                          "number of NFs, their slope the latency each NF adds.",
    }.get(name, "")


def _params(run: dict[str, Any], started: str) -> dict[str, Any]:
    points = run.get("points", [])
    params: dict[str, Any] = {"command": " ".join(run.get("command") or []),
                              "started": started, "status": run.get("status")}
    for name in ("switch", "api", "mode", "pairs", "size", "burst", "rate", "duration",
                 "warmup", "runtime"):
        values = list(dict.fromkeys(str(summary._param(p, name)) for p in points))
        if values:
            params[name] = ", ".join(values)
    paths = list(dict.fromkeys(summary.path(p) for p in points))
    if paths:
        params["path"] = ", ".join(paths)
    params["engine"] = run.get("engine_version")
    if used := summary.images(run):
        params["images"] = used
    skipped = (run.get("spec") or {}).get("skipped")
    if skipped:   # what a study left out on this host, and why
        params["left out"] = "; ".join(note.removeprefix("skipped ") for note in skipped)
    return params


def _host(host: dict[str, Any]) -> dict[str, Any]:
    return {k: host[k] for k in HOST_FACTS if host.get(k) not in (None, "", [])}
