"""Nodes in virtual machines: where nf_in and endpoint_in put them, what the
checks refuse, and the NIC each data plane gives a VM's port (no root: the
kernel planes' `ip` calls are recorded, not run)."""
from __future__ import annotations

from pathlib import Path

import pytest

from cnfperf import UserError, nfs as nf_kinds
from cnfperf.dataplanes import DATAPLANES
from cnfperf.dataplanes import bridge, kernel, macvlan
from cnfperf.host import links
from cnfperf.plan import nf_places, place
from cnfperf.run import checks
from cnfperf.runtimes import Nic
from harness import scenarios


class Journal:
    def add(self, kind, name, **info):
        pass

    def discard(self, kind, name):
        pass


def _point(**fields):
    [s] = scenarios(None, fields)
    return place(s, "1a2b", host_cpus=(0, 1), nf=nf_kinds.find(s.nf) if s.nfs else None)


@pytest.mark.parametrize("nf_in, count, places", [
    ("container", 2, ("container", "container")),
    ("vm", 3, ("vm", "vm", "vm")),
    ("vm+container", 3, ("vm", "container", "container")),
    ("container+vm+container", 3, ("container", "vm", "container")),
    ("vm", 0, ()),
])
def test_nf_in_gives_each_nf_of_a_path_its_place_the_last_repeating(nf_in, count, places):
    assert nf_places(nf_in, count) == places


def test_a_place_that_is_neither_is_refused_naming_the_field():
    with pytest.raises(ValueError, match="not container or vm"):
        nf_places("vm+kvm", 2)
    with pytest.raises(UserError) as e:
        scenarios(None, {"switch": "bridge", "nfs": 1, "nf_in": "vmm"})
    assert e.value.field == "nf_in"


def test_the_plan_marks_vm_nodes_and_their_ports():
    point = _point(switch="bridge", nfs=2, nf_in="container+vm", endpoint_in="vm", pairs=2,
                   api="raw")
    for pair in point.pairs:
        assert all(ep.vm and ep.port.vm for ep in pair.endpoints)
        first, second = pair.nfs
        assert not first.vm and not any(p.vm for p in first.ports)
        assert second.vm and all(p.vm for p in second.ports)
    assert point.vms == [*(ep.name for ep in point.engines),
                         *(nf.name for nf in point.nfs if nf.vm)]
    assert _point(switch="bridge", nfs=1).vms == []


@pytest.mark.parametrize("fields, field", [
    ({"switch": "memif", "api": "dpdk", "nfs": 1, "nf_in": "vm"}, "nf_in"),
    ({"switch": "vpp-memif", "api": "dpdk", "endpoint_in": "vm"}, "endpoint_in"),
    # vhost: QEMU would wait for an engine that starts after it
    ({"switch": "vhost", "api": "dpdk", "endpoint_in": "vm"}, "endpoint_in"),
    ({"switch": "vhost", "api": "dpdk", "nfs": 1, "nf_in": "vm"}, "nf_in"),
    # veth and macvlan shape on the sender's own interface, in its guest here
    ({"switch": "veth", "endpoint_in": "vm", "api": "raw", "nfs": 1, "limit": "10k"}, "limit"),
    ({"switch": "macvlan", "nfs": 1, "nf_in": "vm", "limit": "10k"}, "limit"),
    ({"switch": "veth", "runtime": "kvm"}, "runtime"),
    # two ends in two VMs: two clocks
    ({"switch": "bridge", "endpoint_in": "vm", "tester": "split"}, "endpoint_in"),
    ({"switch": "bridge", "endpoint_in": "vm", "api": "udp"}, "endpoint_in"),
    # a guest's hugepages (256 MB) and the memory beside them, before anything starts
    ({"switch": "ovs", "api": "dpdk", "nfs": 1, "nf_in": "vm", "vm_memory": 400}, "vm_memory"),
    ({"switch": "testpmd", "api": "dpdk", "nfs": 1, "nf_in": "vm", "size": 9000}, "vm_memory"),
    ({"switch": "testpmd", "api": "dpdk", "pairs": 3, "endpoint_in": "vm"}, "vm_memory"),
    ({"switch": "bridge", "nfs": 1, "nf_in": "vm", "vm_memory": 150}, "vm_memory"),
])
def test_what_cannot_hold_a_vm_is_refused_naming_the_field(fields, field):
    with pytest.raises(UserError) as e:
        scenarios(None, fields)
    assert e.value.field == field, e.value


@pytest.mark.parametrize("fields", [
    {"switch": "ovs", "api": "dpdk", "nfs": 3, "nf_in": "vm+container"},
    {"switch": "testpmd", "api": "dpdk", "nfs": 2, "nf_in": "vm", "endpoint_in": "vm"},
    {"switch": "bridge", "endpoint_in": "vm", "api": "raw", "limit": "10k"},   # the bridge's port
    {"switch": "macvlan", "nfs": 1, "nf_in": "vm"},
    {"switch": "veth", "nfs": 2, "nf_in": "vm", "api": "raw"},
    {"switch": "bridge", "nfs": 1, "nf_in": "vm", "vm_memory": 160},
    {"switch": "ovs", "api": "dpdk", "nfs": 1, "nf_in": "vm", "vm_memory": 416},
    {"switch": "testpmd", "api": "dpdk", "nfs": 1, "nf_in": "container", "vm_memory": 200},
])
def test_what_can_hold_vms_passes(fields):
    scenarios(None, fields)


def test_the_planes_that_give_no_vm_a_port_say_why():
    refusing = {n: d.vm_refusal for n, d in DATAPLANES.items() if d.vm_refusal}
    assert set(refusing) == {"memif", "vpp-memif", "vhost", "snabb", "snabb-wire", "sriov",
                               "netkit", "ovs-kernel"}
    assert all(why.strip() for why in refusing.values())


def _started(plane_cls, monkeypatch, **fields):
    """A kernel plane started on a point, its `ip` calls recorded."""
    calls = []

    def ip(*args, netns=None, tool="ip"):
        calls.append((tool, netns, *args))
        return "[]"
    for module in (kernel, bridge, macvlan):
        monkeypatch.setattr(module, "ip", ip)
    monkeypatch.setattr(kernel, "add_netns", lambda journal, name: None)
    point = _point(switch=plane_cls.name, **fields)
    plane = plane_cls(Journal())
    plane.start(point)
    return plane, point, calls


def test_the_bridge_gives_a_vm_a_tap_on_the_bridge(monkeypatch):
    plane, point, calls = _started(DATAPLANES["bridge"], monkeypatch, nfs=1, nf_in="vm")
    nf = point.nfs[0]
    sw = plane.switch_netns
    for port in nf.ports:
        nic = plane.attach(port).nic
        assert nic == Nic(mac=port.mac, name=port.name, mtu=1500, tap=port.name + "h", netns=sw)
        assert ("ip", sw, "tuntap", "add", "dev", port.name + "h", "mode", "tap") in calls
        assert ("ip", sw, "link", "set", port.name + "h", "master", plane.bridge, "mtu", "1500",
                "up") in calls
        # nothing of the VM's port is made or set in its own netns: its guest's
        assert not any(c[1] == port.node for c in calls)
    ends = point.pairs[0].endpoints
    assert all(plane.attach(ep.port).nic is None for ep in ends)


def test_macvlan_gives_a_vm_a_macvtap_beside_its_macvlans(monkeypatch):
    plane, point, calls = _started(DATAPLANES["macvlan"], monkeypatch, endpoint_in="vm", api="raw")
    sender = point.pairs[0].sender
    nic = plane.attach(sender.port).nic
    assert nic == Nic(mac=sender.mac, name=sender.name, mtu=1500, tap=sender.name,
                      netns=sender.name, macvtap=True)
    assert ("ip", plane.switch_netns, "link", "add", sender.name, "index", "4096", "link",
            plane.parent, "address", sender.mac, "type", "macvtap", "mode", "bridge") in calls


def test_veth_gives_a_vm_a_passthru_macvtap_on_its_end(monkeypatch):
    plane, point, calls = _started(DATAPLANES["veth"], monkeypatch, nfs=1, nf_in="vm",
                                   api="raw")
    port = point.nfs[0].ports[0]
    nic = plane.attach(port).nic
    assert (nic.tap, nic.netns, nic.macvtap) == (port.name + "t", port.node, True)
    assert ("ip", port.node, "link", "add", port.name + "t", "index", "4096", "link", port.name,
            "address", port.mac, "type", "macvtap", "mode", "passthru") in calls


def test_macvtaps_take_an_ifindex_no_tap_device_holds(monkeypatch):
    """/dev/tapIFINDEX is host-wide while ifindexes count per netns: each macvtap
    gets an index of its own, past those /dev already holds."""
    held = {"/dev/tap4096", "/dev/tap4097"}
    monkeypatch.setattr(links.os.path, "exists", lambda p: p in held)
    assert links.tap_index() == ["index", "4098"]


def test_a_vm_reaches_a_dpdk_switch_as_the_vhost_user_front_end():
    point = _point(switch="testpmd", api="dpdk", nfs=1, nf_in="vm")
    plane = DATAPLANES["testpmd"](Journal())
    plane.point, plane.dir = point, Path("/run/x")
    nf = point.nfs[0]
    for port in nf.ports:
        a = plane.attach(port)
        assert a.vdev is None and a.mounts == () and a.port == port.slot
        f = plane.frontend(port)
        assert a.nic == Nic(mac=port.mac, name=port.name, dpdk=True, socket=f.socket,
                            server=f.server)
    sender = point.pairs[0].sender    # a container's engine: virtio-user on the same socket
    assert plane.vdev(sender.port).startswith("net_virtio_user")


@pytest.mark.parametrize("fields, path", [
    ({"switch": "bridge", "nfs": 1, "nf_in": "vm"}, "send → 1 × l2 in vm (chain) → recv"),
    ({"switch": "bridge", "nfs": 2, "nf_in": "vm+container"},
     "send → 2 × l2 in vm+container (chain) → recv"),
    ({"switch": "bridge", "endpoint_in": "vm", "api": "raw", "tester": "single"},
     "tester in vm → tester in vm"),
    ({"switch": "bridge", "nfs": 1}, "send → 1 × l2 (chain) → recv"),
])
def test_the_path_says_which_nodes_are_vms(fields, path):
    assert _point(**{"tester": "split", **fields}).path() == path


def test_the_report_flags_emulated_points_where_their_numbers_show():
    from cnfperf.report import emulation, glance
    points = [{"status": "done", "switch": "ovs", "nfs": 1, "nf": "l2", "nf_in": nf_in,
               "mode": "throughput", "size": 64, "rx_pps": rx, "loss_ratio": 0.0,
               "vm_facts": facts}
              for nf_in, rx, facts in (("container", 2e6, None),
                                       ("vm", 3e5, {"accel": "tcg", "vms": 1}))]
    assert [emulation.said(p) for p in points] == ["–", "1 tcg (emulated)"]
    assert "1 of 2 points ran their virtual machines under QEMU's TCG" in emulation.notice(points)
    title, columns, rows = glance.throughput_table(glance.entries({"points": points}))
    vms = columns.index(emulation.COLUMN)
    assert {row[2]: row[vms] for row in rows} == {"ovs 1×l2 nf_in=container": "–",
                                                  "ovs 1×l2 nf_in=vm": "1 tcg (emulated)"}
    assert emulation.notice(points[:1]) == ""


def test_a_point_on_an_emulated_host_is_flagged_too():
    from cnfperf.report import emulation
    lab = {"switch": "sriov", "hosts": {"dut": {"cpu_model": "QEMU TCG CPU version 2.5+"},
                                        "local": {"cpu_model": "AMD EPYC 7B13"}}}
    bare = {"switch": "veth", "hosts": {"local": {"cpu_model": "AMD EPYC 7B13"}}}
    assert emulation.emulated(lab) and not emulation.emulated(bare)
    assert emulation.said(lab) == "host dut tcg (emulated)" and emulation.said(bare) == "–"
    assert emulation.any_vms([bare, lab]) and not emulation.any_vms([bare])
    assert "1 of 2 points ran on a host that is itself an emulated machine" in \
        emulation.notice([bare, lab])


def test_the_run_table_flags_emulated_points():
    from cnfperf.report.tables import run_table
    pair = {"pair": 0, "offered_pps": 1000, "tx_pps": 1000, "rx_pps": 1000, "sent": 1000,
            "received": 1000, "loss_ratio": 0.0, "rx_bps": 512000}
    points = [{"idx": i, "status": "done", "switch": "ovs", "api": "dpdk", "mode": "throughput",
               "tester": "single", "nf_in": nf_in, "rate": 1000, "vm_facts": facts,
               "per_pair": [pair]}
              for i, (nf_in, facts) in enumerate((("container", None),
                                                  ("vm", {"accel": "tcg", "vms": 1})))]
    lines = run_table({"points": points}).splitlines()
    assert lines[0].split()[:5] == ["switch", "api", "mode", "tester", "VMs"]
    assert "1 tcg (emulated)" in lines[3] and "1 tcg" not in lines[2]
    assert lines[-1].startswith("Emulated: 1 of 2 points")
    points[1]["vm_facts"] = None
    assert "VMs" not in run_table({"points": points})


def test_the_smallest_vm_memory_is_the_guests():
    from cnfperf.fields import by_name
    from cnfperf.runtimes.vm.runtime import MIN_MEMORY_MB
    assert by_name()["vm_memory"].ge == MIN_MEMORY_MB
