"""A VF's counts as its NIC keeps them (host/vf_counts.py): which source a
PF and VF driver give, and the two outputs read."""
from cnfperf.host import vf_counts

# `ip -s -j link show pf0` on the lab's igb: the kernel reports zeros for a
# driver without per-VF statistics
PF_STATS = {"rx": {"bytes": 180, "packets": 2, "multicast": 2, "broadcast": 0, "dropped": 1},
            "tx": {"tx_bytes": 688, "tx_packets": 8, "dropped": 0}}

# `ethtool -S` of an igbvf netdev (its NIC's registers: bytes with the FCS)
ETHTOOL = """NIC statistics:
     rx_packets: 2
     tx_packets: 8
     rx_bytes: 180
     tx_bytes: 688
     multicast: 2
     lbrx_bytes: 0
"""


def test_the_pf_counts_where_its_driver_keeps_per_vf_statistics():
    assert vf_counts.source("mlx5_core", "mlx5_core") == "pf"
    assert vf_counts.source("ice", None) == "pf"         # a DPDK VF too


def test_else_the_vf_s_driver_reads_the_nic_s_registers_or_counts_itself():
    assert vf_counts.source("igb", "igbvf") == "vf"
    assert vf_counts.source("igb", "ixgbevf") == "driver"
    assert vf_counts.source("igb", None) is None         # a DPDK VF: its engine's counts only


def test_the_pf_s_statistics_read_as_port_counters():
    assert vf_counts.parse_pf(PF_STATS) == {"rx_packets": 2, "tx_packets": 8,
                                            "rx_dropped": 1, "tx_dropped": 0}
    newer = {"rx": {"packets": 5}, "tx": {"packets": 7}}
    assert vf_counts.parse_pf(newer) == {"rx_packets": 5, "tx_packets": 7,
                                         "rx_dropped": None, "tx_dropped": None}


def test_ethtool_s_lines_read():
    said = vf_counts.parse_ethtool(ETHTOOL)
    assert said["rx_packets"] == 2 and said["tx_packets"] == 8 and said["lbrx_bytes"] == 0
    assert "NIC statistics" not in said


def test_a_vf_s_nic_counts_in_its_netns_or_none_when_ethtool_fails(monkeypatch):
    seen = []

    def run(argv, what):
        seen.append(argv)
        if argv[-1] == "gone":
            raise vf_counts.CommandFailed("no such device", argv, 1)
        return ETHTOOL

    monkeypatch.setattr(vf_counts, "run", run)
    assert vf_counts.from_vf("p0", "ns0") == {"rx_packets": 2, "tx_packets": 8}
    assert seen[-1] == ["ip", "netns", "exec", "ns0", "ethtool", "-S", "p0"]
    # nothing to replace the netdev's own counts with: they stand
    assert vf_counts.from_vf("gone", None) == {}
