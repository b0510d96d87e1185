"""In which groups a trial starts its NFs: one depth at a time from the
receiver's side where an NF connects to its downstream neighbour (DPDK ports),
all at once on kernel interfaces."""
from __future__ import annotations

from cnfperf import nfs as nf_kinds
from cnfperf.plan import place
from cnfperf.run.trial import Trial
from harness import scenarios


def _groups(**fields) -> list[list[int]]:
    [s] = scenarios(None, {"tester": "split", "pairs": 2, **fields})
    point = place(s, "1a2b", host_cpus=(0, 1), joins="link", nf=nf_kinds.find(s.nf))
    trial = Trial(None, s, None, None, None)
    return trial._nf_starts(point.paths)


def test_kernel_interfaces_start_every_nf_at_once():
    assert _groups(switch="veth", api="raw", nfs=3) == [[2, 1, 0]]
    assert _groups(switch="bridge", api="xdp", nfs=1) == [[0]]
    assert _groups(switch="veth", api="raw", nfs=0) == []


def test_dpdk_ports_start_one_depth_at_a_time_from_the_receiver():
    assert _groups(switch="memif", api="dpdk", nfs=3) == [[2], [1], [0]]
