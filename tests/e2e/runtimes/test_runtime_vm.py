"""QEMU guests as containers, for real, under TCG (this host's KVM cannot run
them): a guest boots and runs the engine, commands stream and take signals,
its cgroup holds it to its cores, tap, macvtap and vhost-user NICs carry its
frames, and a killed run's VM is found and removed. TCG is slow: timeouts
are generous, rates low."""
from __future__ import annotations

import json
import os
import re
import secrets
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

import harness
from cnfperf.dataplanes import dpdk_args
from cnfperf.dataplanes.testpmd_app import TestPmd
from cnfperf.host.hugepages import Hugepages
from cnfperf.host.journal import Journal, journal_path
from cnfperf.runtimes import ContainerError, Nic, Quota, VmRuntime
from cnfperf.runtimes.vm import cgroup, probe
from harness import REPO
from leak import assert_no_leftovers

pytestmark = [pytest.mark.e2e, pytest.mark.needs("qemu-system-x86_64", "busybox", "ip")]

CPU = max(os.sched_getaffinity(0))
PRINTER = 'trap "echo stopped; exit 7" INT; i=0; while :; do echo line $i; i=$((i+1)); sleep 0.1; done'
TIMEOUT = 120     # one command in a TCG guest, with the host busy


@pytest.fixture(scope="module")
def images(tmp_path_factory) -> Path:
    problems = VmRuntime.check()
    if problems:
        harness.missing("; ".join(problems))
    return tmp_path_factory.mktemp("images")


@pytest.fixture
def runtime(tmp_path, engine, images):
    journal = Journal(tmp_path / "run.journal")
    rt = VmRuntime(journal, tmp_path / "state", accel="tcg", images_dir=images)
    rt.prepare(engine)
    yield rt
    journal.close(remove=False)


def run(vm, argv, timeout=TIMEOUT) -> str:
    proc = vm.exec(argv)
    out, err = proc.communicate(timeout=timeout)
    assert proc.returncode == 0, (argv, err.decode())
    return out.decode()


def ip(*args: str) -> None:
    subprocess.run(["ip", *args], check=True, capture_output=True)


def test_guest_runs_the_engine_streams_and_takes_signals_on_its_cores(runtime, netns, prefix,
                                                                       engine):
    with assert_no_leftovers():
        vm = runtime.create(f"{prefix}-vm", [CPU], netns, quota=Quota(50))
        try:
            print(f"VM ready in {vm.ready_s:.1f} s (QEMU start to the exec server's answer)")
            version = json.loads(run(vm, [vm.engine, "--version"]))
            assert "udp" in version["apis"] and vm.engine == str(engine.resolve())
            assert run(vm, ["hostname"]).strip() == vm.name
            assert run(vm, ["cat", "/proc/cpuinfo"]).count("processor\t:") == 1

            proc = vm.exec(["sh", "-c", PRINTER])
            for i in range(3):
                assert proc.stdout.readline() == f"line {i}\n".encode()
            proc.send_signal(signal.SIGINT)
            assert proc.stdout.read().decode().splitlines()[-1] == "stopped"
            assert proc.wait(timeout=TIMEOUT) == 7

            proc = vm.exec(["sh", "-c", "read a; echo got $a >&2; exit 4"], stdin=subprocess.PIPE)
            _, err = proc.communicate(b"this\n", timeout=TIMEOUT)
            assert (err, proc.returncode) == (b"got this\n", 4)

            groups = _held_to(vm, CPU, quota_us=50_000)
        finally:
            vm.destroy()
        vm.destroy()
        assert runtime.journal.live() == []
        assert groups and not any(g.exists() for g in groups)
        assert not vm.dir.exists()
        ip("netns", "del", netns)


def _held_to(vm, core: int, quota_us: int) -> list[Path]:
    """QEMU in the VM's own cgroup (cpuset, quota), each vCPU thread on its core."""
    groups = cgroup.dirs(vm.name)
    for group in groups:
        assert vm.init_pid in [int(p) for p in (group / "cgroup.procs").read_text().split()]
        if (group / "cpuset.cpus").exists():
            assert (group / "cpuset.cpus").read_text().strip() == str(core)
        if (group / "cpu.cfs_quota_us").exists():
            assert int((group / "cpu.cfs_quota_us").read_text()) == quota_us
        if (group / "cpu.max").exists():
            assert (group / "cpu.max").read_text().split()[0] == str(quota_us)
    vcpus = [t for t in Path(f"/proc/{vm.init_pid}/task").iterdir()
             if re.fullmatch(r"CPU \d+/(TCG|KVM)", (t / "comm").read_text().strip())]
    assert len(vcpus) == len(vm.cpus)
    for t in vcpus:
        allowed = re.search(r"Cpus_allowed_list:\s*(\S+)", (t / "status").read_text())[1]
        assert allowed == str(core)
    return groups


def test_tap_on_a_bridge_and_a_macvtap(runtime, netns, prefix):
    """Kernel NICs: a tap on a Linux bridge and a macvtap on a veth, both in
    the VM's netns, each pinged from the guest over the kernel's virtio_net."""
    tap_mac, mvt_mac = "52:54:00:23:00:01", "52:54:00:23:00:02"
    with assert_no_leftovers():
        ns = ("-n", netns)
        ip(*ns, "link", "add", "br0", "type", "bridge")
        ip(*ns, "addr", "add", "10.233.0.1/24", "dev", "br0")
        ip(*ns, "link", "set", "br0", "up")
        ip(*ns, "tuntap", "add", "dev", "tap0", "mode", "tap")
        ip(*ns, "link", "set", "tap0", "master", "br0", "up")
        ip(*ns, "link", "add", "va", "type", "veth", "peer", "name", "vb")
        ip(*ns, "addr", "add", "10.233.1.1/24", "dev", "vb")
        ip(*ns, "link", "add", "link", "va", "name", "mvt0", "address", mvt_mac,
           "type", "macvtap", "mode", "bridge")
        for link in ("va", "vb", "mvt0"):
            ip(*ns, "link", "set", link, "up")
        nics = [Nic(mac=tap_mac, name="p0", tap="tap0"),
                Nic(mac=mvt_mac, name="p1", mtu=1400, tap="mvt0", macvtap=True)]
        vm = runtime.create(f"{prefix}-vm", [CPU], netns, nics=nics)
        try:
            links = run(vm, ["ip", "-o", "link"])
            assert re.search(rf"p0: .*mtu 1500 .*link/ether {tap_mac}", links)
            assert re.search(rf"p1: .*mtu 1400 .*link/ether {mvt_mac}", links)
            run(vm, ["ip", "addr", "add", "10.233.0.2/24", "dev", "p0"])
            run(vm, ["ip", "addr", "add", "10.233.1.2/24", "dev", "p1"])
            assert " 0% packet loss" in run(vm, ["busybox", "ping", "-c", "3", "-W", "10",
                                                 "10.233.0.1"])
            assert " 0% packet loss" in run(vm, ["busybox", "ping", "-c", "3", "-W", "10",
                                                 "10.233.1.1"])
        finally:
            vm.destroy()
        ip("netns", "del", netns)


def test_a_nic_that_cannot_be_opened_fails_the_vm_and_leaves_nothing(runtime, netns, prefix):
    with assert_no_leftovers():
        mac = "52:54:00:23:00:05"
        for nic, why in ((Nic(mac=mac, name="p0", tap="nosuch0"), "tap nosuch0: no such link"),
                         (Nic(mac=mac, name="p0", tap="lo", macvtap=True), "no /dev/tap1")):
            with pytest.raises(ContainerError, match=why):
                runtime.create(f"{prefix}-vm", [CPU], netns, nics=[nic])
            assert runtime.journal.live() == []
        ip("netns", "del", netns)


def test_vhost_user_nic_to_a_host_testpmd(runtime, netns, prefix, engine, tmp_path):
    """The guest's engine sends over DPDK's virtio PMD (the NIC on
    uio_pci_generic) into a vhost-user socket QEMU serves; dpdk-testpmd on the
    host, its client, counts what arrives."""
    harness.require("dpdk-testpmd")
    harness.require_api(engine, "dpdk")
    cores = harness.cores(2)
    sock = tmp_path / "vhost0.sock"
    mac = "52:54:00:23:00:03"
    with assert_no_leftovers():
        with Hugepages(48, prefix, tmp_path) as hp:
            # QEMU waits at start for its vhost-user peer: testpmd first (a client
            # retries until QEMU's socket is there)
            eal = dpdk_args.eal_args(prefix + "h", str(hp.mount_point), 64,
                                     [f"net_vhost0,iface={sock},client=1"], lcores="0@0,1@0")
            with TestPmd(eal, ["--forward-mode=rxonly", "--total-num-mbufs=2048"],
                         "host") as testpmd:
                vm = runtime.create(f"{prefix}-vm", [cores[1]], netns, nics=[
                    Nic(mac=mac, name="p0", dpdk=True, socket=str(sock), server=True)])
                try:
                    testpmd.forward()
                    started = time.monotonic()
                    sent = _send_in_guest(vm, mac)
                    print(f"the guest's engine sent {sent} frames in "
                          f"{time.monotonic() - started:.1f} s (EAL start included)")
                    deadline = time.monotonic() + 30
                    while testpmd.fwd_stats().get(0, {}).get("rx_packets", 0) < sent and \
                            time.monotonic() < deadline:
                        time.sleep(1)
                    received = testpmd.fwd_stats()[0]["rx_packets"]
                finally:
                    vm.destroy()
        assert sent >= 2000 and received >= sent, (sent, received)
        ip("netns", "del", netns)


def _send_in_guest(vm, src_mac: str) -> int:
    """A few thousand frames from the engine in the guest; how many it sent."""
    argv = [vm.engine, "send", "--api", "dpdk", "--src-mac", src_mac,
            "--dst-mac", "02:00:00:00:00:02", "--src-ip", "10.0.0.1", "--dst-ip", "10.0.0.2",
            "--rate", "1000", "--duration", "4", "--interval", "0",
            "--", *vm.eal_args(64, "cnfpg"), "--lcores", f"0@{vm.guest_cpu(vm.cpus[0])}"]
    proc = vm.exec(argv)
    out, err = proc.communicate(timeout=240)
    assert proc.returncode == 0, err.decode()
    summary = [json.loads(l) for l in out.decode().splitlines() if '"summary"' in l][-1]
    return summary["tx_packets"]


KILLED_RUN = """
import sys, time
from pathlib import Path
from cnfperf.host.journal import Journal
from cnfperf.runtimes import VmRuntime
journal, name, netns, core, images = sys.argv[1:6]
rt = VmRuntime(Journal(Path(journal)), Path(journal).parent, accel="tcg", images_dir=Path(images))
rt.prepare(Path("/bin/true"))
vm = rt.create(name, [int(core)], netns)
p = vm.exec(["sleep", "600"])
print("ready", vm.init_pid, flush=True)
time.sleep(600)
"""


def test_a_killed_run_leaves_a_vm_that_cleanup_removes(netns, images, tmp_path):
    run_id = secrets.token_hex(2)
    name = f"cnfp{run_id}-vm"
    journal = journal_path(f"cnfp{run_id}")
    with assert_no_leftovers():
        child = subprocess.Popen([sys.executable, "-c", KILLED_RUN, str(journal), name, netns,
                                  str(CPU), str(images)], stdout=subprocess.PIPE, cwd=REPO)
        try:
            ready, qemu = child.stdout.readline().split()
            assert ready == b"ready"
        finally:
            child.kill()
            child.wait()
        assert VmRuntime.leftovers(f"cnfp{run_id}") == [name]
        assert Path(f"/proc/{int(qemu)}").exists()
        done = subprocess.run(harness.cnfperf_argv("cleanup", run_id), cwd=REPO,
                              capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stderr
        assert VmRuntime.leftovers(f"cnfp{run_id}") == []
        assert not journal.exists()
        VmRuntime.remove(name)   # again: nothing to do
        ip("netns", "del", netns)


def test_probe_says_which_accelerator_boots():
    problems = VmRuntime.check()
    if problems:
        harness.missing("; ".join(problems))
    # a real probe, with the runs' timeout: what it keeps serves the runs after
    # it (another timeout's answers would make the next run probe again)
    found = probe.boots(fresh=True)
    assert set(found) == {"kvm", "tcg"}
    assert found["tcg"] is None, found
    assert probe.boots() == found                        # read back, not probed again
    assert VmRuntime.probe() is VmRuntime.probe()        # asked once per process
