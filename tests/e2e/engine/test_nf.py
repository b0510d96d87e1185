"""End to end: the nf role (a network function in the path), the tester (both
ends of a path in one process) and the --poll modes, over veths between
namespaces with the raw api.

Low rates, short runs: these check where every frame went and that the
counters of the ends and of the nf's ports add up; speed is for bench/.
"""
from __future__ import annotations

import time

import pytest

import harness
from engines import most_sent

from test_kernel_apis import RECEIVER_RUN, assert_delivered, assert_latency, sender_run

pytestmark = pytest.mark.e2e

RATE = 20000
DURATION = 1.0
PORT = "9000"


def raw(end) -> list[str]:
    return ["--api", "raw", "--iface", end.iface]


def nf_across(engine: str, chain, api: list[str], nf: str) -> list[str]:
    """An nf between the chain's sender and receiver, forwarding until interrupted;
    l3 routes the receiver's net out of port 2 and the sender's out of port 1."""
    s, f1, f2, r = chain
    routes = ["--route", "198.18.2.0/24,2", "--route", "198.18.1.0/24,1"] if nf == "l3" else []
    return [engine, "nf", "--api", *api, "--iface", f1.iface, "--iface2", f2.iface, "--nf", nf,
            *routes, "--dst-mac", s.mac, "--dst-mac2", r.mac, "--duration", "0", "--interval", "0"]


def port(summary: dict, n: int) -> dict:
    [found] = [p for p in summary["ports"] if p["port"] == n]
    return found


def assert_ports_add_up(nf: dict) -> None:
    """The totals are the ports' sums, and nothing was refused."""
    for key in ("rx_packets", "rx_bytes", "tx_packets", "tx_bytes", "tx_refused"):
        assert nf[key] == sum(p[key] for p in nf["ports"]), (key, nf)
    assert nf["other"] == sum(p["dropped"]["other"] for p in nf["ports"])
    assert nf["tx_refused"] == 0, nf


def test_nf_l2_forwards_both_ways(engine, chain, engines):
    """client | nf | server: requests cross port 1 -> 2, echoes port 2 -> 1, in
    one nf thread; each port's counters match what the ends sent and got."""
    s, f1, f2, r = chain
    srv = engines(r.netns, [engine, "server", *raw(r), "--src-ip", r.ip, "--sport", PORT,
                            "--poll", "interrupt", *RECEIVER_RUN])
    srv.ready()
    nf = engines(f1.netns, [engine, "nf", *raw(f1), "--iface2", f2.iface, "--dst-mac", s.mac,
                            "--dst-mac2", r.mac, "--poll", "adaptive", "--duration", "0", "--interval", "0"])
    ready = nf.ready()
    assert ready["role"] == "nf" and ready["iface2"] == f2.iface and ready["wall_ns"] > 0
    cli = engines(s.netns, [engine, "client", *raw(s), "--src-ip", s.ip, "--sport", PORT, "--dst-ip", r.ip,
                            "--dst-mac", f1.mac, "--dport", PORT, "--flows", "2", "--poll", "interrupt",
                            *sender_run(5000), "--drain", "0.3"])
    rtt = cli.summary()
    served = srv.interrupt()
    fwd = nf.interrupt()

    assert 0 < rtt["tx_packets"] == rtt["rx_packets"] == served["rx_packets"] == served["tx_packets"], (rtt, served)
    assert rtt["lost"] == 0 and rtt["bad"] == 0 and served["bad"] == 0
    p1, p2 = port(fwd, 1), port(fwd, 2)
    assert p1["rx_packets"] - p1["dropped"]["other"] == rtt["tx_packets"] == p2["tx_packets"], fwd
    assert p2["rx_packets"] - p2["dropped"]["other"] == served["tx_packets"] == p1["tx_packets"], fwd
    assert_ports_add_up(fwd)
    assert fwd["nf"] == "l2" and fwd["first_tx_wall_ns"] >= ready["wall_ns"]
    assert fwd["poll"]["mode"] == "adaptive" and fwd["poll"]["polls"] >= fwd["poll"]["empty_polls"] > 0
    assert_latency(rtt, "rtt")


def test_nf_l3_routes_and_drops_the_unrouted(engine, chain, engines):
    """Two senders, one to a routed destination (the longest prefix sends it out
    of port 2), one to a prefix without a route: the nf counts the second as
    no_route and forwards none of it."""
    s, f1, f2, r = chain
    rx = engines(r.netns, [engine, "recv", *raw(r), "--src-ip", r.ip, "--sport", PORT, *RECEIVER_RUN])
    rx.ready()
    # 198.18.2.0/24 (port 2) is longer than 198.18.0.0/15 (port 1): it wins for r.ip
    nf = engines(f1.netns, [engine, "nf", *raw(f1), "--iface2", f2.iface, "--nf", "l3",
                            "--route", "198.18.0.0/15,1", "--route", "198.18.2.0/24,2",
                            "--dst-mac", s.mac, "--dst-mac2", r.mac, "--duration", "0", "--interval", "0"])
    nf.ready()
    common = [engine, "send", *raw(s), "--src-ip", s.ip, "--dst-mac", f1.mac, "--dport", PORT,
              "--poll", "adaptive"]
    routed = engines(s.netns, [*common, "--dst-ip", r.ip, "--sport", "9000", *sender_run(10000)])
    unrouted = engines(s.netns, [*common, "--dst-ip", "203.0.113.9", "--sport", "9100", *sender_run(10000)])
    sent, dropped = routed.summary(), unrouted.summary()
    time.sleep(0.2)
    fwd = nf.interrupt()
    received = rx.interrupt()

    assert_delivered(sent, received, 10000 * DURATION)   # bad == 0: the TTL's checksum update is right
    assert dropped["tx_packets"] > 0
    p1, p2 = port(fwd, 1), port(fwd, 2)
    assert p1["dropped"]["no_route"] == dropped["tx_packets"], fwd
    assert p2["tx_packets"] == sent["tx_packets"] == received["rx_packets"], fwd
    assert p1["tx_packets"] == 0 and p1["dropped"]["ttl"] == p1["dropped"]["bad"] == 0, fwd
    assert p1["rx_packets"] == sent["tx_packets"] + dropped["tx_packets"] + p1["dropped"]["other"], fwd
    assert received["other"] < dropped["tx_packets"], "unrouted frames reached the receiver"
    assert_ports_add_up(fwd)
    assert fwd["nf"] == "l3"


def test_tester_through_a_mirror(engine, pair, engines):
    """The tester sends and receives on one port; a mirror nf sends every frame
    back: exact one-way latency, warm-up split as the sender marked it."""
    a, b = pair
    nf = engines(b.netns, [engine, "nf", *raw(b), "--nf", "mirror", "--poll", "interrupt",
                           "--duration", "0", "--interval", "0"])
    nf.ready()
    t = engines(a.netns, [engine, "tester", *raw(a), "--src-ip", a.ip, "--dst-ip", b.ip, "--dst-mac", b.mac,
                          "--dport", PORT, "--flows", "2", *sender_run(), "--warmup", "0.2", "--drain", "0.3"])
    ready = t.ready()
    tested = t.summary()
    mirrored = nf.interrupt()

    assert ready["role"] == "tester" and tested["role"] == "tester"
    assert 0 < tested["tx_packets"] <= most_sent(RATE, DURATION, tested["burst"])
    assert tested["rx_packets"] == tested["tx_packets"], tested
    for key in ("lost", "bad", "corrupt", "reordered", "duplicate", "tx_refused"):
        assert tested[key] == 0, f"{key}: {tested}"
    assert tested["warmup_packets"] > 0 and tested["flows_seen"] == 2
    assert tested["offered_pps"] == RATE
    assert_latency(tested, "one_way")
    p1 = port(mirrored, 1)
    assert p1["tx_packets"] == p1["rx_packets"] - p1["dropped"]["other"] == \
        tested["tx_packets"] + tested["warmup_packets"], mirrored
    assert mirrored["nf"] == "mirror" and len(mirrored["ports"]) == 1
    assert mirrored["poll"]["waits"] > 0


def test_tester_holds_both_ends_of_an_nf(engine, loop, engines):
    """tester port 1 -> nf (strip-encap) -> tester port 2: one process sends and
    receives, the nf in between forwards between its two veths."""
    t1, t2, f1, f2 = loop
    nf = engines(f1.netns, [engine, "nf", *raw(f1), "--iface2", f2.iface, "--nf", "strip-encap",
                            "--dst-mac", t1.mac, "--dst-mac2", t2.mac, "--duration", "0", "--interval", "0"])
    nf.ready()
    t = engines(t1.netns, [engine, "tester", *raw(t1), "--iface2", t2.iface, "--src-ip", t1.ip,
                           "--dst-ip", t2.ip, "--dst-mac", f1.mac, "--dport", PORT, "--poll", "adaptive",
                           *sender_run(), "--drain", "0.3"])
    assert t.ready()["iface2"] == t2.iface
    tested = t.summary()
    fwd = nf.interrupt()

    assert 0 < tested["rx_packets"] == tested["tx_packets"], tested
    for key in ("lost", "bad", "corrupt", "reordered", "duplicate"):
        assert tested[key] == 0, f"{key}: {tested}"
    assert_latency(tested, "one_way")
    assert tested["poll"]["mode"] == "adaptive" and tested["poll"]["waits"] > 0
    p1, p2 = port(fwd, 1), port(fwd, 2)
    assert p1["rx_packets"] - p1["dropped"]["other"] == tested["tx_packets"] == p2["tx_packets"], fwd
    assert fwd["nf"] == "strip-encap"
    assert_ports_add_up(fwd)


def test_a_tester_whose_frames_all_came_back_ends_its_drain(engine, loop, engines):
    """--drain bounds the wait for the last frames; once every frame sent is
    back, in order, the tester prints its summary without waiting it out (a
    drain of 10 minutes here, the summary expected within the usual 30 s)."""
    t1, t2, f1, f2 = loop
    nf = engines(f1.netns, [engine, "nf", *raw(f1), "--iface2", f2.iface, "--dst-mac", t1.mac,
                            "--dst-mac2", t2.mac, "--duration", "0", "--interval", "0"])
    nf.ready()
    t = engines(t1.netns, [engine, "tester", *raw(t1), "--iface2", t2.iface, "--src-ip", t1.ip,
                           "--dst-ip", t2.ip, "--dst-mac", f1.mac, "--dport", PORT,
                           *sender_run(), "--warmup", "0.2", "--drain", "600"])
    t.ready()
    tested = t.summary()
    nf.interrupt()

    assert 0 < tested["rx_packets"] == tested["tx_packets"], tested
    assert tested["warmup_packets"] == tested["warmup_tx_packets"] > 0, tested
    assert tested["lost"] == tested["duplicate"] == tested["reordered"] == 0, tested
    assert tested["settle_s"] is None, "no --settle, no settling"


def test_a_tester_settles_until_its_path_carries_frames(engine, loop, engines):
    """--settle: the nf in its path starts 0.3 s after the tester; the tester
    sends a frame every 10 ms until one is back, and only then its warm-up and
    window: nothing of the window is lost, and settle_s says how long it took."""
    t1, t2, f1, f2 = loop
    t = engines(t1.netns, [engine, "tester", *raw(t1), "--iface2", t2.iface, "--src-ip", t1.ip,
                           "--dst-ip", t2.ip, "--dst-mac", f1.mac, "--dport", PORT,
                           *sender_run(), "--warmup", "0.1", "--settle", "5"])
    t.ready()
    time.sleep(0.3)
    nf = engines(f1.netns, [engine, "nf", *raw(f1), "--iface2", f2.iface, "--dst-mac", t1.mac,
                            "--dst-mac2", t2.mac, "--duration", "0", "--interval", "0"])
    nf.ready()
    tested = t.summary()
    nf.interrupt()

    assert 0.25 <= tested["settle_s"] < 5, tested
    assert 0 < tested["rx_packets"] == tested["tx_packets"] and tested["lost"] == 0, tested
    # the settling frames sent before the nf was up are the only ones missing
    settling = tested["settle_s"] / 0.01 + 1
    assert 0 < tested["warmup_tx_packets"] - tested["warmup_packets"] <= settling, tested
    assert "nothing came back" not in t.stderr


def test_a_tester_whose_path_stays_closed_settles_no_longer_than_asked(engine, loop, engines):
    """No nf in the path: after --settle the tester says nothing came back and
    runs its warm-up and window anyway (everything lost, as it is)."""
    t1, t2, f1, f2 = loop
    t = engines(t1.netns, [engine, "tester", *raw(t1), "--iface2", t2.iface, "--src-ip", t1.ip,
                           "--dst-ip", t2.ip, "--dst-mac", f1.mac, "--dport", PORT,
                           *sender_run(), "--settle", "0.3", "--drain", "0.1"])
    tested = t.summary()

    assert 0.3 <= tested["settle_s"] < 1, tested
    assert tested["rx_packets"] == tested["warmup_packets"] == 0, tested
    assert tested["lost"] == tested["tx_packets"] > 0, tested
    assert "nothing came back within --settle 0.3 s" in t.stderr


@pytest.mark.parametrize("mode", ["adaptive", "interrupt"])
def test_poll_modes_receive_everything(engine, pair, engines, mode):
    """A receiver that sleeps until the next frame is due (adaptive, the pace
    learnt from the frames) or waits for the socket (interrupt) still takes
    every frame; at a low rate it mostly sleeps, and says so."""
    a, b = pair
    poll = ["--poll", mode]
    rx = engines(b.netns, [engine, "recv", *raw(b), "--src-ip", b.ip, "--sport", PORT, "-m", *poll,
                           *RECEIVER_RUN])
    rx.ready()
    tx = engines(a.netns, [engine, "send", *raw(a), "--src-ip", a.ip, "--dst-ip", b.ip, "--dst-mac", b.mac,
                           "--dport", PORT, *poll, *sender_run()])
    sent = tx.summary()
    time.sleep(0.2)
    received = rx.interrupt()

    assert_delivered(sent, received, RATE * DURATION)
    rp, sp = received["poll"], sent["poll"]
    assert rp["mode"] == sp["mode"] == mode
    assert rp["polls"] > rp["empty_polls"] > 0
    assert sp["sleeps"] > 0 and sp["slept_s"] > 0 and sp["late_ns_mean"] is not None   # between bursts
    if mode == "adaptive":
        # the sender's bursts of 32 every 1.6 ms, each reaching it in parts:
        # a pace too irregular to plan for, so it waits for the socket
        assert rp["waits"] > 0 and rp["waited_s"] > 0 and rp["woken"] > 0, rp
        assert rp["arrivals"] > 0 and 0 < rp["gap_ns"] < 20_000_000, rp
    else:
        assert rp["waits"] > 0 and rp["waited_s"] > 0 and rp["woken"] > 0 and rp["sleeps"] == 0, rp
        assert rp["arrivals"] == 0 and rp["gap_ns"] is None, rp


def test_busy_poll_counts_and_never_sleeps(engine, pair, engines):
    a, b = pair
    rx = engines(b.netns, [engine, "recv", *raw(b), "--src-ip", b.ip, "--sport", PORT, *RECEIVER_RUN])
    rx.ready()
    tx = engines(a.netns, [engine, "send", *raw(a), "--src-ip", a.ip, "--dst-ip", b.ip, "--dst-mac", b.mac,
                           "--dport", PORT, "--rate", "5000", "--duration", "0.5", "--interval", "0"])
    sent = tx.summary()
    time.sleep(0.2)
    received = rx.interrupt()
    harness.assert_summary_sent(sent, 5000 * 0.5)
    assert received["rx_packets"] == sent["tx_packets"]
    for p in (received["poll"], sent["poll"]):
        assert p["mode"] == "busy" and p["sleeps"] == p["waits"] == 0 and p["late_ns_mean"] is None
    assert received["poll"]["empty_polls"] > 0



@pytest.mark.parametrize("api", ["raw", "mmap"])
def test_an_nf_on_two_threads_forwards_on_both_queues(engine, loop2q, engines, api):
    """tester -> l3 nf with --threads 2 -> tester: raw and mmap join each
    port's sockets in a PACKET_FANOUT group, so the kernel hashes the
    tester's 8 flows over the two threads; each thread forwards what it took,
    every frame arrives, each flow in order (a flow stays on one thread). Its
    threads wait for frames (interrupt): a signal wakes one, and the others
    still see it and stop. (xdp's socket per veth queue is the orchestrator's
    test: a veth picks the queue by its sender's, which a bridge picks by the
    flow's hash, a packet socket bypassing the qdisc by its CPU.)"""
    t1, t2, f1, f2 = loop2q
    nf = engines(f1.netns, [engine, "nf", "--api", api, "--iface", f1.iface, "--iface2", f2.iface,
                            "--nf", "l3", "--route", f"{t2.ip}/32,2", "--route", f"{t1.ip}/32,1",
                            "--dst-mac", t1.mac, "--dst-mac2", t2.mac, "--threads", "2",
                            "--poll", "interrupt", "--duration", "0", "--interval", "0"])
    nf.ready()
    t = engines(t1.netns, [engine, "tester", *raw(t1), "--iface2", t2.iface, "--src-ip", t1.ip,
                           "--dst-ip", t2.ip, "--dst-mac", f1.mac, "--dport", PORT, "--flows", "8",
                           "--poll", "adaptive", *sender_run(), "--drain", "0.3"])
    t.ready()
    tested = t.summary()
    fwd = nf.interrupt()

    assert 0 < tested["rx_packets"] == tested["tx_packets"], tested
    for key in ("lost", "bad", "reordered", "duplicate"):
        assert tested[key] == 0, f"{key}: {tested}"
    queues = fwd["queues"]
    assert [q["queue"] for q in queues] == [0, 1], fwd
    assert all(q["rx_packets"] > 0 and q["tx_packets"] > 0 for q in queues), queues
    assert sum(q["tx_packets"] for q in queues) == fwd["tx_packets"], fwd
    assert port(fwd, 2)["tx_packets"] == tested["tx_packets"], fwd
    assert fwd["stalls"]["pollers"] == 2, fwd["stalls"]
    assert_ports_add_up(fwd)
