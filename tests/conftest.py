"""Shared fixtures. End-to-end tests (marker `e2e`) need root; without it they
are skipped with that reason. A test marked `needs("name", …)` needs tools
that `make deps` installs or switches that `make switches` builds: see
harness.py for what happens when one is missing.

Shared helpers that are not fixtures live in harness.py (and engines.py), not
here: another directory's conftest.py may take the module name `conftest` first."""
from __future__ import annotations

import json
import signal
import subprocess
from pathlib import Path

import pytest

import harness
import leak

# Tests started in the background of a non-interactive shell (`make test &`)
# inherit SIGINT and SIGQUIT ignored, and so would every process they start
# in-process (a VM's exec server, a remote agent: in production those start
# from init or sshd, with the defaults); a signal ignored at exec stays
# ignored, and tests that stop a process with SIGINT would hang or fail.
signal.signal(signal.SIGINT, signal.default_int_handler)
signal.signal(signal.SIGQUIT, signal.SIG_DFL)


def pytest_collection_modifyitems(config, items):
    root = leak.is_root()
    for item in items:
        if "e2e" in item.keywords and not root:
            item.add_marker(pytest.mark.skip(reason="end-to-end: needs root"))
    # Every run of an end-to-end test takes the host lock: with another run
    # holding it, each would fail (exit 3); say so once, at once, naming it.
    if root and any("e2e" in item.keywords for item in items) and \
            (holder := harness.lock_holder()):
        pytest.exit(f"the host lock is held by {holder}: end-to-end tests cannot run "
                    "until it ends", returncode=3)


def pytest_runtest_setup(item):
    for mark in item.iter_markers("needs"):
        harness.require(*mark.args)


_FOLDER_SECONDS: dict[str, float] = {}


def pytest_runtest_logreport(report):
    # setup, call and teardown alike: a module's lab is built in its first test's setup
    folder = report.nodeid.split("::")[0].rpartition("/")[0] or "."
    _FOLDER_SECONDS[folder] = _FOLDER_SECONDS.get(folder, 0.0) + report.duration


def pytest_terminal_summary(terminalreporter):
    """Minutes per test folder, the largest first: where the suite's time goes
    (the slowest tests are pytest's --durations, in pyproject.toml)."""
    if not _FOLDER_SECONDS:
        return
    workers = getattr(terminalreporter.config.option, "numprocesses", None)
    terminalreporter.section("minutes per folder" + (
        f" (the tests' own, summed over {workers} workers)" if workers and workers != 1 else ""))
    for folder, seconds in sorted(_FOLDER_SECONDS.items(), key=lambda kv: -kv[1]):
        terminalreporter.write_line(f"{seconds / 60:7.1f}  {folder}")
    terminalreporter.write_line(f"{sum(_FOLDER_SECONDS.values()) / 60:7.1f}  total")


@pytest.fixture(scope="session")
def engine() -> Path:
    return harness.engine()


@pytest.fixture
def no_leftovers():
    with leak.assert_no_leftovers():
        yield


@pytest.fixture
def results(tmp_path: Path) -> Path:
    return tmp_path / "results"


@pytest.fixture
def cli(results: Path):
    """Runs the real command line in a subprocess, as a user would."""
    def run(*args: str, timeout: float = 120, check: bool = False,
            **env: str) -> subprocess.CompletedProcess:
        done = subprocess.run(harness.cnfperf_argv(*args), capture_output=True, text=True,
                              cwd=harness.REPO, timeout=timeout,
                              env=harness.cnfperf_env(results, **env), stdin=subprocess.DEVNULL)
        if check and done.returncode != 0:
            pytest.fail(f"cnfperf {' '.join(args)} exited {done.returncode}:\n{done.stderr}")
        return done
    return run


@pytest.fixture
def start_cli(results: Path):
    """Starts the command line in the background (progress on stderr, text mode)."""
    def start(*args: str, **env: str) -> subprocess.Popen:
        return subprocess.Popen(harness.cnfperf_argv(*args), stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True, cwd=harness.REPO,
                                env=harness.cnfperf_env(results, **env),
                                stdin=subprocess.DEVNULL)
    return start


@pytest.fixture
def cli_json(cli):
    def run(*args: str, **kw) -> dict:
        done = cli(*args, "--json", check=True, **kw)
        return json.loads(done.stdout)
    return run
