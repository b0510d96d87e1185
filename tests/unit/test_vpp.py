"""VPP's startup configuration and what cnfperf reads from its CLI (samples
are VPP 26.10's own output), without running VPP."""
from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from cnfperf import UserError
from cnfperf.dataplanes import vpp_app
from cnfperf.dataplanes import vpp_install
from cnfperf.plan import place
from cnfperf.scenario import validate
from cnfperf.dataplanes.vpp import VppMemifPlane, VppPlane
from cnfperf.dataplanes.base import PortCounters
from cnfperf.scenario import Scenario
from cnfperf.run.checks import check

SHOW_INTERFACE = """\
              Name               Idx    State  MTU (L3/IP4/IP6/MPLS)     Counter          Count     
VirtualEthernet0/0/0              1      up          9000/0/0/0     rx packets                 24864
                                                                    rx bytes                 1591296
                                                                    drops                        12
VirtualEthernet0/0/1              2      up          9000/0/0/0     tx packets                 24864
                                                                    tx bytes                 1591296
                                                                    drops                       300
host-tw0b                         3      up          9000/0/0/0     rx packets                 24864
                                                                    rx bytes                 1591296
host-tw1b                         4      up          9000/0/0/0     tx packets                 24864
                                                                    tx bytes                 1591296
local0                            0     down          0/0/0/0       
"""

SHOW_ERRORS = """\
   Count                  Node                              Reason               Severity 
        97          vhost-user-input         full rx queue (possible driver tx d   error  
     24864             l2-output                      L2 output packets            error  
       256     VirtualEthernet0/0/1-tx       tx packet drops (no available descriptors)   error
        44     VirtualEthernet0/0/1-tx       tx packet drops (cannot merge descriptors)   error
         3     VirtualEthernet0/0/1-tx                  mmap failure                   error
         7           memif1/0-tx                     no free tx slots                  error
         5          host-tw1b-tx                    tx frame not ready                 error
         3          host-tw1b-tx                     tx ring overrun                   error
         2          host-tw1b-tx               tx sendto temporary failure             error
"""

RX_PLACEMENT = """\
Thread 1 (vpp_wk_0):
 node vhost-user-input:
    VirtualEthernet0/0/0 queue 0 (polling)
Thread 2 (vpp_wk_1):
 node vhost-user-input:
    VirtualEthernet0/0/1 queue 0 (polling)
    VirtualEthernet0/0/1 queue 1 (polling)
"""


def test_show_interface_gives_every_counter_of_every_interface():
    found = vpp_app.parse_show_interface(SHOW_INTERFACE)
    assert found["VirtualEthernet0/0/0"] == {"rx packets": 24864, "rx bytes": 1591296, "drops": 12}
    assert found["VirtualEthernet0/0/1"]["tx packets"] == 24864
    assert found["local0"] == {}


def test_show_errors_counts_per_node_and_reason():
    errors = vpp_app.parse_show_errors(SHOW_ERRORS)
    assert errors["l2-output"] == {"L2 output packets": 24864}
    assert errors["vhost-user-input"] == {"full rx queue (possible driver tx d": 97}
    # frames dropped count, events (an mmap failure per batch) do not
    assert vpp_app.tx_drops(errors["VirtualEthernet0/0/1-tx"]) == 300
    assert vpp_app.tx_drops(errors["memif1/0-tx"]) == 7


def test_a_full_ring_is_a_tx_drop_not_a_delivery():
    counts = vpp_app.parse_show_interface(SHOW_INTERFACE)["VirtualEthernet0/0/1"]
    # vhost-user output adds what the ring refused to `drops`; memif's does not
    assert vpp_app.port_counters(counts, 300, tx_drops_in_drops=True) == \
        PortCounters(rx_packets=0, tx_packets=24564, rx_dropped=0, tx_dropped=300)
    assert vpp_app.port_counters(counts, 300, tx_drops_in_drops=False) == \
        PortCounters(rx_packets=0, tx_packets=24564, rx_dropped=300, tx_dropped=300)


def test_a_port_whose_interface_vpp_did_not_list_has_unknown_counts():
    """A listed interface's counter VPP left out counted nothing (0); an
    interface `show interface` did not list at all is unknown, never 0."""
    class Vpp:
        def cli(self, command: str) -> str:
            return SHOW_INTERFACE if command == "show interface" else SHOW_ERRORS
    plane = VppPlane(journal=None)
    plane.vpp = Vpp()
    plane.ifaces = {"p0s": "VirtualEthernet0/0/0", "p0r": "VirtualEthernet9/9/9"}
    found = plane.counters()
    assert found["p0s"] == PortCounters(rx_packets=24864, tx_packets=0, rx_dropped=12,
                                        tx_dropped=0)
    assert found["p0r"] == PortCounters(None, None, None, None)


def test_rx_placement_names_the_thread_of_every_queue():
    assert vpp_app.parse_rx_placement(RX_PLACEMENT) == [
        {"iface": "VirtualEthernet0/0/0", "queue": 0, "thread": 1},
        {"iface": "VirtualEthernet0/0/1", "queue": 0, "thread": 2},
        {"iface": "VirtualEthernet0/0/1", "queue": 1, "thread": 2}]


def test_startup_keeps_every_path_in_the_run_directory(tmp_path: Path):
    conf = vpp_app.startup_conf(tmp_path, [1], 64, "cnfp1234-vpp", Path("/usr/lib/vpp_plugins"),
                                (VppPlane.plugin,))
    for key in ("runtime-dir", "cli-listen", "log", "socket-name"):
        lines = [line for line in conf.splitlines() if f"{key} " in line]
        assert lines and all(str(tmp_path) in line for line in lines), key
    assert "api-segment { prefix cnfp1234-vpp }" in conf
    assert "plugin default { disable }" in conf and "vhost_plugin.so { enable }" in conf
    assert "path /usr/lib/vpp_plugins" in conf
    assert "main-core 1" in conf and "corelist-workers" not in conf


def test_each_data_plane_loads_its_own_plugin_alone(tmp_path: Path):
    """A VPP with one of the two plugins runs the data plane that uses it: VPP
    refuses a vhost-user section without the vhost plugin."""
    vhost, memif = (vpp_app.startup_conf(tmp_path, [1], 64, "p", tmp_path, (dp.plugin,))
                    for dp in (VppPlane, VppMemifPlane))
    assert "vhost_plugin.so { enable }" in vhost and "memif_plugin" not in vhost
    assert "vhost-user { coalesce-frames 0 coalesce-time 0 }" in vhost
    assert "memif_plugin.so { enable }" in memif and "vhost" not in memif
    assert "af_packet" not in vhost + memif


def test_a_wire_s_nic_loads_af_packet_beside_the_ports_plugin(tmp_path: Path):
    conf = vpp_app.startup_conf(tmp_path, [1], 64, "p", tmp_path,
                                (VppMemifPlane.plugin, vpp_install.AF_PACKET))
    assert "  plugin memif_plugin.so { enable }\n  plugin af_packet_plugin.so { enable }\n}" \
        in conf


def _point(tester_host: str, here: str):
    """A TG–DUT point as the host `here` places it (the agent's copy)."""
    s = validate({"switch": "vpp", "api": "dpdk", "tester": "single", "dut_host": "dut",
                  "tester_host": tester_host, "hosts": "hosts.toml"})
    point = replace(place(s, "1a2b", host_cpus=(0, 1)), host=here)
    return replace(point, nics=tuple((p.name, f"tw{i}b")
                                     for i, p in enumerate(point.wired_ports())))


def test_vpp_loads_af_packet_only_for_a_point_with_a_wire_s_nic():
    plane = VppPlane(journal=None)
    plane.point = _point("local", "dut")
    assert plane.plugins() == ("vhost_plugin.so", "af_packet_plugin.so")
    plane.point = _point("dut", "dut")       # the whole point on one host: no wire
    assert plane.plugins() == ("vhost_plugin.so",)


@pytest.mark.parametrize("poll,mode", [("busy", "polling"), ("adaptive", "adaptive"),
                                       ("interrupt", "interrupt")])
def test_poll_is_every_interface_s_default_rx_mode(tmp_path: Path, poll, mode):
    conf = vpp_app.startup_conf(tmp_path, [1], 64, "p", tmp_path, (VppPlane.plugin,), poll)
    assert f"interface {{ default-rx-mode {mode} }}" in conf


def test_vpp_polls_on_one_core():
    with pytest.raises(UserError, match="switch_cores"):
        check(Scenario(switch="vpp", api="dpdk", switch_cores=2))


@pytest.mark.parametrize("size,data", [(64, 2048), (1518, 2048), (2049, 3072), (9216, 9216)])
def test_a_whole_frame_fits_one_buffer(size, data):
    assert vpp_app.data_size(size) == data


def test_vpp_cannot_leave_its_threads_unpinned():
    with pytest.raises(UserError, match="pin"):
        check(Scenario(switch="vpp", api="dpdk", pin=False))


class _Cli:
    """What a VPP prints for the two commands counters() asks."""
    def cli(self, command: str) -> str:
        return {"show interface": SHOW_INTERFACE, "show errors": SHOW_ERRORS}[command]


def test_a_wire_s_nic_counts_its_own_tx_drops_apart_from_its_drops():
    """af_packet's tx node drops a frame the kernel's ring has no slot for and
    counts it as its error alone: not in the interface's drops, as vhost-user's."""
    plane = VppPlane(journal=None)
    plane.vpp = _Cli()
    plane.ifaces = {"p0s": "host-tw0b", "p0r": "host-tw1b"}
    plane.nics = {"host-tw0b", "host-tw1b"}
    counters = plane.counters()
    assert counters["p0s"] == PortCounters(rx_packets=24864, tx_packets=0, rx_dropped=0,
                                           tx_dropped=0)
    assert counters["p0r"] == PortCounters(rx_packets=0, tx_packets=24864 - 8, rx_dropped=0,
                                           tx_dropped=8)
