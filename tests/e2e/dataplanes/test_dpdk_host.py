"""Host preparation for DPDK for real: pages reserved and given back, a private
hugetlbfs, DPDK's files removed even after a SIGKILL, and `cnfperf cleanup`
undoing a DPDK run that was killed mid-measurement."""
from __future__ import annotations

import json
import os
import secrets
import signal
import subprocess
import time
from pathlib import Path

import pytest

import harness
import leak
from cnfperf.dataplanes import dpdk_args
from cnfperf.dataplanes.testpmd_app import TestPmd
from cnfperf.host.hugepages import DPDK_RUNTIME, Hugepages, hugetlbfs_mounts, pool_state
from cnfperf.host.journal import RUN_DIR, Journal, replay
from dpdk_leak import no_leftovers, ours
from harness import REPO, cnfperf_argv, cnfperf_env

pytestmark = [pytest.mark.e2e, pytest.mark.needs("dpdk-testpmd", "mount")]


@pytest.fixture
def prefix() -> str:
    return "cnfp" + secrets.token_hex(2) + "x"


def test_pages_mount_and_files_exist_only_while_held(tmp_path, prefix):
    journal = Journal(tmp_path / "run.journal")
    before = pool_state().total
    with no_leftovers(prefix):
        with Hugepages(32, prefix, tmp_path, journal) as hp:
            assert hp.added == 32 and pool_state().total >= before + 32
            assert str(hp.mount_point) in hugetlbfs_mounts()
            assert {e.kind for e in journal.live()} == {"hugepages", "hugetlbfs", "dpdk-files"}
            # A DPDK process finds its memory there.
            eal = dpdk_args.eal_args(prefix + "t", str(hp.mount_point), 48, ["net_null0"],
                                     lcores="0@0,1@0")
            with TestPmd(eal, ["--total-num-mbufs=2048"], "null") as t:
                assert 0 in t.port_stats()
        assert not hp.mount_point.exists()
    assert journal.live() == []
    assert pool_state().total == before


def test_files_of_a_killed_dpdk_process_are_removed(tmp_path, prefix):
    with no_leftovers(prefix):
        with Hugepages(32, prefix, tmp_path) as hp:
            # Without --in-memory, as an engine built elsewhere might run: EAL keeps
            # hugepage files and a runtime directory, and a SIGKILL leaves both.
            eal = ["--file-prefix", prefix + "k", "--huge-dir", str(hp.mount_point),
                   "-m", "48", "--no-pci", "--no-telemetry", "--vdev", "net_null0",
                   "--lcores", "0@0,1@0"]
            t = TestPmd(eal, ["--total-num-mbufs=2048"], "killed")
            t.start()
            assert list(hp.mount_point.glob(prefix + "k*"))
            assert (DPDK_RUNTIME / (prefix + "k")).exists()
            os.kill(t.pid, signal.SIGKILL)
            t.stop()


def _wait_for(what: str, found, timeout: float = 60):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = found()
        if value:
            return value
        time.sleep(0.2)
    pytest.fail(f"no {what} within {timeout} s")


def _start_run(switch: str, env: dict, log: Path) -> tuple[subprocess.Popen, str]:
    """A long DPDK run, once it holds the host lock; (process, prefix)."""
    with open(log, "w") as err:
        # split: the test looks for the sender's engine while it measures
        run = subprocess.Popen(cnfperf_argv("run", "--switch", switch, "--api", "dpdk",
                                            "--tester", "split", "--rate", "2k",
                                            "--duration", "60", "--json"),
                               cwd=REPO, env=env, stdout=subprocess.DEVNULL, stderr=err,
                               stdin=subprocess.DEVNULL)

    def holder():
        try:
            lock = json.loads((RUN_DIR / "lock").read_text() or "{}")
        except (OSError, json.JSONDecodeError):
            lock = {}
        return lock.get("run") if lock.get("pid") == run.pid else run.poll() is not None
    got = _wait_for("host lock", holder)
    if isinstance(got, str):
        return run, "cnfp" + got
    harness.not_busy(run, "run")
    pytest.fail(f"cnfperf run exited with {run.returncode} before it started: "
                f"{log.read_text()[-500:]}")


@pytest.mark.parametrize("switch", ["ovs", "testpmd",
                                    pytest.param("click", marks=pytest.mark.needs("click-dpdk")),
                                    pytest.param("bess", marks=pytest.mark.needs("bess")),
                                    pytest.param("snabb", marks=pytest.mark.needs("snabb")),
                                    pytest.param("vpp", marks=pytest.mark.needs("vpp"))])
def test_cleanup_undoes_a_dpdk_run_killed_while_measuring(results, switch, tmp_path):
    before = leak.snapshot()
    env = cnfperf_env(results)
    run, prefix = _start_run(switch, env, tmp_path / "run.stderr")
    try:
        # Measuring: the engines are up, so every kind of resource exists.
        _wait_for("engines", lambda: subprocess.run(
            ["pgrep", "-f", f"cnfperf-engine send.*{prefix}"], capture_output=True).stdout)
    except BaseException:
        run.kill()
        raise
    run.send_signal(signal.SIGKILL)
    run.wait(10)
    assert ours(leak.diff(before, leak.snapshot()), prefix), "the kill left things to clean"
    added = sum(e.info.get("added", 0) for e in replay(RUN_DIR / f"{prefix}.journal")
                if e.kind == "hugepages")
    assert added > 0
    pool_killed = pool_state().total
    done = subprocess.run(cnfperf_argv("cleanup", prefix.removeprefix("cnfp")), cwd=REPO,
                          env=env, capture_output=True, text=True, timeout=120)
    harness.not_busy(done, "cleanup")
    assert done.returncode == 0, done.stderr
    assert "hugepages" in done.stdout, done.stdout
    # Snabb and testpmd (at its prompt) exit by themselves once the run's end of
    # their stdin closes, often before cleanup comes: then there is none to kill.
    assert "process" in done.stdout or switch in ("snabb", "testpmd"), done.stdout
    left = ours(leak.diff(before, leak.snapshot()), prefix)
    assert left == {}, f"cleanup left: {left}\n{done.stdout}"
    # Other users of a shared host may resize the pool meanwhile: what cleanup
    # gave back is compared, not the totals. Pages a killed process still maps
    # while it exits stay in the pool as surplus until it is gone.
    deadline = time.monotonic() + 10
    while pool_killed - pool_state().total != added and time.monotonic() < deadline:
        time.sleep(0.2)
    assert pool_killed - pool_state().total == added
