"""End to end: the ends on several queues (send and recv --threads N,
engine/src/roles/queues.c) over veths with two queues each.

A sender deals its flows out to its queues; a receiver polls a queue per
thread (raw and mmap: a PACKET_FANOUT group, xdp: a socket per queue of the
veth). The sender is pinned, one thread per CPU, because a packet socket's
frames take the veth queue of the CPU that sent them: a flow then stays on
one queue, which exact loss and order need. Low rates, short runs: speed is
bench/queues.py's.
"""
from __future__ import annotations

import secrets
import subprocess
import time

import pytest

from conftest import end, namespaces, veth
from test_kernel_apis import assert_latency
from test_nf import port, raw

pytestmark = pytest.mark.e2e

RATE, FLOWS, PORT = 20000, 16, "9000"


@pytest.fixture
def pair2q(no_leftovers):
    """Two namespaces joined by a veth pair with two Rx and Tx queues per end."""
    tag = secrets.token_hex(2)
    with namespaces(tag, ["a", "b"]) as (na, nb):
        a, b = end(na, tag, "a", 5, 1), end(nb, tag, "b", 5, 2)
        veth(a, b, queues=2)
        yield a, b


def sender(engine, s, dst_ip: str, dst_mac: str, rate: int = RATE) -> list[str]:
    return [engine, "send", *raw(s), "--src-ip", s.ip, "--sport", PORT, "--dst-ip", dst_ip,
            "--dst-mac", dst_mac, "--dport", PORT, "--threads", "2", "--cpu", "0,1",
            "--flows", str(FLOWS), "--rate", str(rate), "--duration", "1", "--interval", "0.5"]


def receiver(engine, r, api: str, threads: int = 2) -> list[str]:
    return [engine, "recv", "--api", api, "--iface", r.iface, "--src-ip", r.ip, "--sport", PORT,
            "--threads", str(threads), "--duration", "0", "--interval", "0.5"]


def assert_queues_add_up(summary: dict, key: str) -> None:
    queues = summary["queues"]
    assert [q["queue"] for q in queues] == [0, 1], summary
    assert sum(q[key] for q in queues) == summary[key], summary
    assert all(q[key] > 0 for q in queues), f"a queue took no part: {queues}"
    assert summary["stalls"]["pollers"] == 2, summary


@pytest.mark.parametrize("api", ["raw", "mmap", "xdp"])
def test_two_queue_ends_lose_and_reorder_nothing(engine, pair2q, engines, api):
    """send --threads 2 -> recv --threads 2: every frame arrives once, each flow
    in order on one queue (no split flow), each queue's counts add up to the
    totals, and the latency histogram holds every queue's frames."""
    a, b = pair2q
    rx = engines(b.netns, receiver(engine, b, api))
    rx.ready()
    tx = engines(a.netns, sender(engine, a, b.ip, b.mac))
    sent = tx.summary()
    time.sleep(0.3)
    got = rx.interrupt()
    assert sent["flows"] == FLOWS and 0.9 * RATE < sent["tx_packets"] <= RATE + 64, sent
    assert_queues_add_up(sent, "tx_packets")
    assert [r["type"] for r in tx.records].count("start") == 1, "one start record for both queues"
    assert got["rx_packets"] == sent["tx_packets"], (sent, got)
    for key in ("lost", "reordered", "duplicate", "bad", "split_flows"):
        assert got[key] == 0, f"{key}: {got}"
    assert got["flows_seen"] == FLOWS == sum(q["flows_seen"] for q in got["queues"]), got
    assert_queues_add_up(got, "rx_packets")
    assert_latency(got, "one_way")


@pytest.fixture
def chain2q(no_leftovers):
    """sender | nf | receiver on veths with two queues each."""
    tag = secrets.token_hex(2)
    with namespaces(tag, ["s", "f", "r"]) as (ns, nf, nr):
        s, f_in = end(ns, tag, "s", 6, 1), end(nf, tag, "fi", 6, 2)
        f_out, r = end(nf, tag, "fo", 7, 2), end(nr, tag, "r", 7, 1)
        veth(s, f_in, queues=2)
        veth(f_out, r, queues=2)
        yield s, f_in, f_out, r


def test_two_queue_receiver_counts_loss_as_one_queue_does(engine, chain2q, engines):
    """Loss is exact across queues: a policer in the path drops about half of
    what the two-queue sender sends, and a two-queue receiver and a one-queue
    one beside it on the same interface (each packet socket takes its own
    copy of every frame) count the same frames, the same loss and no reorder."""
    s, f1, f2, r = chain2q
    two = engines(r.netns, receiver(engine, r, "raw"))
    one = engines(r.netns, receiver(engine, r, "raw", threads=1))
    two.ready()
    one.ready()
    nf = engines(f1.netns, [engine, "nf", *raw(f1), "--iface2", f2.iface, "--dst-mac", s.mac,
                            "--dst-mac2", r.mac, "--policer", "10000,64", "--duration", "0",
                            "--interval", "0"])
    nf.ready()
    sent = engines(s.netns, sender(engine, s, r.ip, f1.mac)).summary()
    time.sleep(0.3)
    fwd, got, ref = nf.interrupt(), two.interrupt(), one.interrupt()
    dropped = port(fwd, 1)["dropped"]["policer"]
    assert dropped > 0.3 * sent["tx_packets"], fwd
    assert got["rx_packets"] + got["warmup_packets"] == sent["tx_packets"] + sent["warmup_tx_packets"] - dropped
    assert got["lost"] > 0.3 * sent["tx_packets"], got
    for key in ("rx_packets", "warmup_packets", "lost", "reordered", "duplicate", "flows_seen"):
        assert got[key] == ref[key], f"{key}: two queues {got[key]}, one {ref[key]}"
    assert got["reordered"] == got["split_flows"] == 0, got
    assert_queues_add_up(got, "rx_packets")


@pytest.mark.parametrize("argv, says", [
    (["send", "--api", "raw", "--iface", "lo", "--dst-ip", "10.0.0.2", "--dst-mac", "02:00:00:00:00:02",
      "--src-ip", "10.0.0.1", "--threads", "2"], "--threads: 2 queues need --flows 2 at least"),
    (["recv", "--api", "udp", "--src-ip", "127.0.0.1", "--threads", "2"], "the udp api has one queue"),
    (["recv", "--api", "raw", "--iface", "lo", "--threads", "2", "--conformance", "100,8"],
     "--conformance is one bucket"),
    (["send", "--api", "raw", "--iface", "lo", "--dst-ip", "10.0.0.2", "--dst-mac", "02:00:00:00:00:02",
      "--src-ip", "10.0.0.1", "--flows", "2", "--threads", "2", "--cpu", "0,1,0"], "--cpu"),
])
def test_bad_queue_options_are_one_line_and_exit_2(engine, argv, says):
    done = subprocess.run([str(engine), *argv], capture_output=True, text=True, timeout=30)
    assert done.returncode == 2 and done.stdout == "", done
    assert len(done.stderr.splitlines()) == 1 and says in done.stderr, done.stderr
