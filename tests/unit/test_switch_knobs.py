"""The switch knobs (forward, rxq_affinity, switch_rxd, switch_txd) without
root: the OpenFlow rules, ovs-vsctl and VPP commands and testpmd arguments
each value makes, the engines' vdevs that size a vhost-user ring, the
readbacks parsed as the switches print them, and the combinations that mean
nothing refused in one line (exit 2), or left out of a study. The switches
themselves are tested in tests/e2e/dataplanes/test_dpdk_switch_knobs.py."""
from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest

import harness
from cnfperf import UserError, testers
from cnfperf.cli import main
from cnfperf.dataplanes import DATAPLANES, dpdk_args, ovs, ovsdb, testpmd_app, vpp, vpp_app
from cnfperf.dataplanes.ovs import OvsPlane
from cnfperf.dataplanes.testpmd import TestPmdPlane
from cnfperf.dataplanes.vpp import VppPlane
from cnfperf.fields import FORWARDS
from cnfperf.host.journal import Journal
from cnfperf.plan import place
from cnfperf.run import checks, keep
from cnfperf.scenario import Scenario, canonical, validate

HOST = type("Host", (), {"engine": type("E", (), {"apis": []})()})()


def _point(switch: str = "ovs", pairs: int = 1, **fields):
    return place(Scenario(switch=switch, api="dpdk", pairs=pairs, tester="split", **fields),
                 "1a2b", host_cpus=(0, 1, 2))


# -- OVS: its rules, its ports' settings --------------------------------------------


def test_ovs_forwards_by_mac_through_normal_and_counts_around_it():
    assert ovs.rules("mac", [(1, "02:00:00:00:00:01"), (2, "02:00:00:00:00:02")],
                     {1: 2, 2: 1}) == [
        "table=1,priority=0,actions=NORMAL",
        "cookie=0x10001,table=0,priority=10,in_port=1,actions=resubmit(,1)",
        "cookie=0x20001,table=1,priority=10,dl_dst=02:00:00:00:00:01,actions=NORMAL",
        "cookie=0x10002,table=0,priority=10,in_port=2,actions=resubmit(,1)",
        "cookie=0x20002,table=1,priority=10,dl_dst=02:00:00:00:00:02,actions=NORMAL"]


def test_ovs_forwards_port_to_port_by_its_own_rules_and_drops_the_rest():
    found = ovs.rules("port", [(1, "m1"), (2, "m2"), (3, "m3"), (4, "m4")],
                      {1: 2, 2: 1, 3: 4, 4: 3})
    assert not any("NORMAL" in rule for rule in found)
    # add-br's own table-0 NORMAL rule is replaced: nothing is switched by MAC
    assert found[:2] == ["table=0,priority=0,actions=drop", "table=1,priority=0,actions=drop"]
    # what reaches port P came in on its link's other port, and is counted as P's tx
    assert "cookie=0x20002,table=1,priority=10,in_port=1,actions=output:2" in found
    assert "cookie=0x20001,table=1,priority=10,in_port=2,actions=output:1" in found
    assert "cookie=0x20004,table=1,priority=10,in_port=3,actions=output:4" in found
    assert sum("resubmit(,1)" in rule for rule in found) == 4


def test_pinned_rx_queues_go_to_the_poll_cores_in_turn():
    assert ovs.affinity({"a": 1, "b": 1}, (1, 2)) == {"a": "0:1", "b": "0:2"}
    assert ovs.affinity({"a": 1, "b": 1}, (1,)) == {"a": "0:1", "b": "0:1"}
    assert ovs.affinity({"a": 2, "b": 2}, (1, 2, 3)) == {"a": "0:1,1:2", "b": "0:3,1:1"}
    # an NF's port with a queue per thread of its own
    assert ovs.affinity({"a": 1, "n": 2}, (1, 2)) == {"a": "0:1", "n": "0:2,1:1"}


def test_a_port_is_added_with_its_affinity_and_a_nic_with_its_descriptors():
    s = Scenario(switch="ovs", api="dpdk", switch_rxd=128, switch_txd=256)
    assert ovs.port_settings(s, nic=False, pinned="0:1") == [
        'other_config:pmd-rxq-affinity="0:1"']
    assert ovs.port_settings(s, nic=True, pinned=None) == ["options:n_rxq_desc=128",
                                                          "options:n_txq_desc=256"]
    assert ovs.port_settings(Scenario(switch="ovs", api="dpdk"), nic=True, pinned=None) == []
    # an NF's port polled by a thread per queue: OVS spreads its flows over them
    assert ovs.port_settings(s, nic=False, pinned=None, queues=2) == ["other_config:tx-steering=hash"]
    # a NIC's Rx queues are asked of it; a vhost-user port's are its peer's offer
    rxq = Scenario(switch="ovs", api="dpdk", switch_rxq=2)
    assert ovs.port_settings(rxq, nic=True, pinned=None) == ["options:n_rxq=2"]
    assert ovs.port_settings(rxq, nic=False, pinned=None) == []


class Recorded:
    """ovs-vsctl, ovs-appctl and ovs-ofctl as an Ovs runs them, recorded."""

    def __init__(self, monkeypatch):
        self.argv: list[list[str]] = []
        monkeypatch.setattr(ovsdb.Ovs, "_command", lambda _, argv: self.argv.append(argv) or "")
        monkeypatch.setattr(ovsdb.Ovs, "start", lambda _: None)
        monkeypatch.setattr(ovs.DropSampler, "start", lambda _: None)

    def commands(self, tool: str) -> list[list[str]]:
        return [a[a.index("--timeout=20") + 1:] for a in self.argv if a[0] == tool]


def _set_up(monkeypatch, tmp_path: Path, **fields) -> tuple[OvsPlane, Recorded]:
    recorded = Recorded(monkeypatch)
    plane = OvsPlane(Journal(tmp_path / "journal"))
    plane.point = _point("ovs", **fields)
    plane.cpus = (2,)
    plane.dir = tmp_path
    plane.hugepages = SimpleNamespace(mount_point=tmp_path / "huge")
    (tmp_path / "ovs").mkdir()
    plane.setup()
    return plane, recorded


def test_ovs_set_up_for_port_rules_and_pinned_queues(monkeypatch, tmp_path):
    plane, recorded = _set_up(monkeypatch, tmp_path, forward="port", rxq_affinity="pinned",
                              switch_rxd=128, switch_txd=128)
    [pair] = plane.point.pairs
    adds = [a for a in recorded.commands("ovs-vsctl") if a[0] == "add-port"]
    assert [a[2] for a in adds] == [pair.sender.name, pair.receiver.name, "cnfp1a2bpool"]
    # OVS's mbuf pool made before any peer connects (ovs.SWITCH_MB), its port gone again
    *adds, pool = adds
    assert "options:dpdk-devargs=net_null0,no-rx=1" in pool and "mtu_request=1500" in pool
    assert recorded.commands("ovs-vsctl")[-1] == ["del-port", plane.bridge, "cnfp1a2bpool"]
    for add in adds:
        assert 'other_config:pmd-rxq-affinity="0:2"' in add    # its one PMD core
        # a vhost-user port takes no descriptors: its front end sizes the ring
        assert not any("desc" in arg for arg in add)
    # no MAC table entries: the rules forward
    assert not any("fdb/add" in a for a in recorded.commands("ovs-appctl"))
    [flows] = [a for a in recorded.commands("ovs-ofctl") if a[0] == "add-flows"]
    assert Path(flows[2]).read_text().splitlines() == plane.flows
    assert "cookie=0x20002,table=1,priority=10,in_port=1,actions=output:2" in plane.flows
    # the engines' virtio-user ports make 128-descriptor rings
    assert "queue_size=128" in plane.vdev(pair.sender.port)


def test_ovs_set_up_by_default_as_before(monkeypatch, tmp_path):
    plane, recorded = _set_up(monkeypatch, tmp_path)
    adds = [a for a in recorded.commands("ovs-vsctl") if a[0] == "add-port"]
    assert not any("pmd-rxq-affinity" in arg for add in adds for arg in add)
    assert len([a for a in recorded.commands("ovs-appctl") if "fdb/add" in a]) == 2
    assert plane.flows[0] == "table=1,priority=0,actions=NORMAL"
    [pair] = plane.point.pairs
    assert "queue_size" not in plane.vdev(pair.sender.port)


def test_ovs_dpdk_port_takes_its_settings_in_the_same_transaction(monkeypatch, tmp_path):
    recorded = Recorded(monkeypatch)
    o = ovsdb.Ovs(tmp_path, "p", str(tmp_path), 64, (0,))
    o.add_dpdk_port("br", "nic0", "net_af_packet0,iface=x", 1,
                    ["options:n_rxq_desc=128", 'other_config:pmd-rxq-affinity="0:1"'])
    [argv] = recorded.commands("ovs-vsctl")
    assert argv == ["add-port", "br", "nic0", "--", "set", "Interface", "nic0", "type=dpdk",
                    "options:dpdk-devargs=net_af_packet0,iface=x", "ofport_request=1",
                    "options:n_rxq_desc=128", 'other_config:pmd-rxq-affinity="0:1"']


# What this host's OVS 3.1 printed for a point with a NIC port and three
# vhost-user ports, switch_rxd 128, switch_txd 256, queues pinned (recorded).
DPIF_SHOW = """netdev@ovs-netdev: hit:0 missed:0
  cnfp287bbr:
    cnfp287bbr 65534/1: (tap)
    cnfp287bp0r 2/3: (dpdkvhostuserclient: configured_rx_queues=1, configured_tx_queues=1, mtu=0, requested_rx_queues=1, requested_tx_queues=1)
    cnfp287bp0s 1/2: (dpdk: configured_rx_queues=1, configured_rxq_descriptors=128, configured_tx_queues=1, configured_txq_descriptors=256, lsc_interrupt_mode=false, mtu=1500, requested_rx_queues=1, requested_rxq_descriptors=128, requested_tx_queues=2, requested_txq_descriptors=256, rx_csum_offload=false, tx_tso_offload=false)
"""
LIST = ('{"data":[["cnfp287bp0s","dpdk",["map",[["dpdk-devargs","net_af_packet1,iface=cnfp287bx0,'
        'qpairs=1"],["n_rxq_desc","128"],["n_txq_desc","256"]]],["map",[["pmd-rxq-affinity",'
        '"0:1"]]]],["cnfp287bp0r","dpdkvhostuserclient",["map",[["vhost-server-path",'
        '"/run/cnfperf/cnfp287b-ovs/sock/cnfp287bp0r.sock"]]],["map",[["pmd-rxq-affinity",'
        '"0:1"]]]],["cnfp287bbr","internal",["map",[]],["map",[]]]],'
        '"headings":["name","type","options","other_config"]}')
DUMP_FLOWS = """NXST_FLOW reply (xid=0x4):
 cookie=0x10001, priority=10,in_port=1 actions=resubmit(,1)
 priority=0 actions=drop
 cookie=0x20001, table=1, priority=10,in_port=2 actions=output:1
"""


def test_what_ovs_holds_is_read_back_as_it_prints_it():
    assert ovsdb.parse_dpif_show(DPIF_SHOW)["cnfp287bp0s"]["configured_rxq_descriptors"] == "128"
    assert ovsdb.parse_dpif_show(DPIF_SHOW)["cnfp287bbr"] == {"type": "tap"}
    assert ovsdb.parse_dpif_show(DPIF_SHOW)["cnfp287bp0r"]["type"] == "dpdkvhostuserclient"
    rows = ovsdb.parse_table(LIST)
    assert rows[0] == {"name": "cnfp287bp0s", "type": "dpdk",
                       "options": {"dpdk-devargs": "net_af_packet1,iface=cnfp287bx0,qpairs=1",
                                   "n_rxq_desc": "128", "n_txq_desc": "256"},
                       "other_config": {"pmd-rxq-affinity": "0:1"}}
    assert rows[2]["options"] == {}
    assert ovsdb.parse_rules(DUMP_FLOWS) == [
        "cookie=0x10001, priority=10,in_port=1 actions=resubmit(,1)", "priority=0 actions=drop",
        "cookie=0x20001, table=1, priority=10,in_port=2 actions=output:1"]


def test_ovs_applied_names_each_port_s_settings(monkeypatch):
    plane = OvsPlane(journal=None)
    plane.point = _point("ovs", forward="port", switch_rxd=128)
    plane.bridge = "cnfp287bbr"
    plane.ofports = {1: "cnfp287bp0s", 2: "cnfp287bp0r"}
    answers = {"list": LIST, "dpif/show": DPIF_SHOW, "dump-flows": DUMP_FLOWS}
    plane.ovs = ovsdb.Ovs(Path("/nonexistent"), "p", "/h", 64, (0,))
    monkeypatch.setattr(ovsdb.Ovs, "_command", lambda _, argv: next(
        text for word, text in answers.items() if word in argv))
    applied = plane.applied()
    assert applied["forward"] == "port" and len(applied["rules"]) == 3
    assert applied["ports"]["cnfp287bp0s"] == {
        "ofport": 1, "type": "dpdk", "n_rxq_desc": "128", "n_txq_desc": "256",
        "pmd-rxq-affinity": "0:1", "configured_rxq_descriptors": 128,
        "configured_txq_descriptors": 256}
    # a vhost-user port's ring is its front end's, as it was told
    assert applied["ports"]["cnfp287bp0r"] == {"ofport": 2, "type": "dpdkvhostuserclient",
                                               "pmd-rxq-affinity": "0:1", "ring": 128}


# -- the engines' front ends; testpmd; VPP ---------------------------------------------


def test_a_virtio_user_port_sizes_its_ring_when_told():
    assert dpdk_args.virtio_user(0, "/s", ring=128) == \
        "net_virtio_user0,path=/s,queues=1,queue_size=128"
    assert "queue_size" not in dpdk_args.virtio_user(0, "/s")


@pytest.mark.parametrize("fields,ring", [({"switch_rxd": 128}, 128), ({"switch_txd": 512}, 512),
                                         ({"switch_rxd": 256, "switch_txd": 256}, 256),
                                         ({}, None)])
def test_a_vhost_user_ring_is_one_size_both_ways(fields, ring):
    for plane in (OvsPlane(None), TestPmdPlane(None), VppPlane(None)):
        plane.point = _point(plane.name, **fields)
        assert plane.ring == ring, plane.name


def test_testpmd_gets_its_descriptors_and_mbufs_to_fill_them():
    plane = TestPmdPlane(journal=None)
    plane.cpus = (1,)
    plane.point = _point("testpmd")
    plain = plane.app_args()
    assert not any(a.startswith(("--rxd", "--txd")) for a in plain)
    plane.point = _point("testpmd", switch_rxd=4096, switch_txd=4096)
    args = plane.app_args()
    assert "--rxd=4096" in args and "--txd=4096" in args
    mbufs = int(next(a for a in args if a.startswith("--total-num-mbufs=")).split("=")[1])
    assert mbufs >= 2 * (4096 + 4096)    # two ports, each a full Rx and Tx ring


# `show config rxtx` of a testpmd with --rxd=128 --txd=256 (recorded, trimmed).
CONFIG_RXTX = """  io packet forwarding packets/burst=32
  nb forwarding cores=1 - nb forwarding ports=2
  port 0: RX queue number: 1 Tx queue number: 1
    Rx offloads=0x0 Tx offloads=0x0
    RX queue: 0
      RX desc=128 - RX free threshold=0
      RX threshold registers: pthresh=0 hthresh=0  wthresh=0
    TX queue: 0
      TX desc=256 - TX free threshold=0
  port 1: RX queue number: 1 Tx queue number: 1
    RX queue: 0
      RX desc=0 - RX free threshold=0
    TX queue: 0
      TX desc=0 - TX free threshold=0
"""


def test_testpmd_descriptors_are_read_back_as_it_prints_them():
    assert testpmd_app.parse_config_rxtx(CONFIG_RXTX) == {0: {"rxd": 128, "txd": 256}, 1: {}}


def test_vpp_cross_connects_each_link_both_ways():
    p = _point("vpp", pairs=2, forward="port")
    ifaces = {port.name: f"if{i}" for i, port in enumerate(p.ports_joined_here())}
    assert vpp_app.xconnects(ifaces, p.links_joined_here()) == [
        "set interface l2 xconnect if0 if1", "set interface l2 xconnect if1 if0",
        "set interface l2 xconnect if2 if3", "set interface l2 xconnect if3 if2"]


class _Vpp:
    """A VPP that records its configuration commands."""

    def __init__(self, *args, **kwargs):
        self.commands: list[str] = []
        self.created = 0

    def start(self, journal, prefix) -> None:
        pass

    def configure(self, command: str) -> str:
        self.commands.append(command)
        if command.startswith("create vhost-user"):
            self.created += 1
            return f"VirtualEthernet0/0/{self.created - 1}"
        return ""


@pytest.mark.parametrize("forward", ["port", "mac"])
def test_vpp_set_up_with_a_bridge_domain_or_cross_connects(monkeypatch, tmp_path, forward):
    monkeypatch.setattr(vpp_app, "VppProcess", _Vpp)
    plane = VppPlane(journal=None)
    plane.point = _point("vpp", forward=forward)
    plane.cpus = (1,)
    plane.dir = tmp_path
    plane.setup()
    commands = plane.vpp.commands
    bridged = [c for c in commands
               if c.startswith(("create bridge-domain", "set interface l2 bridge", "l2fib"))]
    crossed = [c for c in commands if c.startswith("set interface l2 xconnect")]
    if forward == "port":
        assert bridged == [] and crossed == [
            "set interface l2 xconnect VirtualEthernet0/0/0 VirtualEthernet0/0/1",
            "set interface l2 xconnect VirtualEthernet0/0/1 VirtualEthernet0/0/0"]
    else:
        assert crossed == [] and len(bridged) == 5   # the domain, a port and an entry each


def test_vpp_modes_are_read_back_as_it_prints_them():
    text = ("l3 local0                       \n"
            "l2 xconnect VirtualEthernet0/0/0 VirtualEthernet0/0/1\n"
            "l2 bridge VirtualEthernet0/0/2 bd_id 1 shg 0\n")
    assert vpp_app.parse_show_mode(text) == {
        "local0": "l3", "VirtualEthernet0/0/0": "xconnect VirtualEthernet0/0/1",
        "VirtualEthernet0/0/2": "bridge bd_id 1 shg 0"}


# -- what goes together ---------------------------------------------------------------


def test_every_data_plane_says_how_it_forwards():
    for name, dp in DATAPLANES.items():
        assert dp.forwards and set(dp.forwards) <= set(FORWARDS), name
        if dp.joins == "link":
            assert dp.forwards == ("port",), name   # a link joins its two ports itself
    assert [n for n, dp in DATAPLANES.items() if {"mac", "port"} <= set(dp.forwards)] == \
        ["ovs", "vpp", "vpp-memif", "bess", "ovs-kernel"]
    assert [n for n, dp in DATAPLANES.items() if "reflect" in dp.forwards] == ["bess"]


@pytest.mark.parametrize("flags,field", [
    (["--switch", "testpmd", "--forward", "mac"], "forward"),
    (["--switch", "veth", "--forward", "mac"], "forward"),
    (["--switch", "bridge", "--api", "raw", "--forward", "port"], "forward"),
    (["--switch", "snabb-wire", "--forward", "mac"], "forward"),
    (["--switch", "vpp", "--rxq-affinity", "pinned"], "rxq_affinity"),
    (["--switch", "testpmd", "--rxq-affinity", "pinned"], "rxq_affinity"),
    (["--switch", "bridge", "--api", "raw", "--switch-rxd", "128"], "switch_rxd"),
    (["--switch", "vpp-memif", "--switch-txd", "128"], "switch_txd"),
    (["--switch", "click", "--switch-rxd", "128"], "switch_rxd"),
    (["--switch", "ovs", "--switch-rxd", "100"], "switch_rxd"),
    (["--switch", "ovs", "--switch-rxd", "32"], "switch_rxd"),
    (["--switch", "ovs", "--switch-rxd", "128", "--switch-txd", "256"], "switch_txd"),
    (["--switch", "ovs", "--switch-rxd", "128", "--endpoint-in", "vm"], "switch_rxd"),
    (["--switch", "ovs", "--forward", "reflect"], "forward"),
    (["--switch", "bess", "--forward", "reflect", "--nfs", "1"], "forward"),
    (["--switch", "bess", "--forward", "reflect", "--tester", "split"], "forward"),
])
def test_a_combination_that_means_nothing_exits_2_naming_the_field(flags, field, tmp_path,
                                                                   monkeypatch, capsys):
    monkeypatch.setenv("CNFPERF_RESULTS", str(tmp_path / "results"))
    code = main(["run", "--api", "dpdk", "--cpus", "0", *flags])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and err[0].startswith(f"cnfperf: error: {field}: "), err
    assert not (tmp_path / "results").exists()


@pytest.mark.parametrize("fields", [
    {"switch": "ovs", "forward": "port", "rxq_affinity": "pinned", "switch_rxd": 128,
     "switch_txd": 128},
    {"switch": "ovs", "forward": "mac", "switch_txd": 2048},
    {"switch": "vpp", "forward": "port", "switch_rxd": 256},
    {"switch": "vpp-memif", "forward": "port"},
    {"switch": "testpmd", "forward": "port", "switch_rxd": 64, "switch_txd": 64},
    {"switch": "veth", "api": "raw", "forward": "port"},
    {"switch": "bridge", "api": "raw", "forward": "mac"},
    {"switch": "snabb-wire", "forward": "port"},
    {"switch": "bess", "forward": "port"},
    {"switch": "bess", "forward": "reflect"},
])
def test_a_combination_that_means_something_is_taken(fields):
    checks.check(Scenario(**{"api": "dpdk", **fields}), cores=(0, 1))


def test_a_study_leaves_out_the_points_a_data_plane_cannot_take(monkeypatch):
    monkeypatch.setattr(checks.host, "_problems", lambda *a: [])
    swept = checks.plan({"switch": ["ovs", "testpmd", "vpp"], "api": "dpdk",
                         "rxq_affinity": "pinned"}, host=HOST)
    assert [s.switch for s in swept.scenarios] == ["ovs"]
    reasons = {params["switch"]: why for params, why in swept.plan.skipped}
    assert reasons["testpmd"].startswith("testpmd rxq_affinity=pinned: testpmd places its Rx")
    swept = checks.plan({"switch": ["ovs", "testpmd", "bridge"], "api": "dpdk",
                         "forward": "mac"}, host=HOST)
    assert [s.switch for s in swept.scenarios] == ["ovs", "bridge"]


def test_the_knobs_keep_a_stored_point_s_key_at_their_defaults():
    plain = canonical(Scenario(switch="ovs", api="dpdk"))
    assert not {"forward", "rxq_affinity", "switch_rxd", "switch_txd"} & set(plain)
    assert canonical(Scenario(switch="ovs", api="dpdk", forward="port"))["forward"] == "port"


def test_a_switch_is_made_anew_for_another_value_of_each_knob():
    made = keep.switch_key(_point("ovs"))
    for fields in ({"forward": "port"}, {"rxq_affinity": "pinned"}, {"switch_rxd": 128},
                   {"switch_txd": 128}):
        assert keep.switch_key(_point("ovs", **fields)) != made, fields


def test_checks_words_for_each_forward_value():
    assert set(checks.dataplane.FORWARD_WORDS) == set(FORWARDS)
    with pytest.raises(UserError, match="by destination MAC: bridge"):
        checks.check(Scenario(switch="testpmd", api="dpdk", forward="mac"), cores=(0, 1))


def test_auto_is_each_switch_s_own_way():
    for cls in (OvsPlane, VppPlane, vpp.VppMemifPlane):
        plane = cls(journal=None)
        plane.point = _point(cls.name)
        assert plane.forward == "mac", cls.name
        plane.point = _point(cls.name, forward="port")
        assert plane.forward == "port", cls.name


# -- a switch whose ports are wires' NICs (a tester on another host) ---------------------


@pytest.fixture
def inventory(tmp_path: Path) -> Path:
    path = harness.inventory(tmp_path, wires=4)
    checks.inventory_file.cache_clear()
    return path


def _across(inventory: Path, **fields) -> Scenario:
    return validate({"api": "dpdk", "tester": "single", "dut_host": "dut",
                     "hosts": str(inventory), **fields})


def test_a_nic_port_takes_rx_and_tx_descriptors_apart(inventory):
    # every port of the switch a NIC: no vhost-user ring to be one size
    checks.check(_across(inventory, switch="ovs", switch_rxd=256, switch_txd=512), (0, 1))
    checks.check(_across(inventory, switch="testpmd", switch_rxd=256, switch_txd=512), (0, 1))
    # an NF's ports on the host under test are vhost-user: one size both ways there
    with pytest.raises(UserError) as e:
        checks.check(_across(inventory, switch="ovs", nfs=1, switch_rxd=256, switch_txd=512),
                     (0, 1))
    assert e.value.field == "switch_txd"


def test_vpp_does_not_size_a_wire_s_nic(inventory):
    with pytest.raises(UserError) as e:
        checks.check(_across(inventory, switch="vpp", switch_rxd=256), (0, 1))
    assert e.value.field == "switch_rxd" and "testpmd, ovs do" in e.value.why


def test_a_reflecting_switch_is_the_single_tester_s_only_peer():
    """forward = reflect: one link, both of its ends the tester's sending port,
    which is the point's only port; the tester's frames go to its own MAC and
    come back on that port (auto picks the single tester)."""
    s = Scenario(switch="bess", api="dpdk", forward="reflect", pairs=2)
    assert testers.choose(s, lambda tester: 2, 2)[0] == "single"
    p = place(Scenario(switch="bess", api="dpdk", forward="reflect", pairs=2, tester="single"),
              "1a2b")
    for pair in p.paths:
        [link] = pair.links
        assert link.reflects and link.a == link.b == pair.sender.port
        assert link.ports == (pair.sender.port,)
        assert pair.peer(pair.sender.port) == pair.sender.port and pair.last == link
    assert p.ports == p.ports_joined_here() == [pair.sender.port for pair in p.paths]
    # the receiving end is the tester's engine itself, with no port of its own
    assert {port.node for port in p.ports} == {pair.sender.name for pair in p.paths}
