"""The command line: the only module that knows about argv, stdout and exit codes.

Exit codes: 0 done, 1 system failure (after teardown), 2 bad input (before
anything is created), 3 another run holds the host, 128+N stopped by signal N.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import signal
import sys
import time
from pathlib import Path
from typing import Any, Callable, NoReturn

from cnfperf import SystemFailure, UserError, __version__
from cnfperf.lock import HostBusy

EXIT_FAILURE, EXIT_USAGE, EXIT_BUSY = 1, 2, 3


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        raise UserError(*_split(message.removeprefix("argument ")))


def _split(message: str) -> tuple[str, str]:
    if message.startswith("unrecognized arguments: "):
        return message.split(": ", 1)[1].split()[0], "unknown option"
    field, sep, why = message.partition(": ")
    return (field, why) if sep else ("command line", message)


def _values(convert: Callable[[str], Any], what: str) -> Callable[[str], Any]:
    """A flag value, or a comma-separated list of them (a sweep axis)."""
    def parse(text: str) -> Any:
        try:
            items = [convert(t.strip()) for t in text.split(",")]
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected {what}, got {text!r}") from None
        return items if len(items) > 1 else items[0]
    return parse


def _parser() -> argparse.ArgumentParser:
    p = _Parser(prog="cnfperf", description="Measure throughput, loss and latency between "
                "Linux containers over a chosen data plane.")
    p.add_argument("--version", action="version", version=f"cnfperf {__version__}")
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")

    run = sub.add_parser("run", help="run a scenario (file and/or flags; flags win)",
                         description="Any value flag takes a comma-separated list to sweep it.")
    run.add_argument("scenario", nargs="?", type=Path, help="scenario TOML file")
    text, ints, floats = _values(str, "a word"), _values(int, "an integer"), \
        _values(float, "a number")
    for flag, kind, help_ in (
            ("--switch", text, "data plane: veth, bridge, macvlan, …"),
            ("--api", text, "engine packet I/O: udp, raw, mmap, xdp, dpdk"),
            ("--pairs", ints, "sender/receiver (or client/server) pairs"),
            ("--mode", text, "throughput (send/recv) or latency (client/server)"),
            ("--size", ints, "Ethernet frame size in bytes with FCS (64…)"),
            ("--burst", ints, "packets per burst"),
            ("--rate", text, "offered pps per pair: 1000, 500k, 2.5M; 0 = max"),
            ("--duration", floats, "measured seconds"),
            ("--warmup", floats, "seconds sent before measuring"),
            ("--flows", ints, "UDP source ports per pair"),
            ("--runtime", text, "container runtime: runc or netns")):
        run.add_argument(flag, type=kind, help=help_)
    run.add_argument("--cpus", help="host CPUs to place endpoints on, e.g. 0-3 or 2,3")
    run.add_argument("--touch", action=argparse.BooleanOptionalAction, default=None,
                     help="write and verify every payload byte")
    run.add_argument("--mmsg", action=argparse.BooleanOptionalAction, default=None,
                     help="sendmmsg/recvmmsg batching (udp, raw)")
    run.add_argument("--blocking", action=argparse.BooleanOptionalAction, default=None,
                     help="blocking sockets (udp, raw); default: on for latency only")
    _results_and_json(run)
    run.set_defaults(func=_run)

    doctor = sub.add_parser("doctor", help="what this host offers and which data planes work")
    doctor.add_argument("--json", action="store_true", help="machine-readable output")
    doctor.set_defaults(func=_doctor)

    clean = sub.add_parser("cleanup", help="remove what killed runs left behind")
    clean.add_argument("run", nargs="?", metavar="RUN_ID",
                       help="only this run's leftovers (default: every run's)")
    clean.add_argument("--force", action="store_true",
                       help="even while a run holds the host lock")
    clean.set_defaults(func=_cleanup)

    results = sub.add_parser("results", help="stored results")
    rsub = results.add_subparsers(dest="action", required=True, metavar="ACTION")
    lst = rsub.add_parser("list", help="all runs")
    _results_and_json(lst)
    lst.set_defaults(func=_results_list)
    show = rsub.add_parser("show", help="one run: its points, pairs and endpoints")
    show.add_argument("id", help="run id (as `results list` shows it)")
    _results_and_json(show)
    show.set_defaults(func=_results_show)
    return p


def _results_and_json(p: argparse.ArgumentParser) -> None:
    p.add_argument("--results", metavar="DIR",
                   help="results directory (default $CNFPERF_RESULTS or ./results)")
    p.add_argument("--json", action="store_true", help="machine-readable output on stdout")


# -- commands ------------------------------------------------------------------

def _run(args: argparse.Namespace) -> int:
    from cnfperf import runner, scenario
    from cnfperf.engine import find_engine
    from cnfperf.host import gather
    from cnfperf.report.tables import run_table
    from cnfperf.results.store import Store, results_dir

    flags = {f: getattr(args, f, None) for f in scenario.FIELDS}
    scenarios = scenario.load(args.scenario, flags)   # UserError: nothing created yet
    engine = find_engine()
    host = gather(engine)
    runner.preflight(scenarios, host)
    store = Store(results_dir(args.results))
    progress = _ProgressLine(sys.stderr)
    outcome = runner.execute(scenarios, runner.RunOptions(
        engine=engine, store=store, host=host, command=["cnfperf", *sys.argv[1:]],
        progress=progress))
    progress.end()
    run = store.run(outcome.run_id)
    for w in dict.fromkeys(outcome.warnings):
        print(f"cnfperf: warning: {w}", file=sys.stderr)
    if args.json:
        print(json.dumps({"outcome": _outcome(outcome), "run": run}, indent=1, default=str))
    elif run["points"]:
        print(f"run {outcome.run_id}  ({store.directory / 'runs' / outcome.run_id})")
        print(run_table(run))
    if outcome.status == "done":
        return 0
    print(f"cnfperf: error: run {outcome.run_id} {outcome.status}: {outcome.error}",
          file=sys.stderr)
    print(f"cnfperf: cleaned up: {_summarise(outcome.cleaned) or 'nothing was created'}",
          file=sys.stderr)
    if outcome.left:
        print(f"cnfperf: left behind: {', '.join(outcome.left)}; remove with "
              f"`cnfperf cleanup {outcome.run_id}`", file=sys.stderr)
    else:
        print("cnfperf: nothing was left behind; the same command can be run again",
              file=sys.stderr)
    if outcome.status == "interrupted":
        return 128 + (outcome.signal or signal.SIGINT)
    return EXIT_FAILURE


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
        head = f"[{p.point.index + 1}/{p.point.total}] {p.point.scenario.describe()}"
        if p.phase == "measuring":
            text = f"{head} … {p.elapsed:.1f}/{p.expected:.1f} s"
            if p.rx_pps is not None:
                text += f"  rx {p.rx_pps / 1e3:.1f} kpps"
            key = f"{head} measuring"
        else:
            text = key = f"{head} … {p.phase}"
        if self.tty:
            self.stream.write("\r" + text.ljust(self.width))
            self.width = len(text)
            if p.phase in ("done", "failed"):
                self.stream.write("\n")
                self.width = 0
        elif key != self.last:
            self.stream.write((f"{head} … measuring {p.expected:.1f} s" if p.phase == "measuring"
                               else text) + "\n")
        self.last = key
        self.stream.flush()

    def end(self) -> None:
        if self.tty and self.width:
            self.stream.write("\n")


def _doctor(args: argparse.Namespace) -> int:
    from cnfperf.engine import find_engine
    from cnfperf.host import gather, render, usable

    host = gather(find_engine())
    matrix = usable(host)
    if args.json:
        print(json.dumps({"host": host.to_dict(), **matrix}, indent=1))
    else:
        print(render(host, matrix))
    return 0


def _cleanup(args: argparse.Namespace) -> int:
    from cnfperf.cleanup import cleanup

    if os.geteuid() != 0:
        raise UserError("cleanup", "needs root (network namespaces, containers)")
    if args.run is not None and not re.fullmatch(r"[0-9a-f]{4}", args.run):
        raise UserError("RUN_ID", f"{args.run!r} is not a run id (4 hex digits, as "
                                  "`cnfperf results list` shows)")
    removed, failed = cleanup(force=args.force, run_id=args.run)
    for line in removed:
        print(f"removed {line}")
    for line in failed:
        print(f"cnfperf: could not remove {line}", file=sys.stderr)
    if not removed and not failed:
        print("nothing to clean up")
    return EXIT_FAILURE if failed else 0


def _open_store(args: argparse.Namespace):
    from cnfperf.results.store import Store, results_dir

    directory = results_dir(args.results)
    try:
        return Store(directory, create=False)
    except FileNotFoundError:
        raise UserError("--results", f"no results in {directory}") from None


def _results_list(args: argparse.Namespace) -> int:
    from cnfperf.report.tables import runs_table

    runs = _open_store(args).runs()
    print(json.dumps(runs, indent=1) if args.json else runs_table(runs))
    return 0


def _results_show(args: argparse.Namespace) -> int:
    from cnfperf.report.tables import run_table

    run = _open_store(args).run(args.id)
    if run is None:
        raise UserError("id", f"no run {args.id!r} in the results (see `cnfperf results list`)")
    if args.json:
        print(json.dumps(run, indent=1, default=str))
    else:
        started = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(run["started"]))
        print(f"run {run['id']}  {run['status']}  started {started}  "
              f"cnfperf {run['cnfperf_version']}  engine {run['engine_version']}")
        print(run_table(run))
    return 0


def main(argv: list[str] | None = None) -> int:
    try:
        args = _parser().parse_args(argv)
        return args.func(args)
    except UserError as e:
        print(f"cnfperf: error: {e}", file=sys.stderr)
        return EXIT_USAGE
    except HostBusy as e:
        print(f"cnfperf: error: {e}", file=sys.stderr)
        return EXIT_BUSY
    except SystemFailure as e:
        print(f"cnfperf: error: {e}", file=sys.stderr)
        return EXIT_FAILURE
    except KeyboardInterrupt:
        print("cnfperf: interrupted", file=sys.stderr)
        return 128 + signal.SIGINT
    except BrokenPipeError:
        # A reader such as `head` stopped early: that is its choice, not our error.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except Exception as e:
        from cnfperf.runner import Interrupted
        if not isinstance(e, Interrupted):
            raise
        print(f"cnfperf: {e}", file=sys.stderr)
        return 128 + e.signum
