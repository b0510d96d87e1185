"""host/sriov.py against a sysfs of files: which PF a point's VFs are made
on, and the refusals that say why none can be."""
from __future__ import annotations

from pathlib import Path

import pytest

from cnfperf import UserError
from cnfperf.dataplanes import dpdk_args
from cnfperf.dataplanes.sriov import SriovPlane
from cnfperf.host import sriov
from harness import scenarios


def nic(net: Path, name: str, total: int | None, vfs: int = 0, subsystem: str = "0x1af4") -> None:
    device = net / name / "device"
    device.mkdir(parents=True)
    if total is not None:
        (device / "sriov_totalvfs").write_text(f"{total}\n")
        (device / "sriov_numvfs").write_text(f"{vfs}\n")
    for f, value in (("vendor", "0x8086"), ("device", "0x10c9"), ("subsystem_vendor", subsystem)):
        (device / f).write_text(value + "\n")


@pytest.fixture
def net(tmp_path: Path) -> Path:
    net = tmp_path / "net"
    nic(net, "eth0", None)           # no SR-IOV
    nic(net, "pf0", 7)
    return net


def test_auto_is_the_one_nic_with_virtual_functions(net):
    chosen = sriov.choose("auto", 2, net)
    assert (chosen.name, chosen.total, chosen.vfs) == ("pf0", 7, 0)
    assert [p.name for p in sriov.pfs(net)] == ["pf0"]
    assert sriov.describe(chosen, net) == "pf0: ? 8086:10c9, 7 VFs (QEMU's emulation)"


@pytest.mark.parametrize("wanted, count, why", [
    ("pf0", 8, "needs 8 virtual functions, pf0 has at most 7"),
    ("eth0", 1, "sriov_pf eth0: it has no SR-IOV virtual functions (NICs with SR-IOV: pf0)"),
    ("eth9", 1, "sriov_pf eth9: no such NIC"),
])
def test_a_pf_that_cannot_give_them_is_refused_saying_why(net, wanted, count, why):
    with pytest.raises(sriov.SriovError, match=why.replace("(", r"\(").replace(")", r"\)")):
        sriov.choose(wanted, count, net)


def test_vfs_someone_made_are_not_taken(net):
    nic(net, "pf1", 4, vfs=2, subsystem="0x8086")
    with pytest.raises(sriov.SriovError, match="name one with sriov_pf"):
        sriov.choose("auto", 1, net)
    with pytest.raises(sriov.SriovError, match="pf1 has 2 virtual functions already"):
        sriov.choose("pf1", 1, net)
    assert "emulation" not in sriov.describe(sriov.pf("pf1", net), net)


def test_no_nic_with_virtual_functions(tmp_path):
    nic(tmp_path / "net", "eth0", None)
    with pytest.raises(sriov.SriovError, match="no NIC on this host has SR-IOV"):
        sriov.choose("auto", 1, tmp_path / "net")


def test_dpdk_on_a_virtual_function_is_the_netns_runtime_s():
    with pytest.raises(UserError, match="^runtime: a DPDK engine on a virtual function"):
        scenarios(None, {"switch": "sriov", "api": "dpdk"})
    [s] = scenarios(None, {"switch": "sriov", "api": "dpdk", "runtime": "netns"})
    assert SriovPlane.scenario_problem(s, 1) is None
    [s] = scenarios(None, {"switch": "sriov", "api": "raw"})
    assert SriovPlane.scenario_problem(s, 1) is None


def test_a_vf_s_eal_opens_it_by_address_with_physical_addresses():
    args = dpdk_args.pci_eal_args("cnfp1p0s", "/run/hp", 128, ["0000:02:10.0", "0000:02:10.2"])
    assert args[args.index("--iova-mode") + 1] == "pa" and "--no-pci" not in args
    assert [args[i + 1] for i, a in enumerate(args) if a == "-a"] == ["0000:02:10.0",
                                                                     "0000:02:10.2"]
    assert args[args.index("--huge-dir") + 1] == "/run/hp"


def test_a_pf_the_host_lacks_is_bad_input_where_it_has_one(net, monkeypatch):
    """sriov_pf naming no NIC with SR-IOV, or auto where several have it, is
    refused as input (exit 2, by a run's preflight here and by each agent's
    there); a host with no such NIC at all is a host's problem (check():
    exit 1), whatever sriov_pf says."""
    from cnfperf.run import checks
    found = sriov.pfs
    monkeypatch.setattr(sriov, "pfs", lambda *_: found(net))
    [bad] = scenarios(None, {"switch": "sriov", "sriov_pf": "eth9"})
    assert checks.host_refusals([bad, bad]) == [
        ("sriov_pf", "sriov_pf eth9: no such NIC (NICs with SR-IOV: pf0)")]
    assert checks.host_refusals([bad], here="dut") == []     # its switch is not there
    [good] = scenarios(None, {"switch": "sriov", "sriov_pf": "pf0"})
    assert checks.host_refusals([good]) == []
    [auto] = scenarios(None, {"switch": "sriov"})
    assert checks.host_refusals([auto]) == []
    nic(net, "pf1", 4)
    assert checks.host_refusals([auto]) == [
        ("sriov_pf", "NICs pf0, pf1 have SR-IOV: name one with sriov_pf")]
    monkeypatch.setattr(sriov, "pfs", lambda *_: [])
    assert checks.host_refusals([bad]) == []
