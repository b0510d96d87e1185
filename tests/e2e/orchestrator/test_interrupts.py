"""Runs that are stopped: by a signal they tear down themselves; killed outright,
`cnfperf cleanup` removes what they left; a second run meanwhile is refused."""
from __future__ import annotations

import json
import signal
import subprocess
import time

import pytest

import harness
import leak
from cnfperf.run.cleanup import RUN_NAME

pytestmark = pytest.mark.e2e

LONG = ["--rate", "1000", "--duration", "30", "--warmup", "0"]


def _wait_measuring(proc: subprocess.Popen, timeout: float = 60) -> list[str]:
    """Reads the progress lines until the measurement is under way."""
    seen = []
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        line = proc.stderr.readline()
        if not line:
            break
        seen.append(line)
        if "measuring" in line:
            time.sleep(0.5)  # the senders are started; let frames flow
            return seen
    proc.kill()
    pytest.fail(f"run never started measuring: {''.join(seen)}")


def test_sigkill_mid_measurement_then_cleanup(engine, cli, start_cli, no_leftovers):
    before = leak.snapshot()
    run = start_cli("run", "--switch", "bridge", "--pairs", "2", *LONG)
    _wait_measuring(run)
    run.send_signal(signal.SIGKILL)
    run.wait(10)
    run.stderr.close()
    run.stdout.close()
    [killed] = json.loads(cli("results", "list", "--json", check=True).stdout)
    try:
        assert killed["status"] == "running", "nobody recorded the end of a killed run"
        prefix = f"cnfp{killed['id']}"
        left = {kind: {n for n in names if prefix in n}
                for kind, names in leak.diff(before, leak.snapshot()).items()}
        # 4 endpoints and the bridge's own namespace; 4 containers.
        assert len(left["netns"]) == 5 and len(left["runc containers"]) == 4, \
            f"a killed run should have left its resources: {left}"

        # Cleaning up by run id touches nothing of anybody else's on a shared host;
        # without it, every run's leftovers go (the same code with a wider pattern).
        done = cli("cleanup", killed["id"])
        assert done.returncode == 0, done.stderr
        removed = done.stdout
        for ns in left["netns"]:
            assert f"netns {ns}" in removed
        for container in left["runc containers"]:
            assert f"container {container}" in removed
        assert f"journal /run/cnfperf/{prefix}.journal" in removed
    finally:
        again = cli("cleanup", killed["id"])
    assert again.stdout.strip() == "nothing to clean up"


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_signal_tears_the_run_down(engine, start_cli, no_leftovers, sig):
    run = start_cli("run", "--switch", "macvlan", "--mode", "latency", *LONG)
    _wait_measuring(run)
    run.send_signal(sig)
    out, err = run.communicate(timeout=60)
    assert run.returncode == 128 + sig, err
    assert f"interrupted by {signal.Signals(sig).name}" in err
    assert "cleaned up:" in err and "container ×2" in err and "netns ×2" in err
    assert "nothing was left behind" in err


@pytest.mark.parametrize("after", [0.1, 1.0])
def test_sigint_early_stops_a_background_job_at_once(engine, results, no_leftovers, after):
    """A run started as a script's background job (a shell's `&` starts it with
    SIGINT ignored), interrupted while it starts: it exits at once with SIGINT's
    code, not after its points, and leaves nothing (no_leftovers)."""
    run = subprocess.Popen(
        harness.cnfperf_argv("run", "--switch", "bridge", *LONG), cwd=harness.REPO,
        env=harness.cnfperf_env(results), stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_IGN))
    time.sleep(after)
    started = time.monotonic()
    run.send_signal(signal.SIGINT)
    try:
        _, err = run.communicate(timeout=30)
    except subprocess.TimeoutExpired:
        run.kill()
        run.communicate()
        pytest.fail(f"SIGINT at {after} s: still running 30 s later")
    assert run.returncode == 128 + signal.SIGINT, err
    assert "interrupted" in err, err
    assert time.monotonic() - started < 15, "it went on after the SIGINT"
    assert "left behind:" not in err, err


def _run_shaped(snapshot: dict[str, set[str]]) -> set[str]:
    """What a cnfperf run creates first, by name; other users of the host may be
    starting processes meanwhile, and those are not the refused run's doing."""
    return {f"{kind}: {name}" for kind in ("netns", "links", "runc containers",
                                           "cnfperf run files")
            for name in snapshot.get(kind, ()) if RUN_NAME.search(name)}


def test_second_run_is_refused_while_the_first_runs(engine, cli, start_cli, no_leftovers):
    # Long enough that it still holds the lock when the second has gathered the
    # host's facts (a few seconds on a busy 2-core host).
    first = start_cli("run", "--switch", "veth", "--rate", "1000", "--duration", "10",
                      "--warmup", "0")
    try:
        _wait_measuring(first)
        before = leak.snapshot()

        second = cli("run", "--switch", "bridge", "--duration", "1")
        assert second.returncode == 3
        [line] = second.stderr.strip().splitlines()
        assert line.startswith("cnfperf: error: another cnfperf run holds the host lock: run ")
        assert f"(pid {first.pid}" in line
        busy_cleanup = cli("cleanup")
        assert busy_cleanup.returncode == 3 and "holds the host lock" in busy_cleanup.stderr
        assert _run_shaped(leak.diff(before, leak.snapshot())) == set(), \
            "the refused run created something"
    finally:
        _, err = first.communicate(timeout=60)  # whatever failed above, let it finish
    assert first.returncode == 0, err
    runs = json.loads(cli("results", "list", "--json", check=True).stdout)
    assert [r["status"] for r in runs] == ["done"], "only the first run is recorded"
