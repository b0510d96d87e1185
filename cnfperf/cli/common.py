"""What every command takes: the exit codes, the parser that makes a wrong
flag one line and exit 2, the results directory and its store, a run named
on the command line."""
from __future__ import annotations

import argparse
import os
from pathlib import Path
from typing import Any, NoReturn

from cnfperf import UserError
from cnfperf.results.store import Store, results_dir

EXIT_FAILURE, EXIT_USAGE, EXIT_BUSY, EXIT_REGRESSION, EXIT_EXPECTATION = 1, 2, 3, 4, 5
LAST = "last"     # --expect-run: the newest earlier run of the same scenario


class Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        raise UserError(*_split(message.removeprefix("argument ")))


def _split(message: str) -> tuple[str, str]:
    if message.startswith("unrecognized arguments: "):
        return message.split(": ", 1)[1].split()[0], "unknown option"
    if message.startswith("the following arguments are required: "):
        return message.split(": ", 1)[1].split(",")[0], "required"
    field, sep, why = message.partition(": ")
    return (field, why) if sep else ("command line", message)


def expect_run_flag(p: argparse.ArgumentParser) -> None:
    p.add_argument("--expect-run", metavar="RUN",
                   help=f"the run `run` means in an expectation: a stored run's id, latest, or "
                        f"{LAST} (default: the newest earlier run of the same scenario)")


def results_and_json(p: argparse.ArgumentParser, json_flag: bool = True) -> None:
    p.add_argument("--results", metavar="DIR",
                   help="results directory (default $CNFPERF_RESULTS or ./results)")
    if json_flag:
        p.add_argument("--json", action="store_true", help="machine-readable output on stdout")


def writable(path: Path, flag: str) -> None:
    """UserError (exit 2) unless a file can be written at `path`."""
    if path.is_dir():
        raise UserError(flag, f"{path} is a directory; name the file")
    parent = path.parent if str(path.parent) else Path(".")
    if not parent.is_dir() or not os.access(parent, os.W_OK):
        raise UserError(flag, f"cannot write {path}: {parent} is not a writable directory")


def open_store(args: argparse.Namespace):
    directory = results_dir(args.results)
    try:
        return Store(directory, create=False)
    except FileNotFoundError:
        raise UserError("--results", f"no results in {directory}") from None


def find_run(store: Any, text: str, field: str = "RUN") -> str:
    """A stored run's id from what the user typed: an id, or `latest`."""
    if text == "latest":
        latest = store.latest_run_id()
        if latest is None:
            raise UserError(field, f"no runs yet in {store.directory}")
        return latest
    if text not in store.run_ids():
        raise UserError(field, f"no run {text!r} in {store.directory} "
                               "(see `cnfperf results list`)")
    return text


def stored_run(args: argparse.Namespace, text: str, field: str = "RUN") -> tuple[Any, dict]:
    store = open_store(args)
    return store, store.run(find_run(store, text, field))
