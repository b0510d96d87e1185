"""End to end: udp ends through an engine nf, over veths between namespaces.

The ends' kernels send UDP with the checksum left for the device to finish
(tx checksum offload, a veth's default): the field holds only the pseudo
header's sum. An nf reads the frame through a packet socket or AF_XDP, where
the mark that says so is lost; sent on unfinished, every datagram was dropped
by the receiver's kernel (UDP InCsumErrors), exit 0. Each api now hands the nf
the frame as the wire carries it, checksum finished (engine/README.md,
*Frames as the wire carried them*): everything arrives, and the receiver's
kernel counts no checksum error.
"""
from __future__ import annotations

import subprocess
import time

import pytest

from cnfperf.host import udp_errors
from test_kernel_apis import RECEIVER_RUN, assert_delivered, sender_run
from test_nf import nf_across

pytestmark = pytest.mark.e2e

RATE = 10000
PORT = "9000"


def route_through(chain) -> None:
    """The ends' kernels route to each other through the nf's ports, their MACs
    known (an AF_XDP socket takes every frame of its queue, ARP included: the
    nf's kernel would never answer)."""
    s, f1, f2, r = chain
    for end, hop, far in ((s, f1, "198.18.2.0/24"), (r, f2, "198.18.1.0/24")):
        subprocess.run(["ip", "-n", end.netns, "neigh", "replace", hop.ip, "lladdr", hop.mac,
                        "dev", end.iface], check=True)
        subprocess.run(["ip", "-n", end.netns, "route", "add", far, "via", hop.ip], check=True)


def offloaded(end) -> bool:
    """The sender's veth leaves its checksums to the device: what makes this test."""
    out = subprocess.run(["ip", "netns", "exec", end.netns, "ethtool", "-k", end.iface],
                         capture_output=True, text=True, check=True).stdout
    return "tx-checksumming: on" in out


@pytest.mark.parametrize("api, nf, size", [
    (["raw", "-m"], "l2", 64),
    (["raw"], "l3", 1500),
    (["mmap"], "l2", 1500),
    (["mmap"], "l3", 64),
    (["xdp", "--xdp-mode", "copy"], "l2", 64),
    (["xdp", "--xdp-mode", "skb"], "l3", 1500),
], ids=["raw-l2-64", "raw-l3-1500", "mmap-l2-1500", "mmap-l3-64", "xdp-copy-l2-64",
        "xdp-skb-l3-1500"])
def test_udp_ends_through_an_nf_lose_nothing(engine, chain, engines, api, nf, size):
    s, f1, f2, r = chain
    route_through(chain)
    assert offloaded(s)
    before = udp_errors.read(r.netns)
    rx = engines(r.netns, [engine, "recv", "--api", "udp", "--src-ip", r.ip, "--sport", PORT,
                           *RECEIVER_RUN])
    rx.ready()
    fwd = engines(f1.netns, nf_across(engine, chain, api, nf))
    fwd.ready()
    tx = engines(s.netns, [engine, "send", "--api", "udp", "--src-ip", s.ip, "--dst-ip", r.ip,
                           "--dport", PORT, "--size", str(size), *sender_run(RATE)])
    sent = tx.summary()
    time.sleep(0.2)
    received = rx.interrupt()
    forwarded = fwd.interrupt()

    assert_delivered(sent, received, RATE)
    port2 = [p for p in forwarded["ports"] if p["port"] == 2][0]
    assert port2["tx_packets"] >= sent["tx_packets"] and forwarded["tx_refused"] == 0, forwarded
    assert udp_errors.dropped(before, udp_errors.read(r.netns)) == {
        "udp_in_errors": 0, "udp_in_csum_errors": 0, "udp_rcvbuf_errors": 0}
