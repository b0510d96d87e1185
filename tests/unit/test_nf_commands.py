"""What runs in an NF's container: templates filled in, checked, counters read."""
from __future__ import annotations

import pytest

from cnfperf import UserError, nfs
from cnfperf.nfs import testpmd
from cnfperf.scenario import Scenario
from cnfperf.dataplanes.base import Attachment
from cnfperf.plan import place
from harness import scenarios

FWD_STATS = """
  ---------------------- Forward statistics for port 0  ----------------------
  RX-packets: 1200           RX-dropped: 0             RX-total: 1200
  TX-packets: 800            TX-dropped: 4             TX-total: 804
  ----------------------------------------------------------------------------
  ---------------------- Forward statistics for port 1  ----------------------
  RX-packets: 800            RX-dropped: 2             RX-total: 802
  TX-packets: 1196           TX-dropped: 0             TX-total: 1196
  ----------------------------------------------------------------------------
"""


def _check(nf: str, nf_api: str) -> None:
    """The kind's own rules for one NF of it (the kind's check: its
    template or configuration against its ports)."""
    nfs.kind(nf).check(Scenario(nfs=1, nf=nf, nf_api=nf_api, api="raw"))


def _nf(**fields):
    [s] = scenarios(None, {"nfs": 1, **fields})
    point = place(s, "1a2b", host_cpus=(0, 1), nf=nfs.kind(s.nf))
    [pair] = point.pairs
    [nf] = pair.nfs
    ports = [Attachment(mac=p.mac, iface=p.name) for p in nf.ports]
    return s, pair, nf, ports


def test_a_template_gets_the_nf_ports_and_its_eal_words():
    s, pair, nf, ports = _nf(nf="cmd:my-nf --in {port1} --out {port2} --to {peer2} {eal} -c {cpu}",
                             nf_api="dpdk")
    ports = [Attachment(mac=p.mac, port=i) for i, p in enumerate(nf.ports)]
    cmd = nfs.kind(s.nf).command("/e", nf, ports, ("aa", "bb"), pair, s, ("--vdev", "x"))
    assert cmd.argv == ["my-nf", "--in", "0", "--out", "1",
                        "--to", "bb", "--vdev", "x", "-c", str(nf.cpu)]
    assert not cmd.records and cmd.ready is None


def test_the_engine_kinds_run_the_engine():
    s, pair, nf, ports = _nf(nf="l3")
    cmd = nfs.kind(s.nf).command("/e", nf, ports, ("aa", "bb"), pair, s, ())
    assert cmd.records and cmd.argv[:4] == ["/e", "nf", "--nf", "l3"]
    assert f"{pair.receiver.ip}/32,2" in cmd.argv


def test_testpmd_forwards_by_mac_to_each_port_s_peer():
    s, pair, nf, ports = _nf(nf="testpmd", api="dpdk", switch="memif")
    cmd = nfs.kind(s.nf).command("/e", nf, ports, ("aa", "bb"), pair, s, ("--vdev", "x"))
    assert cmd.argv[0] == "dpdk-testpmd" and "--eth-peer=1,bb" in cmd.argv
    assert cmd.ready == testpmd.READY


@pytest.mark.parametrize("kind,why", [
    ("cmd:", "needs a command"), ("cmd:x {nope}", "{nope}"), ("cmd:x 'open", "quotation"),
    ("cmd:x {iface1", "'}'"), ("cmd:x {cpu:q}", "format code"), ("cmd:x {mac1!z}", "conversion")])
def test_a_bad_template_is_refused(kind, why):
    with pytest.raises(UserError, match=why):
        _check(kind, "raw")


def test_eal_is_a_word_of_its_own():
    with pytest.raises(UserError, match="word of its own"):
        _check("cmd:x --eal={eal}", "dpdk")


@pytest.mark.parametrize("kind,nf_api,why", [
    ("cmd:x {eal}", "raw", "nf_api = raw"),
    ("cmd:x --port {port2}", "mmap", "kernel interfaces"),
    ("cmd:x {iface1}", "dpdk", "DPDK's")])
def test_a_template_naming_what_the_ports_lack_is_refused(kind, nf_api, why):
    with pytest.raises(UserError, match=why):
        _check(kind, nf_api)


def test_a_template_naming_what_the_ports_have_passes():
    _check("cmd:x {eal} -- {port1} {port2} -c {cpu:d}", "dpdk")
    _check("cmd:x {iface1} {iface2} {mac1}", "raw")
    _check("testpmd", "dpdk")


def test_testpmd_statistics_become_per_port_counters():
    summary = nfs.kind("testpmd").summary(FWD_STATS)
    assert summary["ports"] == [
        {"port": 1, "rx_packets": 1200, "tx_packets": 800, "tx_refused": 4,
         "dropped": {"other": 0}},
        {"port": 2, "rx_packets": 800, "tx_packets": 1196, "tx_refused": 0,
         "dropped": {"other": 2}}]
    assert nfs.kind("cmd:x").summary(FWD_STATS)["ports"] == []
