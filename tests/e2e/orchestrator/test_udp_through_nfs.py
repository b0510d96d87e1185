"""udp ends through network functions on every kernel data plane, in real runc
containers. The ends' kernels leave each UDP checksum for the device to finish
(tx checksum offload, a veth's and a macvlan's default); before, an NF sent the
frames on unfinished and the receiver's kernel dropped every datagram, exit 0.
A covering set, each data plane with each NF api the engine has there, one and
three NFs, l2 and l3: nothing may be lost, and no end's kernel may count a
checksum error. Then a command NF that does send them on unfinished (testpmd
over DPDK's af_packet, as a user's command: cnfperf only warns), and the loss
table that names what the receiver's kernel dropped."""
from __future__ import annotations

import json

import pytest

import harness

from test_nfs import RATE, _run, _zero_loss_through

pytestmark = pytest.mark.e2e

POINTS = [   # switch, nfs, nf, nf_api
    ("veth", 3, "l2", "raw"),
    ("veth", 1, "l3", "mmap"),
    ("veth", 3, "l3", "xdp"),
    ("veth", 1, "l2", "dpdk"),        # the engine on DPDK's af_packet PMD
    ("bridge", 3, "l3", "mmap"),
    ("bridge", 1, "l2", "xdp"),
    ("bridge", 3, "l2", "raw"),
    ("macvlan", 1, "l3", "raw"),
    ("macvlan", 3, "l2", "mmap"),
    ("macvlan", 3, "l3", "xdp"),
]


@pytest.mark.parametrize("switch, nfs, nf, nf_api", POINTS,
                         ids=[f"{s}-{n}x{k}-{a}" for s, n, k, a in POINTS])
def test_udp_ends_lose_nothing_through_nfs(engine, cli, no_leftovers, switch, nfs, nf,
                                           nf_api):
    point = _run(cli, "--switch", switch, "--api", "udp", "--nfs", str(nfs), "--nf", nf,
                 "--nf-api", nf_api)
    assert (point["api"], point["nf_api"], point["nfs"]) == ("udp", nf_api, nfs)
    _zero_loss_through(point, nfs)
    ends = [e for e in point["endpoints"] if e["role"] in ("send", "recv")]
    assert [(e["udp_in_errors"], e["udp_in_csum_errors"]) for e in ends] == [(0, 0), (0, 0)]


def test_udp_ends_lose_nothing_both_ways_for_latency(engine, cli, no_leftovers):
    """The server's kernel takes the requests, the client's the echoes."""
    point = _run(cli, "--switch", "bridge", "--api", "udp", "--nfs", "2", "--nf", "l3",
                 "--nf-api", "raw", "--mode", "latency")
    [pair] = point["per_pair"]
    harness.assert_sent(point, pair, point["rate"] * point["duration"])   # latency's rate
    assert pair["lost"] == 0 and pair["received"] == pair["sent"], pair
    ends = [e for e in point["endpoints"] if e["role"] in ("client", "server")]
    assert [e["udp_in_csum_errors"] for e in ends] == [0, 0]


# testpmd in mac forwarding mode, as a user's own command (testpmd by name is
# refused between udp ends: run/checks/)
TESTPMD = ("cmd:dpdk-testpmd {eal} --lcores 0@{cpu},1@{cpu} -- --forward-mode=mac "
           "--stats-period=1 --eth-peer=0,{peer1} --eth-peer=1,{peer2} --total-num-mbufs=8192")


@pytest.mark.needs("dpdk-testpmd")
def test_the_loss_table_names_the_receiver_kernel_s_checksum_drops(engine, cli, no_leftovers):
    done = cli("run", "--switch", "veth", "--api", "udp", "--nfs", "1", "--nf", TESTPMD,
               "--nf-api", "dpdk", "--rate", str(RATE), "--duration", "1", "--warmup", "0.2",
               "--json")
    assert done.returncode == 0, done.stderr
    assert "must finish them" in done.stderr   # the plan's warning
    run_id = json.loads(done.stdout)["outcome"]["run_id"]
    [point] = json.loads(done.stdout)["run"]["points"]
    [pair] = point["per_pair"]
    # An unfinished checksum is right by chance for one datagram in 65536 (its
    # payload's sum cancels out): that one arrives.
    harness.assert_sent(point, pair, RATE * 1)
    assert pair["received"] <= 2, pair
    assert pair["lost"] == pair["sent"] - pair["received"], pair
    [receiver] = [e for e in point["endpoints"] if e["role"] == "recv"]
    # every frame that reached it, the warm-up's too: all the sender sent but the
    # odd one a user's testpmd drops as it starts or stops (it counts its own)
    [sender] = [e for e in point["endpoints"] if e["role"] == "send"]
    every = sender["summary"]["tx_packets"] + sender["summary"]["warmup_tx_packets"]
    csum = receiver["udp_in_csum_errors"]
    assert csum == receiver["udp_in_errors"] and every - every // 100 <= csum <= every, \
        (csum, receiver["udp_in_errors"], every)
    shown = cli("results", "show", run_id)
    assert f"the receiver's kernel dropped {csum:,} datagrams with bad UDP checksums" \
        in shown.stdout, shown.stdout
