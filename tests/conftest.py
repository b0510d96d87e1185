"""Shared fixtures. End-to-end tests (marker `e2e`) need root and the built engine;
without them they are skipped with the reason, never silently passed.

Helpers are fixtures, not imports: another directory's conftest.py may take the
module name `conftest` first."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import leak

REPO = Path(__file__).resolve().parents[1]
ENGINE = REPO / "engine" / "build" / "cnfperf-engine"


def pytest_collection_modifyitems(config, items):
    root = leak.is_root()
    for item in items:
        if "e2e" in item.keywords and not root:
            item.add_marker(pytest.mark.skip(reason="end-to-end: needs root"))


@pytest.fixture
def engine() -> Path:
    if not ENGINE.exists():
        pytest.skip(f"engine not built ({ENGINE.relative_to(REPO)}; make build)")
    return ENGINE


@pytest.fixture
def no_leftovers():
    with leak.assert_no_leftovers():
        yield


@pytest.fixture
def results(tmp_path: Path) -> Path:
    return tmp_path / "results"


def _env(results: Path | None, **extra: str) -> dict[str, str]:
    env = dict(os.environ)
    env.pop("CNFPERF_RESULTS", None)
    if results is not None:
        env["CNFPERF_RESULTS"] = str(results)
    env.update(extra)
    return env


def cnfperf_argv(*args: str) -> list[str]:
    return [sys.executable, "-m", "cnfperf", *args]


@pytest.fixture
def cli(results: Path):
    """Runs the real command line in a subprocess, as a user would."""
    def run(*args: str, timeout: float = 120, check: bool = False,
            **env: str) -> subprocess.CompletedProcess:
        done = subprocess.run(cnfperf_argv(*args), capture_output=True, text=True, cwd=REPO,
                              timeout=timeout, env=_env(results, **env), stdin=subprocess.DEVNULL)
        if check and done.returncode != 0:
            pytest.fail(f"cnfperf {' '.join(args)} exited {done.returncode}:\n{done.stderr}")
        return done
    return run


@pytest.fixture
def start_cli(results: Path):
    """Starts the command line in the background (progress on stderr, text mode)."""
    def start(*args: str, **env: str) -> subprocess.Popen:
        return subprocess.Popen(cnfperf_argv(*args), stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True, cwd=REPO,
                                env=_env(results, **env), stdin=subprocess.DEVNULL)
    return start


@pytest.fixture
def cli_json(cli):
    def run(*args: str, **kw) -> dict:
        done = cli(*args, "--json", check=True, **kw)
        return json.loads(done.stdout)
    return run
