"""`cnfperf run`: the scenario's flags (a flag per field), the run, and what
its end prints and returns."""
from __future__ import annotations

import argparse
import contextlib
import json
import os
import signal
import sys
from pathlib import Path
from typing import Any, Callable

from cnfperf import UserError, fields, reference, testers
from cnfperf.run import checks, live, runner
from cnfperf.engine import find_engine
from cnfperf.experiments.sweep import check_profiled, format_seconds, parse_values
from cnfperf.run.declared import gather
from cnfperf.report import gates
from cnfperf.report.summary import images
from cnfperf.report.tables import plan_text, run_table
from cnfperf.results.store import Store, results_dir
from cnfperf.cli.common import (EXIT_EXPECTATION, EXIT_FAILURE, LAST, expect_run_flag, find_run,
                                open_store, results_and_json, writable)
from cnfperf.cli.shown import expectations, held, paper_of, print_gates, print_tables


def add(sub: Any) -> None:
    """Its commands, on the command line's subparsers."""
    run = sub.add_parser("run", help="run a scenario (file and/or flags; flags win)",
                         description="Every value flag takes a list (64,128,1500) or a range "
                         "(min:step:max) to sweep it; a run is their cartesian product.")
    run.add_argument("scenario", nargs="?", type=Path, help="scenario TOML file")
    scenario_flags(run)
    run.add_argument("--resume", metavar="RUN",
                     help="continue an interrupted run (or `latest`), skipping finished points")
    results_and_json(run)
    run.set_defaults(func=_run)


def _sweep_flag(name: str) -> Callable[[str], str]:
    """Checks a flag's values (a list `64,128`, a range `64:64:512`) and keeps its
    text: expansion happens once, for file and flags together (checks.load_plan)."""

    def check(text: str) -> str:
        try:
            parse_values(name, text)
        except ValueError as e:
            why = str(e)
            why = why.split(": ", 1)[1] if ": " in why else why
            if fields.kinds().get(name) == "bool" and (text.endswith(".toml") or
                                                       os.path.exists(text)):
                # `--pin FILE`: the flag took the scenario file for its value
                why += f" (the scenario file goes before the flags, or say --{name} yes)"
            raise argparse.ArgumentTypeError(why) from None
        return text
    return check


def _pair_flag(text: str) -> tuple[str, str]:
    """`--pair 1.rate=10k,50k`: (pair.1.rate, its values), checked as a field's."""
    where, sep, values = text.partition("=")
    index, dot, field = where.strip().partition(".")
    if not sep or not dot or not index.isdigit() or not field:
        raise argparse.ArgumentTypeError(f"{text!r}: expected N.FIELD=VALUES, e.g. 1.rate=50k "
                                         "(pair 1, the second, at 50 kpps)")
    name = f"{fields.PROFILE}.{int(index)}.{field.strip()}"
    try:
        check_profiled(name, field.strip())
        parse_values(name, values)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from None
    return name, values


def scenario_flags(p: argparse.ArgumentParser, with_fields: bool = True) -> None:
    """A flag per field of the table (fields.py); every one takes a list or a
    range, and a yes/no field's flag alone means yes (--pin), --no-pin no."""
    if with_fields:
        for f in fields.FIELDS:
            text = (reference.help_text(f) + (f" [{f.unit}]" if f.unit else "")).replace("%", "%%")
            if f.kind == "bool":
                p.add_argument(f.flag, dest=f.name, nargs="?", const="yes",
                               type=_sweep_flag(f.name), metavar="yes|no",
                               help=text + " (alone: yes; yes,no sweeps both)")
                p.add_argument("--no-" + f.flag[2:], dest=f.name, action="store_const",
                               const="no", help=f"the same as {f.flag} no")
            else:
                p.add_argument(f.flag, dest=f.name, type=_sweep_flag(f.name), help=text)
        p.add_argument("--pair", action="append", type=_pair_flag, metavar="N.FIELD=VALUES",
                       help="pair N's own value of a field (a profile: the pairs differ), "
                            "e.g. 1.rate=50k; again for more; per pair: "
                            + ", ".join(fields.PER_PAIR))
    p.add_argument("--repeat", type=_sweep_flag("repeat"), metavar="K",
                   help="run every point K times (mean, stddev, 95%% CI)")
    p.add_argument("--dry-run", action="store_true",
                   help="print the plan (points, cores, data planes) and exit")
    p.add_argument("--expect", action="append", metavar="LINE",
                   help="what every point must measure, e.g. 'rx_pps >= 2M', 'p99 <= 50us', "
                        "'rate >= run - 5%%' (again for more; instead of the file's expect); "
                        f"a point that misses one: exit {EXIT_EXPECTATION}")
    _gate_flags(p)
    p.add_argument("--events", metavar="FILE",
                   help="write the run's events as JSON lines while it goes (points, samples, "
                        "trials, a soak's seconds; - for stdout, the tables then on stderr)")
    p.add_argument("--metrics-port", metavar="[ADDR:]PORT", type=_listen,
                   help="serve the running point's rates, loss, latency and CPU per node as "
                        "Prometheus metrics on this port while the run goes (ADDR: all)")


def _listen(text: str) -> tuple[str, int]:
    """`9464` or `127.0.0.1:9464`: (address, port)."""
    address, _, port = text.rpartition(":")
    if not port.isdigit() or not 0 < int(port) < 65536:
        raise argparse.ArgumentTypeError(f"{text!r}: expected PORT or ADDR:PORT, a port 1-65535")
    return address.strip("[]"), int(port)


def _gate_flags(p: argparse.ArgumentParser) -> None:
    expect_run_flag(p)
    p.add_argument("--junit", metavar="FILE", type=Path,
                   help="write the expectations' verdicts as JUnit XML, a test case per point "
                        "and expectation")


def _run(args: argparse.Namespace) -> int:
    flags = {f: getattr(args, f, None) for f in fields.names()}
    flags.update(dict(getattr(args, "pair", None) or ()))   # pair.N.FIELD
    flags["repeat"] = args.repeat
    flags[fields.EXPECT] = args.expect
    if args.resume is not None:
        given = [f"--{k.replace('_', '-')}" for k, v in flags.items() if v is not None]
        if args.scenario or given:
            raise UserError("--resume", "continues a run with its own scenario; give no "
                            f"scenario file or fields (got {args.scenario or given[0]})")
        store = open_store(args)
        run_id = find_run(store, args.resume, "--resume")
        spec = store.run(run_id).get("spec")
        if not spec:
            raise UserError("--resume", f"run {run_id} was stored without its plan "
                                        "(made by an older cnfperf); run it again instead")
        engine = find_engine()
        host = gather(engine)
        swept = checks.replan(spec, host)
        args.expect_run = expect_run(args, own=run_id)
        if args.dry_run:
            return dry_run(swept, host, run_id, store.done_keys(run_id))
        return execute(args, swept, engine, host, resume=run_id)[0]
    swept = checks.load_plan(args.scenario, flags)   # UserError: nothing created yet
    args.expect_run = expect_run(args)
    engine = find_engine()
    host = gather(engine)
    if args.dry_run:
        return dry_run(swept, host)
    return execute(args, swept, engine, host)[0]


def dry_run(swept: Any, host: Any, run_id: str = "0000", done: set[str] = frozenset()) -> int:
    """The plan as the run would place it, each point this host cannot run
    flagged with why (checks.host_problems: what a study leaves out, a run's
    preflight refuses), and what keeps it from running any (checks.host_wide);
    the run is not started, whatever it would find."""
    problems = checks.host_problems(host)
    points = runner.test_points(swept, run_id)
    print(plan_text(swept, points, done, problems))
    cannot = [p for p in points if p.key not in done and problems(p.scenario)]
    if blocked := checks.host_wide(host):
        print(f"cnfperf: this host cannot run any point ({'; '.join(blocked)}): the run "
              "would stop before it starts", file=sys.stderr)
    elif cannot:
        print(f"cnfperf: this host cannot run {len(cannot)} of {len(points)} points (cannot run "
              "here, above): the run would stop before it starts", file=sys.stderr)
    return 0


def expect_run(args: argparse.Namespace, own: str | None = None) -> str | None:
    """--expect-run as an id (latest resolved now: before this run is stored),
    or None for `last`; exit 2 for a run the store does not have or the run
    itself (`own`: a resumed run's id), and for a --junit that cannot be
    written, before anything is created."""
    if args.junit is not None:
        writable(args.junit, "--junit")
    if args.expect_run in (None, LAST):
        return None
    try:
        store = Store(results_dir(args.results), create=False)
    except FileNotFoundError:
        raise UserError("--expect-run", f"no results in {results_dir(args.results)} to hold "
                                        "the run against") from None
    found = find_run(store, args.expect_run, "--expect-run")
    if found == own:
        raise UserError("--expect-run", f"{found} is the run being resumed: name an earlier one")
    return found


def execute(args: argparse.Namespace, swept: Any, engine: Any, host: Any,
            resume: str | None = None) -> tuple[int, str, Any]:
    """Runs the sweep and prints its tables; (exit code, run id, store)."""

    for note in swept.plan.skip_notes():
        print(f"cnfperf: {note}", file=sys.stderr)
    results = results_dir(args.results)
    progress = _ProgressLine(sys.stderr)
    watching = _live(args)   # before the run: a port taken is bad input
    try:
        outcome = runner.execute(swept, runner.RunOptions(
            engine=engine, results=results, host=host, command=["cnfperf", *sys.argv[1:]],
            progress=progress, resume=resume, live=watching))
    finally:
        progress.end()
        if watching:
            watching.close()
    # with --events -, stdout carries the events alone
    with contextlib.redirect_stdout(sys.stderr) if args.events == "-" else \
            contextlib.nullcontext():
        return _finish(args, outcome, results, resume, len(swept.scenarios))


def _live(args: argparse.Namespace) -> live.Live | None:
    """The run's watchers (--events, --metrics-port), or None; UserError (exit 2)
    when the file cannot be written or the port cannot be listened on."""
    sinks: list[Any] = []
    if args.events == "-" and args.json:
        raise UserError("--events", "- puts the events on stdout, where --json goes: name a "
                                    "file for one of them")
    try:
        if args.events == "-":
            sinks.append(live.EventsFile(sys.stdout, "stdout"))
        elif args.events is not None:
            sinks.append(live.EventsFile(open(args.events, "w", encoding="utf-8"), args.events))
    except OSError as e:
        raise UserError("--events", f"cannot write {args.events}: {e.strerror}") from None
    if args.metrics_port is not None:
        from cnfperf.run.metrics import Metrics   # prometheus_client: only when served
        metrics = Metrics()
        address, port = args.metrics_port
        try:
            metrics.serve(port, address)
        except OSError as e:
            for sink in sinks:
                sink.close()
            raise UserError("--metrics-port", f"cannot listen on {address or '*'}:{port}: "
                                              f"{e.strerror}") from None
        print(f"cnfperf: metrics on http://{address or '0.0.0.0'}:{port}/metrics",
              file=sys.stderr)
        sinks.append(metrics)
    return live.Live(sinks, cpu=args.metrics_port is not None) if sinks else None


def _finish(args: argparse.Namespace, outcome: Any, results: Path, resume: str | None,
            planned: int) -> tuple[int, str, Any]:
    """The run's tables, its expectations, --junit; (exit code, run id, store)."""
    store = Store(results)
    if outcome.resumed_cleanup:
        print(f"cnfperf: removed what run {outcome.run_id} left before resuming: "
              f"{_summarise(outcome.resumed_cleanup)}", file=sys.stderr)
    if resume:
        print(f"cnfperf: run {outcome.run_id}: {outcome.already_done} of "
              f"{planned} points were already done", file=sys.stderr)
    run = store.run(outcome.run_id)
    for w in dict.fromkeys(outcome.warnings):
        print(f"cnfperf: warning: {w}", file=sys.stderr)
    found, earlier = held(store, run, args.expect_run)
    if args.json:
        compared = paper_of(run)
        print(json.dumps({"outcome": _outcome(outcome), "run": run,
                          **({"paper": compared.to_dict()} if compared else {}),
                          **({"expectations": expectations(found, earlier)} if found else {})},
                         indent=1, default=str))
    elif run["points"]:
        print(f"run {outcome.run_id}  ({store.directory / 'runs' / outcome.run_id})")
        print(run_table(run, found))
        if used := images(run):
            print(f"images: {used}")
        print_tables(run, brief=True)
        if any(p.get("nf_results") for p in run["points"]):
            print(f"\n(every path hop by hop, each NF's startup: cnfperf results show "
                  f"{outcome.run_id})")
        print_gates(found, earlier, brief=True)
    wrote = True
    if found and args.junit is not None:
        try:
            print(f"junit: {gates.write_junit(run, found, args.junit, earlier)}",
                  file=sys.stderr)
        except OSError as e:   # checked before the run; gone since
            print(f"cnfperf: error: --junit: cannot write {args.junit}: {e.strerror}",
                  file=sys.stderr)
            wrote = False
    elif args.junit is not None:
        print("cnfperf: warning: no point states an expectation: --junit wrote nothing",
              file=sys.stderr)
    if outcome.status == "done":
        if not wrote:
            return EXIT_FAILURE, outcome.run_id, store
        if gates.missed(found):
            return EXIT_EXPECTATION, outcome.run_id, store
        return 0, outcome.run_id, store
    print(f"cnfperf: error: run {outcome.run_id} {outcome.status}: {outcome.error}",
          file=sys.stderr)
    print(f"cnfperf: cleaned up: {_summarise(outcome.cleaned) or 'nothing was created'}",
          file=sys.stderr)
    if outcome.left:
        print(f"cnfperf: left behind: {', '.join(outcome.left)}; remove with "
              f"`cnfperf cleanup {outcome.run_id}`", file=sys.stderr)
    else:
        print("cnfperf: nothing was left behind; the same command can be run again, or "
              f"`cnfperf run --resume {outcome.run_id}` to keep the points already done",
              file=sys.stderr)
    if outcome.status == "interrupted":
        return 128 + (outcome.signal or signal.SIGINT), outcome.run_id, store
    return EXIT_FAILURE, outcome.run_id, store


def _outcome(o: Any) -> dict[str, Any]:
    return {"run_id": o.run_id, "status": o.status, "error": o.error, "signal": o.signal,
            "cleaned": o.cleaned, "left": o.left, "warnings": list(dict.fromkeys(o.warnings))}


def _summarise(items: list[str]) -> str:
    """'netns cnfp…p0s', 'netns cnfp…p0r' → 'netns ×2'."""
    counts: dict[str, int] = {}
    for item in items:
        kind = item.split(" ", 1)[0]
        counts[kind] = counts.get(kind, 0) + 1
    return ", ".join(f"{k} ×{n}" if n > 1 else k for k, n in counts.items())


class _ProgressLine:
    """`[1/2] veth udp throughput pairs=1 … measuring 1.5/3.0 s`, rewritten in place
    on a terminal, one line per phase otherwise (logs stay readable)."""

    def __init__(self, stream: Any):
        self.stream = stream
        self.tty = stream.isatty()
        self.last = ""
        self.width = 0

    def __call__(self, p: Any) -> None:
        if p.phase == "measured":   # a trial's result: its line came with its detail
            return
        head = f"[{p.point.index + 1}/{p.point.total}] " + \
            " ".join([p.point.scenario.describe(), *fields.undescribed(p.point.label)])
        trial = f"{p.detail} " if p.detail else ""
        if p.phase == "measuring":
            text = f"{head} … {trial}{p.elapsed:.1f}/{p.expected:.1f} s"
            if p.rx_pps is not None:
                text += f"  rx {p.rx_pps / 1e3:.1f} kpps"
            key = f"{head} {trial}measuring"
        elif p.phase == "trial":
            text = key = f"{head} … {p.detail}"
        else:
            text = key = f"{head} … {p.phase}"
            if p.phase == "setup" and p.detail:   # on a terminal only: not a line each
                text += f" {p.detail}"
            elif p.phase == "setup" and p.point.tester_why != testers.SET:
                text += f"  (tester {p.point.tester_why})"
            if p.phase == "setup" and p.eta is not None:
                text += f"  (eta {format_seconds(p.eta)})"
        if self.tty:
            self.stream.write("\r" + text.ljust(self.width))
            self.width = len(text)
            if p.phase in ("done", "failed"):
                self.stream.write("\n")
                self.width = 0
        elif key != self.last:
            self.stream.write((f"{head} … {trial}measuring {p.expected:.1f} s"
                               if p.phase == "measuring" else text) + "\n")
        self.last = key
        self.stream.flush()

    def end(self) -> None:
        if self.tty and self.width:
            self.stream.write("\n")
