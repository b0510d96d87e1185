"""Runs in podman's containers (runtime = podman), and a user's image as the
network function: real podman, real traffic, zero loss at a low rate, the
nodes' CPU read from their cgroups, nothing left behind; a killed run's
containers, cgroups and conmons removed by `cnfperf cleanup`; a missing image
refused before anything exists."""
from __future__ import annotations

import json
import signal
import time

import pytest

import harness
import leak
from user_images import DPDK_ARGS, L2_ARGS, dpdk_image, image_archive, user_image

pytestmark = [pytest.mark.e2e, pytest.mark.needs("podman", "conmon", "runc", "busybox")]

RATE = 2000
DURATION = 1.0
WARMUP = 0.2
PODMAN = ("--runtime", "podman")


def _run(cli, *args: str) -> dict:
    done = cli("run", *args, "--rate", str(RATE), "--duration", str(DURATION),
               "--warmup", str(WARMUP), "--json", timeout=180)
    assert done.returncode == 0, done.stderr
    run = json.loads(done.stdout)["run"]
    assert run["status"] == "done"
    [point] = run["points"]
    [pair] = point["per_pair"]
    harness.assert_sent(point, pair, RATE * DURATION)
    assert pair["lost"] == 0 and pair["received"] == pair["sent"], pair
    return point


def _cpu_from_cgroups(point: dict) -> None:
    """Every node's CPU time was read (its container's cgroup, through init_pid)."""
    rows = [r for r in point["cpu_usage"] if r["kind"] != "switch"]
    assert rows and all(r["user_s"] is not None and r["user_s"] + r["system_s"] > 0
                        for r in rows), rows


def test_a_kernel_pair_through_an_engine_nf_with_noise(engine, cli, no_leftovers):
    point = _run(cli, *PODMAN, "--switch", "bridge", "--api", "raw", "--nfs", "1",
                 "--tester", "split", "--noise", "cpu")
    assert point["runtime"] == "podman" and point["image_name"].startswith("busybox+engine")
    _cpu_from_cgroups(point)


@pytest.mark.needs("dpdk-testpmd")
def test_a_dpdk_pair_through_a_switch_in_its_own_container(engine, cli, no_leftovers):
    point = _run(cli, *PODMAN, "--switch", "testpmd", "--api", "dpdk",
                 "--switch-in", "container", "--tester", "split")
    assert point["switch_in"] == "container"
    _cpu_from_cgroups(point)


def test_a_user_image_is_the_nf_of_a_runc_run(engine, cli, no_leftovers):
    """Its container is podman's, whatever runtime the ends use; its entrypoint
    (the static engine) gets ARGS with the NF's interfaces filled in."""
    with user_image() as ref:
        point = _run(cli, "--switch", "veth", "--api", "raw", "--nfs", "1",
                     "--nf", f"image:{ref} {L2_ARGS}", "--tester", "split")
    assert point["runtime"] == "runc" and point["nf_image_name"] == ref
    [nf] = [r for r in point["cpu_usage"] if r["kind"] == "nf"]
    assert nf["user_s"] is not None


def test_a_user_image_on_dpdk_gets_its_sockets_hugepages_and_eal_arguments(
        engine, cli, no_leftovers):
    """The engine with its DPDK libraries as a user's image: memif's sockets and
    the hugepages are mounted into its container, {eal} says where."""
    with dpdk_image() as ref:
        point = _run(cli, *PODMAN, "--switch", "memif", "--api", "dpdk", "--nfs", "1",
                     "--nf", f"image:{ref} {DPDK_ARGS}", "--tester", "split")
    assert point["nf_api"] == "dpdk" and point["nf_image_name"] == ref


def test_an_image_archive_is_loaded_before_the_run(engine, cli, no_leftovers,
                                                   tmp_path):
    with image_archive(tmp_path) as archive:
        point = _run(cli, *PODMAN, "--switch", "veth", "--api", "raw", "--nfs", "1",
                     "--nf", f"image:{archive} {L2_ARGS}", "--tester", "split")
    assert point["nf_image_name"] == "localhost/cnfperf-test-nf:archived"


@pytest.mark.parametrize("nf,why", [
    ("image:localhost/cnfperf-surely-absent:1 --x", "nf: image localhost/cnfperf-surely-absent:1: "
                                                   "not in podman's store"),
    ("image:/nonexistent/nf.tar", "nf: image archive /nonexistent/nf.tar: no such file"),
])
def test_a_missing_image_exits_2_with_one_line(engine, cli, no_leftovers, nf, why):
    done = cli("run", "--switch", "veth", "--api", "raw", "--nfs", "1", "--nf", nf)
    assert done.returncode == 2
    assert done.stderr.strip() == f"cnfperf: error: {why}" or \
        done.stderr.strip().startswith(f"cnfperf: error: {why}"), done.stderr
    assert len(done.stderr.strip().splitlines()) == 1


def test_sigkill_then_cleanup_leaves_no_container_cgroup_nor_conmon(engine, cli, start_cli,
                                                                   no_leftovers):
    before = leak.snapshot()
    run = start_cli("run", *PODMAN, "--switch", "bridge", "--rate", "1000", "--duration", "30",
                    "--warmup", "0")
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline and "measuring" not in (line := run.stderr.readline()):
        assert line, "the run ended before it measured"
    run.send_signal(signal.SIGKILL)
    run.wait(10)
    run.stderr.close()
    run.stdout.close()
    [killed] = json.loads(cli("results", "list", "--json", check=True).stdout)
    prefix = f"cnfp{killed['id']}"
    try:
        left = {kind: {n for n in names if prefix in n or "podman" in n or "conmon" in n}
                for kind, names in leak.diff(before, leak.snapshot()).items()}
        assert len(left["podman containers"]) == 2, left
        assert left["cgroups"] and left["processes"], left     # their groups, their conmons
        done = cli("cleanup", killed["id"])
        assert done.returncode == 0, done.stderr
        for container in left["podman containers"]:
            assert f"container {container}" in done.stdout
    finally:
        cli("cleanup", killed["id"])

