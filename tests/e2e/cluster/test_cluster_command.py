"""`cnfperf cluster`: one at a time, its node offering the hugepages it was
given to DPDK pods (which ask for them as hugepages-2Mi), stopped by a signal
with nothing left and its hugepages given back, and a cluster killed outright
removed by `cnfperf cleanup`. (These run before the folder's shared cluster
starts: they start their own.)"""
from __future__ import annotations

import json
import signal
import socket
import subprocess
import sys

import pytest

import harness
import leak
from cnfperf.cluster import node
from cnfperf.host.hugepages import pool_state
from cnfperf.runtimes.pod import pods

pytestmark = pytest.mark.e2e
UP_S = 120


def _start(*args: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "cnfperf", "cluster", *args],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            stdin=subprocess.DEVNULL)


def _until_up(proc: subprocess.Popen) -> list[str]:
    lines = []
    for line in proc.stdout:
        lines.append(line)
        if line.startswith("Ctrl-C"):
            return lines
    raise AssertionError(f"cnfperf cluster ended ({proc.wait()}) before it was up: "
                         f"{''.join(lines)} {proc.stderr.read()}")


def test_one_cluster_at_a_time_its_hugepages_go_to_dpdk_pods_and_a_signal_leaves_nothing(cli):
    """--hugepages: the node offers them (allocatable hugepages-2Mi), and
    each DPDK pod of a memif pair asks for its engine's pool as a resource,
    a hugetlbfs of its own in place of the data plane's hostPath; after the
    signal the host's pool is as before."""
    harness.require_cluster()
    pool = pool_state().total
    with leak.assert_no_leftovers():
        proc = _start("--hugepages", "128")
        try:
            said = "".join(_until_up(proc))
            assert f"kubeconfig: {node.KUBECONFIG}" in said and "Kubernetes v1.34" in said, said
            # a kubelet offers the host's whole pool: pages held before it too
            offered = 128 + 2 * pool
            assert f"hugepages-2Mi offered to pods: {node.node_name()} {offered} MB " \
                   "(128 MB added on each)" in said, said
            assert pool_state().total == pool + 64
            second = subprocess.run([sys.executable, "-m", "cnfperf", "cluster"], timeout=60,
                                    capture_output=True, text=True)
            assert second.returncode == 3, second
            assert f"a test cluster runs already (pid {proc.pid})" in second.stderr
            assert second.stderr.count("\n") == 1, second.stderr
            api = pods.connect(node.KUBECONFIG)
            assert pods.hugepages_mb(api, node.node_name()) == offered
            done = cli("run", "--switch", "memif", "--api", "dpdk", "--endpoint-in", "pod",
                       "--pin", "no", "--tester", "split", "--rate", "2000", "--duration", "1",
                       "--warmup", "0.3", "--json", timeout=UP_S)
            assert done.returncode == 0, done.stderr
            [point] = json.loads(done.stdout)["run"]["points"]
            [pair] = point["per_pair"]
            assert pair["lost"] == 0 and pair["received"] == pair["sent"] > 0, pair
            placed = point["cluster_facts"]["pods"].values()
            assert [f["hugepages_mb"] for f in placed] == [64, 64], placed
            assert all(not any(v.endswith(".hugepages") for v in f["volumes"])
                       for f in placed), placed
            proc.send_signal(signal.SIGINT)
            assert proc.wait(UP_S) == 0
            assert "nothing of it is left" in proc.stderr.read()
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    assert pool_state().total == pool


def test_a_killed_cluster_is_cleaned_up(tmp_path):
    """Its daemons, folder and the hugepages it added to the pool."""
    harness.require_cluster()
    pool = pool_state().total
    with leak.assert_no_leftovers():
        proc = _start("--hugepages", "8")
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
        assert pool_state().total == pool


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


def test_an_inventory_that_does_not_load_or_negative_hugepages_are_refused_before_anything(
        tmp_path):
    """--hosts names a file that is not an inventory, --hugepages is below
    0: exit 2, one line naming it, and no cluster started."""
    bad = tmp_path / "hosts.toml"
    bad.write_text("[[host]]\nname = 'dut'\n")       # no address
    for args, named in [(["--hosts", str(bad)], str(bad)),
                        (["--hosts", str(tmp_path / "none.toml")], "none.toml"),
                        (["--hugepages", "-2"], "--hugepages: -2")]:
        done = subprocess.run([sys.executable, "-m", "cnfperf", "cluster", *args],
                              timeout=60, capture_output=True, text=True, stdin=subprocess.DEVNULL)
        assert done.returncode == 2, done
        [line] = done.stderr.strip().splitlines()
        assert line.startswith("cnfperf: error: ") and named in line, line
        assert not node.HOME.exists() and not node.JOURNAL.exists()
