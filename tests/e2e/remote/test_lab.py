"""The lab: a host under test that is a virtual machine, a second kernel
whose hardware is emulated (tests/vmhost.py's guest under TCG, with QEMU's
igb, an Intel 82576 with SR-IOV, and Debian's 6.12 kernel), reached over SSH
as any host is, its agent run from the same checkout. Most points run there
whole (tester and switch): the data planes that need hardware or a kernel
this machine lacks (SR-IOV, netkit, kernel OVS, tc's police action). One
runs TG-DUT: the tester there, its engine's DPDK on the guest's igb NICs named
by PCI address (the wires: their taps the ends here), the bridge here. One
lab for the module, one run for its points: a boot and an agent's start are
minutes under TCG."""
from __future__ import annotations

import json
import re
import subprocess
import sys
import time

import pytest

import harness
import leak
import vmhost
from cnfperf.report import emulation
from cnfperf.report.nfs import hops

pytestmark = [pytest.mark.e2e, pytest.mark.needs("sshd", "ssh-keygen", "qemu-system-x86_64")]

RATE = 2000
DURATION = 1.0
RUN_S = 900        # the agent's start, its facts and the point's build, all emulated


WIRES = [("local", "dut"), ("local", "dut")]
WIRE_ENDS = [("tv0a", "tv0b"), ("tv1a", "tv1b")]    # vmhost's names: the tap here, the NIC there


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    with vmhost.hosts(tmp_path_factory.mktemp("lab"), ["dut"], wires=WIRES,
                      sriov={"dut": 1}) as lab:
        yield lab


@pytest.fixture(scope="module")
def pci_inventory(lab) -> str:
    """The lab's inventory with its host's wire ends named by PCI address."""
    text = lab.inventory.read_text()
    for _, there in lab.wires:
        text = text.replace(f'"{there}"', f'"dut:{_pci(lab.hosts["dut"], there.name)}"')
    path = lab.inventory.with_name("hosts-pci.toml")
    path.write_text(text)
    return str(path)


def _pci(host, netdev: str) -> str:
    """The PCI address of the host's NIC `netdev`."""
    return _target(host, f"/sys/class/net/{netdev}/device")


def _target(host, link: str) -> str:
    """The name a sysfs link points to, on the host."""
    return host.run(["sh", "-c", 'basename "$(realpath "$1")"', "target", link],
                    check=True).stdout.strip()


def assert_as_found(host) -> None:
    """Nothing of cnfperf's left on the lab's host, its PF as the lab made
    it (no VFs, its driver's autoprobe on), its wires' NICs the kernel's igb's
    and up, named as they were."""
    assert host.leftovers() == set()
    pf = "/sys/class/net/pf0/device"
    said = host.run(["cat", f"{pf}/sriov_numvfs", f"{pf}/sriov_drivers_autoprobe"],
                    check=True).stdout.split()
    assert said == ["0", "1"], said
    for _, there in WIRE_ENDS:
        driver = _target(host, f"/sys/class/net/{there}/device/driver")
        assert driver == "igb", (there, driver)
        state = host.run(["cat", f"/sys/class/net/{there}/operstate"], check=True).stdout
        assert state.strip() == "up", (there, state)


@pytest.fixture
def dut(lab, no_leftovers):
    host = lab.hosts["dut"]
    yield host
    assert_as_found(host)


# Every point on the lab in one run: the agent's start there (a minute under
# TCG) once. Each test below holds its points to what they must show. The
# lab's host has three NICs with SR-IOV (its wires' too): pf0 named.
SCENARIO = f"""
tester_host = "dut"
dut_host = "dut"
tester = "single"
api = "raw"
rate = {RATE}
duration = {DURATION}
warmup = 0.5
sriov_pf = "pf0"

# a pair through each: SR-IOV VFs as netdevs, netkit, kernel OVS (NORMAL)
[[part]]
switch = ["sriov", "netkit", "ovs-kernel"]

# two l2 NFs in each path: six VFs, a netkit pipeline, a chain through OVS
[[part]]
switch = ["sriov", "netkit", "ovs-kernel"]
nfs = 2
nf = "l2"

# kernel OVS's port-to-port rules around an NF
[[part]]
switch = "ovs-kernel"
forward = "port"
nfs = 1
nf = "l2"

# kernel OVS in a container of its own: its daemons in the switch image there
[[part]]
switch = "ovs-kernel"
switch_in = "container"

# the PF's settings on each VF: a VLAN, spoof checking, no trust, the NIC's rate limit
[[part]]
switch = "sriov"
sriov_vlan = 100
sriov_spoofchk = true
sriov_trust = false
sriov_max_tx_rate = 1

# the tester's VFs bound to DPDK (the netns runtime's engines see the host's PCI devices)
[[part]]
switch = "sriov"
api = "dpdk"
runtime = "netns"

# TG-DUT: the tester there on its NICs by PCI address (DPDK's igb PMD), the bridge here
[[part]]
dut_host = "local"
switch = "bridge"
api = "dpdk"
runtime = "netns"

# tc's police action on the bridge's port before the receiver: 2000 frames/s, 1000 pass
[[part]]
switch = "bridge"
policer = "tc"
policer_rate = 1000
policer_bucket = 32
"""


@pytest.fixture(scope="module")
def points(lab, pci_inventory, tmp_path_factory, engine):
    """The scenario's points as stored (find() picks one); the lab's host as
    found afterwards."""
    where = tmp_path_factory.mktemp("lab-run")
    (where / "lab.toml").write_text(SCENARIO)
    with leak.assert_no_leftovers():     # nothing here either
        done = subprocess.run(
            harness.cnfperf_argv("run", str(where / "lab.toml"), "--hosts", pci_inventory,
                                 "--json"),
            capture_output=True, text=True, cwd=harness.REPO, timeout=RUN_S,
            stdin=subprocess.DEVNULL, env=harness.cnfperf_env(where / "results"))
    assert done.returncode == 0, done.stderr
    run = json.loads(done.stdout)["run"]
    assert run["status"] == "done"
    assert_as_found(lab.hosts["dut"])
    return run["points"]


def find(points: list[dict], switch: str, api: str = "raw", nfs: int = 0,
         forward: str = "auto", policer: str = "none", dut_host: str = "dut",
         sriov_vlan: int = 0, switch_in: str = "host") -> dict:
    """The one point of the scenario with these fields."""
    wanted = {"switch": switch, "api": api, "nfs": nfs, "forward": forward,
              "policer": policer, "dut_host": dut_host, "sriov_vlan": sriov_vlan,
              "switch_in": switch_in}
    [point] = [p for p in points if all(p[k] == v for k, v in wanted.items())]
    return point


def assert_zero_loss(point: dict) -> None:
    [pair] = point["per_pair"]
    harness.assert_sent(point, pair, RATE * DURATION)
    assert pair["lost"] == 0 and pair["received"] == pair["sent"], pair


def assert_emulated(point: dict) -> None:
    """Marked as run on emulated hardware: the host's CPU, an SR-IOV point's NIC."""
    assert emulation.emulated(point) and emulation.said(point) == "host dut tcg (emulated)"
    assert point["hosts"]["dut"]["kernel"].startswith("6.12")
    if point["switch"] == "sriov":
        assert "pf0: igb 8086:10c9, 7 VFs (QEMU's emulation)" in point["versions"]["sriov_nics"]


def test_a_pair_through_virtual_functions(points):
    point = find(points, "sriov")
    assert_zero_loss(point)
    assert_emulated(point)
    assert point["sriov_pf"] == "pf0"
    # each VF's frames as the NIC counted them (igbvf reads its registers: an
    # igb PF keeps no per-VF statistics), in the loss table's link beside the
    # engines' counts: what the sender's VF put on the NIC's switch, the
    # receiver's took off it, warm-up included, to the frame
    counters = point["counters"]
    applied = point["switch_facts"]["applied"]
    assert applied["counters"] == dict.fromkeys(counters, "vf"), applied
    assert applied["drivers"] == dict.fromkeys(counters, "igbvf"), applied
    sender, link, receiver, _ = hops(point, 0)
    assert link.what == "link" and link.lost == 0, link
    assert (sender.tx, receiver.rx) == (link.rx, link.tx) and link.rx > RATE * DURATION, \
        (sender, link, receiver, counters)


def test_a_chain_of_two_network_functions_on_virtual_functions(points):
    """Six VFs: the tester's two and each NF's two, every hop through the NIC."""
    point = find(points, "sriov", nfs=2)
    assert_zero_loss(point)
    assert len(point["counters"]) == 6, point["counters"]
    # each of the three links: what the NIC took from one VF it gave the next
    links = [h for h in hops(point, 0) if h.what == "link"]
    assert len(links) == 3 and all(h.lost == 0 and h.rx == h.tx for h in links), links


def test_the_pf_sets_each_virtual_function_as_asked(points):
    """sriov_vlan, sriov_spoofchk, sriov_trust and sriov_max_tx_rate as the PF
    reads them back (its link up for the rate limit, down again after if it
    was: assert_as_found); the pair's frames all cross the VLAN, the tester
    sending from its VFs' own MACs (spoof checking passes them). QEMU's igb takes
    the rate limit and does not enforce it (6 kpps of 64 B frames, 3 Mbit/s,
    crossed a 1 Mbit/s limit without loss): a limit's effect needs a real NIC."""
    point = find(points, "sriov", sriov_vlan=100)
    applied = point["switch_facts"]["applied"]
    assert applied["pf"] == "pf0" and len(applied["vfs"]) == 2, applied
    for vf in applied["vfs"]:
        assert (vf["vlan"], vf["spoofchk"], vf["trust"], vf["max_tx_rate"]) == \
            (100, True, False, 1), applied
    assert_zero_loss(point)


def test_a_dpdk_pair_on_virtual_functions(points):
    """The tester's two VFs bound to vfio-pci (behind the lab's emulated
    IOMMU, each VF in a group of its own), opened by DPDK's own VF driver
    (e1000's igbvf PMD), from the point's hugepages; the bindings go with the
    VFs (assert_as_found)."""
    point = find(points, "sriov", api="dpdk")
    assert_zero_loss(point)
    # no netdev, and an igb PF keeps no per-VF statistics: the engines' counts only
    assert point["counters"] == {}
    applied = point["switch_facts"]["applied"]
    assert set(applied["counters"].values()) == {None}
    assert set(applied["drivers"].values()) == {"vfio-pci"}, applied


@pytest.mark.parametrize("switch, nfs, forward, switch_in", [
    ("netkit", 0, "auto", "host"), ("netkit", 2, "auto", "host"),
    ("ovs-kernel", 0, "auto", "host"), ("ovs-kernel", 2, "auto", "host"),
    ("ovs-kernel", 1, "port", "host"), ("ovs-kernel", 0, "auto", "container"),
], ids=["netkit-pair", "netkit-pipeline", "ovs-kernel-pair", "ovs-kernel-chain",
        "ovs-kernel-rules", "ovs-kernel-in-a-container"])
def test_the_lab_kernel_s_data_planes(points, switch, nfs, forward, switch_in):
    """netkit (Linux 6.7) and kernel OVS (the openvswitch module), which this
    machine's kernel lacks, at zero loss there; kernel OVS's daemons in a
    container of their own too (a runc container in the lab's guest, whose
    runtime pivots into the switch image as on any host)."""
    point = find(points, switch, nfs=nfs, forward=forward, switch_in=switch_in)
    assert_zero_loss(point)
    assert_emulated(point)
    [pair] = point["per_pair"]
    counters = point["counters"]
    assert max(c["rx_packets"] for c in counters.values()) >= pair["received"], counters


def test_a_tester_drives_its_nics_by_pci_address(points, lab):
    """TG-DUT the other way: the tester on the lab's host, its engine's DPDK
    on its two igb NICs named by PCI address (bound to vfio-pci for the
    point, behind the lab's emulated IOMMU), the bridge here joining the wires'
    taps; each NIC back with igb, named and up as before (assert_as_found)."""
    point = find(points, "bridge", api="dpdk", dut_host="local")
    assert_zero_loss(point)
    assert (point["tester_host"], point["dut_host"]) == ("dut", "local")
    dut = point["hosts"]["dut"]
    assert dut["address"] == lab.hosts["dut"].address and dut["user"] == "root"
    assert dut["kernel"].startswith("6.12") and dut["cores"] >= 1 and dut["clock"]
    counters = point["counters"]
    [pair] = point["per_pair"]
    (tx_here, _), (rx_here, _) = WIRE_ENDS
    # the taps here (the bridge's ports) saw every frame of the NICs there;
    # those have no netdev while DPDK has them: the engine's counts are theirs
    assert counters[f"local:{tx_here}"]["rx_packets"] >= pair["sent"], counters
    assert counters[f"local:{rx_here}"]["tx_packets"] >= pair["received"], counters
    assert not any(name.startswith("dut:") for name in counters), counters


def test_tc_police_on_the_link_into_the_receiver(points):
    """tc's police action (act_police: the lab's kernel has it) on the
    bridge's port before the receiver: 2000 frames/s offered, 1000 pass."""
    point = find(points, "bridge", policer="tc")
    [pair] = point["per_pair"]
    assert 700 <= pair["rx_pps"] <= 1300, pair
    assert 0.3 <= pair["loss_ratio"] <= 0.65, pair
    drops = sum(c["rx_dropped"] + c["tx_dropped"] for c in point["counters"].values())
    assert drops >= pair["lost"] > 0, (drops, pair, point["counters"])


def test_a_killed_agent_leaves_the_host_as_found(engine, cli, results, lab, dut):
    """SIGKILL to the agent on the lab's host mid-trial, and to the engines
    it ran: the controller finds the host lost, and undoes its part there from
    the host's journal: the PF's VFs and autoprobe as found, nothing left
    (the dut fixture)."""
    argv = harness.cnfperf_argv("run", "--hosts", str(lab.inventory), "--tester-host", "dut",
                                "--dut-host", "dut", "--switch", "sriov", "--sriov-pf", "pf0",
                                "--api", "raw",
                                "--tester", "single", "--rate", str(RATE), "--duration", "60")
    proc = subprocess.Popen(argv, cwd=harness.REPO, env=harness.cnfperf_env(results),
                            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + RUN_S
        while not dut.run(["pgrep", "-f", "cnfperf-engine[-a-z]* tester"]).stdout:
            assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()
            time.sleep(0.5)
        assert dut.run(["cat", "/sys/class/net/pf0/device/sriov_numvfs"]).stdout.strip() == "2"
        dut.run(["pkill", "-KILL", "-f", "cnfperf agent|cnfperf-engine"], check=True)
        _, err = proc.communicate(timeout=300)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 1, err
    assert "host dut: the connection was lost" in err, err
    assert re.search(r"cleaned up: .*\bhost\b", err) and "nothing was left behind" in err, err


# A NIC lent to DPDK by a process that is then killed: its journal is all
# `cnfperf cleanup` has to give the NIC back by. uio_pci_generic, the driver
# of a host without an IOMMU: the points above bind vfio-pci.
LEND_AND_DIE = """
import os, sys
from cnfperf.host import pci
pci.dpdk_driver = lambda: "uio_pci_generic"
from cnfperf.host.journal import Journal, journal_path
journal = Journal(journal_path("cnfpdead"))
pci.lend(journal, sys.argv[1])
assert pci.driver(sys.argv[1]) == "uio_pci_generic", pci.driver(sys.argv[1])
os.kill(os.getpid(), 9)
"""


def test_cleanup_gives_a_killed_run_s_nic_back_to_its_driver(lab, dut):
    """A wire's NIC bound to uio_pci_generic, its binder killed: `cnfperf
    cleanup` there gives it back to igb, its netdev named and up as before
    (the dut fixture's assert_as_found)."""
    address = _pci(dut, WIRE_ENDS[0][1])
    here = ["env", f"PYTHONPATH={harness.REPO}"]
    killed = dut.run([*here, sys.executable, "-c", LEND_AND_DIE, address], timeout=RUN_S)
    assert killed.returncode in (-9, 137), (killed.returncode, killed.stderr)
    # DPDK's driver has the NIC: no netdev
    assert _target(dut, f"/sys/bus/pci/devices/{address}/driver") == "uio_pci_generic"
    done = dut.run([*here, *harness.cnfperf_argv("cleanup")], timeout=RUN_S)
    assert done.returncode == 0, done.stderr
    assert f"removed pci {address}" in done.stdout, done.stdout
