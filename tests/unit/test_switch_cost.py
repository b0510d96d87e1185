"""The switch's own per-packet cost, as each switch prints it: OVS-DPDK's
pmd-stats-show, VPP's show runtime, testpmd's --record-core-cycles, read into
one shape (DataPlane.cost), and the report's table beside cnfperf's count.
Real switches are read back in tests/e2e (test_dpdk_runs.py, test_vpp_runs.py)."""
from __future__ import annotations

import pytest

from cnfperf.dataplanes import ovsdb, testpmd_app, vpp_app
from cnfperf.report import cpu

PMD_STATS = """\
pmd thread numa_id 0 core_id 1:
  packets received: 1000
  packet recirculations: 0
  avg. datapath passes per packet: 1.00
  emc hits: 990
  megaflow hits: 9
  miss with success upcall: 1
  idle cycles: 600000 (60.00%)
  processing cycles: 400000 (40.00%)
  avg cycles per packet: 1000.00 (1000000/1000)
  avg processing cycles per packet: 400.00 (400000/1000)
pmd thread numa_id 0 core_id 2:
  packets received: 3000
  idle cycles: 200000 (20.00%)
  processing cycles: 800000 (80.00%)
main thread:
  packets received: 0
  idle cycles: 0 (0.00%)
"""

RUNTIME = """\
Thread 0 vpp_main (lcore 0)
Time 1.0, 10 sec internal node vector rate 2.00 loops/sec 1000000.00
  vector rates in 1.0000e3, out 1.0000e3, drop 0.0000e0, punt 0.0000e0
             Name                 State         Calls          Vectors        Suspends         Clocks       Vectors/Call
VirtualEthernet0/0/1-output      active              500            1000               0          1.00e1            2.00
VirtualEthernet0/0/1-tx          active              500            1000               0          1.00e2            2.00
api-rx-from-ring                any wait                 0               0               1          5.00e4            0.00
ethernet-input                   active              500            1000               0          5.00e1            2.00
l2-fwd                           active              500            1000               0          4.00e1            2.00
vhost-user-input                 polling            2000            1000               0          3.00e2            0.50
unix-epoll-input                 polling               9               0               0          1.00e3            0.00
"""


def test_ovs_pmd_stats_give_processing_cycles_per_packet_and_busy_share():
    cost = ovsdb.parse_pmd_stats_show(PMD_STATS)
    assert cost["source"] == "ovs-appctl dpif-netdev/pmd-stats-show"
    assert cost["packets"] == 4000
    assert cost["cycles_per_packet"] == pytest.approx(1_200_000 / 4000)
    assert cost["busy_share"] == pytest.approx(1_200_000 / 2_000_000)
    assert [(t["thread"], t["cycles_per_packet"], t["busy_share"]) for t in cost["threads"]] == \
        [("pmd core 1", 400.0, 0.4), ("pmd core 2", pytest.approx(800000 / 3000), 0.8)]
    assert ovsdb.parse_pmd_stats_show("main thread:\n  packets received: 0\n") is None


def test_vpp_runtime_gives_its_graphs_clocks_per_packet_taken_in():
    cost = vpp_app.parse_show_runtime(RUNTIME)
    assert cost["source"] == "vppctl show runtime"
    # only the polling input node's vectors are packets taken in (not ethernet-input's)
    assert cost["packets"] == 1000
    assert cost["cycles_per_packet"] == pytest.approx(10 + 100 + 50 + 40 + 300)
    assert cost["vectors_per_call"] == pytest.approx(0.5)
    assert [t["thread"] for t in cost["threads"]] == ["vpp_main"]
    assert cost["nodes"][0] == {"name": "vhost-user-input", "clocks": 300.0, "vectors": 1000,
                                "vectors_per_call": 0.5}
    assert "api-rx-from-ring" not in {n["name"] for n in cost["nodes"]}
    idle = RUNTIME.replace("            2000            1000", "            2000               0")
    assert vpp_app.parse_show_runtime(idle) is None


def test_testpmd_says_its_cycles_on_bursts_that_moved_packets():
    text = ("  ---------------------- Forward statistics for port 0  ----------------------\n"
            "  RX-packets: 43217632       RX-dropped: 0             RX-total: 43217632\n"
            "  CPU cycles/packet=43.67 (total cycles=3774887622 / total io packets=86435488)"
            " at 2600 MHz Clock\n")
    assert testpmd_app.parse_core_cycles(text) == (3774887622, 86435488)
    assert testpmd_app.parse_core_cycles("  RX-packets: 0\n") is None


def test_the_report_shows_the_switchs_count_beside_cnfperfs():
    point = {"status": "done", "idx": 0, "switch": "ovs", "rep": 0,
             "switch_cost": ovsdb.parse_pmd_stats_show(PMD_STATS),
             "cpu_usage": [{"kind": "switch", "cycles_per_packet": 420.0},
                           {"kind": "send", "cycles_per_packet": 90.0}]}
    title, headers, [row] = cpu.switch_cost({"points": [point]})
    assert title == cpu.COST_TITLE and cpu.COST_TITLE in cpu.NOTES
    said = dict(zip(headers, row))
    assert said["said by"] == "ovs-appctl dpif-netdev/pmd-stats-show"
    assert said["its cycles/packet"] == pytest.approx(300.0) and said["busy %"] == 60.0
    assert said["cnfperf's cycles/packet"] == 420.0 and said["vectors/call"] is None
    assert cpu.switch_cost({"points": [{**point, "switch_cost": None}]}) is None
