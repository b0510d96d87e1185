"""`cnfperf results list|show|export` and `cnfperf report`: stored runs read."""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

from cnfperf import UserError
from cnfperf.report import hlog
from cnfperf.report.export import write_cpu_csv, write_csv, write_nf_ports_csv
from cnfperf.report.summary import images
from cnfperf.report.tables import run_table, runs_table
from cnfperf.cli.common import expect_run_flag, open_store, results_and_json, stored_run
from cnfperf.cli.shown import (expectations, has_results, held, paper_of, print_gates,
                               print_tables, write_report)


def add(sub: Any) -> None:
    """Its commands, on the command line's subparsers."""
    report = sub.add_parser("report", help="HTML report with plots (PNG) of a run")
    report.add_argument("run", metavar="RUN", help="run id, or latest")
    report.add_argument("--out", metavar="DIR",
                        help="where to write (default: the run's directory, report/)")
    expect_run_flag(report)
    results_and_json(report, json_flag=False)
    report.set_defaults(func=_report)

    results = sub.add_parser("results", help="stored results")
    rsub = results.add_subparsers(dest="action", required=True, metavar="ACTION")
    lst = rsub.add_parser("list", help="all runs")
    results_and_json(lst)
    lst.set_defaults(func=_results_list)
    show = rsub.add_parser("show", help="one run: its points, pairs and endpoints")
    show.add_argument("run", metavar="RUN", help="run id (as `results list` shows it), or latest")
    expect_run_flag(show)
    results_and_json(show)
    show.set_defaults(func=_results_show)
    export = rsub.add_parser("export", help="one run as CSV (a row per pair and per point), or "
                                           "its latency as HdrHistogram logs")
    export.add_argument("run", metavar="RUN", help="run id, or latest")
    export.add_argument("--csv", action="store_true", help="CSV (the format)")
    export.add_argument("--hdrh", action="store_true",
                        help="an HdrHistogram log (.hlog) per point with latency instead: a "
                             "histogram per pair and the total, tagged pair<N> and all")
    export.add_argument("--nf-ports", action="store_true",
                        help="a row per port of every network function instead (its counters "
                             "and drops by reason)")
    export.add_argument("--cpu", action="store_true",
                        help="a row per node of every point instead: its CPU use over the "
                             "measured window, cycles per packet, threads and their cores")
    export.add_argument("--out", "-o", metavar="FILE",
                        help="write here instead of stdout (--hdrh: the directory, default the "
                             "run's hdrh/)")
    results_and_json(export, json_flag=False)
    export.set_defaults(func=_results_export)


def _results_list(args: argparse.Namespace) -> int:
    runs = open_store(args).runs()
    print(json.dumps(runs, indent=1) if args.json else runs_table(runs))
    return 0


def _results_show(args: argparse.Namespace) -> int:
    store, run = stored_run(args, args.run)
    found, earlier = held(store, run, args.expect_run)
    if args.json:
        compared = paper_of(run)
        print(json.dumps({**run, **({"paper": compared.to_dict()} if compared else {}),
                          **({"expectations": expectations(found, earlier)} if found else {})},
                         indent=1, default=str))
    else:
        started = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(run["started"]))
        print(f"run {run['id']}  {run['status']}  started {started}  "
              f"cnfperf {run['cnfperf_version']}  engine {run['engine_version']}")
        print(run_table(run, found))
        if used := images(run):
            print(f"images: {used}")
        print_tables(run)
        print_gates(found, earlier)
    return 0


def _results_export(args: argparse.Namespace) -> int:
    if args.csv and args.hdrh:
        raise UserError("--hdrh", "one format at a time: --csv or --hdrh")
    if not args.csv and not args.hdrh:
        raise UserError("--csv", "required (or --hdrh)")
    if args.hdrh and (args.nf_ports or args.cpu):
        raise UserError("--nf-ports" if args.nf_ports else "--cpu",
                        "a CSV of its own: not with --hdrh")
    store, run = stored_run(args, args.run)
    if args.hdrh:
        return _export_hdrh(store, run, args.out)
    if args.nf_ports and args.cpu:
        raise UserError("--cpu", "one file at a time: --nf-ports or --cpu")
    write = write_nf_ports_csv if args.nf_ports else write_cpu_csv if args.cpu else write_csv
    if args.out is None:
        write(run, sys.stdout)
        return 0
    with open(args.out, "w", newline="") as f:
        n = write(run, f)
    print(f"{args.out}: {n} rows", file=sys.stderr)
    return 0


def _export_hdrh(store: Any, run: dict[str, Any], out: str | None) -> int:
    """An .hlog per point with latency; each file's path on stdout."""
    if not any(hlog.intervals(p) for p in run["points"]):
        raise UserError("RUN", f"run {run['id']} has no latency histogram to export")
    directory = Path(out) if out else store.directory / "runs" / run["id"] / "hdrh"
    if directory.exists() and not directory.is_dir():
        raise UserError("--out", f"{directory} is not a directory (--hdrh writes a file "
                                 "per point)")
    for path, _ in hlog.write(run, directory):
        print(path)
    return 0


def _report(args: argparse.Namespace) -> int:
    store, run = stored_run(args, args.run)
    if not has_results(run):
        raise UserError("RUN", f"run {run['id']} has no finished point to report")
    print(write_report(store, run, args.out, args.expect_run))
    return 0
