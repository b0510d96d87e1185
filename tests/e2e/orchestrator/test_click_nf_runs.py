"""Click as the network function (nf = click:…): userlevel Click on the NFs'
kernel interfaces in real runc containers made from the click image (or the
host's Click under the netns runtime), and Click with DPDK on their DPDK ports
(the click-dpdk image). Zero loss at a low rate, Click's own counters agree
with the ends, its readiness is measured, nothing left behind."""
from __future__ import annotations

import json

import pytest

import harness

pytestmark = pytest.mark.e2e
CLICK = pytest.mark.needs("click")
CLICK_DPDK = pytest.mark.needs("click-dpdk")

RATE = 2000        # pps per pair: far below what any path here drops at
DURATION = 1.0
WARMUP = 0.2

# A user's own configuration: a plain forwarder that puts the next hop's
# MACs on (a bridge would send a frame still addressed to the NF back to it).
FORWARDER = """\
// forwards between the NF's two ports
FromDevice({iface1}, PROMISC true, BURST 32) -> EtherRewrite({mac2}, {peer2})
    -> Queue -> ToDevice({iface2});
FromDevice({iface2}, PROMISC true, BURST 32) -> EtherRewrite({mac1}, {peer1})
    -> Queue -> ToDevice({iface1});
"""


def _run(cli, *args: str) -> dict:
    done = cli("run", *args, "--rate", str(RATE), "--duration", str(DURATION),
               "--warmup", str(WARMUP), "--json")
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)["outcome"]
    assert out["left"] == [], out
    run = json.loads(done.stdout)["run"]
    assert run["status"] == "done"
    [point] = run["points"]
    return point


def _sent(end: dict) -> int:
    """Every frame a sender put on its link: NFs count the warm-up's too."""
    return end["summary"]["tx_packets"] + end["summary"]["warmup_tx_packets"]


def _nfs(point: dict) -> list[dict]:
    """The NFs' results in path order."""
    return sorted(point["nf_results"], key=lambda nf: nf["idx"])


def _ready(point: dict, runtime: str = "runc", image: str = "click") -> None:
    """Each NF's startup: its container and Click's start to its ready line."""
    for nf in point["nf_results"]:
        assert 0 < nf["ready_s"] < 15, nf
    if runtime == "runc":
        assert point["nf_image_name"] == image
        # Click and its libraries only: well below the tools image's 24 MB;
        # with DPDK and every driver linked in, more
        assert 2_000_000 < point["nf_image_size"] < (20 if image == "click" else 100) * 10**6


@CLICK
def test_a_click_mirror_returns_every_frame_to_a_single_tester(engine, cli, no_leftovers):
    point = _run(cli, "--switch", "bridge", "--api", "raw", "--nfs", "1",
                 "--nf", "click:mirror", "--tester", "single")
    assert (point["nf"], point["nf_api"]) == ("click:mirror", "mmap")
    [pair] = point["per_pair"]
    harness.assert_sent(point, pair, RATE * DURATION)
    assert pair["lost"] == 0 and pair["received"] == pair["sent"]
    [mirror] = [e for e in point["endpoints"] if e["role"] == "nf"]
    [tester] = [e for e in point["endpoints"] if e["role"] == "tester"]
    # Click's counters, printed when SIGINT stopped it
    [port1] = mirror["summary"]["ports"]
    assert port1["rx_packets"] == port1["tx_packets"] == _sent(tester)
    assert not port1["tx_refused"] and not any(port1["dropped"].values())
    # and back: every frame the mirror sent, the tester took, warm-up ones included
    assert tester["summary"]["rx_packets"] + tester["summary"]["warmup_packets"] == _sent(tester)
    _ready(point)


@CLICK
@pytest.mark.parametrize("nf_api", ["mmap", "raw"])
def test_two_click_strip_encap_nfs_in_a_chain_lose_nothing(engine, cli, no_leftovers,
                                                           nf_api):
    """Each NF's new Ethernet header takes the frames to the next hop, through
    the bridge between them: Click's METHOD PCAP (mmap) and LINUX (raw)."""
    point = _run(cli, "--switch", "bridge", "--api", "raw", "--nfs", "2",
                 "--nf", "click:strip-encap", "--nf-api", nf_api)
    assert point["shape"] == "chain"
    [pair] = point["per_pair"]
    expected = RATE * DURATION
    harness.assert_sent(point, pair, expected)
    assert pair["lost"] == 0 and pair["received"] == pair["sent"], pair
    [sender] = [e for e in point["endpoints"] if e["role"] == "send"]
    for nf in _nfs(point):
        port1, port2 = nf["ports"]
        assert port1["rx_packets"] == port2["tx_packets"] == _sent(sender), nf
        assert port2["rx_packets"] == port1["tx_packets"] == 0   # nothing comes back
        assert not port2["tx_refused"] and not port1["dropped_other"]
    _ready(point)


@CLICK
@pytest.mark.parametrize("runtime", ["runc", "netns"])
def test_a_click_configuration_of_the_user_s_forwards(engine, cli, no_leftovers,
                                                      tmp_path, runtime):
    config = tmp_path / "forwarder.click"
    config.write_text(FORWARDER)
    point = _run(cli, "--switch", "bridge", "--api", "raw", "--nfs", "1",
                 "--nf", f"click:{config}", "--runtime", runtime)
    [pair] = point["per_pair"]
    harness.assert_sent(point, pair, RATE * DURATION)
    assert pair["lost"] == 0 and pair["received"] == pair["sent"]
    # its counters are its own business: none are read
    [nf] = point["nf_results"]
    assert nf["kind"] == f"click:{config}" and nf["ports"] == []
    _ready(point, runtime)


@CLICK_DPDK
@pytest.mark.parametrize("args", [
    ("--switch", "memif", "--api", "dpdk", "--nfs", "1", "--nf", "click:strip-encap",
     "--tester", "split"),
    # af_packet ports on a kernel data plane, two NFs in a chain
    ("--switch", "bridge", "--api", "raw", "--nf-api", "dpdk", "--nfs", "2",
     "--nf", "click:strip-encap", "--tester", "split"),
    # the vhost-user backend's end of the link
    ("--switch", "vhost", "--api", "dpdk", "--nfs", "1", "--nf", "click:mirror",
     "--tester", "single"),
    # virtio-user ports (Click asks them for no RSS: the click patches), and
    # jumbo frames in one mbuf each (DPDKInfo's MBUF_SIZE sizes the pool)
    ("--switch", "testpmd", "--api", "dpdk", "--nfs", "1", "--nf", "click:strip-encap",
     "--tester", "split"),
    ("--switch", "testpmd", "--api", "dpdk", "--nfs", "1", "--nf", "click:strip-encap",
     "--size", "9000", "--tester", "split")],
    ids=["memif", "bridge-af_packet", "vhost-mirror", "testpmd-virtio_user", "testpmd-jumbo"])
def test_click_with_dpdk_on_the_nf_s_dpdk_ports(engine, cli, no_leftovers, args):
    point = _run(cli, *args)
    assert point["nf_api"] == "dpdk"
    [pair] = point["per_pair"]
    harness.assert_sent(point, pair, RATE * DURATION)
    assert pair["lost"] == 0 and pair["received"] == pair["sent"]
    [receiver] = [e for e in point["endpoints"] if e["role"] in ("recv", "tester")]
    assert receiver["summary"]["rx_bytes"] == receiver["summary"]["rx_packets"] * point["size"]
    [first] = [e for e in point["endpoints"] if e["role"] in ("send", "tester")]
    for nf in _nfs(point):
        port1, port2 = (nf["ports"] * 2)[:2]    # a mirror's one port is both
        assert port1["rx_packets"] == port2["tx_packets"] == _sent(first), nf
    _ready(point, image="click-dpdk")
