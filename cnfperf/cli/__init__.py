"""The command line: the only package that knows about argv, stdout and exit codes.

Exit codes: 0 done, 1 system failure (after teardown), 2 bad input (before
anything is created), 3 another run holds the host, 4 a point regressed (compare
over a series of runs), 5 a point missed an expectation (expect), 128+N stopped
by signal N.

A module per group of commands, each adding its own to the parser (`add`):
run.py (run: flags, the run, its end), study.py (study, --coverage),
results.py (results list/show/export, report), compare.py (two runs, a
series), advise.py, hosts.py (doctor, cleanup, lab, cluster, agent); shown.py
is what a stored run prints (its tables, expectations, paper), common.py what
they all take (exit codes, the store, the results flags).
"""
from __future__ import annotations

import os
import signal
import sys

from cnfperf import SystemFailure, UserError, __version__
from cnfperf.cli import advise, compare, hosts, results, run, study
from cnfperf.cli.common import (EXIT_BUSY, EXIT_EXPECTATION, EXIT_FAILURE, EXIT_REGRESSION,
                                EXIT_USAGE, Parser)
from cnfperf.host.lock import HostBusy
from cnfperf.run import runner

__all__ = ["EXIT_BUSY", "EXIT_EXPECTATION", "EXIT_FAILURE", "EXIT_REGRESSION", "EXIT_USAGE",
           "main"]


def _parser() -> Parser:
    p = Parser(prog="cnfperf", description="Measure throughput, loss and latency between "
               "Linux containers over a chosen data plane.")
    p.add_argument("--version", action="version", version=f"cnfperf {__version__}")
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for commands in (run, study, results, compare, advise, hosts):
        commands.add(sub)
    return p


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
        if not isinstance(e, runner.Interrupted):
            raise
        print(f"cnfperf: {e}", file=sys.stderr)
        return 128 + e.signum
