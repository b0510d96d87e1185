"""`cnfperf cluster`: one at a time, stopped by a signal with nothing left,
and a cluster killed outright removed by `cnfperf cleanup`. (These run before
the folder's shared cluster starts: they start their own.)"""
from __future__ import annotations

import signal
import socket
import subprocess
import sys

import pytest

import harness
import leak
from cnfperf.cluster import node

pytestmark = pytest.mark.e2e
UP_S = 120


def _start() -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "cnfperf", "cluster"], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, stdin=subprocess.DEVNULL)


def _until_up(proc: subprocess.Popen) -> list[str]:
    lines = []
    for line in proc.stdout:
        lines.append(line)
        if line.startswith("Ctrl-C"):
            return lines
    raise AssertionError(f"cnfperf cluster ended ({proc.wait()}) before it was up: "
                         f"{''.join(lines)} {proc.stderr.read()}")


def test_a_cluster_is_one_at_a_time_and_a_signal_leaves_nothing():
    harness.require_cluster()
    with leak.assert_no_leftovers():
        proc = _start()
        try:
            said = "".join(_until_up(proc))
            assert f"kubeconfig: {node.KUBECONFIG}" in said and "Kubernetes v1.34" in said, said
            second = subprocess.run([sys.executable, "-m", "cnfperf", "cluster"], timeout=60,
                                    capture_output=True, text=True)
            assert second.returncode == 3, second
            assert f"a test cluster runs already (pid {proc.pid})" in second.stderr
            assert second.stderr.count("\n") == 1, second.stderr
            proc.send_signal(signal.SIGINT)
            assert proc.wait(UP_S) == 0
            assert "nothing of it is left" in proc.stderr.read()
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()


def test_a_killed_cluster_is_cleaned_up(tmp_path):
    harness.require_cluster()
    with leak.assert_no_leftovers():
        proc = _start()
        try:
            _until_up(proc)
        finally:
            proc.kill()
            proc.wait()
        assert node.JOURNAL.exists() and node.HOME.exists()
        done = subprocess.run([sys.executable, "-m", "cnfperf", "cleanup", "--results",
                               str(tmp_path)], timeout=120, capture_output=True, text=True)
        assert done.returncode == 0, done
        assert f"removed cluster {node.HOME}" in done.stdout, done.stdout
        assert not node.HOME.exists() and not node.JOURNAL.exists()


def test_a_daemon_that_cannot_start_is_named_and_nothing_is_left():
    """The API server's port taken: it exits, and the cluster says so in one
    line, with what the API server said last, and takes the rest down."""
    harness.require_cluster()
    with leak.assert_no_leftovers(), socket.socket() as taken:
        taken.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)   # a cluster just stopped
        taken.bind(("127.0.0.1", node.API_PORT))
        taken.listen()
        done = subprocess.run([sys.executable, "-m", "cnfperf", "cluster"], timeout=UP_S,
                              capture_output=True, text=True, stdin=subprocess.DEVNULL)
    assert done.returncode == 1, done
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith("cnfperf: error: the test cluster did not start: "), done.stderr
    assert "kube-apiserver exited 1" in last and "address already in use" in last, last
    assert not node.HOME.exists() and not node.JOURNAL.exists()


def test_an_inventory_that_does_not_load_is_refused_before_anything(tmp_path):
    """--hosts names a file that is not an inventory: exit 2, one line
    naming it, and no cluster started."""
    bad = tmp_path / "hosts.toml"
    bad.write_text("[[host]]\nname = 'dut'\n")       # no address
    for hosts in (bad, tmp_path / "none.toml"):
        done = subprocess.run([sys.executable, "-m", "cnfperf", "cluster", "--hosts", str(hosts)],
                              timeout=60, capture_output=True, text=True, stdin=subprocess.DEVNULL)
        assert done.returncode == 2, done
        [line] = done.stderr.strip().splitlines()
        assert line.startswith("cnfperf: error: ") and str(hosts) in line, line
        assert not node.HOME.exists() and not node.JOURNAL.exists()
