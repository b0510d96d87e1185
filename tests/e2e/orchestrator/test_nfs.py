"""Network functions in the path, in real runc containers: chains through a switch,
pipelines of links, both directions for latency, a mirror, a single-process tester.
Zero loss at a low rate, every hop's counters agree with the ends, nothing left behind."""
from __future__ import annotations

import json

import pytest

import harness

pytestmark = pytest.mark.e2e

RATE = 2000        # pps per pair: far below what any path here drops at
DURATION = 1.0
WARMUP = 0.2
DPDK = pytest.mark.needs("ovsdb-server", "ovs-vsctl")   # OVS-DPDK (and hugepages)


def _run(cli, *args: str) -> dict:
    done = cli("run", *args, "--rate", str(RATE), "--duration", str(DURATION),
               "--warmup", str(WARMUP), "--json")
    assert done.returncode == 0, done.stderr
    run = json.loads(done.stdout)["run"]
    assert run["status"] == "done"
    [point] = run["points"]
    return point


def _hops(point: dict) -> list[int]:
    """Frames in at every NF's port 1 and out at its port 2, in path order."""
    nfs = sorted((e for e in point["endpoints"] if e["role"] == "nf"),
                 key=lambda e: e["endpoint"])
    counts = []
    for nf in nfs:
        port1, port2 = nf["summary"]["ports"]
        assert not any(port1["dropped"].values()) and not port1["tx_refused"], nf["summary"]
        counts += [port1["rx_packets"], port2["tx_packets"]]
    return counts


def _sent(sender: dict) -> int:
    """Every frame a sender put on its link: NFs count the warm-up's too."""
    return sender["summary"]["tx_packets"] + sender["summary"]["warmup_tx_packets"]


def _zero_loss_through(point: dict, nfs: int) -> None:
    [pair] = point["per_pair"]
    expected = RATE * DURATION
    harness.assert_sent(point, pair, expected)
    assert pair["lost"] == 0 and pair["received"] == pair["sent"], pair
    [sender] = [e for e in point["endpoints"] if e["role"] == "send"]
    assert _hops(point) == [_sent(sender)] * (2 * nfs)


@pytest.mark.parametrize("switch,shape", [("bridge", "chain"), ("veth", "pipeline")])
def test_three_nfs_over_a_kernel_data_plane(engine, cli, no_leftovers, switch, shape):
    point = _run(cli, "--switch", switch, "--api", "raw", "--nfs", "3",
                 "--tester", "split")
    assert (point["nfs"], point["nf"], point["nf_api"]) == (3, "l2", "mmap")
    _zero_loss_through(point, 3)


@DPDK
@pytest.mark.parametrize("switch", ["memif", "vhost"])
def test_two_nfs_over_a_dpdk_pipeline(engine, cli, no_leftovers, switch):
    point = _run(cli, "--switch", switch, "--api", "dpdk", "--nfs", "2",
                 "--tester", "split")
    assert point["nf_api"] == "dpdk"
    _zero_loss_through(point, 2)


def test_l3_routers_forward_both_ways_for_latency(engine, cli, no_leftovers):
    """The client's frames and the server's echoes cross both routers."""
    point = _run(cli, "--switch", "veth", "--api", "raw", "--nfs", "2", "--nf", "l3",
                 "--mode", "latency")
    [pair] = point["per_pair"]
    assert pair["lost"] == 0 and pair["latency_kind"] == "rtt" and pair["lat_p50_ns"] > 0
    for nf in (e for e in point["endpoints"] if e["role"] == "nf"):
        port1, port2 = nf["summary"]["ports"]
        # requests in at port 1 and out at 2; echoes back the other way
        assert port1["rx_packets"] == port2["tx_packets"] > 0
        assert port2["rx_packets"] == port1["tx_packets"] == port1["rx_packets"]
        assert not port1["dropped"]["no_route"] and not port1["dropped"]["ttl"]


def test_a_mirror_returns_every_frame_to_a_single_tester(engine, cli, no_leftovers):
    point = _run(cli, "--switch", "bridge", "--api", "raw", "--nfs", "1",
                 "--nf", "mirror", "--tester", "single")
    [pair] = point["per_pair"]
    harness.assert_sent(point, pair, RATE * DURATION)
    assert pair["lost"] == 0 and pair["received"] == pair["sent"]
    assert sorted(e["role"] for e in point["endpoints"]) == ["nf", "tester"]
    [mirror] = [e for e in point["endpoints"] if e["role"] == "nf"]
    [tester] = [e for e in point["endpoints"] if e["role"] == "tester"]
    [port1] = mirror["summary"]["ports"]
    assert port1["rx_packets"] == port1["tx_packets"] == _sent(tester)
    # and back: every frame the mirror sent, the tester took, warm-up ones included
    assert tester["summary"]["rx_packets"] + tester["summary"]["warmup_packets"] == _sent(tester)


@DPDK
def test_a_single_tester_through_ovs(engine, cli, no_leftovers):
    """One engine holds both of the path's ends: one poller beside the switch's."""
    point = _run(cli, "--switch", "ovs", "--api", "dpdk", "--tester", "single")
    [pair] = point["per_pair"]
    harness.assert_sent(point, pair, RATE * DURATION)
    assert pair["lost"] == 0 and pair["received"] == pair["sent"]
    assert pair["latency_kind"] == "one_way" and pair["lat_p50_ns"] > 0
    [tester] = point["endpoints"]
    assert tester["role"] == "tester"


@DPDK
@pytest.mark.needs("dpdk-testpmd")
@pytest.mark.parametrize("nf", [
    "testpmd",
    # the same, as a user's own command: cnfperf substitutes the ports
    "cmd:dpdk-testpmd {eal} --lcores 0@{cpu},1@{cpu} -- --forward-mode=mac --stats-period=1 "
    "--eth-peer=0,{peer1} --eth-peer=1,{peer2} --total-num-mbufs=8192"], ids=["testpmd", "cmd"])
def test_testpmd_as_the_nf(engine, cli, no_leftovers, nf):
    point = _run(cli, "--switch", "memif", "--api", "dpdk", "--nfs", "1", "--nf", nf,
                 "--tester", "split")
    assert point["nf_image_name"] == "busybox+engine+dpdk+testpmd"   # runc, testpmd inside
    [pair] = point["per_pair"]
    harness.assert_sent(point, pair, RATE * DURATION)
    assert pair["lost"] == 0 and pair["received"] == pair["sent"]
    [testpmd] = [e for e in point["endpoints"] if e["role"] == "nf"]
    if nf == "testpmd":   # its forward statistics, read at its exit
        port1, port2 = testpmd["summary"]["ports"]
        assert port1["rx_packets"] == port2["tx_packets"] >= pair["sent"]


@pytest.mark.parametrize("switch,api,nf_api", [
    ("bridge", "raw", "xdp"),
    pytest.param("ovs", "dpdk", "dpdk", marks=DPDK)], ids=["bridge-xdp", "ovs-dpdk"])
def test_an_l3_nf_on_two_cores_forwards_on_both(engine, cli, no_leftovers, switch, api, nf_api):
    """nf_cores = 2: the engine's l3 NF polls a queue of each port per core,
    and the data plane spreads the tester's 8 flows over them: veths made
    with two queues (an AF_XDP socket each), or OVS hashing flows over the
    NF's vhost-user queues (tx-steering=hash). Both threads forward, nothing
    is lost; the stored NF says how the frames were spread."""
    point = _run(cli, "--switch", switch, "--api", api, "--nf-api", nf_api, "--nfs", "1",
                 "--nf", "l3", "--nf-cores", "2", "--flows", "8", "--tester", "single",
                 "--poll", "adaptive")
    [pair] = point["per_pair"]
    harness.assert_sent(point, pair, RATE * DURATION)
    assert pair["lost"] == 0 and pair["received"] == pair["sent"], pair
    [nf] = [e for e in point["endpoints"] if e["role"] == "nf"]
    queues = nf["summary"]["queues"]
    assert [q["queue"] for q in queues] == [0, 1], queues
    assert all(q["rx_packets"] > 0 and q["tx_packets"] > 0 for q in queues), queues
    assert len({q["cpu"] for q in queues}) == 2, f"each thread on a core of its own: {queues}"
