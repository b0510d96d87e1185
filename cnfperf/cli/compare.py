"""`cnfperf compare`: two runs side by side, or a series' trends."""
from __future__ import annotations

import argparse
import json
import sys
import textwrap
from pathlib import Path
from typing import Any

from cnfperf import UserError
from cnfperf.report import explain, trend
from cnfperf.report.compare import HEADERS, compare
from cnfperf.report.tables import summary_table
from cnfperf.cli.common import EXIT_REGRESSION, find_run, open_store, results_and_json

SHOWN_RUNS = 10   # a series' runs named in its table's title; more: the first and last


def add(sub: Any) -> None:
    """Its commands, on the command line's subparsers."""
    compare = sub.add_parser(
        "compare", help="two runs side by side, with ratios B/A; over more runs, each "
        "point's trend (regressions, progressions)",
        description="Two runs: their points side by side, with ratios B/A. Three runs or more "
        "(oldest first), --last N or --trend: a series, each point's values over it grouped "
        "by jumpavg (FD.io CSIT's trending), the latest group against the one before: "
        f"regression, progression or normal; exit {EXIT_REGRESSION} when a point regressed.")
    compare.add_argument("runs", nargs="*", metavar="RUN",
                         help="run ids (or latest), oldest first")
    compare.add_argument("--last", type=int, metavar="N",
                         help="the series: the N latest runs made from the same scenario as RUN "
                              "(default latest), RUN the newest")
    compare.add_argument("--trend", action="store_true",
                         help="two runs as a series too (a trend, not side by side)")
    compare.add_argument("--metric", metavar="M,…",
                         help="a series' metrics: rate (a search's rate found, else the "
                              "received rate), p50, p99 (latency); default all")
    compare.add_argument("--min-change", type=float, metavar="PCT",
                         help="a series' step smaller than this %% is none: its groups are "
                              "taken for one (default 0: jumpavg alone decides)")
    compare.add_argument("--out", metavar="DIR",
                         help="where a series' trend plots go (default: the newest run's "
                              "directory, trend/)")
    compare.add_argument("--no-plots", action="store_true",
                         help="a series' verdicts only, no plots (a second or so less per "
                              "point)")
    results_and_json(compare)
    compare.set_defaults(func=_compare)


def _compare(args: argparse.Namespace) -> int:
    store = open_store(args)
    if args.last is None and not args.trend and len(args.runs) == 2:
        given = [flag for flag, value in (("--metric", args.metric), ("--min-change",
                                          args.min_change), ("--out", args.out),
                                          ("--no-plots", args.no_plots or None))
                 if value is not None]
        if given:
            raise UserError(given[0], "is for a series: name three runs or more, or give "
                                      "--last N or --trend")
        return _side_by_side(args, store)
    return _trend(args, store, _series(args, store))


def _side_by_side(args: argparse.Namespace, store: Any) -> int:
    run_a = store.run(find_run(store, args.runs[0], "RUN_A"))
    run_b = store.run(find_run(store, args.runs[1], "RUN_B"))
    rows, notes = compare(run_a, run_b)
    why, differences = explain.compared(run_a, run_b, rows)
    if args.json:
        print(json.dumps({"a": run_a["id"], "b": run_b["id"], "columns": HEADERS,
                          "rows": rows, "notes": notes, "differences": differences}, indent=1))
        return 0
    if not rows:
        raise UserError("RUN_B", f"runs {run_a['id']} and {run_b['id']} share no point")
    print(summary_table((f"A = run {run_a['id']}, B = run {run_b['id']}", HEADERS, rows)))
    for note in [*notes, *why]:
        print(note)
    return 0


def _series(args: argparse.Namespace, store: Any) -> list[dict[str, Any]]:
    """The stored runs of the series, oldest first: those named, or with --last
    the N latest made from RUN's scenario (trend.same_scenario) that finished a
    point, RUN the newest."""
    if args.last is None:
        if len(args.runs) < 2:
            raise UserError("RUN", "a series needs two runs or more, oldest first (or --last N)")
        ids = [find_run(store, text) for text in args.runs]
        if twice := next((i for i in ids if ids.count(i) > 1), None):
            raise UserError("RUN", f"run {twice} is named twice")
        runs = [store.run(i) for i in ids]
        later = [(a, b) for a, b in zip(runs, runs[1:]) if a["started"] > b["started"]]
        for a, b in later:
            print(f"cnfperf: warning: run {a['id']} started after run {b['id']}, which "
                  "follows it in the series (oldest first)", file=sys.stderr)
        return runs
    if args.last < 2:
        raise UserError("--last", f"a series needs two runs or more (got {args.last})")
    if len(args.runs) > 1:
        raise UserError("RUN", f"--last takes one run, the newest of its series (got "
                               f"{len(args.runs)})")
    newest = store.run(find_run(store, args.runs[0] if args.runs else "latest"))
    if not (newest.get("spec") or {}).get("doc"):
        raise UserError("RUN", f"run {newest['id']} was stored without its scenario (made by "
                               "an older cnfperf): name the series' runs instead of --last")
    listed = [r for r in store.runs() if r["stored"]]
    before = [r["id"] for r in listed if r["started"] <= newest["started"]
              and r["id"] != newest["id"]]
    runs = [newest]
    for run_id in reversed(before):
        if len(runs) == args.last:
            break
        if trend.same_scenario({"spec": store.spec(run_id)}, newest):   # its plan alone first
            runs.insert(0, store.run(run_id))
    if len(runs) < 2:
        raise UserError("--last", f"no other stored run was made from run {newest['id']}'s "
                                  "scenario (file and flags alike)")
    return runs


def _metrics(text: str | None) -> list[str]:
    if text is None:
        return list(trend.METRICS)
    names = [m.strip() for m in text.split(",") if m.strip()]
    unknown = [m for m in names if m not in trend.METRICS]
    if unknown or not names:
        what = f"unknown metric {unknown[0]!r}" if unknown else "names no metric"
        raise UserError("--metric", f"{what}; known: {', '.join(trend.METRICS)}")
    return list(dict.fromkeys(names))


def _trend(args: argparse.Namespace, store: Any, runs: list[dict[str, Any]]) -> int:
    metrics = _metrics(args.metric)
    min_change = args.min_change or 0.0
    if not min_change >= 0:   # NaN too
        raise UserError("--min-change", f"must be 0 or more (got {min_change:g})")
    if args.no_plots and args.out:
        raise UserError("--out", "where plots go, and --no-plots draws none: one or the other")
    ids = [r["id"] for r in runs]
    out = Path(args.out) if args.out else store.directory / "runs" / ids[-1] / "trend"
    if out.exists() and not out.is_dir():
        raise UserError("--out", f"{out} is not a directory")
    found, notes = trend.trends(runs, metrics, min_change)
    if not found:
        raise UserError("RUN", f"runs {', '.join(ids)} share no point with a value to trend "
                               f"(the newest, {ids[-1]}, and one other at least)")
    from cnfperf.report import trend_plot   # matplotlib: only when plots are drawn
    plots = {} if args.no_plots else trend_plot.draw_all(found, ids, out)
    verdicts = [t.verdict for t in found]
    if args.json:
        print(json.dumps({"runs": ids, "metrics": metrics, "min_change": min_change,
                          "plots": None if args.no_plots else str(out),
                          "rows": [{**t.to_dict(), "plot": plots.get(t.key)} for t in found],
                          "regressions": verdicts.count(trend.REGRESSION),
                          "progressions": verdicts.count(trend.PROGRESSION),
                          "notes": notes}, indent=1))
    else:
        shown = " ".join(ids) if len(ids) <= SHOWN_RUNS else f"{ids[0]} … {ids[-1]}"
        title = f"trend over {len(ids)} runs, oldest first: {shown}"
        print(summary_table((title, trend.HEADERS, [t.row() for t in found])))
        print("verdicts: " + ", ".join(f"{verdicts.count(v)} {v}" for v in
                                       (trend.REGRESSION, trend.PROGRESSION, trend.NORMAL)))
        said = trend.whys(found)
        if said:
            print("what else went with each change, the most telling first:")
            print("\n".join(textwrap.fill(line, 100, subsequent_indent="    ") for line in said))
        for note in notes:
            print(note)
        if plots:
            print(f"plots: {out}")
    return EXIT_REGRESSION if trend.REGRESSION in verdicts else 0
